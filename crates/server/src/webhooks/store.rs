//! The delivery store: the delivery workers' SQL over the outbox rows
//! (`crate::announce::outbox` writes them, in the transaction of each change): claim under
//! a lease, finish as delivered or failed (retried later, or given up), list for an
//! operator. A delivered gate opening sets the gate's `flags.delivered_webhook` through
//! the hook the interactions area offers ([`GateDelivered`]), in the same transaction.

use std::sync::Arc;

use gatehouse_wire::webhooks::WebhookDelivery;

use crate::announce::GATE_OPENED;
use crate::db::{addable_lease_ms, now_text, with_pool, Backend, Database, RowExt, StoreError, Tx};
use crate::seams::GateDelivered;

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
        .then(|| chrono::DateTime::from_timestamp_millis(next_ms).map(crate::db::format_time))
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

/// The webhooks area's store: the outbox rows' deliveries. Cheap to clone.
#[derive(Clone)]
pub struct DeliveryStore {
    db: Database,
    gates: Arc<dyn GateDelivered>,
}

impl std::fmt::Debug for DeliveryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeliveryStore").finish_non_exhaustive()
    }
}

impl DeliveryStore {
    /// Deliveries over `db`; a delivered gate opening is told to `gates`.
    pub fn new(db: Database, gates: Arc<dyn GateDelivered>) -> Self {
        Self { db, gates }
    }

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
        let now = self.db.now_ms_sql();
        let lock = match self.db.backend {
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
        let claimed = crate::db::in_tx!(self.db, tx => {
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
        crate::db::in_tx!(self.db, tx => {
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
                self.gates
                    .mark_delivered(Tx::from(&mut *tx), interaction_id)
                    .await?;
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
            self.db.now_ms_sql()
        );
        crate::db::in_tx!(self.db, tx => {
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
        let (sql, binds) = Self::list_outbox_sql(project_id, state, limit);
        with_pool!(self.db, pool => {
            let mut query = sqlx::query(&sql);
            for bind in &binds {
                query = query.bind(bind);
            }
            let rows = query.fetch_all(pool).await?;
            rows.iter().map(entry_from_row).collect()
        })
    }

    /// The statement [`list_outbox`](Self::list_outbox) runs and its text parameters:
    /// public so a test can read its query plan (the pending list uses an index).
    pub fn list_outbox_sql(
        project_id: Option<&str>,
        state: Option<&str>,
        limit: u32,
    ) -> (String, Vec<String>) {
        let mut sql = format!("SELECT {ENTRY_COLUMNS} FROM webhook_outbox WHERE 1 = 1");
        let mut binds: Vec<String> = Vec::new();
        if let Some(project) = project_id {
            binds.push(project.to_string());
            sql.push_str(&format!(" AND project_id = ${}", binds.len()));
        }
        if let Some(state) = state {
            // A known state is written into the statement, not bound: after five runs of
            // a prepared statement PostgreSQL may plan a bound `state = $n` for the
            // average state (`delivered`, in any history) and walk the project's whole
            // outbox by id for the few pending rows (480 ms at 1,000,000 events,
            // BENCHMARKS.md row 11). Written out, every plan takes the state's index.
            match ["pending", "delivered", "failed"]
                .iter()
                .find(|known| **known == state)
            {
                Some(known) => sql.push_str(&format!(" AND state = '{known}'")),
                None => {
                    binds.push(state.to_string());
                    sql.push_str(&format!(" AND state = ${}", binds.len()));
                }
            }
        }
        sql.push_str(&format!(" ORDER BY id DESC LIMIT {limit}"));
        (sql, binds)
    }

    /// Delete at most `batch` events in `state` (`delivered` or `failed`, never
    /// `pending`) written before `before` (the store's time format), in one short
    /// statement: how many were deleted ([`crate::retention`] calls it until fewer than
    /// `batch` are).
    pub async fn prune_events(
        &self,
        state: &str,
        before: &str,
        batch: u32,
    ) -> Result<u64, StoreError> {
        if state == "pending" {
            return Ok(0);
        }
        let sql = format!(
            "DELETE FROM webhook_outbox WHERE id IN (SELECT id FROM webhook_outbox \
             WHERE state = $1 AND created_at < $2 LIMIT {batch})"
        );
        with_pool!(self.db, pool => {
            let done = sqlx::query(&sql).bind(state).bind(before).execute(pool).await?;
            Ok(done.rows_affected())
        })
    }
}
