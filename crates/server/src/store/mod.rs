//! The database every area writes through: one [`Store`] over SQLite (default, a WAL
//! file) or Postgres, its transactions, typed row access, and the one time and id
//! format. It knows no table: each area keeps its queries with the rest of it
//! (`interactions/store/`, `execution/store.rs`), as `impl Store` blocks or a store of
//! its own over this one.
//!
//! The SQL is written once and portable (`$N` parameters, `ON CONFLICT`, `RETURNING`);
//! each backend has its own migration folder embedded in the binary (`migrations/sqlite`,
//! `migrations/postgres`: the same schema in two dialects, changed together). Every
//! write that must be atomic (respond + enqueue, resume + resolve) runs in one
//! transaction (`in_tx!`); another area's share of it is a [`JoinedWrite`]. Times are
//! stored as text in one format (`format_time`).

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgPool, PgPoolOptions, PgRow};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
    SqliteSynchronous,
};
use sqlx::Row;

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database URL names no supported backend.
    #[error("unsupported database url {0:?}: use sqlite://PATH or postgres://...")]
    UnsupportedUrl(String),
    /// The database answered with an error (connection, constraint, SQL).
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// Applying the embedded migrations failed.
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A stored JSON column could not be decoded.
    #[error("stored {column} is not valid JSON: {reason}")]
    Corrupt {
        /// The column.
        column: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// A [`JoinedWrite`] found that the work it records is no longer its writer's (its
    /// lease or token moved on): the whole transaction was rolled back.
    #[error("ownership lost: {0}")]
    Fenced(String),
}

impl StoreError {
    /// True when the write lost a race to a concurrent one: a unique key taken meanwhile
    /// (either backend), or a Postgres serialization failure (`40001`) or deadlock
    /// (`40P01`). Retrying the request can succeed; it is not a server fault.
    pub fn is_concurrent_conflict(&self) -> bool {
        let Self::Database(sqlx::Error::Database(db)) = self else {
            return false;
        };
        if db.is_unique_violation() {
            return true;
        }
        matches!(db.code().as_deref(), Some("40001") | Some("40P01"))
    }
}

/// Which database the store runs on.
#[derive(Debug, Clone)]
pub(crate) enum Backend {
    /// An embedded SQLite file (WAL).
    Sqlite(SqlitePool),
    /// A Postgres server.
    Postgres(PgPool),
}

/// The durable store of the control plane. Cheap to clone (pools are shared).
#[derive(Debug, Clone)]
pub struct Store {
    pub(crate) backend: Backend,
    /// SQLite has one writer at a time. Writers of this process queue here, FIFO, before
    /// `BEGIN IMMEDIATE`, and are woken the moment the previous one commits; without it
    /// they collide on the file lock and sleep in SQLite's busy handler (1 to 100 ms
    /// back-offs for a lock held ~100 us), which made 8 parallel responds several times
    /// slower than one by one (bench/NOTES.md). Other processes still meet the busy
    /// timeout. Unused on Postgres, whose row locks serve concurrent writers.
    pub(crate) sqlite_writer: Arc<tokio::sync::Mutex<()>>,
}

/// Run `$body` with `$pool` bound to the backend's pool (the body is compiled once per
/// backend, so the same portable SQL serves both).
macro_rules! with_pool {
    ($store:expr, $pool:ident => $body:expr) => {
        match &$store.backend {
            $crate::store::Backend::Sqlite($pool) => $body,
            $crate::store::Backend::Postgres($pool) => $body,
        }
    };
}

/// Run `$body` (an expression of type `Result<T, StoreError>` that may use `$tx` as an
/// executor via `&mut *$tx`) inside one transaction: committed on `Ok`, rolled back on
/// `Err`. On SQLite a writer first takes its turn on `Store::sqlite_writer`, then the
/// write lock up front (`BEGIN IMMEDIATE`), so it never fails on a stale snapshot and
/// never sleeps in the busy handler behind a writer of this process. A body must not
/// open another transaction on the same store (the turn is not re-entrant).
macro_rules! in_tx {
    ($store:expr, $tx:ident => $body:expr) => {
        match &$store.backend {
            $crate::store::Backend::Sqlite(pool) => {
                // Held until commit or rollback: see `Store::sqlite_writer`.
                let _write_turn = $store.sqlite_writer.lock().await;
                let mut $tx = pool.begin_with("BEGIN IMMEDIATE").await?;
                let out: Result<_, $crate::store::StoreError> = async { $body }.await;
                $crate::store::finish_tx($tx, out).await
            }
            $crate::store::Backend::Postgres(pool) => {
                let mut $tx = pool.begin().await?;
                let out: Result<_, $crate::store::StoreError> = async { $body }.await;
                $crate::store::finish_tx($tx, out).await
            }
        }
    };
}

