//! What the interactions area offers the others over its own tables, so that they never
//! write its SQL: the webhooks area marks a delivered gate ([`GateDelivered`]), the
//! execution area asks what a paused session's gate came to, which turn a gate belongs
//! to, and which agent revision a run names ([`InteractionQueries`]).

use futures::future::BoxFuture;
use gatehouse_wire::interaction::InteractionFlags;

use super::InteractionStore;
use crate::db::{from_json_text, to_json_text, with_tx, RowExt, StoreError, Tx};
use crate::seams::{AgentRevision, GateDelivered, GateOfTurn, InteractionQueries, ResumeJobState};

/// The queries [`crate::seams`] names, over the interactions tables.
#[derive(Debug, Clone)]
pub struct OfferedQueries {
    store: InteractionStore,
}

impl OfferedQueries {
    /// The queries over `store`'s tables.
    pub fn new(store: InteractionStore) -> Self {
        Self { store }
    }
}

impl GateDelivered for OfferedQueries {
    fn mark_delivered<'a>(
        &'a self,
        mut tx: Tx<'a>,
        interaction_id: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let lock = tx.lock_clause();
            let select = format!("SELECT flags FROM interactions WHERE id = $1{lock}");
            let flags: Option<String> = with_tx!(&mut tx, conn => {
                sqlx::query_scalar(&select)
                    .bind(interaction_id)
                    .fetch_optional(&mut **conn)
                    .await?
            });
            let Some(flags) = flags else {
                return Ok(());
            };
            let mut flags: InteractionFlags = from_json_text("interactions.flags", &flags)?;
            if flags.delivered_webhook {
                return Ok(());
            }
            flags.delivered_webhook = true;
            with_tx!(&mut tx, conn => {
                sqlx::query(
                    "UPDATE interactions SET flags = $1, delivered_webhook = 1 WHERE id = $2",
                )
                .bind(to_json_text(&flags))
                .bind(interaction_id)
                .execute(&mut **conn)
                .await?;
            });
            Ok(())
        })
    }
}

/// A paused session's gate that still waits: pending; or answered with its resume
/// queued (a gate of a turn parked on several may be answered by a transition, which
/// queues its resume too: `resolved`); or answered with its turn's durable continuation
/// admitted and not yet delivered (its resume jobs are written after the commit, and
/// redelivered when that failed).
const WAITING_GATE: &str = "SELECT 1 FROM interactions i WHERE i.project_id = s.tenant_id \
     AND i.turn_id = s.current_turn_id AND (i.status = 'pending' \
     OR (i.status IN ('responded', 'resolved') \
     AND EXISTS (SELECT 1 FROM resume_jobs j WHERE j.interaction_id = i.id AND j.state = 'queued')) \
     OR (i.status = 'responded' AND EXISTS (SELECT 1 FROM session_commands c \
     WHERE c.project_id = i.project_id AND c.target_execution_id = i.turn_id \
     AND c.kind = 'continue' AND c.state = 'pending')))";

/// `(state, last_error)` of a resume job, inside the caller's transaction.
async fn job_of(
    tx: &mut Tx<'_>,
    interaction_id: &str,
) -> Result<Option<ResumeJobState>, StoreError> {
    with_tx!(tx, conn => {
        let row = sqlx::query("SELECT state, last_error FROM resume_jobs WHERE interaction_id = $1")
            .bind(interaction_id)
            .fetch_optional(&mut **conn)
            .await?;
        match row {
            Some(row) => Ok(Some(ResumeJobState {
                state: row.text("state")?,
                last_error: row.opt_text("last_error")?,
            })),
            None => Ok(None),
        }
    })
}

impl InteractionQueries for OfferedQueries {
    fn waiting_gate_exists_sql(&self) -> &'static str {
        WAITING_GATE
    }

    fn resume_job<'a>(
        &'a self,
        tx: &'a mut Tx<'_>,
        interaction_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<ResumeJobState>, StoreError>> {
        Box::pin(job_of(tx, interaction_id))
    }

    fn gate_of_turn<'a>(
        &'a self,
        tx: &'a mut Tx<'_>,
        project_id: &'a str,
        turn_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<GateOfTurn>, StoreError>> {
        Box::pin(async move {
            let gate = with_tx!(&mut *tx, conn => {
                let row = sqlx::query(
                    "SELECT id, status FROM interactions WHERE project_id = $1 AND turn_id = $2 \
                     ORDER BY created_at DESC LIMIT 1",
                )
                .bind(project_id)
                .bind(turn_id)
                .fetch_optional(&mut **conn)
                .await?;
                match row {
                    Some(row) => Some((row.text("id")?, row.text("status")?)),
                    None => None,
                }
            });
            let Some((interaction_id, status)) = gate else {
                return Ok(None);
            };
            let job = job_of(tx, &interaction_id).await?;
            Ok(Some(GateOfTurn {
                interaction_id,
                status,
                job,
            }))
        })
    }

    fn turn_of_gate<'a>(
        &'a self,
        interaction_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        Box::pin(async move {
            let row = self.store.get_interaction_any(interaction_id).await?;
            Ok(row.and_then(|row| row.turn_id))
        })
    }

    fn agent_revision<'a>(
        &'a self,
        project_id: &'a str,
        revision_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<AgentRevision>, StoreError>> {
        Box::pin(async move {
            let Some(revision) = self.store.get_revision(project_id, revision_id).await? else {
                return Ok(None);
            };
            let workflow = self
                .store
                .find_workflow(project_id, Some(&revision.workflow_id), None)
                .await?;
            Ok(Some(AgentRevision {
                workflow_slug: workflow.map(|w| w.slug),
                parameters: revision.parameters,
            }))
        })
    }
}
