//! The plumbing every area's store writes through: one [`Database`] over SQLite (default,
//! a WAL file) or Postgres, its transactions, typed row access, the one time and id
//! format, the JSON column helpers, the embedded migrations and readiness's SQL. It knows
//! no feature and no area's table: each area's store (`interactions/store/`,
//! `execution/store.rs`, `webhooks/store.rs`) holds a `Database` and keeps its own
//! queries.
//!
//! The SQL is written once and portable (`$N` parameters, `ON CONFLICT`, `RETURNING`);
//! each backend has its own migration folder embedded in the binary (`migrations/sqlite`,
//! `migrations/postgres`: the same schema in two dialects, changed together). Every
//! write that must be atomic (respond + its outbox rows, resume + resolve) runs in one
//! transaction (`in_tx!`; a write that announces, `crate::announce::in_announced_tx!`); another area's share of it is a `crate::seams::JoinedWrite`. Times are
//! stored as text in one format (`format_time`).
//!
//! **An unavailable database is told apart, at once.** Every wait for the database is
//! bounded by [`Database::acquire_timeout`] (a pooled connection; on SQLite also this
//! process's turn to write and another process's write lock, the busy timeout), and
//! [`StoreError::is_unavailable`] is the one place that recognizes a database that cannot
//! do the work now (unreachable, out of space, locked): callers answer it 503, and
//! readiness counts it ([`Database::last_unavailable_write`]). A connection whose
//! transaction did not end cleanly (a failed COMMIT, a failed ROLLBACK, a cancelled
//! body) is closed when it is released, never pooled inside a transaction.

mod readiness;

use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use sqlx::migrate::Migrator;
use sqlx::pool::PoolConnectionMetadata;
use sqlx::postgres::{PgPool, PgPoolOptions, PgRow};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
    SqliteSynchronous,
};
use sqlx::Row;

/// The default of [`Database::acquire_timeout`] (and of
/// [`ServerConfig::db_acquire_timeout`](crate::ServerConfig::db_acquire_timeout)).
pub const DEFAULT_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

/// The migrations of each backend, embedded in the binary.
static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("migrations/postgres");

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database URL names no supported backend.
    #[error("unsupported database url {0:?}: use sqlite://PATH or postgres://...")]
    UnsupportedUrl(String),
    /// The database answered with an error (connection, constraint, SQL).
    #[error("database error: {0}")]
    Database(sqlx::Error),
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
    /// The database could not take the work within [`Database::acquire_timeout`] (on
    /// SQLite: this process's writers ahead of it never let it write).
    #[error("database unavailable: {0}")]
    Unavailable(String),
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

    /// True when the database cannot do the work now, through no fault of the request, so
    /// that a retry can succeed once it is back: unreachable (connection refused, reset or
    /// closed, terminated by an administrator or a crash, still starting up), no
    /// connection within [`Database::acquire_timeout`], out of space or memory, or its write
    /// lock held past the busy timeout. The one place such errors are recognized: the HTTP
    /// layers answer them 503 `UNAVAILABLE` with `Retry-After`, readiness counts them.
    /// Anything else (a constraint, bad SQL, a corrupt row) is a server fault.
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::Unavailable(_) => true,
            Self::Database(err) => sqlx_error_is_unavailable(err),
            Self::UnsupportedUrl(_) | Self::Migrate(_) | Self::Corrupt { .. } | Self::Fenced(_) => {
                false
            }
        }
    }
}

impl StoreError {
    /// True when the call waited the whole [`Database::acquire_timeout`] for the database in
    /// vain: no pooled connection in time, no turn to write (SQLite), or another
    /// process's write lock held past the busy timeout (SQLite `BUSY`/`LOCKED`).
    fn is_wait_timeout(&self) -> bool {
        match self {
            Self::Unavailable(_) => true,
            Self::Database(sqlx::Error::PoolTimedOut) => true,
            Self::Database(sqlx::Error::Database(db)) => {
                db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some()
                    && db
                        .code()
                        .and_then(|code| code.parse::<i32>().ok())
                        .is_some_and(|code| matches!(code & 0xff, 5 | 6))
            }
            _ => false,
        }
    }
}

