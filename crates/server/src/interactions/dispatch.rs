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
//! One resume per parked turn (CONTRACT.md A7): only an answer to a gate the turn
//! parked at (its session and token) resumes it, and before anything runs the resume
//! claims the turn in the database ([`InteractionStore::claim_parked_turn`](crate::interactions::store::InteractionStore::claim_parked_turn),
//! fenced by the lease); an answer to another row naming the turn, or a resume that finds
//! the claim taken, resolves its row with a typed `resolution.error`
//! ([`NOT_THE_PARKED_GATE_CODE`], [`TURN_ALREADY_RESUMED_CODE`]) and runs nothing. The
//! resume runs the call the turn gated, under the gate's call id, never an answer's
//! `tool_call_id`.
//!
//! A turn parked on several gates (a `parallel` step's asking calls) continues once,
//! after its last gate is answered: the job of an answer while another gate is pending
//! resumes nothing (its row stays `responded`), a cancelled gate means the turn does
//! not continue ([`SIBLING_GATE_CANCELLED_CODE`]), and the job that finds every gate
//! answered claims the turn and resumes it with every verdict (each gate's envelope),
//! resolving every gate in its completion. Of racing last answers, the claim lets one
//! resume; the others find it claimed by a sibling and leave their rows to it.
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
use gatehouse_wire::resume::{append_to_last_assistant, approval_envelope, build_resume_request};
use gatehouse_wire::JsonObject;
use tokio::task::JoinHandle;