pub(crate) use in_tx;

/// The end of [`in_tx`] on either backend: commit `tx` when `out` is `Ok`, roll it back
/// otherwise.
pub(crate) async fn finish_tx<DB: sqlx::Database, T>(
    tx: sqlx::Transaction<'_, DB>,
    out: Result<T, StoreError>,
) -> Result<T, StoreError> {
    match out {
        Ok(value) => {
            tx.commit().await?;
            Ok(value)
        }
        Err(err) => {
            let _ = tx.rollback().await;
            Err(err)
        }
    }
}
pub(crate) use with_pool;

/// A connection inside an open transaction, of either backend: what a [`JoinedWrite`]
/// writes through, so that its rows commit or roll back with the transaction that holds
/// it (`Tx::from(&mut *tx)` inside an `in_tx!` body).
pub enum Tx<'a> {
    /// A SQLite transaction's connection.
    Sqlite(&'a mut sqlx::SqliteConnection),
    /// A Postgres transaction's connection.
    Postgres(&'a mut sqlx::PgConnection),
}

impl<'a> From<&'a mut sqlx::SqliteConnection> for Tx<'a> {
    fn from(conn: &'a mut sqlx::SqliteConnection) -> Self {
        Self::Sqlite(conn)
    }
}

impl<'a> From<&'a mut sqlx::PgConnection> for Tx<'a> {
    fn from(conn: &'a mut sqlx::PgConnection) -> Self {
        Self::Postgres(conn)
    }
}

impl Tx<'_> {
    /// ` FOR UPDATE` on Postgres (lock the row read for the rest of the transaction);
    /// nothing on SQLite, whose writers hold the whole database (`BEGIN IMMEDIATE`).
    pub(crate) fn lock_clause(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "",
            Self::Postgres(_) => " FOR UPDATE",
        }
    }

    /// [`Store::now_ms_sql`] of this transaction's backend.
    pub(crate) fn now_ms_sql(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => SQLITE_NOW_MS,
            Self::Postgres(_) => POSTGRES_NOW_MS,
        }
    }
}

/// Run `$body` with `$conn` bound to the connection of a [`Tx`] (compiled once per
/// backend, as [`with_pool`]).
macro_rules! with_tx {
    ($tx:expr, $conn:ident => $body:expr) => {
        match $tx {
            $crate::store::Tx::Sqlite($conn) => $body,
            $crate::store::Tx::Postgres($conn) => $body,
        }
    };
}
pub(crate) use with_tx;

/// Writes another part of the server contributes to a transaction it does not own: a
/// turn's commit carries its execution session's share (the interventions it applied,
/// the checkpoints it reached, how the run ended), so that either both are durable or
/// neither is. [`StoreError::Fenced`] rolls the whole transaction back.
pub trait JoinedWrite: Send + Sync {
    /// Write inside the caller's transaction.
    fn write<'a>(&'a self, tx: Tx<'a>) -> futures::future::BoxFuture<'a, Result<(), StoreError>>;
}

/// Typed column access shared by both backends' rows.
pub(crate) trait RowExt {
    /// A non-null text column.
    fn text(&self, column: &str) -> Result<String, sqlx::Error>;
    /// A nullable text column.
    fn opt_text(&self, column: &str) -> Result<Option<String>, sqlx::Error>;
    /// A non-null integer column.
    fn int(&self, column: &str) -> Result<i64, sqlx::Error>;
}

macro_rules! impl_row_ext {
    ($row:ty) => {
        impl RowExt for $row {
            fn text(&self, column: &str) -> Result<String, sqlx::Error> {
                self.try_get::<String, _>(column)
            }
            fn opt_text(&self, column: &str) -> Result<Option<String>, sqlx::Error> {
                self.try_get::<Option<String>, _>(column)
            }
            fn int(&self, column: &str) -> Result<i64, sqlx::Error> {
                self.try_get::<i64, _>(column)
            }
        }
    };
}
impl_row_ext!(SqliteRow);
impl_row_ext!(PgRow);

