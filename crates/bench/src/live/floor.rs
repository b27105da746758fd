//! Row 8: the physical floor under a respond: an empty loopback HTTP handler and one
//! SQLite WAL commit (and, as diagnostics, respond-shaped transactions from concurrent
//! writers).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::{
    bare_http, bind_loopback, failed, micros, respond_post, summary, LiveConfig, Runtimes,
    RESPOND_BODY,
};
use crate::stats::Summary;
use crate::BenchError;

/// Row 8: the physical floor.
#[derive(Debug, Clone, Serialize)]
pub struct FloorReport {
    /// Iterations per figure.
    pub iterations: usize,
    /// A loopback POST of the respond body to an empty axum handler, microseconds.
    pub http_empty_us: Summary,
    /// One `BEGIN IMMEDIATE; INSERT; COMMIT` on SQLite (WAL, synchronous=NORMAL),
    /// microseconds.
    pub sqlite_commit_us: Summary,
    /// Diagnostic: concurrent writers in the two figures below.
    pub concurrent_writers: usize,
    /// Diagnostic: transactions per concurrent series.
    pub concurrent_commits: usize,
    /// Respond-shaped transactions per second (`BEGIN IMMEDIATE`, a read, an update,
    /// two inserts, `COMMIT`, each statement its own await as in the server's store)
    /// when `concurrent_writers` tasks run them at once through the pool, queueing on
    /// SQLite's busy handler (the server's setup).
    pub busy_handler_commits_per_s: f64,
    /// The same load with the writers queued on an async mutex before `BEGIN IMMEDIATE`.
    pub async_mutex_commits_per_s: f64,
    /// The same transactions from one writer, one after the other.
    pub sequential_respond_tx_per_s: f64,
}

/// Row 8: an empty loopback handler and one SQLite WAL commit.
pub fn bench_floor(rt: &Runtimes, config: &LiveConfig) -> Result<FloorReport, BenchError> {
    // The empty handler, served on the server runtime like the real server.
    let (listener, addr) = rt.server.block_on(bind_loopback("the empty handler"))?;
    let app = axum::Router::new().route("/empty", axum::routing::post(|| async {}));
    let served = rt
        .server
        .spawn(async move { axum::serve(listener, app).await });
    let http = bare_http()?;
    let url = format!("http://{addr}/empty");
    let total = config.floor_iterations + config.warmup;
    let http_result = rt.driver.block_on(async {
        let mut samples = Vec::with_capacity(total);
        for i in 0..total {
            let started = Instant::now();
            let response = respond_post(&http, &url, "ApiKey floor")
                .send()
                .await
                .map_err(failed("empty-handler POST"))?;
            let status = response.status();
            response
                .bytes()
                .await
                .map_err(failed("empty-handler body"))?;
            if !status.is_success() {
                return Err(BenchError::Request {
                    what: "empty-handler POST".into(),
                    reason: format!("status {status}"),
                });
            }
            if i >= config.warmup {
                samples.push(micros(started.elapsed()));
            }
        }
        summary(&samples, "empty handler")
    });
    served.abort();
    let http_empty_us = http_result?;
    let sqlite = rt.driver.block_on(sqlite_commits(config))?;
    Ok(FloorReport {
        iterations: config.floor_iterations,
        http_empty_us,
        sqlite_commit_us: sqlite.sequential_us,
        concurrent_writers: sqlite.writers,
        concurrent_commits: sqlite.commits,
        busy_handler_commits_per_s: sqlite.busy_handler_per_s,
        async_mutex_commits_per_s: sqlite.async_mutex_per_s,
        sequential_respond_tx_per_s: sqlite.one_writer_per_s,
    })
}

struct SqliteFloor {
    sequential_us: Summary,
    writers: usize,
    commits: usize,
    busy_handler_per_s: f64,
    async_mutex_per_s: f64,
    one_writer_per_s: f64,
}

/// One `BEGIN IMMEDIATE; INSERT; COMMIT`.
async fn commit_one(pool: &sqlx::SqlitePool) -> Result<(), BenchError> {
    let mut tx = begin_immediate(pool).await?;
    insert_body(&mut tx).await?;
    tx.commit().await.map_err(failed("COMMIT"))
}

