//! The execution routes of B2, under `/api`, in AgentPlat's envelope (`{"data": ...}`;
//! errors `{"error": {"code", "message", "gatehouseCode"}}`). Mounted only when the
//! execution service is enabled; otherwise `/api/rooms/...` answers AgentPlat's
//! route-not-found 404 from the application's fallback.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{FromRequestParts, Path, Request, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use gatehouse_wire::error::GatehouseCode;
use gatehouse_wire::execution::{
    DataEnvelope, ExecutionEvent, RequestInterventionBody, EVENT_STREAM_EVENT_NAME,
};

use super::rules::ExecError;
use super::store::ExecutionStore;
use crate::api::extract::{decode_json, parse_uuid, query_map, read_body, ActorName};
use crate::error::ApiError;
use crate::AppState;

/// How often an open event stream looks for new events in the store (the store is the
/// only source of truth, so streams see writes from every process on the database).
pub const STREAM_POLL: Duration = Duration::from_millis(100);
/// Longest accepted `operationId`, in characters.
pub const MAX_OPERATION_ID_CHARS: usize = 200;
/// Longest accepted `instruction`, in characters.
pub const MAX_INSTRUCTION_CHARS: usize = 4000;

/// The execution routes (relative to `/api`).
pub fn routes() -> Router<AppState> {
    let base = "/rooms/{room_id}/execution-sessions/{session_id}";
    Router::new()
        .route(base, get(get_session).fallback(method_not_allowed))
        .route(
            &format!("{base}/interventions"),
            post(request_intervention).fallback(method_not_allowed),
        )
        .route(
            &format!("{base}/events"),
            get(list_events).fallback(method_not_allowed),
        )
        .route(
            &format!("{base}/events/stream"),
            get(stream_events).fallback(method_not_allowed),
        )
}

async fn method_not_allowed() -> Response {
    let mut response = agentplat(GatehouseCode::BadRequest, "Method Not Allowed").into_response();
    *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
    response
}

/// The execution routes with API-key auth, every error answer in AgentPlat's envelope
/// (including the auth layer's 401 and the method-not-allowed answer).
pub fn router(state: &AppState) -> Router<AppState> {
    let auth = axum::middleware::from_fn_with_state(state.clone(), crate::auth::require_key);
    routes()
        .route_layer(auth)
        .layer(axum::middleware::map_response(agentplat_errors))
}

/// Largest error body re-wrapped into AgentPlat's envelope.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Re-wrap an Agenta-shaped error answer (`{"detail", "code"}`) produced by a shared
/// layer into AgentPlat's envelope; other answers pass unchanged.
async fn agentplat_errors(response: Response) -> Response {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let (parts, body) = response.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_ERROR_BODY).await {
        Ok(bytes) => bytes,
        Err(err) => {
            return reshape(ApiError::internal("reading an error answer", &err)).into_response()
        }
    };
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return Response::from_parts(parts, axum::body::Body::from(bytes));
    };
    if value.get("error").is_some() || value.get("detail").is_none() {
        return Response::from_parts(parts, axum::body::Body::from(bytes));
    }
    let code = value
        .get("code")
        .and_then(|c| c.as_str())
        .and_then(GatehouseCode::parse)
        .unwrap_or(match status.as_u16() {
            401 => GatehouseCode::Unauthorized,
            403 => GatehouseCode::Forbidden,
            404 => GatehouseCode::NotFound,
            409 => GatehouseCode::Conflict,
            413 => GatehouseCode::PayloadTooLarge,
            400..=499 => GatehouseCode::BadRequest,
            _ => GatehouseCode::InternalError,
        });
    let message = gatehouse_wire::error::FastApiErrorBody {
        detail: value["detail"].clone(),
        code: None,
        extra: Default::default(),
    }
    .detail_text();
    let mut answer = agentplat(code, message).into_response();
    // Keep the original status (e.g. 405 for a wrong method).
    *answer.status_mut() = status;
    answer
}

/// An AgentPlat-shaped error answer.
fn agentplat(code: GatehouseCode, message: impl Into<String>) -> ApiError {
    // AgentPlat answers 400 for VALIDATION_ERROR; Gatehouse's code for it means 422
    // on Agenta routes, so shape errors are reported as BAD_REQUEST here.
    let code = if code == GatehouseCode::ValidationError {
        GatehouseCode::BadRequest
    } else {
        code
    };
    ApiError::new(code, message).agentplat()
}

impl From<ExecError> for ApiError {
    fn from(err: ExecError) -> Self {
        agentplat(err.code, err.message)
    }
}

/// The same error in AgentPlat's envelope (validation lists joined into one message).
fn reshape(err: ApiError) -> ApiError {
    let message = match &err.detail {
        serde_json::Value::String(text) => text.clone(),
        other => gatehouse_wire::error::FastApiErrorBody {
            detail: other.clone(),
            code: None,
            extra: Default::default(),
        }
        .detail_text(),
    };
    agentplat(err.code, message)
}

/// The tenant of an execution route: `?project_id=<uuid>`, as on every `/api` route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant(pub String);

impl<S: Send + Sync> FromRequestParts<S> for Tenant {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        match query_map(parts).get("project_id") {
            None => Err(agentplat(
                GatehouseCode::BadRequest,
                "Missing query parameter project_id",
            )),
            Some(value) => parse_uuid(value, &["query", "project_id"])
                .map(Tenant)
                .map_err(reshape),
        }
    }
}

