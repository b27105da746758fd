//! Agenta's durable session control beyond the respond, served when Agenta's paths speak
//! its durable contract (docs/CONTRACT.md, "Durable contract"):
//!
//! - `POST /sessions/{session_id}/cancel`: the durable Stop. Admitted in one transaction
//!   ([`InteractionStore::admit_stop`](super::store::InteractionStore::admit_stop)); 202
//!   says the command is recorded, never that the run stopped. A parked target is applied
//!   at once after the commit (nothing runs it); a running one by its harness at its next
//!   step boundary.
//! - `GET /sessions/{session_id}`: the snapshot (execution state, pending gates, how far
//!   the session's log goes, the capabilities).
//! - `GET /sessions/{session_id}/events?after=N`: the session's durable events replayed
//!   from the log after `N`, `ready`, then each new one as it commits (woken by the
//!   announcer's bell, and polled, so an event another instance wrote arrives too).

use std::collections::HashMap;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use gatehouse_wire::sessions::{
    CancelError, CancelErrorDetail, CancelExecutionConflict, ErrorCode, SessionCancelRequest,
    SessionCancelResponse, SessionCapabilities, SessionCommandRef, SessionCommandState,
    SessionExecutionRef, SessionExecutionSnapshot, SessionExecutionState, SessionRecordsReadState,
    SessionSnapshotPending, SessionSnapshotResponse,
};
use gatehouse_wire::JsonObject;
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;

use super::api::{async_stream, is_streamable_session_id};
use super::store::{CommandRecord, StopOutcome, StopRequest};
use crate::announce::session_log;
use crate::api::extract::{OptionalJsonBody, ProjectId};
use crate::error::{ApiError, ApiResult};
use crate::AppState;
use gatehouse_wire::error::GatehouseCode;

/// How many events one replay read takes (a longer log is read in pages).
const REPLAY_PAGE: u32 = 200;

/// How often an open events stream reads the log without a wake-up (an event another
/// instance committed).
const EVENTS_POLL: Duration = Duration::from_secs(1);

/// The capabilities of a host serving these routes.
pub fn durable_capabilities() -> SessionCapabilities {
    SessionCapabilities {
        durable_approvals: true,
        queue: false,
        steer: false,
        extra: JsonObject::new(),
    }
}

fn cancel_error(status: StatusCode, detail: CancelErrorDetail) -> Response {
    (
        status,
        axum::Json(CancelError {
            detail,
            extra: JsonObject::new(),
        }),
    )
        .into_response()
}

fn command_ref(command: &CommandRecord) -> SessionCommandRef {
    SessionCommandRef {
        id: command.id.clone(),
        state: SessionCommandState::from_wire(&command.state),
        extra: JsonObject::new(),
    }
}

/// 202 `{command, execution{id: target, state: stopping}}`.
fn accepted(command: &CommandRecord, execution_id: String) -> Response {
    let body = SessionCancelResponse {
        command: command_ref(command),
        execution: SessionExecutionRef {
            id: Some(execution_id),
            state: SessionExecutionState::Stopping,
            extra: JsonObject::new(),
        },
        extra: JsonObject::new(),
    };
    (StatusCode::ACCEPTED, axum::Json(body)).into_response()
}

/// 200 `{command{state: obsolete}, execution{id: null, state: idle}}`.
fn nothing_to_stop(command: &CommandRecord) -> Response {
    let body = SessionCancelResponse {
        command: command_ref(command),
        execution: SessionExecutionRef {
            id: None,
            state: SessionExecutionState::Idle,
            extra: JsonObject::new(),
        },
        extra: JsonObject::new(),
    };
    (StatusCode::OK, axum::Json(body)).into_response()
}

