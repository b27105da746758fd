//! The tool-run ledger: every tool call a turn runs, once per `(project, agent session,
//! tool call id)`, written BEFORE the tool runs and fenced by the leases of the work that
//! runs it. A resume retried after a crash (or taken over from a stalled instance) finds
//! its tool call here and does not run it again; a worker that lost its lease cannot
//! write the row, so it does not run the tool at all. One approval, one run.
//!
//! A row records the call, not only its key: the tool and a digest of its arguments. A
//! call under a key the ledger holds for another tool or other arguments is a conflict
//! ([`ToolRunPermit::Conflict`]): it does not run, and it is not reported as run.

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::lease::job_lease_held;
use super::InteractionStore;
use crate::db::{in_tx, now_text, with_pool, RowExt, StoreError};

/// The ledger's digest of a call's arguments: SHA-256 (hex) of their JSON text.
pub fn args_digest(args: &Value) -> String {
    let text = serde_json::to_string(args).unwrap_or_default();
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// A tool call about to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolRun {
    /// The project.
    pub project_id: String,
    /// The agent session.
    pub session_id: String,
    /// The tool call id (for a resumed gate: the gated call's id).
    pub tool_call_id: String,
    /// The tool.
    pub tool: String,
    /// [`args_digest`] of its arguments.
    pub args_digest: String,
    /// The turn attempt that runs it.
    pub turn_id: String,
    /// The answered gate whose resume runs it, for a resume.
    pub interaction_id: Option<String>,
}

/// What must still hold for the run to be this worker's to do. Each part is checked in
/// the same statement that writes the ledger row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolRunFence {
    /// `(interaction id, lease owner)`: the resume job's lease is this worker's and has
    /// not expired.
    pub job: Option<(String, String)>,
    /// `(execution session id, run token)`: the run's execution session is active and
    /// still owned by this run attempt.
    pub execution: Option<(String, String)>,
}

/// Whether a tool call may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolRunPermit {
    /// Recorded now: run it.
    Run,
    /// An earlier attempt already ran it: do not run it again.
    AlreadyRan {
        /// The attempt that ran it.
        turn_id: String,
        /// When.
        at: String,
    },
    /// The ledger holds this key for another call (another tool, or other arguments):
    /// this one must not run, and did not run (fail closed).
    Conflict {
        /// The tool recorded under the key.
        tool: String,
        /// The attempt that recorded it.
        turn_id: String,
    },
    /// The fence no longer holds: this worker must not run it (fail closed).
    Refused {
        /// Why.
        reason: String,
    },
}

/// A recorded tool run.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ToolRunRecord {
    /// The tool call id.
    pub tool_call_id: String,
    /// The tool.
    pub tool: String,
    /// The turn attempt that ran it (a committed turn, or an attempt that died after
    /// running it, whose retry reported it).
    pub turn_id: String,
    /// The answered gate whose resume ran it.
    pub interaction_id: Option<String>,
    /// When it ran.
    pub ran_at: String,
}

impl InteractionStore {
    /// Record `run` unless an earlier attempt did, in one statement fenced by `fence` (a
    /// job lease counts as unexpired by the store's clock, `Database::now_ms_sql`).
    pub async fn begin_tool_run(
        &self,
        run: &ToolRun,
        fence: &ToolRunFence,
    ) -> Result<ToolRunPermit, StoreError> {
        let mut sql = String::from(
            "INSERT INTO tool_runs (project_id, session_id, tool_call_id, tool, args_digest, \
             turn_id, interaction_id, created_at) SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE 1 = 1",
        );
        let mut next = 9;
        if fence.job.is_some() {
            sql.push_str(" AND ");
            sql.push_str(&job_lease_held(next, next + 1, self.db.now_ms_sql()));
            next += 2;
        }
        if fence.execution.is_some() {
            sql.push_str(" AND ");
            sql.push_str(&self.execution.run_held_sql(next, next + 1));
        }
        sql.push_str(" ON CONFLICT (project_id, session_id, tool_call_id) DO NOTHING");
        let now = now_text();
        in_tx!(self.db, tx => {
            let mut query = sqlx::query(&sql)
                .bind(&run.project_id)
                .bind(&run.session_id)
                .bind(&run.tool_call_id)
                .bind(&run.tool)
                .bind(&run.args_digest)
                .bind(&run.turn_id)
                .bind(&run.interaction_id)
                .bind(&now);
            if let Some((interaction_id, owner)) = &fence.job {
                query = query.bind(interaction_id).bind(owner);
            }
            if let Some((session_id, token)) = &fence.execution {
                query = query.bind(session_id).bind(token);
            }
            let inserted = query.execute(&mut *tx).await?.rows_affected();
            if inserted == 1 {
                return Ok(ToolRunPermit::Run);
            }
            let row = sqlx::query(
                "SELECT tool, args_digest, turn_id, created_at FROM tool_runs WHERE project_id = $1 \
                 AND session_id = $2 AND tool_call_id = $3",
            )
            .bind(&run.project_id)
            .bind(&run.session_id)
            .bind(&run.tool_call_id)
            .fetch_optional(&mut *tx)
            .await?;
            Ok(match row {
                Some(row) => {
                    let tool = row.text("tool")?;
                    // A row written before digests were recorded has none: its tool decides.
                    let same_args = row
                        .opt_text("args_digest")?
                        .is_none_or(|digest| digest == run.args_digest);
                    if tool == run.tool && same_args {
                        ToolRunPermit::AlreadyRan {
                            turn_id: row.text("turn_id")?,
                            at: row.text("created_at")?,
                        }
                    } else {
                        ToolRunPermit::Conflict {
                            tool,
                            turn_id: row.text("turn_id")?,
                        }
                    }
                }
                None => ToolRunPermit::Refused {
                    reason: "this worker no longer owns the run (its lease expired or moved to \
                             another worker, or the run was reconciled)"
                        .to_string(),
                },
            })
        })
    }

    /// The tool runs of an agent session, oldest first.
    pub async fn tool_runs(
        &self,
        project_id: &str,
        session_id: &str,
    ) -> Result<Vec<ToolRunRecord>, StoreError> {
        with_pool!(self.db, pool => {
            let rows = sqlx::query(
                "SELECT tool_call_id, tool, turn_id, interaction_id, created_at FROM tool_runs \
                 WHERE project_id = $1 AND session_id = $2 ORDER BY created_at, tool_call_id",
            )
            .bind(project_id)
            .bind(session_id)
            .fetch_all(pool)
            .await?;
            rows.iter()
                .map(|row| {
                    Ok(ToolRunRecord {
                        tool_call_id: row.text("tool_call_id")?,
                        tool: row.text("tool")?,
                        turn_id: row.text("turn_id")?,
                        interaction_id: row.opt_text("interaction_id")?,
                        ran_at: row.text("created_at")?,
                    })
                })
                .collect::<Result<Vec<_>, StoreError>>()
        })
    }
}
