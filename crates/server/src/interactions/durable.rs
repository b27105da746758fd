//! Agenta's durable contract (Agenta v0.121 and later) on Agenta's session paths, served
//! when [`ServerConfig::agenta_contract`](crate::ServerConfig::agenta_contract) is
//! `durable` (docs/CONTRACT.md, "Durable contract"):
//!
//! - `POST /sessions/interactions/{id}/respond`: an `Idempotency-Key` is required; the
//!   answers are admitted, the source turn settled and the continuation recorded in ONE
//!   transaction ([`InteractionStore::respond_durable`](super::store::InteractionStore::respond_durable));
//!   the resume job that delivers it is written after the commit (a failed delivery is
//!   answered 202 `recoverable` and redelivered); 202
//!   `{interaction, command, execution}`; errors as Agenta's envelope, in its check order.
//!   An answer that leaves some of a turn's several gates pending is recorded alone:
//!   202, `command: null`, `execution {id: the source turn, state:
//!   awaiting_interactions}`, the source not settled; the answer that completes the set
//!   continues the turn (its command names every gate, its delivery resumes the turn);
//! - `POST /sessions/{session_id}/continuations/resume`: redeliver a continuation whose
//!   delivery failed;
//! - Gatehouse's own `POST /sessions/interactions/respond-batch` ([`respond_batch`]):
//!   each turn's gates admitted as one durable respond (`answers[]`), each gate reported
//!   as the batch reports it.
//!
//! The legacy respond (200 `{count, interaction}`) stays in [`super::api`].

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use gatehouse_wire::sessions::{
    ErrorCode, ErrorEnvelope, SessionCommandRef, SessionCommandState,
    SessionContinuationResumeResponse, SessionExecutionState,
    SessionInteractionContinuationExecution, SessionInteractionContinuationResponse,
    SessionInteractionRespondRequest,
};
use gatehouse_wire::JsonObject;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::store::{
    continuation_state, BatchRespondItem, DurableAnswer, DurableOutcome, DurableRespond,
    RespondOutcome,
};
use crate::api::extract::{parse_uuid, ActorName, JsonBody, ProjectId};
use crate::error::ApiResult;
use crate::AppState;

/// The longest `Idempotency-Key` (characters, after stripping).
pub const MAX_KEY_CHARS: usize = 255;

/// TEST ONLY: the environment variable that names a fault point ([`fault_point`]). Unset
/// (always, outside crash tests), no fault point does anything.
pub const FAULT_ENV: &str = "GATEHOUSE_TEST_FAULT";

/// The fault point between a durable respond's commit (answer, settlement, continuation)
/// and the delivery of its continuation (its resume job): the window a crash test kills
/// the process in.
pub const FAULT_CONTINUATION_COMMITTED: &str = "continuation_committed";

/// TEST ONLY. When [`FAULT_ENV`] (read once, the first time any fault point is passed)
/// names `point`, the process kills itself here with SIGKILL, as `kill -9` would (no
/// destructor, no flush, nothing after this line runs); were that impossible, it aborts.
/// Off unless the variable is set: a crash test (crates/cli/tests/it/crash.rs) sets it on
/// the `gatehouse serve` child it kills.
fn fault_point(point: &str) {
    static NAMED: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let named = NAMED.get_or_init(|| std::env::var(FAULT_ENV).ok());
    if named.as_deref() != Some(point) {
        return;
    }
    tracing::error!(
        point,
        "test fault point reached: the process kills itself (SIGKILL)"
    );
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &std::process::id().to_string()])
        .status();
    std::process::abort();
}

/// A JSON answer with `status`, written as Agenta's API writes it.
fn with_status<T: serde::Serialize>(status: StatusCode, value: &T) -> Response {
    let mut response = crate::api::reply::agenta_api_json(value);
    if response.status() == StatusCode::OK {
        *response.status_mut() = status;
    }
    response
}

/// Agenta's top-level error envelope (keys absent rather than null).
pub(crate) fn envelope(
    status: StatusCode,
    code: ErrorCode,
    message: &str,
    details: Option<Value>,
    next_step: Option<&str>,
) -> Response {
    let details = details.and_then(|d| match d {
        Value::Object(map) if !map.is_empty() => Some(map),
        _ => None,
    });
    let body = ErrorEnvelope {
        code,
        message: message.to_string(),
        retryable: false,
        details,
        next_step: next_step.map(str::to_string),
        extra: JsonObject::new(),
    };
    (status, axum::Json(body)).into_response()
}

