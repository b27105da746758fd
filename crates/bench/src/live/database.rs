//! A benchmark's own connection to the server's database (SQLite or PostgreSQL, by URL):
//! row 9 counts the resume queue and reads the server's timestamps of each resume through
//! it, row 11 generates history through it.

use std::str::FromStr;

use super::failed;
use crate::BenchError;

/// One connection to the server's database.
pub(super) enum BenchDatabase {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
}

impl BenchDatabase {
    /// One connection to `url` (`postgres://…` or `sqlite://…`); on SQLite with a small
    /// page cache, since the server runs in the benchmark's process and row 11 reports
    /// its memory, not this connection's.
    pub(super) async fn connect(url: &str) -> Result<Self, BenchError> {
        Ok(if url.starts_with("postgres") {
            Self::Postgres(
                sqlx::postgres::PgPoolOptions::new()
                    .max_connections(1)
                    .connect(url)
                    .await
                    .map_err(failed("opening the Postgres database"))?,
            )
        } else {
            let options = sqlx::sqlite::SqliteConnectOptions::from_str(url)
                .map_err(failed("reading the SQLite URL"))?
                .pragma("cache_size", "-256");
            Self::Sqlite(
                sqlx::sqlite::SqlitePoolOptions::new()
                    .max_connections(1)
                    .connect_with(options)
                    .await
                    .map_err(failed("opening the SQLite database"))?,
            )
        })
    }

    pub(super) fn is_postgres(&self) -> bool {
        matches!(self, Self::Postgres(_))
    }

    /// Run `sql` (no result); `what` names it in an error, with the statement's start.
    pub(super) async fn execute(&self, sql: &str, what: &str) -> Result<(), BenchError> {
        match self {
            Self::Sqlite(pool) => sqlx::query(sql).execute(pool).await.map(drop),
            Self::Postgres(pool) => sqlx::query(sql).execute(pool).await.map(drop),
        }
        .map_err(|e| BenchError::Request {
            what: what.to_string(),
            reason: format!("{e}; statement: {}", &sql[..sql.len().min(200)]),
        })
    }

    /// `SELECT COUNT(*) …` with its one parameter `$1` bound to `bind`, if given.
    pub(super) async fn count(
        &self,
        sql: &str,
        bind: Option<&str>,
        what: &'static str,
    ) -> Result<u64, BenchError> {
        let n: i64 = match self {
            Self::Sqlite(pool) => {
                let query = sqlx::query_scalar(sql);
                let query = match bind {
                    Some(value) => query.bind(value),
                    None => query,
                };
                query.fetch_one(pool).await
            }
            Self::Postgres(pool) => {
                let query = sqlx::query_scalar(sql);
                let query = match bind {
                    Some(value) => query.bind(value),
                    None => query,
                };
                query.fetch_one(pool).await
            }
        }
        .map_err(failed(what))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// The first column of every row of `sql` (text), with its one parameter `$1` bound
    /// to `bind`.
    pub(super) async fn texts(
        &self,
        sql: &str,
        bind: &str,
        what: &'static str,
    ) -> Result<Vec<String>, BenchError> {
        match self {
            Self::Sqlite(pool) => sqlx::query_scalar(sql).bind(bind).fetch_all(pool).await,
            Self::Postgres(pool) => sqlx::query_scalar(sql).bind(bind).fetch_all(pool).await,
        }
        .map_err(failed(what))
    }

    pub(super) async fn close(self) {
        match self {
            Self::Sqlite(pool) => pool.close().await,
            Self::Postgres(pool) => pool.close().await,
        }
    }
}
