//! The interaction dispatcher: resumes answered gates. (The intervention dispatcher of
//! execution sessions is another thing: it lives in `execution/hooks.rs`.)
//!
//! It claims `responded` rows' resume jobs under a lease (a conditional UPDATE), rebuilds
//! the resume invoke with `gatehouse-wire`'s builder (the row's stamped parameters
//! inline, or references-only for a row without a stamp), runs the rest of the parked
//! turn, and in ONE transaction records the resume turn, resolves the row with
//! `{verdict, tool_call_id}` and completes the job. A crash before that commit leaves the
//! lease to expire and another claim retries; a stale worker's commit is refused, so a
//! resume is never lost and never applied twice.
//!
//! One resume per parked turn (CONTRACT.md A7): only the answer to the gate the turn
//! parked at (its session and token) resumes it, and before anything runs the resume
//! claims the turn in the database ([`InteractionStore::claim_parked_turn`](crate::interactions::store::InteractionStore::claim_parked_turn),
//! fenced by the lease); an answer to another row naming the turn, or a resume that finds
//! the claim taken, resolves its row with a typed `resolution.error`
//! ([`NOT_THE_PARKED_GATE_CODE`], [`TURN_ALREADY_RESUMED_CODE`]) and runs nothing. The
//! resume runs the call the turn gated, under the gate's call id, never an answer's
//! `tool_call_id`.
//!
//! While a resume runs, its heartbeat renews the job's lease ([`guard`](super::guard)), so a
//! long resume keeps its job; an instance that dies or stalls loses it within one lease
//! and any instance takes it over. The stalled one, if it wakes, finds its lease gone:
//! it runs no tool (the tool-run ledger is fenced by the lease) and writes nothing. An
//! attempt whose approved tool could not be recorded in the ledger (the database failed
//! mid-resume) does not run it and writes nothing either: the job is retried, and after
//! [`MAX_ATTEMPTS`](super::store::MAX_ATTEMPTS) the row says why (`RESUME_FAILED`).
//!
//! Each worker reports that it is alive to readiness ([`crate::readiness`]).
//!
//! [`ServerConfig::resume_workers`](crate::ServerConfig::resume_workers) workers run per
//! instance, each claiming jobs in turn (`FOR UPDATE SKIP LOCKED` on Postgres). They wake
//! on a notify after every respond, poll periodically, and drain the queue at startup
//! (restart safety).

use gatehouse_wire::interaction::{ApprovalAnswer, InteractionStatus, Verdict};
use gatehouse_wire::resume::build_resume_request;
use gatehouse_wire::JsonObject;
use tokio::task::JoinHandle;

use super::parked::ParkedState;
use super::store::{
    ClaimedJob, CompleteOutcome, FailOutcome, JobCompletion, TurnClaim, TurnRecord,
};
use super::turn::{begin_turn, end_turn, ResumePoint, TurnInput, TurnWrite};
use crate::error::ApiError;
use crate::metrics::ResumeOutcome;
use crate::readiness::{PulseGuard, Task};
use crate::{AppState, StoreError};

/// The actor recorded for resumes.
pub const DISPATCHER_ACTOR: &str = "dispatcher";

/// The code of `resolution.error` on an answered row that names a parked turn which
/// waits on another gate (a second row written for the turn): it resumed nothing.
pub const NOT_THE_PARKED_GATE_CODE: &str = "NOT_THE_PARKED_GATE";

/// The code of `resolution.error` on an answered row whose parked turn another answer's
/// resume claimed first: it resumed nothing.
pub const TURN_ALREADY_RESUMED_CODE: &str = "TURN_ALREADY_RESUMED";

/// Why a resume attempt failed: the job is retried after its lease, and after
/// [`MAX_ATTEMPTS`](super::store::MAX_ATTEMPTS) the row says why (`RESUME_FAILED`). Its
/// text is what the job records and the log says.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// The database failed (reading the row or the turn, claiming the turn, completing
    /// the job).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The parked turn's state does not read as a [`ParkedState`].
    #[error("the parked turn's state is unreadable: {0}")]
    UnreadableParkedState(serde_json::Error),
    /// The parked turn has no state.
    #[error("the parked turn has no state")]
    NoParkedState,
    /// The resumed turn could not start.
    #[error(transparent)]
    Turn(ApiError),
    /// The turn's guard stopped the attempt
    /// ([`ExecutedTurn::attempt_lost`](super::turn::ExecutedTurn::attempt_lost): its
    /// lease moved on, or the tool-run ledger could not record the approved tool).
    #[error("{0}")]
    AttemptLost(String),
}