fn validation(message: &str, details: Option<Value>, next_step: Option<&str>) -> Response {
    envelope(
        StatusCode::UNPROCESSABLE_ENTITY,
        ErrorCode::ValidationError,
        message,
        details,
        next_step,
    )
}

/// The `Idempotency-Key` of a durable request: stripped; `Ok(None)` when absent or blank,
/// `Err(())` when longer than [`MAX_KEY_CHARS`] or not text.
pub(crate) fn durable_key(headers: &HeaderMap) -> Result<Option<String>, ()> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let text = value.to_str().map_err(|_| ())?.trim();
    if text.is_empty() {
        return Ok(None);
    }
    if text.chars().count() > MAX_KEY_CHARS {
        return Err(());
    }
    Ok(Some(text.to_string()))
}

/// FastAPI's 422 for a body its model refuses (`loc`, `msg`, `type`).
fn model_error(loc: &[&str], message: &str) -> Response {
    let detail = json!([{"type": "value_error", "loc": loc, "msg": message}]);
    (
        StatusCode::UNPROCESSABLE_ENTITY,
        axum::Json(json!({ "detail": detail })),
    )
        .into_response()
}

/// The hash an `Idempotency-Key` is bound to: the gates, their answers, the expectation.
fn request_hash(answers: &[DurableAnswer], expected: Option<&str>) -> String {
    let items: Vec<Value> = answers
        .iter()
        .map(|a| json!([a.interaction_id, a.answer]))
        .collect();
    let canonical = json!({"answers": items, "expected_execution_id": expected}).to_string();
    hex::encode(Sha256::digest(canonical.as_bytes()))
}

/// `POST /sessions/interactions/{id}/respond`, durable.
pub(super) async fn respond(
    State(state): State<AppState>,
    ProjectId(project_id): ProjectId,
    ActorName(actor): ActorName,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: JsonBody<SessionInteractionRespondRequest>,
) -> ApiResult<Response> {
    let id = parse_uuid(&id, &["path", "interaction_id"])?;
    let body = body.value;
    // The request model's own rules (FastAPI's 422 there).
    if body.answer.is_some() && body.answers.is_some() {
        return Ok(model_error(
            &["body"],
            "Value error, answer and answers cannot be combined",
        ));
    }
    if let Some(answers) = &body.answers {
        if answers.is_empty() || answers.len() > gatehouse_wire::sessions::respond::MAX_ANSWERS {
            return Ok(model_error(
                &["body", "answers"],
                "List should have at least 1 item and at most 100 items",
            ));
        }
        if answers.iter().any(|item| !item.extra.is_empty()) {
            return Ok(model_error(
                &["body", "answers"],
                "Extra inputs are not permitted",
            ));
        }
    }
    // The route's checks, in Agenta's order.
    let mut answers: Vec<DurableAnswer> = Vec::new();
    if let Some(items) = &body.answers {
        let mut parsed = Vec::with_capacity(items.len());
        for item in items {
            match uuid::Uuid::parse_str(item.interaction_id.trim()) {
                Ok(uuid) => parsed.push(DurableAnswer {
                    interaction_id: uuid.to_string(),
                    answer: item.answer.clone(),
                }),
                Err(_) => {
                    return Ok(model_error(
                        &["body", "answers", "interaction_id"],
                        "Input should be a valid UUID",
                    ))
                }
            }
        }
        if !parsed.iter().any(|a| a.interaction_id == id) {
            return Ok(validation(
                "The path interaction must be included in answers.",
                Some(json!({"field": "answers", "reason": "anchor_missing"})),
                None,
            ));
        }
        answers = parsed;
    }
    let key = match durable_key(&headers) {
        Ok(Some(key)) => key,
        Ok(None) => {
            return Ok(validation(
                "Idempotency-Key is required for a durable response.",
                Some(json!({"field": "Idempotency-Key", "reason": "required"})),
                Some("Retry with a stable Idempotency-Key header."),
            ))
        }
        Err(()) => {
            return Ok(validation(
                "Idempotency-Key is too long.",
                Some(json!({"field": "Idempotency-Key", "reason": "too_long"})),
                Some("Use an Idempotency-Key of at most 255 characters."),
            ))
        }
    };
    if body.answers.is_none() {
        let Some(answer) = body.answer.clone() else {
            return Ok(validation(
                "answer is required for a durable response.",
                Some(json!({"field": "answer", "reason": "required"})),
                None,
            ));
        };
        answers.push(DurableAnswer {
            interaction_id: id.clone(),
            answer,
        });
    }
    let mut seen = std::collections::HashSet::new();
    if !answers
        .iter()
        .all(|a| seen.insert(a.interaction_id.clone()))
    {
        return Ok(validation(
            "Each response must answer at least one distinct interaction.",
            None,
            None,
        ));
    }
    // Gatehouse's rule (CONTRACT.md A6): an answer names its gate's call, or none.
    for item in &answers {
        if let Some(gated) =
            super::api::other_call_named(&state, &project_id, &item.interaction_id, &item.answer)
                .await?
        {
            return Ok(validation(
                &format!(
                    "answer.tool_call_id {}",
                    super::api::other_call_message(&gated)
                ),
                Some(json!({"field": "answer.tool_call_id", "reason": "other_call"})),
                None,
            ));
        }
    }
    let expected = body
        .expected_execution_id
        .as_deref()
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(str::to_string);
    let request = DurableRespond {
        project_id: project_id.clone(),
        anchor_id: id,
        request_hash: request_hash(&answers, expected.as_deref()),
        answers,
        expected_execution_id: expected,
        key,
        actor,
    };
    super::api::record_admission(&state, state.backlog.admit().await);
    let outcome = state.interactions.respond_durable(&request).await?;
    Ok(answer_outcome(&state, &project_id, outcome).await)
}