impl From<sqlx::Error> for StoreError {
    /// Every database error enters the store here: one that waited the whole acquire
    /// timeout in vain also marks the request it happened in ([`waiting_at_most_once`]).
    fn from(err: sqlx::Error) -> Self {
        let err = Self::Database(err);
        if err.is_wait_timeout() {
            mark_waited_out();
        }
        err
    }
}

/// Mark the request this task serves as having waited out the database (a no-op outside
/// [`waiting_at_most_once`]).
fn mark_waited_out() {
    let _ = WAITED_OUT.try_with(|waited| waited.set(true));
}

tokio::task_local! {
    /// Whether the request (or resume attempt) this task serves already waited the whole
    /// acquire timeout for the database once ([`waiting_at_most_once`]).
    static WAITED_OUT: std::cell::Cell<bool>;
}

/// Run `work` (one request, or one resume attempt) so that it waits for an unavailable
/// database at most once: after one of its calls waited the whole
/// [`Database::acquire_timeout`] in vain, its later database calls fail at once
/// ([`StoreError::Unavailable`]) instead of each waiting again (a turn calls the database
/// at every checkpoint). So a request that meets a database that is down answers 503
/// within about one acquire timeout (on SQLite two: its turn to write, then the lock),
/// however many calls it would have made. Outside such a scope nothing changes.
pub async fn waiting_at_most_once<F: std::future::Future>(work: F) -> F::Output {
    WAITED_OUT.scope(std::cell::Cell::new(false), work).await
}

/// See [`StoreError::is_unavailable`].
fn sqlx_error_is_unavailable(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => {
            if let Some(pg) = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
                postgres_code_is_unavailable(pg.code())
            } else if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
                db.code()
                    .and_then(|code| code.parse::<i32>().ok())
                    .is_some_and(sqlite_code_is_unavailable)
            } else {
                false
            }
        }
        _ => false,
    }
}

/// PostgreSQL SQLSTATEs of a database that cannot serve now: class 08 (connection
/// exception), class 53 (insufficient resources: disk full, out of memory, too many
/// connections), 57P01-57P03 (terminated by an administrator or a crash, cannot connect
/// yet), 25006 (a read-only standby, as after a failover).
fn postgres_code_is_unavailable(code: &str) -> bool {
    code.starts_with("08")
        || code.starts_with("53")
        || matches!(code, "57P01" | "57P02" | "57P03" | "25006")
}

/// SQLite result codes (the primary code, the low byte of an extended one) of a database
/// that cannot serve now: BUSY (5) and LOCKED (6) past the busy timeout, IOERR (10), FULL
/// (13: `database or disk is full`), CANTOPEN (14).
fn sqlite_code_is_unavailable(extended_code: i32) -> bool {
    matches!(extended_code & 0xff, 5 | 6 | 10 | 13 | 14)
}

/// Which database the store runs on.
#[derive(Debug, Clone)]
pub(crate) enum Backend {
    /// An embedded SQLite file (WAL).
    Sqlite(SqlitePool),
    /// A Postgres server.
    Postgres(PgPool),
}

/// A pool's connections at one moment ([`Database::pool_use`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolUse {
    /// Connections open (idle or in use).
    pub open: usize,
    /// Open connections waiting in the pool.
    pub idle: usize,
    /// The most the pool opens.
    pub max: usize,
}

/// The durable store of the control plane. Cheap to clone (pools are shared).
#[derive(Debug, Clone)]
pub struct Database {
    pub(crate) backend: Backend,
    /// SQLite has one writer at a time. Writers of this process queue here, FIFO, before
    /// `BEGIN IMMEDIATE`, and are woken the moment the previous one commits; without it
    /// they collide on the file lock and sleep in SQLite's busy handler (1 to 100 ms
    /// back-offs for a lock held ~100 us), which made 8 parallel responds several times
    /// slower than one by one (bench/NOTES.md). Other processes still meet the busy
    /// timeout. Unused on Postgres, whose row locks serve concurrent writers.
    pub(crate) sqlite_writer: Arc<tokio::sync::Mutex<()>>,
    /// See [`Database::acquire_timeout`].
    acquire_timeout: Duration,
    /// The last write refused because the database was unavailable, and why.
    last_unavailable: Arc<Mutex<Option<(Instant, String)>>>,
}

