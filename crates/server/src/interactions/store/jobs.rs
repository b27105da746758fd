//! The resume queue: one job per responded interaction, claimed under a lease.
//!
//! A claim is a conditional UPDATE that sets a fresh lease owner and expiry; an expired
//! lease is reclaimable. Completion is another compare-and-set on the owner, in the same
//! transaction that records the resume turn and resolves the interaction, so a resume
//! is never lost (the lease expires and another worker retries) and never applied twice
//! (a stale owner's completion finds the owner changed and rolls back). Expiry is set and
//! compared by the store's clock (`Database::now_ms_sql`), never an instance's.

use gatehouse_wire::JsonObject;

use super::commands::{lock_turn_gates, settle_continuation};
use super::lease::ClaimedJob;
use super::parallel::several_gate_tokens;
use super::rows::{
    insert_gate, interaction_from_row, InsertArgs, InteractionRecord, NewInteraction,
    SELECT_COLUMNS,
};
use super::turns::{finish_turn_run, insert_turn, NewTurn};
use super::InteractionStore;
use crate::announce::{in_announced_tx, Change};
use crate::db::{
    addable_lease_ms, in_tx, now_text, to_json_text, with_pool, with_tx, Backend, RowExt,
    StoreError, Tx,
};
use crate::seams::JoinedWrite;

/// What finishing a job writes, atomically with the completion.
#[derive(Debug, Clone, Default)]
pub struct JobCompletion {
    /// The resume turn, when the interaction had a parked turn to resume.
    pub turn: Option<NewTurn>,
    /// The gates the resumed turn opened, if it parked again.
    pub gates: Vec<NewInteraction>,
    /// Keys merged into the interaction's `resolution` as it moves to `resolved`
    /// (`verdict`, `tool_call_id`). `None`: leave the row as it is.
    pub resolution: Option<JsonObject>,
    /// The other gates of a turn parked on several, which this resume continues too:
    /// `(interaction id, keys merged into its resolution)`, each resolved as the job's
    /// own row is (one still `responded` only; another is left as it is).
    pub sibling_resolutions: Vec<(String, JsonObject)>,
    /// The parked turn that this resume continues (gets `resumed_by_turn_id`).
    pub parked_turn_id: Option<String>,
    /// Why nothing was resumed, when nothing was.
    pub note: Option<String>,
}

/// Completed, or the lease was lost to another worker (nothing was written).
#[derive(Debug, Clone)]
pub enum CompleteOutcome {
    /// Written. The resolved row and the new gates (if any).
    Completed {
        /// The interaction after resolution (when it was resolved).
        resolved: Option<Box<InteractionRecord>>,
        /// The gates the resumed turn opened.
        gates: Vec<InteractionRecord>,
    },
    /// Another worker owns the job now; this completion was discarded.
    LeaseLost,
}

/// A job is abandoned after this many claims (its last error is kept).
pub const MAX_ATTEMPTS: i64 = 5;

/// The code of `resolution.error` on a row whose resume gave up after [`MAX_ATTEMPTS`].
pub const RESUME_FAILED_CODE: &str = "RESUME_FAILED";

/// What recording a failed attempt came to.
#[derive(Debug, Clone)]
pub enum FailOutcome {
    /// Queued again: another claim retries after the lease.
    Retrying,
    /// The last attempt failed: the job is `failed`, the row resolved with
    /// `resolution.error` (`RESUME_FAILED`), when it was still waiting.
    GaveUp {
        /// The row after its resolution.
        resolved: Option<Box<InteractionRecord>>,
    },
    /// The lease had moved on: nothing recorded.
    LeaseLost,
}