fn continuation_response(
    interaction: &super::store::InteractionRecord,
    command: Option<SessionCommandRef>,
    execution_id: String,
    execution_state: &str,
) -> Response {
    with_status(
        StatusCode::ACCEPTED,
        &SessionInteractionContinuationResponse {
            interaction: interaction.to_wire(),
            command,
            execution: SessionInteractionContinuationExecution {
                id: execution_id,
                state: SessionExecutionState::from_wire(execution_state),
                extra: JsonObject::new(),
            },
            extra: JsonObject::new(),
        },
    )
}

fn command_ref(id: &str, state: &str) -> SessionCommandRef {
    SessionCommandRef {
        id: id.to_string(),
        state: SessionCommandState::from_wire(state),
        extra: JsonObject::new(),
    }
}

const SOURCE_CLOSED: &str = "The source execution can no longer be continued.";

async fn answer_outcome(state: &AppState, project_id: &str, outcome: DurableOutcome) -> Response {
    let conflict = StatusCode::CONFLICT;
    match outcome {
        DurableOutcome::NotFound => (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"detail": "Interaction not found"})),
        )
            .into_response(),
        DurableOutcome::NotLinked => {
            validation("The interaction is not linked to an execution.", None, None)
        }
        DurableOutcome::Mismatch {
            current_execution_id,
        } => envelope(
            conflict,
            ErrorCode::ExecutionMismatch,
            "The interaction belongs to a different execution.",
            Some(json!({ "current_execution_id": current_execution_id })),
            None,
        ),
        DurableOutcome::MixedExecutions {
            current_execution_id,
        } => envelope(
            conflict,
            ErrorCode::ExecutionMismatch,
            "Every interaction must belong to the same execution.",
            Some(json!({ "current_execution_id": current_execution_id })),
            None,
        ),
        DurableOutcome::KeyReused => envelope(
            conflict,
            ErrorCode::IdempotencyKeyReused,
            "The Idempotency-Key was already used for a different response.",
            None,
            None,
        ),
        DurableOutcome::SourceClosed { execution_state } => envelope(
            conflict,
            ErrorCode::ExecutionTerminal,
            SOURCE_CLOSED,
            Some(json!({ "execution_state": execution_state })),
            None,
        ),
        DurableOutcome::AnsweredDifferently => envelope(
            conflict,
            ErrorCode::ExecutionTerminal,
            "The interaction was already answered differently.",
            Some(json!({"interaction_status": "responded"})),
            None,
        ),
        DurableOutcome::NotPending { status } => envelope(
            conflict,
            ErrorCode::ExecutionTerminal,
            "The interaction is no longer pending.",
            Some(json!({ "interaction_status": status })),
            None,
        ),
        DurableOutcome::AlreadyAnswered {
            interaction,
            execution_id,
            execution_state,
        } => continuation_response(&interaction, None, execution_id, execution_state),
        // Some of the turn's gates still wait: recorded, nothing continued yet.
        DurableOutcome::Awaiting {
            interaction,
            execution_id,
        } => continuation_response(&interaction, None, execution_id, "awaiting_interactions"),
        DurableOutcome::Replayed {
            interaction,
            command,
        } => continuation_response(
            &interaction,
            Some(command_ref(&command.id, &command.state)),
            command.continuation_execution_id.unwrap_or_default(),
            continuation_state(&command.state),
        ),
        DurableOutcome::Admitted {
            interaction,
            command,
            answered,
        } => {
            state.backlog.answered(answered.len() as u64);
            fault_point(FAULT_CONTINUATION_COMMITTED);
            // Delivery after the commit: a failure leaves the continuation `recoverable`
            // (answered 202 all the same), redelivered by the dispatcher or by
            // `POST /sessions/{id}/continuations/resume`.
            let execution_state = match state
                .interactions
                .deliver_continuation(project_id, &answered)
                .await
            {
                Ok(()) => {
                    state.dispatch_wakeup.notify_one();
                    "pending_delivery"
                }
                Err(err) => {
                    tracing::warn!(error = %err, command_id = %command.id, code = "continuation_delivery_failed", "delivering the continuation failed; it is recoverable");
                    "recoverable"
                }
            };
            continuation_response(
                &interaction,
                Some(command_ref(&command.id, &command.state)),
                command.continuation_execution_id.unwrap_or_default(),
                execution_state,
            )
        }
    }
}