use super::parked::{ParkedGate, ParkedState};
use super::store::{
    ClaimedJob, CompleteOutcome, FailOutcome, InteractionRecord, JobCompletion, TurnClaim,
    TurnRecord,
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

/// The code of `resolution.error` on an answered gate of a turn parked on several gates
/// (a `parallel` step) when another of its gates was cancelled (a stale turn, a Stop):
/// the turn does not continue.
pub const SIBLING_GATE_CANCELLED_CODE: &str = "SIBLING_GATE_CANCELLED";

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
    // A resolved row's job: one of several gates of a parked turn, answered by a
    // transition (its resume continues the turn when it completes the set).
    let resolved = row.status() == InteractionStatus::Resolved;
    let nothing_to_resume = format!("the interaction is {}; nothing to resume", row.status);
    if row.status() != InteractionStatus::Responded && !(resolved && row.turn_id.is_some()) {
        return complete_without_resume(state, job, &nothing_to_resume, None).await;
    }
    let parked_turn = match row.turn_id.as_deref() {
        Some(turn_id) => store.get_turn(&row.project_id, turn_id).await?,
        None => None,
    };
    let Some(parked_turn) = parked_turn.filter(|t| t.parked_state.is_some()) else {
        if resolved {
            return complete_without_resume(state, job, &nothing_to_resume, None).await;
        }
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
    let gates = parked.parked_gates();
    let own_gate = (row.session_id == parked_turn.session_id)
        .then(|| gates.iter().find(|g| g.token == row.token))
        .flatten()
        .cloned();
    if parked.has_several_gates() {
        if let Some(own_gate) = own_gate {
            return resume_parallel(state, job, row, parked_turn, parked, own_gate).await;
        }
    }
    if resolved {
        return complete_without_resume(state, job, &nothing_to_resume, None).await;
    }
    // A parked turn waits on its gates, the rows it wrote (its session and tokens);
    // another row naming the turn resumes nothing, whatever it shows.
    if own_gate.is_none() {
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
    // The answer approves the call the server gated: its id is the envelope's and the
    // tool-run ledger's key, never the answer's `tool_call_id` (a client's word).
    let tool_call_id = parked.gate.tool_call_id.clone();
    let history = parked_turn.messages.clone();
    run_resume(
        state,
        job,
        &row,
        &parked_turn,
        parked,
        (&tool_call_id, history),
        Vec::new(),
    )
    .await
}

/// The answer a gate holds, read as Agenta's dispatcher reads it: `approved` is
/// truthiness, `{}` denies. A gate resolved by a transition holds its `verdict`.
fn answer_of(row: &InteractionRecord) -> ApprovalAnswer {
    let resolution = row.resolution.as_ref();
    match resolution.and_then(|r| r.get("answer")) {
        Some(serde_json::Value::Object(answer)) => ApprovalAnswer::from_answer(answer),
        _ => ApprovalAnswer {
            approved: resolution
                .and_then(|r| r.get("verdict"))
                .and_then(serde_json::Value::as_str)
                == Some("approved"),
            ..ApprovalAnswer::from_answer(&Default::default())
        },
    }
}

/// `{verdict, tool_call_id}`: what a resume merges into an answered gate's resolution.
fn verdict_resolution(approved: bool, tool_call_id: &str) -> JsonObject {
    let verdict = if approved {
        Verdict::Approved
    } else {
        Verdict::Denied
    };
    let mut resolution = JsonObject::new();
    resolution.insert(
        "verdict".to_string(),
        serde_json::to_value(verdict).unwrap_or(serde_json::Value::Null),
    );
    resolution.insert(
        "tool_call_id".to_string(),
        serde_json::Value::String(tool_call_id.to_string()),
    );
    resolution
}

/// The job of one of the several gates of a parked turn (a `parallel` step's). The turn
/// continues once, when its last gate is answered: while another is pending this job
/// resumes nothing (the row stays `responded`; the answer that completes the set
/// resumes the turn); a cancelled one (a stale turn, a Stop) means the turn does not
/// continue. When all are answered, the job claims the turn (the fence: of racing
/// last answers one claims it, the others find it claimed by a sibling and leave their
/// rows to it) and resumes it with every gate's verdict; its completion resolves every
/// gate, each with its own verdict and call.
async fn resume_parallel(
    state: &AppState,
    job: &ClaimedJob,
    row: InteractionRecord,
    parked_turn: TurnRecord,
    parked: ParkedState,
    own_gate: ParkedGate,
) -> Result<(), ResumeError> {
    let store = &state.interactions;
    let gates = parked.parked_gates();
    let mut rows = Vec::with_capacity(gates.len());
    for gate in &gates {
        let sibling = if gate.token == row.token {
            Some(row.clone())
        } else {
            store
                .find_by_token(
                    &parked_turn.project_id,
                    &parked_turn.session_id,
                    &gate.token,
                )
                .await?
        };
        rows.push((gate, sibling));
    }
    if let Some((gate, sibling)) = rows.iter().find(|(_, sibling)| {
        sibling
            .as_ref()
            .is_none_or(|r| r.status() == InteractionStatus::Cancelled)
    }) {
        let cancelled_gate_id = sibling.as_ref().map(|r| r.id.clone());
        let error = serde_json::json!({
            "code": SIBLING_GATE_CANCELLED_CODE,
            "message": format!(
                "turn {} continues once all its gates are answered, and the gate of call {} was cancelled: the turn does not continue",
                parked_turn.id, gate.gate.tool_call_id
            ),
            "turn_id": parked_turn.id,
            "cancelled_gate_id": cancelled_gate_id,
        });
        let note = "another gate of the turn was cancelled; the turn does not continue";
        return complete_without_resume(state, job, note, Some(error)).await;
    }
    if rows.iter().any(|(_, sibling)| {
        sibling
            .as_ref()
            .is_some_and(|r| r.status() == InteractionStatus::Pending)
    }) {
        let note = "awaiting the turn's other gates; the answer that completes them resumes it";
        return complete_without_resume(state, job, note, None).await;
    }
    match store.claim_parked_turn(job, &parked_turn.id).await? {
        TurnClaim::Claimed => {}
        TurnClaim::ClaimedByOther {
            interaction_id,
            resumed_by_turn_id,
        } => {
            let sibling = rows.iter().any(|(_, r)| {
                r.as_ref().map(|r| &r.id) == interaction_id.as_ref() && interaction_id.is_some()
            });
            if sibling {
                // The resume of another gate of the turn continues it with this answer
                // too, and resolves this row with its verdict.
                let note = "the turn is resumed with its other gates, by another gate's answer";
                return complete_without_resume(state, job, note, None).await;
            }
            let error = turn_already_resumed(&parked_turn.id, interaction_id, resumed_by_turn_id);
            let note = "the parked turn is resumed by another answer";
            return complete_without_resume(state, job, note, Some(error)).await;
        }
        TurnClaim::LeaseLost => {
            tracing::warn!(interaction_id = %job.interaction_id, "lease lost before claiming the parked turn; another worker owns the resume");
            return Ok(());
        }
    }
    // Every other gate's verdict rides in the history as its own envelope (this job's
    // row's is added by the resume builder), and is merged into its row when the
    // resume commits.
    let mut history = parked_turn.messages.clone();
    let mut siblings = Vec::new();
    for (gate, sibling) in &rows {
        let Some(sibling) = sibling.as_ref().filter(|r| r.id != row.id) else {
            continue;
        };
        let answer = answer_of(sibling);
        append_to_last_assistant(
            &mut history,
            approval_envelope(&gate.gate.tool_call_id, answer.approved, &sibling.token),
        );
        siblings.push((
            sibling.id.clone(),
            verdict_resolution(answer.approved, &gate.gate.tool_call_id),
        ));
    }
    let tool_call_id = own_gate.gate.tool_call_id.clone();
    run_resume(
        state,
        job,
        &row,
        &parked_turn,
        parked,
        (&tool_call_id, history),
        siblings,
    )
    .await
}

/// Run the claimed resume of `parked_turn` for `row` (whose gate is the call
/// `gate.0`; `gate.1` the history it continues, other gates' envelopes included) and
/// record it, resolving `row` and `siblings` (a turn parked on several gates).
async fn run_resume(
    state: &AppState,
    job: &ClaimedJob,
    row: &InteractionRecord,
    parked_turn: &TurnRecord,
    parked: ParkedState,
    gate: (&str, Vec<gatehouse_wire::run::ChatMessage>),
    siblings: Vec<(String, JsonObject)>,
) -> Result<(), ResumeError> {
    let store = &state.interactions;
    let (tool_call_id, history) = gate;
    // Read as Agenta's dispatcher reads it: `approved` is truthiness, `{}` denies.
    let answer = ApprovalAnswer {
        tool_call_id: Some(tool_call_id.to_string()),
        ..answer_of(row)
    };
    let wire_row = row.to_wire();
    let invoke = build_resume_request(&wire_row, &answer, history, Some(tool_call_id));
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
    let mut resolution = verdict_resolution(answer.approved, tool_call_id);
    let mut siblings = siblings;
    // A refused resume (fail closed) says why on the row (and on every gate it
    // continues).
    if let Some(error) = executed.resolution_error() {
        resolution.insert("error".to_string(), error.clone());
        for (_, sibling) in &mut siblings {
            sibling.insert("error".to_string(), error.clone());
        }
    }
    let completion = JobCompletion {
        turn: Some(executed.turn.clone()),
        gates: executed.gates.clone(),
        resolution: Some(resolution),
        sibling_resolutions: siblings,
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