/// `POST /sessions/{session_id}/cancel`: the durable Stop.
pub(super) async fn cancel(
    State(state): State<AppState>,
    ProjectId(project_id): ProjectId,
    Path(session_id): Path<String>,
    headers: HeaderMap,
    OptionalJsonBody(body): OptionalJsonBody<SessionCancelRequest>,
) -> ApiResult<Response> {
    // Stamped first, before anything is read: a turn that started after this is not the
    // one the caller meant.
    let received_ms = chrono::Utc::now().timestamp_millis();
    if !is_streamable_session_id(&session_id) {
        return Ok(cancel_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            CancelErrorDetail::Message("Invalid session_id.".to_string()),
        ));
    }
    if !body.extra.is_empty() {
        let detail = json!([{"type": "extra_forbidden", "loc": ["body"], "msg": "Extra inputs are not permitted"}]);
        return Ok((
            StatusCode::UNPROCESSABLE_ENTITY,
            axum::Json(json!({ "detail": detail })),
        )
            .into_response());
    }
    let key = match super::durable::durable_key(&headers) {
        Ok(key) => key,
        Err(()) => {
            return Ok(super::durable::envelope(
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorCode::ValidationError,
                "Idempotency-Key is too long.",
                Some(json!({"field": "Idempotency-Key", "reason": "too_long"})),
                Some("Use an Idempotency-Key of at most 255 characters."),
            ))
        }
    };
    let request = StopRequest {
        project_id: project_id.clone(),
        session_id,
        expected_execution_id: body
            .expected_execution_id
            .map(|e| e.trim().to_string())
            .filter(|e| !e.is_empty()),
        key,
        received_ms,
    };
    let outcome = state.interactions.admit_stop(&request).await?;
    Ok(match outcome {
        StopOutcome::Accepted {
            command,
            execution_id,
            parked,
        } => {
            if parked && command.state == "pending" {
                // Nothing runs a parked turn: the Stop applies now (its evidence: the
                // turn's gates cancelled and its settlement taken, so nothing continues
                // it). A failure here is settled by the dispatcher's sweep.
                if let Err(err) = state
                    .interactions
                    .apply_parked_stop(&project_id, &command.id)
                    .await
                {
                    tracing::warn!(error = %err, command_id = %command.id, "applying a Stop to a parked turn failed; the sweep settles it");
                }
            }
            accepted(&command, execution_id)
        }
        StopOutcome::NothingToStop { command } => nothing_to_stop(&command),
        StopOutcome::Replayed { command } => match command.target_execution_id.clone() {
            Some(target) => accepted(&command, target),
            None => nothing_to_stop(&command),
        },
        StopOutcome::KeyReused => cancel_error(
            StatusCode::CONFLICT,
            CancelErrorDetail::Message(
                "The Idempotency-Key was already used for a Stop with another expected_execution_id."
                    .to_string(),
            ),
        ),
        StopOutcome::NotTheRunningExecution { expected, current } => {
            let message = format!(
                "expected execution '{expected}' is not the running execution (current: {})",
                current.as_deref().unwrap_or("none")
            );
            cancel_error(
                StatusCode::CONFLICT,
                CancelErrorDetail::ExecutionConflict(CancelExecutionConflict {
                    message,
                    current_execution_id: current,
                    extra: JsonObject::new(),
                }),
            )
        }
    })
}

fn bad_session_id() -> ApiError {
    ApiError::new(
        GatehouseCode::BadRequest,
        "session_id contains invalid characters or is empty.",
    )
}

/// `GET /sessions/{session_id}`: the snapshot (keys absent rather than null).
pub(super) async fn snapshot(
    State(state): State<AppState>,
    ProjectId(project_id): ProjectId,
    Path(session_id): Path<String>,
) -> ApiResult<Response> {
    if !is_streamable_session_id(&session_id) {
        return Err(bad_session_id());
    }
    let run = state
        .interactions
        .session_run_state(&project_id, &session_id)
        .await?;
    let pending = state
        .interactions
        .pending_of_session(&project_id, &session_id)
        .await?;
    let latest =
        session_log::latest_sequence(state.interactions.db(), &project_id, &session_id).await?;
    let body = SessionSnapshotResponse {
        session: None,
        execution: None,
        execution_state: SessionExecutionSnapshot {
            id: run.execution_id,
            state: SessionExecutionState::from_wire(run.state),
            extra: JsonObject::new(),
        },
        pending: SessionSnapshotPending {
            inputs: Vec::new(),
            interactions: pending.iter().map(|row| row.to_wire()).collect(),
            extra: JsonObject::new(),
        },
        read: Some(SessionRecordsReadState {
            latest_sequence: latest,
            history_complete: true,
            extra: JsonObject::new(),
        }),
        capabilities: durable_capabilities(),
        extra: JsonObject::new(),
    };
    Ok(crate::api::reply::agenta_api_json(&body))
}