/// Start the resume workers ([`ServerConfig::resume_workers`](crate::ServerConfig::resume_workers),
/// at least one); the handle ends when they all have, at shutdown.
pub fn spawn(state: AppState) -> JoinHandle<()> {
    let workers = state.config.resume_workers.max(1);
    // Registered before the workers start: readiness counts them from its first answer.
    let pulses: Vec<PulseGuard> = (0..workers)
        .map(|_| {
            state
                .readiness
                .register(Task::ResumeWorker, state.config.dispatch_poll)
        })
        .collect();
    tokio::spawn(async move {
        let handles: Vec<JoinHandle<()>> = pulses
            .into_iter()
            .map(|pulse| tokio::spawn(run(state.clone(), pulse)))
            .collect();
        for handle in handles {
            if let Err(err) = handle.await {
                tracing::warn!(error = %err, "a resume worker ended abnormally");
            }
        }
    })
}

async fn run(state: AppState, pulse: PulseGuard) {
    let mut shutdown = state.shutdown.clone();
    let lease_ms = i64::try_from(state.config.lease.as_millis()).unwrap_or(i64::MAX);
    loop {
        if *shutdown.borrow() {
            return;
        }
        {
            let _busy = pulse.busy();
            redeliver(&state).await;
            settle_orphaned_stops(&state).await;
            drain(&state, lease_ms).await;
        }
        tokio::select! {
            _ = state.dispatch_wakeup.notified() => {}
            _ = tokio::time::sleep(state.config.dispatch_poll) => {}
            _ = shutdown.wait_for(|stop| *stop) => return,
        }
    }
}

/// Deliver again the durable continuations whose delivery failed after their commit
/// (their answered gates have no resume job); the next [`drain`] resumes them.
async fn redeliver(state: &AppState) {
    match state.interactions.redeliver_continuations(None).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(
            jobs = n,
            "redelivered continuations whose delivery had failed"
        ),
        Err(err) => tracing::warn!(error = %err, "redelivering continuations failed; will retry"),
    }
}

/// Settle the Stops nothing will apply: a parked target's (after a crash between its
/// admission and its application), a turn that ended without honouring it, a turn whose
/// instance died (`lost`).
async fn settle_orphaned_stops(state: &AppState) {
    match state.interactions.settle_orphaned_stops().await {
        Ok(0) => {}
        Ok(n) => tracing::info!(commands = n, "settled Stops whose target no longer runs"),
        Err(err) => tracing::warn!(error = %err, "settling orphaned Stops failed; will retry"),
    }
}

/// Process every claimable job, one at a time.
pub async fn drain(state: &AppState, lease_ms: i64) {
    loop {
        if *state.shutdown.borrow() {
            return;
        }
        match state.interactions.claim_job(lease_ms).await {
            Ok(Some(job)) => {
                if job.attempts > 1 {
                    // An earlier claim's lease expired (its worker failed, died or stalled).
                    state
                        .metrics
                        .lease_takeover(crate::metrics::LeasedWork::ResumeJob);
                }
                process(state, &job).await
            }
            Ok(None) => return,
            Err(err) => {
                tracing::warn!(error = %err, "claiming a resume job failed; will retry");
                return;
            }
        }
    }
}

async fn process(state: &AppState, job: &ClaimedJob) {
    tracing::info!(interaction_id = %job.interaction_id, attempt = job.attempts, "resuming");
    // One attempt waits out an unavailable database at most once; recording its
    // failure (below) waits afresh.
    let Err(reason) = crate::db::waiting_at_most_once(resume(state, job)).await else {
        return;
    };
    match state.interactions.fail_job(job, &reason.to_string()).await {
        Ok(FailOutcome::Retrying) => {
            state.metrics.resume(ResumeOutcome::Retrying);
            tracing::warn!(interaction_id = %job.interaction_id, %reason, attempt = job.attempts, "resume failed; the lease will expire and it is retried");
        }
        Ok(FailOutcome::GaveUp { .. }) => {
            state.metrics.resume(ResumeOutcome::GaveUp);
            tracing::warn!(interaction_id = %job.interaction_id, %reason, attempts = job.attempts, "resume failed for the last time; the row says so");
        }
        Ok(FailOutcome::LeaseLost) => {
            state.metrics.resume(ResumeOutcome::LeaseLost);
            tracing::warn!(interaction_id = %job.interaction_id, %reason, "resume failed after its lease moved on; another worker owns it");
        }
        Err(err) => {
            tracing::warn!(error = %err, "recording the failed resume attempt failed");
        }
    }
}

