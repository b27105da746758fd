//! Direct database access for tests that must look at (or tamper with) what is stored,
//! on whichever backend the test server runs.

use gatehouse_server::testing::TestServer;
use serde_json::Value;
use sqlx::Row;

/// A second connection pool on a test server's database.
pub enum Db {
    Sqlite(sqlx::SqlitePool, std::path::PathBuf),
    Postgres(sqlx::PgPool),
}

impl Db {
    pub async fn open(server: &TestServer) -> Self {
        match &server.options.database_url {
            Some(url) if url.starts_with("postgres") => {
                Db::Postgres(sqlx::PgPool::connect(url).await.unwrap())
            }
            _ => {
                let url = format!("sqlite://{}", server.database_path.display());
                Db::Sqlite(
                    sqlx::SqlitePool::connect(&url).await.unwrap(),
                    server.database_path.clone(),
                )
            }
        }
    }

    /// Run a statement with text parameters.
    pub async fn execute(&self, sql: &str, params: &[&str]) -> u64 {
        match self {
            Db::Sqlite(pool, _) => {
                let mut query = sqlx::query(sql);
                for p in params {
                    query = query.bind(*p);
                }
                query.execute(pool).await.unwrap().rows_affected()
            }
            Db::Postgres(pool) => {
                let mut query = sqlx::query(sql);
                for p in params {
                    query = query.bind(*p);
                }
                query.execute(pool).await.unwrap().rows_affected()
            }
        }
    }

    /// One optional text value.
    pub async fn text(&self, sql: &str, params: &[&str]) -> Option<String> {
        match self {
            Db::Sqlite(pool, _) => {
                let mut query = sqlx::query(sql);
                for p in params {
                    query = query.bind(*p);
                }
                query
                    .fetch_optional(pool)
                    .await
                    .unwrap()
                    .and_then(|row| row.get::<Option<String>, _>(0))
            }
            Db::Postgres(pool) => {
                let mut query = sqlx::query(sql);
                for p in params {
                    query = query.bind(*p);
                }
                query
                    .fetch_optional(pool)
                    .await
                    .unwrap()
                    .and_then(|row| row.get::<Option<String>, _>(0))
            }
        }
    }

    /// The query plan of `sql` with text `params`, one line per plan node: SQLite's
    /// `EXPLAIN QUERY PLAN` details; PostgreSQL's `EXPLAIN` with sequential scans, bitmap
    /// scans and sorts disabled for the session, so the plan shows whether an index can
    /// serve the statement in its order (without one, the plan sorts or scans all the
    /// same: the settings only price those nodes out).
    pub async fn explain(&self, sql: &str, params: &[String]) -> Vec<String> {
        self.explain_with(sql, params, false).await
    }

    /// [`Db::explain`]; with `generic`, PostgreSQL shows the plan it uses for a prepared
    /// statement after five runs, made without the bound values
    /// (`plan_cache_mode = force_generic_plan`).
    pub async fn explain_with(&self, sql: &str, params: &[String], generic: bool) -> Vec<String> {
        match self {
            Db::Sqlite(pool, _) => {
                let text = format!("EXPLAIN QUERY PLAN {sql}");
                let mut query = sqlx::query(&text);
                for p in params {
                    query = query.bind(p);
                }
                let rows = query.fetch_all(pool).await.unwrap();
                rows.iter()
                    .map(|row| row.get::<String, _>("detail"))
                    .collect()
            }
            Db::Postgres(pool) => {
                let mut conn = pool.acquire().await.unwrap();
                for setting in ["enable_seqscan", "enable_bitmapscan", "enable_sort"] {
                    sqlx::query(&format!("SET {setting} = off"))
                        .execute(&mut *conn)
                        .await
                        .unwrap();
                }
                if generic {
                    sqlx::query("SET plan_cache_mode = force_generic_plan")
                        .execute(&mut *conn)
                        .await
                        .unwrap();
                }
                let text = format!("EXPLAIN {sql}");
                let mut query = sqlx::query(&text);
                for p in params {
                    query = query.bind(p);
                }
                let rows = query.fetch_all(&mut *conn).await.unwrap();
                let plan = rows.iter().map(|row| row.get::<String, _>(0)).collect();
                sqlx::query("RESET ALL").execute(&mut *conn).await.unwrap();
                plan
            }
        }
    }

    /// The parked state of the turn that opened interaction `id`.
    pub async fn parked_state_of_gate(&self, interaction_id: &str) -> (String, Value) {
        let turn_id = self
            .text(
                "SELECT turn_id FROM interactions WHERE id = $1",
                &[interaction_id],
            )
            .await
            .unwrap();
        let state = self
            .text("SELECT parked_state FROM turns WHERE id = $1", &[&turn_id])
            .await
            .unwrap();
        (turn_id, serde_json::from_str(&state).unwrap())
    }

    pub async fn set_parked_state(&self, turn_id: &str, state: &Value) {
        let text = state.to_string();
        let changed = self
            .execute(
                "UPDATE turns SET parked_state = $1 WHERE id = $2",
                &[&text, turn_id],
            )
            .await;
        assert_eq!(changed, 1);
    }

    /// Everything stored, as text: the SQLite database file and its WAL byte for byte
    /// (what an attacker with the file reads), or every row of every Postgres table.
    pub async fn everything(&self) -> String {
        match self {
            Db::Sqlite(_, path) => {
                let mut bytes = Vec::new();
                for suffix in ["", "-wal", "-shm", "-journal"] {
                    let file = std::path::PathBuf::from(format!("{}{suffix}", path.display()));
                    if let Ok(content) = std::fs::read(&file) {
                        bytes.extend_from_slice(&content);
                    }
                }
                String::from_utf8_lossy(&bytes).into_owned()
            }
            Db::Postgres(pool) => {
                let tables: Vec<String> = sqlx::query(
                    "SELECT table_name::text FROM information_schema.tables \
                     WHERE table_schema = 'public'",
                )
                .fetch_all(pool)
                .await
                .unwrap()
                .iter()
                .map(|row| row.get::<String, _>(0))
                .collect();
                let mut all = String::new();
                for table in tables {
                    let rows = sqlx::query(&format!("SELECT row_to_json(t)::text FROM {table} t"))
                        .fetch_all(pool)
                        .await
                        .unwrap();
                    for row in rows {
                        all.push_str(&row.get::<String, _>(0));
                        all.push('\n');
                    }
                }
                all
            }
        }
    }

    pub async fn close(self) {
        match self {
            Db::Sqlite(pool, _) => pool.close().await,
            Db::Postgres(pool) => pool.close().await,
        }
    }
}