/// `after` of the events route: an integer ≥ 0 (FastAPI's 422 otherwise), default 0.
fn parse_after(query: &HashMap<String, String>) -> Result<u64, Box<Response>> {
    match query.get("after") {
        None => Ok(0),
        Some(text) => text.trim().parse::<u64>().map_err(|_| {
            let detail = json!([{
                "type": "int_parsing",
                "loc": ["query", "after"],
                "msg": "Input should be a valid integer greater than or equal to 0",
                "input": text,
            }]);
            Box::new(
                (
                    StatusCode::UNPROCESSABLE_ENTITY,
                    axum::Json(json!({ "detail": detail })),
                )
                    .into_response(),
            )
        }),
    }
}

/// `GET /sessions/{session_id}/events?after=N`.
pub(super) async fn events(
    State(state): State<AppState>,
    ProjectId(project_id): ProjectId,
    Path(session_id): Path<String>,
    request: axum::extract::Request,
) -> ApiResult<Response> {
    if !is_streamable_session_id(&session_id) {
        return Err(bad_session_id());
    }
    let (parts, _) = request.into_parts();
    let after = match parse_after(&crate::uri::query_map(&parts)) {
        Ok(after) => after,
        Err(response) => return Ok(*response),
    };
    let Some(slot) = state.watchers.acquire() else {
        return Ok(crate::limits::streams_full(
            &state.watchers,
            crate::error::ErrorShape::Agenta,
        ));
    };
    let stream = slot.hold(event_stream(state.clone(), project_id, session_id, after));
    let keep_alive = KeepAlive::new()
        .interval(state.config.heartbeat)
        .text("heartbeat");
    let mut response = Sse::new(stream).keep_alive(keep_alive).into_response();
    let headers = response.headers_mut();
    headers.insert("cache-control", HeaderValue::from_static("no-store"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(response)
}

/// Send the log's events after `*cursor` (every page), moving the cursor. False when the
/// client went away or the log cannot be read (the stream ends; the client reconnects
/// with its last sequence).
async fn send_after(
    state: &AppState,
    sender: &tokio::sync::mpsc::Sender<Event>,
    project_id: &str,
    session_id: &str,
    cursor: &mut u64,
) -> bool {
    loop {
        let page = match session_log::read_after(
            state.interactions.db(),
            project_id,
            session_id,
            *cursor,
            REPLAY_PAGE,
        )
        .await
        {
            Ok(page) => page,
            Err(err) => {
                tracing::warn!(error = %err, "reading a session's events failed; closing its stream");
                return false;
            }
        };
        let full = page.len() == REPLAY_PAGE as usize;
        for event in page {
            let Ok(data) = serde_json::to_string(&event) else {
                continue;
            };
            if sender.send(Event::default().data(data)).await.is_err() {
                return false;
            }
            *cursor = event.sequence.unwrap_or(*cursor).max(*cursor);
        }
        if !full {
            return true;
        }
    }
}

fn event_stream(
    state: AppState,
    project_id: String,
    session_id: String,
    after: u64,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let mut bell = state.announce.session_bell().subscribe();
    let mut shutdown = state.shutdown.clone();
    let retry = state.config.sse_retry;
    async_stream(move |sender| async move {
        if sender.send(Event::default().retry(retry)).await.is_err() {
            return;
        }
        let mut cursor = after;
        if !send_after(&state, &sender, &project_id, &session_id, &mut cursor).await {
            return;
        }
        if sender
            .send(Event::default().event("ready").data("{}"))
            .await
            .is_err()
        {
            return;
        }
        loop {
            let shutting_down = tokio::select! {
                rung = bell.recv() => match rung {
                    Ok((project, session)) if project != project_id || session != session_id => continue,
                    Ok(_) | Err(RecvError::Lagged(_)) => false,
                    Err(RecvError::Closed) => return,
                },
                _ = tokio::time::sleep(EVENTS_POLL) => false,
                _ = shutdown.wait_for(|stop| *stop) => true,
                _ = sender.closed() => return,
            };
            if shutting_down {
                // Agenta's reasons: the relay is going away; a client reconnects elsewhere.
                let close = json!({"reason": "relay_unavailable", "reconnect": true}).to_string();
                let _ = sender
                    .send(Event::default().event("relay-close").data(close))
                    .await;
                return;
            }
            if !send_after(&state, &sender, &project_id, &session_id, &mut cursor).await {
                return;
            }
        }
    })
}