/// Finish a job that resumes nothing: the row stays as it is (`note` says why), or, with
/// `error`, is resolved with it as `resolution.error` (the answer is kept), so the
/// answer says what came of it instead of waiting forever.
async fn complete_without_resume(
    state: &AppState,
    job: &ClaimedJob,
    note: &str,
    error: Option<serde_json::Value>,
) -> Result<(), ResumeError> {
    tracing::info!(interaction_id = %job.interaction_id, note, "nothing to resume");
    let resolution = error.map(|error| {
        let mut resolution = JsonObject::new();
        resolution.insert("error".to_string(), error);
        resolution
    });
    let completion = JobCompletion {
        note: Some(note.to_string()),
        resolution,
        ..JobCompletion::default()
    };
    // The resolved row, when it was still waiting, is announced by its store.
    state
        .interactions
        .complete_job(job, &completion, None)
        .await?;
    Ok(())
}

/// `resolution.error` of an answered row that names a parked turn waiting on another
/// gate ([`NOT_THE_PARKED_GATE_CODE`]), naming that gate when it is found.
async fn not_the_parked_gate(
    state: &AppState,
    parked_turn: &TurnRecord,
    parked: &ParkedState,
) -> Result<serde_json::Value, ResumeError> {
    let gate = state
        .interactions
        .find_by_token(
            &parked_turn.project_id,
            &parked_turn.session_id,
            &parked.token,
        )
        .await?;
    let gate_id = gate.map(|g| g.id);
    let message = match &gate_id {
        Some(id) => format!(
            "turn {} waits on gate {id}; only that gate's answer resumes it",
            parked_turn.id
        ),
        None => format!(
            "turn {} waits on another gate; only that gate's answer resumes it",
            parked_turn.id
        ),
    };
    Ok(serde_json::json!({
        "code": NOT_THE_PARKED_GATE_CODE,
        "message": message,
        "turn_id": parked_turn.id,
        "parked_gate_id": gate_id,
    }))
}

/// `resolution.error` of an answered row whose parked turn another answer's resume
/// claimed first ([`TURN_ALREADY_RESUMED_CODE`]), naming that answer and its resume.
fn turn_already_resumed(
    turn_id: &str,
    interaction_id: Option<String>,
    resumed_by_turn_id: Option<String>,
) -> serde_json::Value {
    let by = interaction_id.as_deref().unwrap_or("another answer");
    serde_json::json!({
        "code": TURN_ALREADY_RESUMED_CODE,
        "message": format!("turn {turn_id} is resumed once, by the answer to {by}; this answer resumed nothing"),
        "turn_id": turn_id,
        "resumed_by_interaction_id": interaction_id,
        "resumed_by_turn_id": resumed_by_turn_id,
    })
}