/// Run `$body` with `$pool` bound to the backend's pool (the body is compiled once per
/// backend, so the same portable SQL serves both). Inside [`waiting_at_most_once`], a
/// request that already waited out the database gets [`StoreError::Unavailable`] at once
/// (the enclosing function's error type takes a `StoreError`).
macro_rules! with_pool {
    ($store:expr, $pool:ident => $body:expr) => {{
        // A request that already waited out the database does not wait again.
        $store.refuse_if_waited_out()?;
        match &$store.backend {
            $crate::db::Backend::Sqlite($pool) => $body,
            $crate::db::Backend::Postgres($pool) => $body,
        }
    }};
}

/// Run `$body` (an expression of type `Result<T, StoreError>` that may use `$tx` as an
/// executor via `&mut *$tx`) inside one transaction: committed on `Ok`, rolled back on
/// `Err`. On SQLite a writer first takes its turn on `Database::sqlite_writer` (waiting at
/// most [`Database::acquire_timeout`]), then the write lock up front (`BEGIN IMMEDIATE`), so
/// it never fails on a stale snapshot and never sleeps in the busy handler behind a
/// writer of this process. A body must not open another transaction on the same store
/// (the turn is not re-entrant). A failure the database is to blame for is remembered
/// ([`Database::last_unavailable_write`]); a connection left inside a transaction (a failed
/// COMMIT or ROLLBACK) is closed when released, not pooled (`close_if_in_transaction`).
/// Inside [`waiting_at_most_once`], a request that already waited out the database gets
/// [`StoreError::Unavailable`] at once.
macro_rules! in_tx {
    ($store:expr, $tx:ident => $body:expr) => {{
        let store: &$crate::db::Database = &$store;
        let out: Result<_, $crate::db::StoreError> = async {
            store.refuse_if_waited_out()?;
            match &store.backend {
                $crate::db::Backend::Sqlite(pool) => {
                    // Held until commit or rollback: see `Database::sqlite_writer`.
                    let _write_turn = store.sqlite_write_turn().await?;
                    let mut $tx = pool.begin_with("BEGIN IMMEDIATE").await?;
                    let out: Result<_, $crate::db::StoreError> = async { $body }.await;
                    $crate::db::finish_tx($tx, out).await
                }
                $crate::db::Backend::Postgres(pool) => {
                    let mut $tx = pool.begin().await?;
                    let out: Result<_, $crate::db::StoreError> = async { $body }.await;
                    $crate::db::finish_tx($tx, out).await
                }
            }
        }
        .await;
        store.note_write(&out);
        out
    }};
}

pub(crate) use in_tx;

/// The end of [`in_tx`] on either backend: commit `tx` when `out` is `Ok`, roll it back
/// otherwise. When the COMMIT or the ROLLBACK fails, the connection may still be inside
/// the transaction (SQLite may have ended it by itself, as on a full disk, while sqlx
/// still counts it open): the pool closes it on release (`close_if_in_transaction`).
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
            if let Err(rollback) = tx.rollback().await {
                tracing::warn!(error = %rollback, "rolling back a failed transaction failed; its connection is closed");
            }
            Err(err)
        }
    }
}

/// The pool's release check: a connection still inside a transaction is closed instead
/// of going back to the pool, so no later caller gets it half-way through someone
/// else's transaction (sqlx then refuses every `BEGIN` on it: "attempted to call
/// begin_with at non-zero transaction depth"). The pool opens a fresh one when needed.
fn close_if_in_transaction<C: sqlx::Connection>(
    conn: &mut C,
    _meta: PoolConnectionMetadata,
) -> BoxFuture<'_, Result<bool, sqlx::Error>> {
    let keep = !conn.is_in_transaction();
    if !keep {
        tracing::warn!("closing a pooled connection left inside a transaction");
    }
    Box::pin(async move { Ok(keep) })
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

    /// [`Database::now_ms_sql`] of this transaction's backend.
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
            $crate::db::Tx::Sqlite($conn) => $body,
            $crate::db::Tx::Postgres($conn) => $body,
        }
    };
}
pub(crate) use with_tx;

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

