//! What readiness (`GET /health/ready`) asks the database: a real write (one heartbeat
//! row, the same row for every instance), and whether every embedded migration is
//! applied.

use super::{in_tx, now_text, with_pool, Backend, Database, StoreError};

impl Database {
    /// Write the heartbeat row in a transaction of its own: proof that the database
    /// takes a write now.
    pub async fn probe_write(&self) -> Result<(), StoreError> {
        let now = now_text();
        in_tx!(self, tx => {
            sqlx::query(
                "INSERT INTO readiness_probe (id, probed_at) VALUES (1, $1) \
                 ON CONFLICT (id) DO UPDATE SET probed_at = excluded.probed_at",
            )
            .bind(&now)
            .execute(&mut *tx)
            .await?;
            Ok(())
        })
    }

    /// `(applied, embedded)`: how many of the migrations this binary embeds the database
    /// has applied successfully, and how many it embeds.
    pub async fn migrations_applied(&self) -> Result<(usize, usize), StoreError> {
        let migrator = match self.backend {
            Backend::Sqlite(_) => &super::SQLITE_MIGRATIONS,
            Backend::Postgres(_) => &super::POSTGRES_MIGRATIONS,
        };
        let applied: Vec<i64> = with_pool!(self, pool => {
            sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success")
                .fetch_all(pool)
                .await?
        });
        let embedded: Vec<i64> = migrator
            .iter()
            .filter(|m| m.migration_type.is_up_migration())
            .map(|m| m.version)
            .collect();
        let present = embedded.iter().filter(|v| applied.contains(v)).count();
        Ok((present, embedded.len()))
    }
}