fn data<T: serde::Serialize>(status: StatusCode, value: T) -> Response {
    match serde_json::to_vec(&DataEnvelope { data: value }) {
        Ok(body) => (
            status,
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        Err(err) => reshape(ApiError::internal("encoding the response", &err)).into_response(),
    }
}

/// Where an event read starts: the events after sequence `?after=N`, else after the
/// `Last-Event-ID` header (an SSE reconnect), else from the first.
struct After(u64);

impl<S: Send + Sync> FromRequestParts<S> for After {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        if let Some(text) = query_map(parts).get("after") {
            return text.trim().parse::<u64>().map(After).map_err(|_| {
                agentplat(
                    GatehouseCode::BadRequest,
                    format!("after must be a non-negative integer, not {text:?}"),
                )
            });
        }
        Ok(After(
            parts
                .headers
                .get("last-event-id")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0),
        ))
    }
}

async fn get_session(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    Path((room_id, session_id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let exec = ExecutionStore::new(state.store.clone());
    let session = exec.get(&tenant, &room_id, &session_id).await?;
    Ok(data(StatusCode::OK, session))
}

async fn request_intervention(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    ActorName(actor): ActorName,
    Path((room_id, session_id)): Path<(String, String)>,
    request: Request,
) -> Result<Response, ApiError> {
    let bytes = read_body(request, state.config.max_body_bytes)
        .await
        .map_err(reshape)?;
    let (mut body, _) = decode_json::<RequestInterventionBody>(&bytes, None).map_err(reshape)?;
    body.operation_id = body.operation_id.trim().to_string();
    let operation_id = body.operation_id.as_str();
    if operation_id.is_empty() || operation_id.chars().count() > MAX_OPERATION_ID_CHARS {
        return Err(agentplat(
            GatehouseCode::BadRequest,
            format!("operationId must be 1 to {MAX_OPERATION_ID_CHARS} characters"),
        ));
    }
    if body.instruction.trim().is_empty()
        || body.instruction.chars().count() > MAX_INSTRUCTION_CHARS
    {
        return Err(agentplat(
            GatehouseCode::BadRequest,
            format!("instruction must be 1 to {MAX_INSTRUCTION_CHARS} characters"),
        ));
    }
    let exec = ExecutionStore::new(state.store.clone());
    let session = exec
        .request_intervention(&tenant, &room_id, &session_id, &body, &actor)
        .await?;
    Ok(data(StatusCode::ACCEPTED, session))
}

async fn list_events(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    Path((room_id, session_id)): Path<(String, String)>,
    After(after): After,
) -> Result<Response, ApiError> {
    let exec = ExecutionStore::new(state.store.clone());
    let session = exec.get(&tenant, &room_id, &session_id).await?;
    let events: Vec<ExecutionEvent> = session
        .events
        .into_iter()
        .filter(|e| e.sequence > after)
        .collect();
    Ok(data(StatusCode::OK, events))
}

struct StreamState {
    exec: ExecutionStore,
    tenant: String,
    room_id: String,
    session_id: String,
    after: u64,
    queue: VecDeque<Event>,
    shutdown: tokio::sync::watch::Receiver<bool>,
    finished: bool,
}

fn sse_event(event: &ExecutionEvent) -> Option<Event> {
    let data = serde_json::to_string(event).ok()?;
    Some(
        Event::default()
            .event(EVENT_STREAM_EVENT_NAME)
            .id(event.sequence.to_string())
            .data(data),
    )
}

async fn next_event(mut st: StreamState) -> Option<(Result<Event, Infallible>, StreamState)> {
    loop {
        if let Some(event) = st.queue.pop_front() {
            return Some((Ok(event), st));
        }
        if st.finished || *st.shutdown.borrow() {
            return None;
        }
        match st.exec.get(&st.tenant, &st.room_id, &st.session_id).await {
            Ok(session) => {
                let terminal = session.status.is_terminal();
                let after = st.after;
                for event in session.events.iter().filter(|e| e.sequence > after) {
                    if let Some(sse) = sse_event(event) {
                        st.queue.push_back(sse);
                    }
                    st.after = event.sequence;
                }
                if terminal {
                    // Everything up to the reconciliation was sent: the log is complete.
                    st.finished = true;
                    continue;
                }
            }
            Err(err) => {
                tracing::warn!(session_id = %st.session_id, error = %err, "event stream read failed; ending the stream");
                st.finished = true;
                continue;
            }
        }
        if st.queue.is_empty() {
            let mut shutdown = st.shutdown.clone();
            tokio::select! {
                _ = tokio::time::sleep(STREAM_POLL) => {}
                _ = shutdown.wait_for(|stop| *stop) => return None,
            }
        }
    }
}

async fn stream_events(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    Path((room_id, session_id)): Path<(String, String)>,
    After(after): After,
) -> Result<Response, ApiError> {
    let exec = ExecutionStore::new(state.store.clone());
    // 404 before the stream starts.
    exec.get(&tenant, &room_id, &session_id).await?;
    let retry = Event::default().retry(state.config.sse_retry);
    let st = StreamState {
        exec,
        tenant,
        room_id,
        session_id,
        after,
        queue: VecDeque::from([retry]),
        shutdown: state.shutdown.clone(),
        finished: false,
    };
    let stream = futures::stream::unfold(st, next_event);
    Ok(Sse::new(stream)
        .keep_alive(
            KeepAlive::new()
                .interval(state.config.heartbeat)
                .text("heartbeat"),
        )
        .into_response())
}