impl Database {
    /// [`Database::connect_with`] with the default acquire timeout
    /// ([`DEFAULT_ACQUIRE_TIMEOUT`]).
    pub async fn connect(database_url: &str) -> Result<Self, StoreError> {
        Self::connect_with(database_url, DEFAULT_ACQUIRE_TIMEOUT).await
    }

    /// Connect to `database_url` (`sqlite://PATH`, `sqlite::memory:`, `postgres://...`),
    /// creating a SQLite file when missing, and apply the embedded migrations. No wait
    /// for the database lasts longer than `acquire_timeout` ([`Database::acquire_timeout`]).
    pub async fn connect_with(
        database_url: &str,
        acquire_timeout: Duration,
    ) -> Result<Self, StoreError> {
        let backend = if database_url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(database_url)?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .busy_timeout(acquire_timeout)
                .foreign_keys(true)
                // 512 KiB of page cache per connection, not SQLite's 2 MiB: the pool's 8
                // connections each cache the same hot pages, which the OS page cache (one
                // for every connection and instance) holds anyway. It keeps the upper
                // levels of every index, what repeated lookups reuse, and bounds what a
                // long history adds to the server's memory (BENCHMARKS.md row 11).
                .pragma("cache_size", "-512");
            // An in-memory database exists per connection: keep exactly one (and never
            // close it on release: that would drop the database).
            let in_memory =
                database_url.contains(":memory:") || database_url.contains("mode=memory");
            let mut pool_options = SqlitePoolOptions::new()
                .max_connections(if in_memory { 1 } else { 8 })
                .acquire_timeout(acquire_timeout);
            if !in_memory {
                pool_options = pool_options.after_release(close_if_in_transaction);
            }
            let pool = pool_options.connect_with(options).await?;
            SQLITE_MIGRATIONS.run(&pool).await?;
            Backend::Sqlite(pool)
        } else if database_url.starts_with("postgres://")
            || database_url.starts_with("postgresql://")
        {
            let pool = PgPoolOptions::new()
                .max_connections(16)
                .acquire_timeout(acquire_timeout)
                .after_release(close_if_in_transaction)
                .connect(database_url)
                .await?;
            POSTGRES_MIGRATIONS.run(&pool).await?;
            Backend::Postgres(pool)
        } else {
            return Err(StoreError::UnsupportedUrl(database_url.to_string()));
        };
        Ok(Self {
            backend,
            sqlite_writer: Arc::new(tokio::sync::Mutex::new(())),
            acquire_timeout,
            last_unavailable: Arc::new(Mutex::new(None)),
        })
    }

    /// The longest any caller waits for the database: for a pooled connection (a
    /// PostgreSQL that is down is retried until then), and on SQLite for this process's
    /// turn to write and then for another process's write lock (the busy timeout), so
    /// a SQLite write waits at most twice it. Then the caller gets an error that
    /// [`StoreError::is_unavailable`].
    pub fn acquire_timeout(&self) -> Duration {
        self.acquire_timeout
    }

    /// This process's turn to write on SQLite, within [`Database::acquire_timeout`].
    pub(crate) async fn sqlite_write_turn(
        &self,
    ) -> Result<tokio::sync::MutexGuard<'_, ()>, StoreError> {
        tokio::time::timeout(self.acquire_timeout, self.sqlite_writer.lock())
            .await
            .map_err(|_| {
                mark_waited_out();
                StoreError::Unavailable(format!(
                    "no turn to write within {} ms: the writers ahead are waiting for the database",
                    self.acquire_timeout.as_millis()
                ))
            })
    }

    /// [`StoreError::Unavailable`] when the request this task serves already waited out
    /// the database once ([`waiting_at_most_once`]).
    pub(crate) fn refuse_if_waited_out(&self) -> Result<(), StoreError> {
        if WAITED_OUT.try_with(|waited| waited.get()).unwrap_or(false) {
            return Err(StoreError::Unavailable(format!(
                "an earlier call of this request waited {} ms for the database in vain",
                self.acquire_timeout.as_millis()
            )));
        }
        Ok(())
    }

    /// Remember a write the database was to blame for (see
    /// [`Database::last_unavailable_write`]).
    pub(crate) fn note_write<T>(&self, out: &Result<T, StoreError>) {
        if let Err(err) = out {
            if err.is_unavailable() {
                let mut last = self
                    .last_unavailable
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                *last = Some((Instant::now(), err.to_string()));
            }
        }
    }

    /// How long ago a write last failed because the database was unavailable, and why.
    /// A small write (a readiness probe) may still fit where a larger one does not (a
    /// nearly full disk): readiness counts these too.
    pub fn last_unavailable_write(&self) -> Option<(Duration, String)> {
        let last = self
            .last_unavailable
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        last.as_ref().map(|(at, why)| (at.elapsed(), why.clone()))
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

    /// The pool's connections now: open, idle among them, and the most it opens.
    pub fn pool_use(&self) -> PoolUse {
        let (open, idle) = match &self.backend {
            Backend::Sqlite(pool) => (pool.size(), pool.num_idle()),
            Backend::Postgres(pool) => (pool.size(), pool.num_idle()),
        };
        PoolUse {
            open: open as usize,
            idle,
            max: self.max_connections(),
        }
    }

    /// The most connections the pool opens (each holds a file descriptor or three).
    pub fn max_connections(&self) -> usize {
        let max = match &self.backend {
            Backend::Sqlite(pool) => pool.options().get_max_connections(),
            Backend::Postgres(pool) => pool.options().get_max_connections(),
        };
        usize::try_from(max).unwrap_or(usize::MAX)
    }

    /// Check out every connection of the pool (waiting for each, within
    /// [`Database::acquire_timeout`]) and keep them until the value is dropped: whatever
    /// still answers meanwhile needs no database connection. For tests and fault drills.
    pub async fn hold_every_connection(&self) -> Result<HeldConnections, StoreError> {
        let mut held = HeldConnections::default();
        for _ in 0..self.max_connections() {
            match &self.backend {
                Backend::Sqlite(pool) => held.sqlite.push(pool.acquire().await?),
                Backend::Postgres(pool) => held.postgres.push(pool.acquire().await?),
            }
        }
        Ok(held)
    }

    /// Close every pooled connection (waits for checked-out ones to come back).
    pub async fn close(&self) {
        match &self.backend {
            Backend::Sqlite(pool) => pool.close().await,
            Backend::Postgres(pool) => pool.close().await,
        }
    }
}

/// Every connection of a pool, checked out ([`Database::hold_every_connection`]);
/// dropping it returns them.
#[derive(Default)]
pub struct HeldConnections {
    sqlite: Vec<sqlx::pool::PoolConnection<sqlx::Sqlite>>,
    postgres: Vec<sqlx::pool::PoolConnection<sqlx::Postgres>>,
}

impl std::fmt::Debug for HeldConnections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldConnections")
            .field("held", &(self.sqlite.len() + self.postgres.len()))
            .finish()
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
/// A stored config, read with its `json.dumps` measure taken as it is read (see
/// [`gatehouse_wire::effective::MeasuredConfig`]).
pub(crate) fn measured_config_text(
    column: &'static str,
    text: &str,
) -> Result<gatehouse_wire::effective::MeasuredConfig, StoreError> {
    gatehouse_wire::effective::MeasuredConfig::from_json(text).map_err(|err| corrupt(column, err))
}

pub(crate) fn from_json_text<T: serde::de::DeserializeOwned>(
    column: &'static str,
    text: &str,
) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|err| corrupt(column, err))
}

/// A stored column that does not read back.
fn corrupt(column: &'static str, err: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        column,
        reason: err.to_string(),
    }
}
