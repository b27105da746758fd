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
//! - Gatehouse's own `POST /sessions/interactions/respond-batch` on a durable host (in
//!   [`super::api`]): each turn's gates admitted as one durable respond (`answers[]`,
//!   [`InteractionStore::respond_batch_durable`](super::store::InteractionStore::respond_batch_durable)),
//!   each gate reported as the batch reports it.
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

use super::store::{
    continuation_state, durable_request_hash, DurableAnswer, DurableOutcome, DurableRespond,
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
                    // The body's digest is the path's gate's (C8).
                    digest: (uuid.to_string() == id)
                        .then(|| body.digest.clone())
                        .flatten(),
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
            digest: body.digest.clone(),
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
        request_hash: durable_request_hash(&answers, expected.as_deref()),
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
        // Gatehouse's own refusal (C8), in Gatehouse's body on Agenta's paths.
        DurableOutcome::StaleGate => crate::error::ApiError::stale_gate().into_response(),
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
