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

    /// Claim at most `limit` of the most overdue pending rows of `endpoints` for
    /// `lease_ms`, in one statement under one lease owner: each not leased (or its lease
    /// expired by the store's clock), its next attempt due. Oldest first, in the order
    /// the rows are to be sent. The attempt counter moves with the claim, so an instance
    /// that dies mid-attempt still counts it; a row the worker then does not attempt is
    /// given back with [`release_webhooks`](Self::release_webhooks). Empty when nothing
    /// is due.
    pub async fn claim_webhooks(
        &self,
        endpoints: &[String],
        lease_ms: i64,
        limit: u32,
    ) -> Result<Vec<ClaimedDelivery>, StoreError> {
        if endpoints.is_empty() || limit == 0 {
            return Ok(Vec::new());
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
             WHERE id IN (SELECT id FROM webhook_outbox WHERE {due} \
                 ORDER BY next_attempt_ms, id LIMIT {limit}{lock}) AND {due} \
             RETURNING id, event_id, endpoint, event_type, interaction_id, payload, attempts, \
                 next_attempt_ms"
        );
        let owner = uuid::Uuid::new_v4().to_string();
        let lease_ms = addable_lease_ms(lease_ms);
        let mut claimed = crate::db::in_tx!(self.db, tx => {
            let mut query = sqlx::query(&sql).bind(&owner).bind(lease_ms);
            for endpoint in endpoints {
                query = query.bind(endpoint);
            }
            let rows = query.fetch_all(&mut *tx).await?;
            rows.iter()
                .map(|row| {
                    Ok((
                        row.int("next_attempt_ms")?,
                        ClaimedDelivery {
                            id: row.text("id")?,
                            event_id: row.text("event_id")?,
                            endpoint: row.text("endpoint")?,
                            event_type: row.text("event_type")?,
                            interaction_id: row.opt_text("interaction_id")?,
                            payload: row.text("payload")?,
                            attempts: row.int("attempts")?,
                            owner: owner.clone(),
                        },
                    ))
                })
                .collect::<Result<Vec<_>, StoreError>>()
        })?;
        // RETURNING promises no order: sort as the claim chose them.
        claimed.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.id.cmp(&b.1.id)));
        Ok(claimed.into_iter().map(|(_, claim)| claim).collect())
    }

    /// These attempts succeeded, in one transaction: each row is `delivered`, and when it
    /// is a gate's opening event, the gate's `flags.delivered_webhook` is set. Fenced by
    /// each claim: for each, in order, `false` (nothing written for it) when its lease had
    /// moved on.
    pub async fn webhooks_delivered(
        &self,
        claims: &[&ClaimedDelivery],
    ) -> Result<Vec<bool>, StoreError> {
        if claims.is_empty() {
            return Ok(Vec::new());
        }
        let now = now_text();
        crate::db::in_tx!(self.db, tx => {
            let mut written = Vec::with_capacity(claims.len());
            for claim in claims {
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
                if done == 1 && claim.event_type == GATE_OPENED {
                    if let Some(interaction_id) = &claim.interaction_id {
                        self.gates
                            .mark_delivered(Tx::from(&mut *tx), interaction_id)
                            .await?;
                    }
                }
                written.push(done == 1);
            }
            Ok(written)
        })
    }

    /// Give back claimed rows that were never attempted (the circuit opened, the server
    /// is stopping, or the batch's lease ran short): due again at once, for any worker,
    /// with the attempt their claim counted taken back. Fenced by each claim; how many
    /// were given back.
    pub async fn release_webhooks(&self, claims: &[ClaimedDelivery]) -> Result<u64, StoreError> {
        if claims.is_empty() {
            return Ok(0);
        }
        crate::db::in_tx!(self.db, tx => {
            let mut released = 0;
            for claim in claims {
                released += sqlx::query(
                    "UPDATE webhook_outbox SET lease_owner = NULL, lease_expires_ms = 0, \
                     attempts = attempts - 1 \
                     WHERE id = $1 AND lease_owner = $2 AND state = 'pending'",
                )
                .bind(&claim.id)
                .bind(&claim.owner)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            }
            Ok(released)
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