impl InteractionStore {
    /// Claim the oldest claimable job (queued, and unleased or with an expired lease)
    /// for `lease_ms` milliseconds. `None` when there is nothing to do. Expiry is
    /// decided by the store's clock (`Database::now_ms_sql`), not this instance's.
    pub async fn claim_job(&self, lease_ms: i64) -> Result<Option<ClaimedJob>, StoreError> {
        let now = self.db.now_ms_sql();
        let lease_ms = addable_lease_ms(lease_ms);
        loop {
            let owner = uuid::Uuid::new_v4().to_string();
            // On Postgres the candidate row is locked and rows other workers hold are
            // skipped; SQLite serializes writers (BEGIN IMMEDIATE), so no lock clause.
            let lock = match self.db.backend {
                Backend::Postgres(_) => " FOR UPDATE SKIP LOCKED",
                Backend::Sqlite(_) => "",
            };
            let sql = format!(
                "UPDATE resume_jobs SET lease_owner = $1, lease_expires_ms = {now} + $2, \
                 attempts = attempts + 1, updated_at = $3 \
                 WHERE interaction_id = (SELECT interaction_id FROM resume_jobs \
                     WHERE state = 'queued' AND (lease_owner IS NULL OR lease_expires_ms < {now}) \
                     ORDER BY created_at, interaction_id LIMIT 1{lock}) \
                 AND state = 'queued' AND (lease_owner IS NULL OR lease_expires_ms < {now}) \
                 RETURNING interaction_id, project_id, attempts"
            );
            let text_now = now_text();
            let claimed: Option<ClaimedJob> = in_tx!(self.db, tx => {
                let row = sqlx::query(&sql)
                    .bind(&owner)
                    .bind(lease_ms)
                    .bind(&text_now)
                    .fetch_optional(&mut *tx)
                    .await?;
                match row {
                    Some(row) => Ok(Some(ClaimedJob {
                        interaction_id: row.text("interaction_id")?,
                        project_id: row.text("project_id")?,
                        owner: owner.clone(),
                        attempts: row.int("attempts")?,
                    })),
                    None => Ok(None),
                }
            })?;
            match claimed {
                Some(job) => return Ok(Some(job)),
                None => {
                    // Nothing claimable, or another worker took the candidate between the
                    // sub-select and the update: look once more before giving up.
                    if !self.has_claimable_job().await? {
                        return Ok(None);
                    }
                }
            }
        }
    }

    async fn has_claimable_job(&self) -> Result<bool, StoreError> {
        let sql = format!(
            "SELECT interaction_id FROM resume_jobs WHERE state = 'queued' \
             AND (lease_owner IS NULL OR lease_expires_ms < {}) LIMIT 1",
            self.db.now_ms_sql()
        );
        with_pool!(self.db, pool => {
            let row = sqlx::query(&sql)
            .fetch_optional(pool)
            .await?;
            Ok(row.is_some())
        })
    }

    /// Extend the lease of a job this worker holds (its heartbeat). `false`: the job is
    /// no longer this worker's (another claimed it after the lease expired, or it ended).
    /// The new expiry is the store's now plus `lease_ms` (`Database::now_ms_sql`).
    pub async fn renew_job(&self, job: &ClaimedJob, lease_ms: i64) -> Result<bool, StoreError> {
        let sql = format!(
            "UPDATE resume_jobs SET lease_expires_ms = {} + $1 \
             WHERE interaction_id = $2 AND lease_owner = $3 AND state = 'queued'",
            self.db.now_ms_sql()
        );
        let renewed = in_tx!(self.db, tx => {
            let n = sqlx::query(&sql)
            .bind(addable_lease_ms(lease_ms))
            .bind(&job.interaction_id)
            .bind(&job.owner)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            Ok(n == 1)
        })?;
        Ok(renewed)
    }