/// Resume one claimed job. `Err` leaves the job to be retried after its lease.
async fn resume(state: &AppState, job: &ClaimedJob) -> Result<(), ResumeError> {
    let store = &state.interactions;
    let Some(row) = store.get_interaction_any(&job.interaction_id).await? else {
        return complete_without_resume(state, job, "the interaction no longer exists", None).await;
    };
    if row.status() != InteractionStatus::Responded {
        let note = format!("the interaction is {}; nothing to resume", row.status);
        return complete_without_resume(state, job, &note, None).await;
    }
    let parked_turn = match row.turn_id.as_deref() {
        Some(turn_id) => store.get_turn(&row.project_id, turn_id).await?,
        None => None,
    };
    let Some(parked_turn) = parked_turn.filter(|t| t.parked_state.is_some()) else {
        // A gate opened by an external runner: it consumes the answer itself and
        // transitions the row; there is no parked turn here to resume.
        let note = "no parked turn here (external runner)";
        return complete_without_resume(state, job, note, None).await;
    };
    let parked: ParkedState = parked_turn
        .parked_state
        .clone()
        .map(serde_json::from_value)
        .transpose()
        .map_err(ResumeError::UnreadableParkedState)?
        .ok_or(ResumeError::NoParkedState)?;
    // A parked turn waits on one gate, the row it wrote (its session and token); another
    // row naming the turn resumes nothing, whatever it shows.
    if row.session_id != parked_turn.session_id || row.token != parked.token {
        let error = not_the_parked_gate(state, &parked_turn, &parked).await?;
        let note = "not the gate the parked turn waits on";
        return complete_without_resume(state, job, note, Some(error)).await;
    }
    // One resume per parked turn: claim it before anything runs.
    match store.claim_parked_turn(job, &parked_turn.id).await? {
        TurnClaim::Claimed => {}
        TurnClaim::ClaimedByOther {
            interaction_id,
            resumed_by_turn_id,
        } => {
            let error = turn_already_resumed(&parked_turn.id, interaction_id, resumed_by_turn_id);
            let note = "the parked turn is resumed by another answer";
            return complete_without_resume(state, job, note, Some(error)).await;
        }
        TurnClaim::LeaseLost => {
            tracing::warn!(interaction_id = %job.interaction_id, "lease lost before claiming the parked turn; another worker owns the resume");
            return Ok(());
        }
    }
    // Read as Agenta's dispatcher reads it: `approved` is truthiness, `{}` denies.
    let answer = match row.resolution.as_ref().and_then(|r| r.get("answer")) {
        Some(serde_json::Value::Object(answer)) => ApprovalAnswer::from_answer(answer),
        _ => ApprovalAnswer::from_answer(&Default::default()),
    };
    // The answer approves the call the server gated: its id is the envelope's and the
    // tool-run ledger's key, never the answer's `tool_call_id` (a client's word).
    let tool_call_id = parked.gate.tool_call_id.clone();
    let answer = ApprovalAnswer {
        tool_call_id: Some(tool_call_id.clone()),
        ..answer
    };
    let wire_row = row.to_wire();
    let invoke = build_resume_request(
        &wire_row,
        &answer,
        parked_turn.messages.clone(),
        Some(&tool_call_id),
    );
    // A durable continuation named its execution when it was admitted: the resume turn
    // takes that id.
    let continuation_turn_id = store
        .continuation_of_turn(&row.project_id, &parked_turn.id)
        .await?
        .and_then(|command| command.continuation_execution_id);
    let session_id = row.session_id.clone();
    let executed = begin_turn(
        state,
        &session_id,
        TurnInput {
            project_id: row.project_id.clone(),
            actor: DISPATCHER_ACTOR.to_string(),
            invoke,
            resume: Some(ResumePoint {
                interaction_id: row.id.clone(),
                parked_turn_id: parked_turn.id.clone(),
                parked,
            }),
            job: Some(job.clone()),
            turn_id: continuation_turn_id,
        },
    )
    .await
    .map_err(ResumeError::Turn)?;
    // The attempt stopped because it could not go on safely (its lease moved on, or the
    // tool-run ledger could not record the approved tool, which therefore did not run):
    // nothing of it is written, and the job is retried after its lease. An approval is
    // never recorded as a resume that ran nothing.
    if let Some(reason) = executed.attempt_lost.clone() {
        end_turn(state, &session_id, &executed, TurnWrite::NotWritten).await;
        return Err(ResumeError::AttemptLost(reason));
    }
    let mut resolution = JsonObject::new();
    let verdict = if answer.approved {
        Verdict::Approved
    } else {
        Verdict::Denied
    };
    resolution.insert(
        "verdict".to_string(),
        serde_json::to_value(verdict).unwrap_or(serde_json::Value::Null),
    );
    resolution.insert(
        "tool_call_id".to_string(),
        serde_json::Value::String(tool_call_id),
    );
    // A refused resume (fail closed) says why on the row.
    if let Some(error) = executed.resolution_error() {
        resolution.insert("error".to_string(), error);
    }
    let completion = JobCompletion {
        turn: Some(executed.turn.clone()),
        gate: executed.gate.clone(),
        resolution: Some(resolution),
        parked_turn_id: Some(parked_turn.id.clone()),
        note: None,
    };
    match store
        .complete_job(job, &completion, executed.joined_write())
        .await
    {
        Ok(CompleteOutcome::Completed { .. }) => {
            end_turn(state, &session_id, &executed, TurnWrite::Written).await;
            state.metrics.resume(ResumeOutcome::Resumed);
            tracing::info!(interaction_id = %row.id, turn_id = %executed.turn.id, "resumed");
            Ok(())
        }
        Ok(CompleteOutcome::LeaseLost) => {
            end_turn(state, &session_id, &executed, TurnWrite::NotWritten).await;
            state.metrics.resume(ResumeOutcome::LeaseLost);
            tracing::warn!(interaction_id = %row.id, "lease lost before completion; another worker owns the resume");
            Ok(())
        }
        Err(err) => {
            end_turn(state, &session_id, &executed, TurnWrite::NotWritten).await;
            Err(err.into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts a failed attempt records on its job (and, at the last attempt, on the
    /// row), exactly as the version before [`ResumeError`] wrote them.
    #[test]
    fn resume_errors_read_as_the_texts_already_written() {
        let unreadable =
            || serde_json::from_value::<ParkedState>(serde_json::json!({"script": 5})).unwrap_err();
        assert_eq!(
            ResumeError::UnreadableParkedState(unreadable()).to_string(),
            format!("the parked turn's state is unreadable: {}", unreadable())
        );
        assert_eq!(
            ResumeError::NoParkedState.to_string(),
            "the parked turn has no state"
        );
        let store = || StoreError::Fenced("the lease moved on".to_string());
        assert_eq!(ResumeError::from(store()).to_string(), store().to_string());
        let turn = || ApiError::new(gatehouse_wire::error::GatehouseCode::NotFound, "gone");
        assert_eq!(ResumeError::Turn(turn()).to_string(), turn().to_string());
        assert_eq!(
            ResumeError::AttemptLost("lease lost".to_string()).to_string(),
            "lease lost"
        );
    }
}