/// A transaction shaped like the server's respond: take the write lock, read a row,
/// update it, insert two rows, commit; each statement a separate await.
async fn respond_shaped_tx(pool: &sqlx::SqlitePool) -> Result<(), BenchError> {
    let mut tx = begin_immediate(pool).await?;
    sqlx::query("SELECT id FROM floor WHERE id = 1")
        .fetch_optional(&mut *tx)
        .await
        .map_err(failed("SELECT"))?;
    sqlx::query("UPDATE floor SET body = $1 WHERE id = 1")
        .bind(RESPOND_BODY)
        .execute(&mut *tx)
        .await
        .map_err(failed("UPDATE"))?;
    for _ in 0..2 {
        insert_body(&mut tx).await?;
    }
    tx.commit().await.map_err(failed("COMMIT"))
}

/// A transaction holding SQLite's write lock from its start, as the server's store takes it.
async fn begin_immediate(
    pool: &sqlx::SqlitePool,
) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, BenchError> {
    pool.begin_with("BEGIN IMMEDIATE")
        .await
        .map_err(failed("BEGIN IMMEDIATE"))
}

/// One `INSERT` of the respond body into the floor table.
async fn insert_body(tx: &mut sqlx::SqliteConnection) -> Result<(), BenchError> {
    sqlx::query("INSERT INTO floor (body) VALUES ($1)")
        .bind(RESPOND_BODY)
        .execute(tx)
        .await
        .map_err(failed("INSERT"))?;
    Ok(())
}

/// `writers` tasks run `per_writer` respond-shaped transactions each, at once;
/// transactions per second. With `lock`, each first takes the async mutex.
async fn concurrent_commits(
    pool: &sqlx::SqlitePool,
    writers: usize,
    per_writer: usize,
    lock: Option<Arc<tokio::sync::Mutex<()>>>,
) -> Result<f64, BenchError> {
    let started = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|_| {
            let pool = pool.clone();
            let lock = lock.clone();
            tokio::spawn(async move {
                for _ in 0..per_writer {
                    let _guard = match &lock {
                        Some(lock) => Some(lock.lock().await),
                        None => None,
                    };
                    respond_shaped_tx(&pool).await?;
                }
                Ok::<(), BenchError>(())
            })
        })
        .collect();
    for task in tasks {
        task.await
            .map_err(|e| BenchError::Invariant(format!("a writer task died: {e}")))??;
    }
    Ok((writers * per_writer) as f64 / started.elapsed().as_secs_f64())
}

async fn sqlite_commits(config: &LiveConfig) -> Result<SqliteFloor, BenchError> {
    use sqlx::sqlite::{
        SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
    };
    use std::str::FromStr;
    let dir = tempfile::tempdir().map_err(|source| BenchError::Io {
        what: "creating a temp dir for SQLite".into(),
        source,
    })?;
    let url = format!("sqlite://{}", dir.path().join("floor.db").display());
    // The same connection settings as the server's store.
    let options = SqliteConnectOptions::from_str(&url)
        .map_err(failed("parsing the SQLite URL"))?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(30))
        .foreign_keys(true);
    let pool = SqlitePoolOptions::new()
        .max_connections(8)
        .connect_with(options)
        .await
        .map_err(failed("opening SQLite"))?;
    sqlx::query("CREATE TABLE floor (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        .execute(&pool)
        .await
        .map_err(failed("creating the table"))?;
    let total = config.floor_iterations + config.warmup;
    let mut samples = Vec::with_capacity(total);
    for i in 0..total {
        let started = Instant::now();
        commit_one(&pool).await?;
        if i >= config.warmup {
            samples.push(micros(started.elapsed()));
        }
    }
    let sequential_us = summary(&samples, "sqlite commit")?;
    // Diagnostic for the concurrent figures: the same commits from 8 writers at once.
    let writers = gatehouse_client::DEFAULT_APPROVE_ALL_CONCURRENCY;
    let per_writer = (config.floor_iterations / 40).max(2);
    let one_writer = concurrent_commits(&pool, 1, writers * per_writer, None).await?;
    let busy_handler_per_s = concurrent_commits(&pool, writers, per_writer, None).await?;
    let lock = Arc::new(tokio::sync::Mutex::new(()));
    let async_mutex_per_s = concurrent_commits(&pool, writers, per_writer, Some(lock)).await?;
    pool.close().await;
    Ok(SqliteFloor {
        sequential_us,
        writers,
        commits: writers * per_writer,
        busy_handler_per_s,
        async_mutex_per_s,
        one_writer_per_s: one_writer,
    })
}
