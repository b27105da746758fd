//! Retention: delete the rows that only record history once they are older than the
//! settings say ([`crate::config::RetentionSettings`]): delivered and failed webhook events
//! (the webhooks area's outbox rows; pending ones never) and idempotency keys past their
//! window (the interactions area's). Without it they grew forever (issue 37, item 6).
//!
//! Every instance runs the task; each pass, one instance takes the `retention_lease` row
//! (a lease of one interval, judged by the database's clock as every lease) and prunes,
//! the others skip, and an instance that dies mid-pass leaves the lease to expire. Each
//! store deletes in batches of [`RetentionSettings::batch`] rows, one short statement
//! each, with a pause between them, so writers never wait for more than one batch.

use std::time::Duration;

use tokio::task::JoinHandle;

use crate::config::RetentionSettings;
use crate::db::{addable_lease_ms, format_time, with_pool, Database, StoreError};
use crate::AppState;

/// At most this many batches per table per pass: a pass ends, and the next takes the
/// rest, rather than holding the lease through a backlog of millions.
const MAX_BATCHES_PER_PASS: u32 = 200;

/// The pause between two batches, in which writers take their turn.
const BETWEEN_BATCHES: Duration = Duration::from_millis(5);

/// What one pass deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Delivered webhook events.
    pub delivered_events: u64,
    /// Failed webhook events.
    pub failed_events: u64,
    /// Idempotency keys.
    pub idempotency_keys: u64,
}

/// Start the retention task of this instance; it ends at shutdown.
pub fn spawn(state: AppState) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut shutdown = state.shutdown.clone();
        loop {
            if *shutdown.borrow() {
                return;
            }
            match prune_once(&state).await {
                Ok(Some(pruned)) if pruned != Pruned::default() => {
                    tracing::info!(
                        delivered_events = pruned.delivered_events,
                        failed_events = pruned.failed_events,
                        idempotency_keys = pruned.idempotency_keys,
                        "pruned rows past their retention"
                    );
                }
                Ok(_) => {}
                Err(err) => tracing::warn!(error = %err, "pruning failed; will retry"),
            }
            tokio::select! {
                _ = tokio::time::sleep(state.config.retention.interval) => {}
                _ = shutdown.wait_for(|stop| *stop) => return,
            }
        }
    })
}

/// One pass: `None` when another instance holds the lease, else what was deleted.
pub async fn prune_once(state: &AppState) -> Result<Option<Pruned>, StoreError> {
    let settings = &state.config.retention;
    let owner = uuid::Uuid::new_v4().to_string();
    if !take_lease(&state.db, &owner, settings.interval).await? {
        return Ok(None);
    }
    let mut pruned = Pruned::default();
    if let Some(before) = cutoff(settings.delivered_events) {
        pruned.delivered_events = batches(state, settings, |batch| {
            state.deliveries.prune_events("delivered", &before, batch)
        })
        .await?;
    }
    if let Some(before) = cutoff(settings.failed_events) {
        pruned.failed_events = batches(state, settings, |batch| {
            state.deliveries.prune_events("failed", &before, batch)
        })
        .await?;
    }
    if let Some(before) = cutoff(settings.idempotency_keys) {
        pruned.idempotency_keys = batches(state, settings, |batch| {
            state.interactions.prune_idempotency_keys(&before, batch)
        })
        .await?;
    }
    Ok(Some(pruned))
}

/// Run `delete` (one batch) until a batch deletes fewer than a full one, the pass's cap
/// is reached or the server stops: how many rows were deleted.
async fn batches<F, Fut>(
    state: &AppState,
    settings: &RetentionSettings,
    mut delete: F,
) -> Result<u64, StoreError>
where
    F: FnMut(u32) -> Fut,
    Fut: std::future::Future<Output = Result<u64, StoreError>>,
{
    let batch = settings.batch.max(1);
    let mut deleted = 0;
    for _ in 0..MAX_BATCHES_PER_PASS {
        let n = delete(batch).await?;
        deleted += n;
        if n < u64::from(batch) || *state.shutdown.borrow() {
            break;
        }
        tokio::time::sleep(BETWEEN_BATCHES).await;
    }
    Ok(deleted)
}

/// The store's time `age` ago: rows written before it are past their retention.
fn cutoff(age: Option<Duration>) -> Option<String> {
    let age = chrono::Duration::from_std(age?).ok()?;
    chrono::Utc::now().checked_sub_signed(age).map(format_time)
}

/// Take the pruning lease for `length` when nobody holds it (by the database's clock):
/// true when this `owner` now holds it.
pub async fn take_lease(db: &Database, owner: &str, length: Duration) -> Result<bool, StoreError> {
    let now = db.now_ms_sql();
    let sql = format!(
        "UPDATE retention_lease SET owner = $1, expires_ms = {now} + $2 \
         WHERE name = 'prune' AND expires_ms <= {now}"
    );
    let length_ms = addable_lease_ms(i64::try_from(length.as_millis()).unwrap_or(i64::MAX));
    with_pool!(db, pool => {
        let done = sqlx::query(&sql).bind(owner).bind(length_ms).execute(pool).await?;
        Ok(done.rows_affected() == 1)
    })
}