impl Store {
    /// Connect to `database_url` (`sqlite://PATH`, `sqlite::memory:`, `postgres://...`),
    /// creating a SQLite file when missing, and apply the embedded migrations.
    pub async fn connect(database_url: &str) -> Result<Self, StoreError> {
        let backend = if database_url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(database_url)?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .busy_timeout(Duration::from_secs(30))
                .foreign_keys(true);
            // An in-memory database exists per connection: keep exactly one.
            let in_memory =
                database_url.contains(":memory:") || database_url.contains("mode=memory");
            let pool = SqlitePoolOptions::new()
                .max_connections(if in_memory { 1 } else { 8 })
                .connect_with(options)
                .await?;
            sqlx::migrate!("migrations/sqlite").run(&pool).await?;
            Backend::Sqlite(pool)
        } else if database_url.starts_with("postgres://")
            || database_url.starts_with("postgresql://")
        {
            let pool = PgPoolOptions::new()
                .max_connections(16)
                .connect(database_url)
                .await?;
            sqlx::migrate!("migrations/postgres").run(&pool).await?;
            Backend::Postgres(pool)
        } else {
            return Err(StoreError::UnsupportedUrl(database_url.to_string()));
        };
        Ok(Self {
            backend,
            sqlite_writer: Arc::new(tokio::sync::Mutex::new(())),
        })
    }

    /// Which backend this store runs on: `"sqlite"` or `"postgres"`.
    pub fn backend_name(&self) -> &'static str {
        match self.backend {
            Backend::Sqlite(_) => "sqlite",
            Backend::Postgres(_) => "postgres",
        }
    }

    /// "Now" in epoch milliseconds, as SQL, by the clock every lease is compared with
    /// ([`POSTGRES_NOW_MS`], [`SQLITE_NOW_MS`]). Lease statements compute expiry with it
    /// instead of binding this instance's time, so a skewed instance clock neither
    /// expires another instance's work early nor keeps its own alive too long.
    pub(crate) fn now_ms_sql(&self) -> &'static str {
        match self.backend {
            Backend::Sqlite(_) => SQLITE_NOW_MS,
            Backend::Postgres(_) => POSTGRES_NOW_MS,
        }
    }

    /// The most connections the pool opens (each holds a file descriptor or three).
    pub fn max_connections(&self) -> usize {
        let max = with_pool!(self, pool => pool.options().get_max_connections());
        usize::try_from(max).unwrap_or(usize::MAX)
    }

    /// Close every pooled connection (waits for checked-out ones to come back).
    pub async fn close(&self) {
        with_pool!(self, pool => pool.close().await)
    }
}

/// Now as RFC 3339 UTC text with microseconds (fixed width, so text order = time order).
pub(crate) fn now_text() -> String {
    format_time(chrono::Utc::now())
}

/// Render a time the way the store keeps it and the wire shows it: RFC 3339 UTC with
/// microseconds and `Z` (the one time format of the server: rows, execution sessions,
/// their events).
pub(crate) fn format_time(time: chrono::DateTime<chrono::Utc>) -> String {
    time.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// "Now" in epoch milliseconds as Postgres computes it: the database server's clock,
/// one clock for every instance on the database whatever their own clocks say.
const POSTGRES_NOW_MS: &str = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

/// "Now" in epoch milliseconds as SQLite computes it: this host's clock (one file on one
/// host, so one clock already).
const SQLITE_NOW_MS: &str = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";

/// A lease length a statement adds to its "now" (`now + $lease`): bounded so that the
/// sum cannot overflow a 64-bit column.
pub(crate) fn addable_lease_ms(lease_ms: i64) -> i64 {
    lease_ms.min(i64::MAX / 2)
}

/// A new time-ordered id (UUIDv7): id order is creation order.
pub(crate) fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Encode a JSON value for a text column.
pub(crate) fn to_json_text<T: serde::Serialize>(value: &T) -> String {
    // Serializing plain data (maps, strings, numbers) into a String cannot fail.
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_string())
}

/// Decode a JSON text column.
pub(crate) fn from_json_text<T: serde::de::DeserializeOwned>(
    column: &'static str,
    text: &str,
) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|err| StoreError::Corrupt {
        column,
        reason: err.to_string(),
    })
}
