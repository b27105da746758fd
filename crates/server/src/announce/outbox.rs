//! The transactional outbox: a webhook event is written in the transaction of the change
//! it announces, one row per configured endpoint (`webhook_outbox`), so a committed
//! change has its event and a rolled-back one has none. Its endpoint names and the
//! delivery workers' wake-up live here, below every area; the workers that deliver the
//! rows are the webhooks area's (`webhooks/store.rs`, `webhooks/deliver.rs`).

use std::sync::Arc;

use serde_json::{json, Value};
use tokio::sync::Notify;

use crate::db::{new_id, now_text, to_json_text, with_tx, StoreError, Tx};

/// The event a gate's opening writes: the one whose delivery sets the row's
/// `flags.delivered_webhook`.
pub const GATE_OPENED: &str = "interaction.opened";

/// What a store writing events needs: the names of the configured endpoints (one outbox
/// row per endpoint; none configured, nothing written) and the delivery workers'
/// wake-up. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Outbox {
    endpoints: Arc<[String]>,
    wakeup: Arc<Notify>,
}

impl Outbox {
    /// An outbox for these endpoint names.
    pub fn new(endpoints: Vec<String>) -> Self {
        Self {
            endpoints: endpoints.into(),
            wakeup: Arc::new(Notify::new()),
        }
    }

    /// The endpoint names events are written for.
    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    /// Notified when an event was written (before its commit: a woken worker waits a
    /// moment before it looks).
    pub(crate) fn wakeup(&self) -> &Notify {
        &self.wakeup
    }
}

/// One event to write: its type, where it belongs, and its `data` (ids and statuses
/// only: never a config, an answer's text or a secret).
#[derive(Debug, Clone)]
pub struct OutboxEvent {
    /// `interaction.opened`, `interaction.responded`, ..., `intervention.resolved`.
    pub event_type: String,
    /// The project it belongs to.
    pub project_id: String,
    /// The interaction or execution session the event is about.
    pub subject_id: String,
    /// The gate, for an interaction's event.
    pub interaction_id: Option<String>,
    /// The event's `data`.
    pub data: Value,
}

/// Write `event` for every endpoint of `outbox`, inside the caller's transaction: it
/// commits with the change, or neither does. One `webhook-id` for all its rows.
pub(crate) async fn enqueue(
    tx: &mut Tx<'_>,
    outbox: &Outbox,
    event: OutboxEvent,
) -> Result<(), StoreError> {
    if outbox.endpoints.is_empty() {
        return Ok(());
    }
    let event_id = format!("msg_{}", uuid::Uuid::now_v7().simple());
    let now = now_text();
    let payload = to_json_text(&json!({
        "type": event.event_type,
        "timestamp": now,
        "data": event.data,
    }));
    let sql = format!(
        "INSERT INTO webhook_outbox (id, event_id, endpoint, project_id, event_type, subject_id, \
         interaction_id, payload, state, attempts, next_attempt_ms, lease_expires_ms, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', 0, {}, 0, $9)",
        tx.now_ms_sql()
    );
    for endpoint in outbox.endpoints.iter() {
        with_tx!(&mut *tx, conn => {
            sqlx::query(&sql)
                .bind(new_id())
                .bind(&event_id)
                .bind(endpoint)
                .bind(&event.project_id)
                .bind(&event.event_type)
                .bind(&event.subject_id)
                .bind(&event.interaction_id)
                .bind(&payload)
                .bind(&now)
                .execute(&mut **conn)
                .await?;
        });
    }
    outbox.wakeup.notify_waiters();
    Ok(())
}