    /// Finish a claimed job: in ONE transaction, check the lease is still ours, record
    /// the resume turn (and its new gate), resolve the interaction, mark the job done
    /// with the resume turn's id, and write `joined` (the run's execution-session share).
    /// When `joined` finds its own ownership lost, nothing is written
    /// ([`CompleteOutcome::LeaseLost`]).
    pub async fn complete_job(
        &self,
        job: &ClaimedJob,
        completion: &JobCompletion,
        joined: Option<&dyn JoinedWrite>,
    ) -> Result<CompleteOutcome, StoreError> {
        let now = now_text();
        let gate_args: Vec<InsertArgs> = completion.gates.iter().map(InsertArgs::new).collect();
        let resume_turn_id = completion.turn.as_ref().map(|t| t.id.clone());
        let outcome = in_announced_tx!(self.db, self.announce, tx, changes => {
            let ended = end_attempt(
                &mut Tx::from(&mut *tx),
                job,
                "done",
                resume_turn_id.as_deref(),
                completion.note.as_deref(),
                &now,
            )
            .await?;
            if !ended {
                return Ok(CompleteOutcome::LeaseLost);
            }
            if let Some(turn) = &completion.turn {
                insert_turn!(tx, turn, &now);
            }
            if let Some(parked) = &completion.parked_turn_id {
                // Only the resume that claimed the parked turn records itself on it, once
                // (`claim_parked_turn`); any other rolls the whole completion back.
                let recorded = sqlx::query(
                    "UPDATE turns SET resumed_by_turn_id = $1, updated_at = $2 WHERE id = $3 \
                     AND resumed_by_turn_id IS NULL AND resume_interaction_id = $4",
                )
                .bind(&resume_turn_id)
                .bind(&now)
                .bind(parked)
                .bind(&job.interaction_id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                if recorded != 1 {
                    return Err(StoreError::Fenced(format!(
                        "the parked turn {parked} is resumed by another answer, or not claimed by this one"
                    )));
                }
                // The resume turn is recorded: the evidence that its continuation applied.
                if completion.turn.is_some() {
                    settle_continuation(&mut Tx::from(&mut *tx), &job.project_id, parked, true, "started", &now)
                        .await?;
                }
            }
            // The answer is resolved before the gate the resumed turn opened: in that
            // order its watchers and webhook receivers are told.
            let mut resolved = None;
            if let Some(extra) = &completion.resolution {
                // The job was claimed for this row: it exists (else the completion fails).
                let current = row_in_tx(&mut Tx::from(&mut *tx), &job.interaction_id)
                    .await?
                    .ok_or(sqlx::Error::RowNotFound)?;
                let resolution = current.resolution_with(extra.clone());
                resolved =
                    resolve_responded(&mut Tx::from(&mut *tx), &job.interaction_id, &resolution, &now)
                        .await?;
                if let Some(row) = &resolved {
                    changes.push(row.change());
                }
            }
            for (sibling, extra) in &completion.sibling_resolutions {
                let Some(current) = row_in_tx(&mut Tx::from(&mut *tx), sibling).await? else {
                    continue;
                };
                let resolution = current.resolution_with(extra.clone());
                if let Some(row) =
                    resolve_responded(&mut Tx::from(&mut *tx), sibling, &resolution, &now).await?
                {
                    changes.push(row.change());
                }
            }
            let mut gates = Vec::with_capacity(gate_args.len());
            for args in &gate_args {
                gates.push(insert_gate!(tx, args, changes).record);
            }
            if let Some(turn) = &completion.turn {
                finish_turn_run(&mut Tx::from(&mut *tx), turn, &mut changes, &now).await?;
                changes.push(Change::Records {
                    project_id: turn.project_id.clone(),
                    session_id: turn.session_id.clone(),
                });
            }
            if let Some(joined) = joined {
                changes.extend(joined.write(Tx::from(&mut *tx)).await?);
            }
            Ok(CompleteOutcome::Completed { resolved, gates })
        });
        match outcome {
            Err(StoreError::Fenced(why)) => {
                tracing::warn!(interaction_id = %job.interaction_id, %why, "the resume no longer owns its work; nothing written");
                Ok(CompleteOutcome::LeaseLost)
            }
            other => other,
        }
    }

    /// Record a failed attempt. The lease is left to expire, so another claim retries
    /// later; after [`MAX_ATTEMPTS`] the job is marked `failed` and kept for inspection,
    /// and (in the same transaction) the row, if still `responded`, is resolved with
    /// `resolution.error` `{code: RESUME_FAILED, message}`: an answer nothing will resume
    /// says so instead of waiting forever. (The run's execution session is reconciled by
    /// the execution reconciler, which sees that nothing will resume it.)
    pub async fn fail_job(&self, job: &ClaimedJob, error: &str) -> Result<FailOutcome, StoreError> {
        let now = now_text();
        let give_up = job.attempts >= MAX_ATTEMPTS;
        let state = if give_up { "failed" } else { "queued" };
        in_announced_tx!(self.db, self.announce, tx, changes => {
            let ended =
                end_attempt(&mut Tx::from(&mut *tx), job, state, None, Some(error), &now).await?;
            if !ended {
                return Ok(FailOutcome::LeaseLost);
            }
            if !give_up {
                return Ok(FailOutcome::Retrying);
            }
            let Some(current) = row_in_tx(&mut Tx::from(&mut *tx), &job.interaction_id).await? else {
                return Ok(FailOutcome::GaveUp { resolved: None });
            };
            // Nothing will continue the turn: its continuation (if the answer wrote one)
            // is obsolete, `failed`, never `applied`.
            if let Some(turn_id) = &current.turn_id {
                settle_continuation(&mut Tx::from(&mut *tx), &current.project_id, turn_id, false, "failed", &now)
                    .await?;
            }
            let mut failure = JsonObject::new();
            failure.insert(
                "error".to_string(),
                serde_json::json!({
                    "code": RESUME_FAILED_CODE,
                    "message": format!(
                        "the resume gave up after {} attempts; the last failed: {error}",
                        job.attempts
                    ),
                }),
            );
            let resolution = current.resolution_with(failure.clone());
            let resolved =
                resolve_responded(&mut Tx::from(&mut *tx), &job.interaction_id, &resolution, &now)
                    .await?;
            if let Some(row) = &resolved {
                changes.push(row.change());
            }
            for sibling in resolve_left_siblings(&mut Tx::from(&mut *tx), job, &current, &failure, &now).await? {
                changes.push(sibling.change());
            }
            Ok(FailOutcome::GaveUp { resolved })
        })
    }

    /// How many answered gates wait for their resume (queued jobs, on every instance).
    pub async fn queued_jobs(&self) -> Result<u64, StoreError> {
        with_pool!(self.db, pool => {
            let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM resume_jobs WHERE state = 'queued'")
                .fetch_one(pool)
                .await?;
            Ok(u64::try_from(n).unwrap_or(0))
        })
    }

    /// How many interactions the database holds in each status (every project, every
    /// instance), for the metrics' `gatehouse_gates` gauge.
    pub async fn gates_by_status(&self) -> Result<Vec<(String, u64)>, StoreError> {
        with_pool!(self.db, pool => {
            let rows = sqlx::query("SELECT status, COUNT(*) AS n FROM interactions GROUP BY status")
                .fetch_all(pool)
                .await?;
            let mut counts = Vec::with_capacity(rows.len());
            for row in rows {
                counts.push((row.text("status")?, u64::try_from(row.int("n")?).unwrap_or(0)));
            }
            Ok(counts)
        })
    }

    /// The job of an interaction: `(state, resume_turn_id, attempts)`.
    pub async fn job_state(
        &self,
        interaction_id: &str,
    ) -> Result<Option<(String, Option<String>, i64)>, StoreError> {
        with_pool!(self.db, pool => {
            let row = sqlx::query(
                "SELECT state, resume_turn_id, attempts FROM resume_jobs WHERE interaction_id = $1",
            )
            .bind(interaction_id)
            .fetch_optional(pool)
            .await?;
            match row {
                Some(row) => Ok(Some((row.text("state")?, row.opt_text("resume_turn_id")?, row.int("attempts")?))),
                None => Ok(None),
            }
        })
    }
}

/// End this worker's attempt on its job row, inside the caller's transaction: the job's
/// new `state` (`done`, `failed`, or `queued` again for a retry), the resume turn, and the
/// note or error it leaves. Fenced by the lease: `false`, and nothing written, when the job
/// is no longer this worker's (another claimed it, or it ended). A queued job has no
/// resume turn yet, so an attempt that leaves none writes none.
async fn end_attempt(
    tx: &mut Tx<'_>,
    job: &ClaimedJob,
    state: &str,
    resume_turn_id: Option<&str>,
    last_error: Option<&str>,
    now: &str,
) -> Result<bool, StoreError> {
    with_tx!(tx, conn => {
        let ended = sqlx::query(
            "UPDATE resume_jobs SET state = $1, resume_turn_id = $2, last_error = $3, \
             updated_at = $4 WHERE interaction_id = $5 AND lease_owner = $6 AND state = 'queued'",
        )
        .bind(state)
        .bind(resume_turn_id)
        .bind(last_error)
        .bind(now)
        .bind(&job.interaction_id)
        .bind(&job.owner)
        .execute(&mut **conn)
        .await?
        .rows_affected();
        Ok(ended == 1)
    })
}

/// The other gates of a turn parked on several whose resume `job` claimed, and gave up:
/// their own jobs left them to it (`responded`), so they are resolved with the same
/// `failure`, inside the caller's transaction. Nothing when the job's row is not such a
/// gate, or the turn is not this job's.
async fn resolve_left_siblings(
    tx: &mut Tx<'_>,
    job: &ClaimedJob,
    row: &InteractionRecord,
    failure: &JsonObject,
    now: &str,
) -> Result<Vec<Box<InteractionRecord>>, StoreError> {
    let Some(turn_id) = &row.turn_id else {
        return Ok(Vec::new());
    };
    let claimed_by = with_tx!(tx, conn => {
        let claim = sqlx::query("SELECT resume_interaction_id FROM turns WHERE id = $1 AND project_id = $2")
            .bind(turn_id)
            .bind(&row.project_id)
            .fetch_optional(&mut **conn)
            .await?;
        match claim {
            Some(claim) => Ok::<_, StoreError>(claim.opt_text("resume_interaction_id")?),
            None => Ok(None),
        }
    })?;
    if claimed_by.as_deref() != Some(job.interaction_id.as_str()) {
        return Ok(Vec::new());
    }
    let Some(tokens) = several_gate_tokens(tx, &row.project_id, turn_id).await? else {
        return Ok(Vec::new());
    };
    let gates = lock_turn_gates(tx, &row.project_id, &row.session_id, turn_id, &tokens).await?;
    let mut resolved = Vec::new();
    for gate in gates {
        if gate.id == row.id || gate.status != "responded" {
            continue;
        }
        let resolution = gate.resolution_with(failure.clone());
        if let Some(moved) = resolve_responded(tx, &gate.id, &resolution, now).await? {
            resolved.push(moved);
        }
    }
    Ok(resolved)
}

/// The row `id`, read inside the caller's transaction.
async fn row_in_tx(tx: &mut Tx<'_>, id: &str) -> Result<Option<InteractionRecord>, StoreError> {
    let sql = format!("SELECT {SELECT_COLUMNS} FROM interactions WHERE id = $1");
    with_tx!(tx, conn => {
        let row = sqlx::query(&sql).bind(id).fetch_optional(&mut **conn).await?;
        row.as_ref().map(interaction_from_row).transpose()
    })
}

/// Move the `responded` row `id` to `resolved` with `resolution` (the whole of it),
/// inside the caller's transaction: the row after, or `None` when it was no longer
/// `responded` (a runner resolved or cancelled it meanwhile).
async fn resolve_responded(
    tx: &mut Tx<'_>,
    id: &str,
    resolution: &JsonObject,
    now: &str,
) -> Result<Option<Box<InteractionRecord>>, StoreError> {
    let sql = format!(
        "UPDATE interactions SET status = 'resolved', resolution = $1, updated_at = $2 \
         WHERE id = $3 AND status = 'responded' RETURNING {SELECT_COLUMNS}"
    );
    with_tx!(tx, conn => {
        let row = sqlx::query(&sql)
            .bind(to_json_text(resolution))
            .bind(now)
            .bind(id)
            .fetch_optional(&mut **conn)
            .await?;
        Ok(row.as_ref().map(interaction_from_row).transpose()?.map(Box::new))
    })
}