/// `POST /sessions/{session_id}/continuations/resume`: deliver again the session's
/// continuation whose delivery failed; `{resumed: false}` when there is none (or its
/// delivery is under way).
pub(super) async fn resume_continuation(
    State(state): State<AppState>,
    ProjectId(project_id): ProjectId,
    Path(session_id): Path<String>,
) -> ApiResult<Response> {
    let written = state
        .interactions
        .redeliver_continuations(Some((&project_id, &session_id)))
        .await?;
    if written > 0 {
        state.dispatch_wakeup.notify_one();
    }
    Ok(crate::api::reply::json(
        &SessionContinuationResumeResponse {
            resumed: written > 0,
            extra: JsonObject::new(),
        },
    ))
}

/// How often a batch decides a turn's gates again after a concurrent writer moved one
/// of them (an answer, a cancellation) between its read and its admission.
const BATCH_TURN_ATTEMPTS: usize = 3;

/// Gatehouse's batch respond on a durable host (`POST .../respond-batch`, C4): the
/// outcomes of `items` in their order, as the batch reports them.
///
/// The gates are grouped by their turn, and each turn's still-pending gates are admitted
/// as ONE durable respond (`answers[]` of them, under a key of its own), so each turn is
/// settled, continued and delivered exactly as Agenta's durable respond does it: its
/// answers are recorded; while one of its gates stays pending, nothing more (it waits);
/// the answer completing its gates settles it and records its continuation. One
/// transaction PER TURN, not one for the batch: the turn is the durable contract's unit
/// (its settlement is one compare-and-set, decided again on its own when a concurrent
/// writer settles it first), so one turn's conflict never rolls back or re-decides
/// another's, and no transaction holds the gate locks of several turns (two batches
/// naming the same turns in other orders cannot deadlock). A batch spanning turns is
/// therefore atomic per turn.
///
/// Each gate is reported as before: `answered` with its row; a gate no longer pending
/// `already_answered` (or, with an `idempotency_key` and the answer it holds, answered:
/// the retry of an answer that was taken); an unknown one `not_found`. A gate naming no
/// turn (an external runner's) continues nothing durable: those go through the legacy
/// batch, as on a legacy host.
pub(super) async fn respond_batch(
    state: &AppState,
    project_id: &str,
    items: &[BatchRespondItem<'_>],
    actor: &str,
) -> Result<Vec<RespondOutcome>, crate::StoreError> {
    let store = &state.interactions;
    let mut outcomes: Vec<Option<RespondOutcome>> = vec![None; items.len()];
    // A gate named again under the same key with the same answer: the first's answer.
    let mut replays: Vec<(usize, usize)> = Vec::new();
    let mut unlinked: Vec<usize> = Vec::new();
    // Each turn's items, in the order turns first appear: (turn, [item index]).
    let mut turns: Vec<(String, Vec<usize>)> = Vec::new();
    // Each gate's first item, and whether it names a turn.
    let mut first_of: std::collections::HashMap<&str, (usize, bool)> =
        std::collections::HashMap::new();
    for (index, item) in items.iter().enumerate() {
        if let Some(&(first, linked)) = first_of.get(item.id) {
            if !linked {
                // The legacy batch decides a turnless gate's repeats itself.
                unlinked.push(index);
                continue;
            }
            // The same gate again: as a single respond after the first would answer.
            let same = items[first].answer == item.answer
                && item.idempotency.is_some()
                && items[first].idempotency.map(|(k, _)| k) == item.idempotency.map(|(k, _)| k);
            if same {
                replays.push((index, first));
            } else {
                outcomes[index] = Some(RespondOutcome::NotPending);
            }
            continue;
        }
        let Some(row) = store.get_interaction(project_id, item.id).await? else {
            first_of.insert(item.id, (index, true));
            outcomes[index] = Some(RespondOutcome::NotFound);
            continue;
        };
        first_of.insert(item.id, (index, row.turn_id.is_some()));
        let Some(turn_id) = row.turn_id.clone() else {
            unlinked.push(index);
            continue;
        };
        match turns.iter_mut().find(|(turn, _)| *turn == turn_id) {
            Some((_, members)) => members.push(index),
            None => turns.push((turn_id, vec![index])),
        }
    }
    for (_, members) in &turns {
        let mut open: Vec<usize> = members.clone();
        for _ in 0..BATCH_TURN_ATTEMPTS {
            // Gates no longer pending are reported as such; the rest admitted together.
            let mut pending = Vec::with_capacity(open.len());
            for &index in &open {
                let item = &items[index];
                match store.get_interaction(project_id, item.id).await? {
                    None => outcomes[index] = Some(RespondOutcome::NotFound),
                    Some(row) if row.status != "pending" => {
                        outcomes[index] = Some(taken(&row, item));
                    }
                    Some(_) => pending.push(index),
                }
            }
            open = pending;
            if open.is_empty() {
                break;
            }
            let answers: Vec<DurableAnswer> = open
                .iter()
                .map(|&index| DurableAnswer {
                    interaction_id: items[index].id.to_string(),
                    answer: items[index].answer.clone(),
                })
                .collect();
            let request = DurableRespond {
                project_id: project_id.to_string(),
                anchor_id: items[open[0]].id.to_string(),
                request_hash: request_hash(&answers, None),
                answers,
                expected_execution_id: None,
                key: format!("respond-batch:{}", uuid::Uuid::new_v4()),
                actor: actor.to_string(),
            };
            match store.respond_durable(&request).await? {
                DurableOutcome::Admitted {
                    command, answered, ..
                } => {
                    state.backlog.answered(answered.len() as u64);
                    if let Err(err) = store.deliver_continuation(project_id, &answered).await {
                        tracing::warn!(error = %err, command_id = %command.id, code = "continuation_delivery_failed", "delivering the continuation failed; it is recoverable");
                    }
                }
                DurableOutcome::Awaiting { .. } | DurableOutcome::Replayed { .. } => {}
                // A concurrent writer moved a gate: decide again from the rows.
                _ => continue,
            }
            for &index in &open {
                outcomes[index] = Some(
                    match store.get_interaction(project_id, items[index].id).await? {
                        Some(row) => RespondOutcome::Won {
                            record: Box::new(row),
                        },
                        None => RespondOutcome::NotFound,
                    },
                );
            }
            open.clear();
            break;
        }
        // Still moving under us after every attempt: not answered here.
        for index in open {
            outcomes[index] = Some(RespondOutcome::NotPending);
        }
    }
    if !unlinked.is_empty() {
        let legacy: Vec<BatchRespondItem<'_>> = unlinked.iter().map(|&i| items[i]).collect();
        let answered = store.respond_batch(project_id, &legacy, actor).await?;
        for (index, outcome) in unlinked.into_iter().zip(answered) {
            outcomes[index] = Some(outcome);
        }
    }
    for (index, first) in replays {
        outcomes[index] = Some(match &outcomes[first] {
            Some(RespondOutcome::Won { record }) => RespondOutcome::Replayed {
                response: record.response_body(),
            },
            Some(other) => other.clone(),
            None => RespondOutcome::NotPending,
        });
    }
    Ok(outcomes
        .into_iter()
        .map(|o| o.unwrap_or(RespondOutcome::NotPending))
        .collect())
}

/// A batch item whose gate is no longer pending: the retry of an answer that was taken
/// (it carries a key and the gate holds exactly its answer: answered, with the row),
/// else already answered.
fn taken(row: &super::store::InteractionRecord, item: &BatchRespondItem<'_>) -> RespondOutcome {
    let holds = row.resolution.as_ref().and_then(|r| r.get("answer"))
        == Some(&Value::Object(item.answer.clone()));
    if item.idempotency.is_some() && holds && row.status != "cancelled" {
        RespondOutcome::Replayed {
            response: row.response_body(),
        }
    } else {
        RespondOutcome::NotPending
    }
}
