//! The durable outbox: events written in the transaction of the change they announce
//! (`enqueue`: each area builds its own events, `interactions/store/rows.rs` a gate's,
//! `execution/store.rs` an intervention's), one row per event and endpoint, and the
//! delivery workers' SQL: claim under a lease, finish as delivered (with the gate's
//! `flags.delivered_webhook`) or failed (retried later, or given up).

use std::sync::Arc;

use gatehouse_wire::webhooks::WebhookDelivery;
use serde_json::{json, Value};
use tokio::sync::Notify;

use crate::store::{
    addable_lease_ms, new_id, now_text, to_json_text, with_pool, with_tx, Backend, RowExt, Store,
    StoreError, Tx,
};

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
pub(crate) struct Event {
    pub(crate) event_type: String,
    pub(crate) project_id: String,
    /// The interaction or execution session the event is about.
    pub(crate) subject_id: String,
    /// The gate, for an interaction's event.
    pub(crate) interaction_id: Option<String>,
    pub(crate) data: Value,
}

/// Write `event` for every endpoint of `outbox`, inside the caller's transaction: it
/// commits with the change, or neither does. One `webhook-id` for all its rows.
pub(crate) async fn enqueue(
    tx: &mut Tx<'_>,
    outbox: &Outbox,
    event: Event,
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

/// One outbox row claimed by a delivery worker.
#[derive(Debug, Clone)]
pub struct ClaimedDelivery {
    /// The row.
    pub id: String,
    /// `webhook-id`.
    pub event_id: String,
    /// The endpoint's name.
    pub endpoint: String,
    /// The event's type.
    pub event_type: String,
    /// The gate, for an interaction's event.
    pub interaction_id: Option<String>,
    /// The body, exactly as sent and signed.
    pub payload: String,
    /// This attempt's number (1-based).
    pub attempts: i64,
    /// The claim's lease owner (fences the attempt's outcome).
    pub owner: String,
}

const ENTRY_COLUMNS: &str = "event_id, endpoint, event_type, subject_id, state, attempts, \
     next_attempt_ms, last_error, created_at, delivered_at";

fn entry_from_row(row: &impl RowExt) -> Result<WebhookDelivery, StoreError> {
    let state = row.text("state")?;
    let next_ms = row.int("next_attempt_ms")?;
    let next_attempt_at = (state == "pending")
        .then(|| chrono::DateTime::from_timestamp_millis(next_ms).map(crate::store::format_time))
        .flatten();
    Ok(WebhookDelivery {
        event_id: row.text("event_id")?,
        endpoint: row.text("endpoint")?,
        event_type: row.text("event_type")?,
        subject_id: row.text("subject_id")?,
        state,
        attempts: u64::try_from(row.int("attempts")?).unwrap_or(0),
        next_attempt_at,
        last_error: row.opt_text("last_error")?,
        created_at: row.text("created_at")?,
        delivered_at: row.opt_text("delivered_at")?,
        extra: Default::default(),
    })
}

/// `$first, $first+1, ...` for `n` values.
fn placeholders(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Store {
    /// Claim the most overdue pending row of one of `endpoints` for `lease_ms`: not
    /// leased (or its lease expired by the store's clock), its next attempt due. The
    /// attempt counter moves with the claim, so an instance that dies mid-attempt still
    /// counts it. `None` when nothing is due.
    pub async fn claim_webhook(
        &self,
        endpoints: &[String],
        lease_ms: i64,
    ) -> Result<Option<ClaimedDelivery>, StoreError> {
        if endpoints.is_empty() {
            return Ok(None);
        }
        let now = self.now_ms_sql();
        let lock = match self.backend {
            Backend::Postgres(_) => " FOR UPDATE SKIP LOCKED",
            Backend::Sqlite(_) => "",
        };
        let due = format!(
            "state = 'pending' AND next_attempt_ms <= {now} AND lease_expires_ms < {now} \
             AND endpoint IN ({})",
            placeholders(3, endpoints.len())
        );
        let sql = format!(
            "UPDATE webhook_outbox SET lease_owner = $1, lease_expires_ms = {now} + $2, \
             attempts = attempts + 1 \
             WHERE id = (SELECT id FROM webhook_outbox WHERE {due} \
                 ORDER BY next_attempt_ms, id LIMIT 1{lock}) AND {due} \
             RETURNING id, event_id, endpoint, event_type, interaction_id, payload, attempts"
        );
        let owner = uuid::Uuid::new_v4().to_string();
        let lease_ms = addable_lease_ms(lease_ms);
        let claimed = crate::store::in_tx!(self, tx => {
            let mut query = sqlx::query(&sql).bind(&owner).bind(lease_ms);
            for endpoint in endpoints {
                query = query.bind(endpoint);
            }
            match query.fetch_optional(&mut *tx).await? {
                Some(row) => Ok(Some(ClaimedDelivery {
                    id: row.text("id")?,
                    event_id: row.text("event_id")?,
                    endpoint: row.text("endpoint")?,
                    event_type: row.text("event_type")?,
                    interaction_id: row.opt_text("interaction_id")?,
                    payload: row.text("payload")?,
                    attempts: row.int("attempts")?,
                    owner: owner.clone(),
                })),
                None => Ok(None),
            }
        })?;
        Ok(claimed)
    }

    /// The attempt succeeded: the row is `delivered`, and when it is a gate's opening
    /// event, the gate's `flags.delivered_webhook` is set, in one transaction. Fenced
    /// by the claim: `false` (nothing written) when its lease had moved on.
    pub async fn webhook_delivered(&self, claim: &ClaimedDelivery) -> Result<bool, StoreError> {
        let now = now_text();
        let set_flag = claim.event_type == GATE_OPENED;
        crate::store::in_tx!(self, tx => {
            let done = sqlx::query(
                "UPDATE webhook_outbox SET state = 'delivered', delivered_at = $1, \
                 lease_owner = NULL, lease_expires_ms = 0, last_error = NULL \
                 WHERE id = $2 AND lease_owner = $3 AND state = 'pending'",
            )
            .bind(&now)
            .bind(&claim.id)
            .bind(&claim.owner)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if done != 1 {
                return Ok(false);
            }
            if let (true, Some(interaction_id)) = (set_flag, &claim.interaction_id) {
                let lock = Tx::from(&mut *tx).lock_clause();
                let flags: Option<String> = sqlx::query_scalar(&format!(
                    "SELECT flags FROM interactions WHERE id = $1{lock}"
                ))
                .bind(interaction_id)
                .fetch_optional(&mut *tx)
                .await?;
                if let Some(flags) = flags {
                    let mut flags: gatehouse_wire::interaction::InteractionFlags =
                        crate::store::from_json_text("interactions.flags", &flags)?;
                    if !flags.delivered_webhook {
                        flags.delivered_webhook = true;
                        sqlx::query(
                            "UPDATE interactions SET flags = $1, delivered_webhook = 1 WHERE id = $2",
                        )
                        .bind(to_json_text(&flags))
                        .bind(interaction_id)
                        .execute(&mut *tx)
                        .await?;
                    }
                }
            }
            Ok(true)
        })
    }

    /// The attempt failed with `error`: the row is due again after `retry_ms` (its lease
    /// released), or, with `give_up`, `failed` for good. Fenced by the claim.
    pub async fn webhook_failed(
        &self,
        claim: &ClaimedDelivery,
        error: &str,
        retry_ms: i64,
        give_up: bool,
    ) -> Result<bool, StoreError> {
        let state = if give_up { "failed" } else { "pending" };
        let sql = format!(
            "UPDATE webhook_outbox SET state = $1, last_error = $2, next_attempt_ms = {} + $3, \
             lease_owner = NULL, lease_expires_ms = 0 \
             WHERE id = $4 AND lease_owner = $5 AND state = 'pending'",
            self.now_ms_sql()
        );
        crate::store::in_tx!(self, tx => {
            let n = sqlx::query(&sql)
                .bind(state)
                .bind(error)
                .bind(addable_lease_ms(retry_ms))
                .bind(&claim.id)
                .bind(&claim.owner)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            Ok(n == 1)
        })
    }

    /// The outbox, newest first: of one project (or all), in one state (or any), at most
    /// `limit` rows.
    pub async fn list_outbox(
        &self,
        project_id: Option<&str>,
        state: Option<&str>,
        limit: u32,
    ) -> Result<Vec<WebhookDelivery>, StoreError> {
        let mut sql = format!("SELECT {ENTRY_COLUMNS} FROM webhook_outbox WHERE 1 = 1");
        let mut binds: Vec<&str> = Vec::new();
        if let Some(project) = project_id {
            binds.push(project);
            sql.push_str(&format!(" AND project_id = ${}", binds.len()));
        }
        if let Some(state) = state {
            binds.push(state);
            sql.push_str(&format!(" AND state = ${}", binds.len()));
        }
        sql.push_str(&format!(" ORDER BY id DESC LIMIT {limit}"));
        with_pool!(self, pool => {
            let mut query = sqlx::query(&sql);
            for bind in &binds {
                query = query.bind(*bind);
            }
            let rows = query.fetch_all(pool).await?;
            rows.iter().map(entry_from_row).collect()
        })
    }
}
