//! The execution routes of B2, in AgentPlat's envelope (`{"data": ...}`; errors
//! `{"error": {"code", "message", "gatehouseCode"}}`), mounted twice over the same
//! handlers ([`Mount`]):
//!
//! - at the root, `/rooms/{roomId}/execution-sessions/{sessionId}[...]`: AgentPlat's own
//!   paths, so AgentPlat's clients use this server unchanged. The tenant (the project)
//!   is the `X-Agentplat-Tenant-Id` header ([`crate::auth::resolve_tenant`]); an API key
//!   is required unless the server runs AgentPlat's header-only tenant auth
//!   ([`crate::auth::require_key_or_tenant_header`]). Statuses, codes and messages are
//!   AgentPlat's (`createRoomsApp`, `RoomExecutionCoordinator`); a wrong method answers
//!   AgentPlat's route-not-found 404. Sessions and events are AgentPlat's own JSON
//!   ([`super::agentplat_shape`]: its fields, its order, millisecond times).
//! - under `/api` (`?project_id=<uuid>` is the tenant), as on every `/api` route, with
//!   Gatehouse's richer session and event JSON (the wire types).
//!
//! Mounted only when the execution service is enabled; otherwise both answer
//! AgentPlat's route-not-found 404 from the application's fallback.
//!
//! The event stream speaks `@agentplat/streaming`'s SSE: every frame is `id: ...` /
//! `event: agentplat.execution_session_event` /
//! `data: {"version":1,"sequence":<n>,"type":"execution_session_event","payload":<event>}`
//! with `n` counting the frames of the connection from 1 (AgentPlat's parser requires it);
//! a failure (unknown session, unreadable store) is one `agentplat.failed` frame after a
//! 200, as AgentPlat's `streamToSSE` answers. Both mounts send heartbeat comments (no
//! AgentPlat parser reads them) and end the stream once the session is terminal and
//! every event was sent. They differ in what a reconnect needs:
//!
//! - root: as `streamToSSE` frames it, `id: stream:<n>` (the frame's number on this
//!   connection), no `retry:` line, the failure frame numbered like any other with
//!   `content` only; `Last-Event-ID` is ignored as AgentPlat ignores it (its ids number
//!   frames, not events), `?after=` says where to start.
//! - `/api`: `id: stream:<session event sequence>`, a `retry:` hint first, the failure
//!   frame without `id:` (a reconnecting `EventSource` keeps its last event) and with
//!   `gatehouseCode`; reconnecting, `Last-Event-ID` wins over `?after=` (an
//!   `EventSource` resends its first URL, with a stale `after`).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{FromRequestParts, Path, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use gatehouse_wire::error::{messages, GatehouseCode};
use gatehouse_wire::execution::{
    stream_id_number, Checkpoint, DataEnvelope, ExecutionEvent, ExecutionSession, StreamEnvelope,
};
use serde_json::Value;

use super::agentplat_shape::{AgentPlatEvent, AgentPlatSession};
use super::rules::{AuthorityChange, ExecError, NewIntervention};
use super::store::ExecutionStore;
use crate::api::extract::{check_no_nul, parse_uuid, read_body, ActorName};
use crate::auth::TenantHeaderOnly;
use crate::error::ApiError;
use crate::uri::query_map;
use crate::AppState;

/// How often an open event stream looks for new events in the store (the store is the
/// only source of truth, so streams see writes from every process on the database).
pub const STREAM_POLL: Duration = Duration::from_millis(100);
/// Longest accepted `operationId`, in characters.
pub const MAX_OPERATION_ID_CHARS: usize = 200;
/// Longest accepted `instruction`, in characters.
pub const MAX_INSTRUCTION_CHARS: usize = 4000;
/// Longest `requestedByParticipantId` taken as a requester, in characters (a longer one
/// names no participant: 403, as AgentPlat answers a requester it does not know).
pub const MAX_PARTICIPANT_ID_CHARS: usize = 200;
/// The largest `after` AgentPlat accepts (`Number.MAX_SAFE_INTEGER`).
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// Which mount of the routes a request came in on: where the tenant comes from and how
/// the answers are written (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mount {
    /// Under `/api`: `?project_id=<uuid>` is the tenant; Gatehouse's session and event
    /// JSON; the stream resumes from `Last-Event-ID`.
    Api,
    /// AgentPlat's root paths: `X-Agentplat-Tenant-Id` is the tenant; AgentPlat's own
    /// JSON and SSE framing.
    AgentPlatRoot,
}

/// The four routes, each answering an unmatched method with `wrong_method`.
fn routes(wrong_method: fn() -> Response) -> Router<AppState> {
    let base = "/rooms/{room_id}/execution-sessions/{session_id}";
    let fallback = move || async move { wrong_method() };
    Router::new()
        .route(base, get(get_session).fallback(fallback))
        .route(
            &format!("{base}/interventions"),
            post(request_intervention).fallback(fallback),
        )
        .route(
            &format!("{base}/events"),
            get(list_events).fallback(fallback),
        )
        .route(
            &format!("{base}/events/stream"),
            get(stream_events).fallback(fallback),
        )
}

fn method_not_allowed() -> Response {
    let mut response = agentplat(GatehouseCode::BadRequest, "Method Not Allowed").into_response();
    *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
    response
}

/// AgentPlat (hono) answers a path it has with an unserved method as it answers an
/// unknown path.
fn route_not_found() -> Response {
    agentplat(GatehouseCode::RouteNotFound, messages::ROUTE_NOT_FOUND).into_response()
}

/// The routes under `/api` (nested there by [`crate::api::router`]): API-key auth,
/// `?project_id=` as the tenant, every error answer in AgentPlat's envelope.
pub fn router(state: &AppState) -> Router<AppState> {
    let auth = axum::middleware::from_fn_with_state(state.clone(), crate::auth::require_key);
    let fallback = || async { method_not_allowed() };
    routes(method_not_allowed)
        // Gatehouse's own route (AgentPlat has none): the room's authority moved on.
        .route(
            "/rooms/{room_id}/execution-sessions/{session_id}/authority",
            post(change_authority).fallback(fallback),
        )
        .route_layer(auth)
        .layer(Extension(Mount::Api))
        .layer(axum::middleware::map_response(agentplat_errors))
}

/// AgentPlat's own paths at the root: API-key auth (or, when the server is set up for
/// it, AgentPlat's header-only tenant auth), `X-Agentplat-Tenant-Id` as the tenant,
/// AgentPlat's answers (its 401 message, its 404 for a wrong method, its JSON).
pub fn root_router(state: &AppState) -> Router<AppState> {
    let auth = axum::middleware::from_fn_with_state(
        state.clone(),
        crate::auth::require_key_or_tenant_header,
    );
    routes(route_not_found)
        .route_layer(auth)
        .layer(Extension(Mount::AgentPlatRoot))
        .layer(axum::middleware::map_response(agentplat_root_errors))
}

/// Largest error body re-wrapped into AgentPlat's envelope.
const MAX_ERROR_BODY: usize = 64 * 1024;

async fn agentplat_errors(response: Response) -> Response {
    to_agentplat(response, false).await
}

async fn agentplat_root_errors(response: Response) -> Response {
    to_agentplat(response, true).await
}

/// Every error answer in AgentPlat's shape: an Agenta-shaped one from a shared layer
/// (`{"detail", "code"}`) is re-wrapped, a `VALIDATION_ERROR` answers 400 (AgentPlat's
/// status for it), and on the root paths a 401 says AgentPlat's "Authentication is
/// required". Other answers pass unchanged.
async fn to_agentplat(response: Response, root: bool) -> Response {
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
    let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    let (code, message) = if let Some(error) = value.get("error") {
        let code = error
            .get("gatehouseCode")
            .and_then(Value::as_str)
            .and_then(GatehouseCode::parse);
        let message = error.get("message").and_then(Value::as_str).unwrap_or("");
        (code, message.to_string())
    } else if let Some(detail) = value.get("detail") {
        let code = value
            .get("code")
            .and_then(Value::as_str)
            .and_then(GatehouseCode::parse);
        let message = gatehouse_wire::error::FastApiErrorBody {
            detail: detail.clone(),
            code: None,
            request_id: None,
            extra: Default::default(),
        }
        .detail_text();
        (code, message)
    } else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    let code = code.unwrap_or(match status.as_u16() {
        401 => GatehouseCode::Unauthorized,
        403 => GatehouseCode::Forbidden,
        404 => GatehouseCode::NotFound,
        409 => GatehouseCode::Conflict,
        413 => GatehouseCode::PayloadTooLarge,
        400..=499 => GatehouseCode::BadRequest,
        _ => GatehouseCode::InternalError,
    });
    let message = if root && code == GatehouseCode::Unauthorized {
        messages::AUTHENTICATION_REQUIRED.to_string()
    } else {
        message
    };
    let mut answer = agentplat(code, message).into_response();
    // Keep the original status (e.g. 405 for a wrong method), except AgentPlat's 400
    // for a validation failure (Gatehouse's code means 422 on Agenta routes).
    *answer.status_mut() = if code == GatehouseCode::ValidationError {
        StatusCode::BAD_REQUEST
    } else {
        status
    };
    answer
}

/// An AgentPlat-shaped error answer.
fn agentplat(code: GatehouseCode, message: impl Into<String>) -> ApiError {
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
        Value::String(text) => text.clone(),
        other => gatehouse_wire::error::FastApiErrorBody {
            detail: other.clone(),
            code: None,
            request_id: None,
            extra: Default::default(),
        }
        .detail_text(),
    };
    agentplat(err.code, message)
}

/// The tenant of an execution route: `X-Agentplat-Tenant-Id` on AgentPlat's root paths,
/// `?project_id=<uuid>` under `/api`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant(pub String);

impl<S: Send + Sync> FromRequestParts<S> for Tenant {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        if parts.extensions.get::<Mount>() == Some(&Mount::AgentPlatRoot) {
            return crate::auth::resolve_tenant(parts)
                .map(Tenant)
                .map_err(reshape);
        }
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
        Ok(body) => (status, [(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(err) => reshape(ApiError::internal("encoding the response", &err)).into_response(),
    }
}

/// A session answer in the mount's JSON.
fn session_data(mount: Mount, status: StatusCode, session: &ExecutionSession) -> Response {
    match mount {
        Mount::Api => data(status, session),
        Mount::AgentPlatRoot => data(status, AgentPlatSession::of(session)),
    }
}

/// The first `?after=` of the query string, if any (AgentPlat reads the first).
fn first_after(uri: &Uri) -> Option<String> {
    Query::<Vec<(String, String)>>::try_from_uri(uri)
        .ok()?
        .0
        .into_iter()
        .find(|(key, _)| key == "after")
        .map(|(_, value)| value)
}

/// `?after=` read as AgentPlat reads it (`Number(text)`, then a non-negative safe
/// integer): absent or empty is 0; anything else that is not is
/// "Execution session event sequence is invalid".
fn parse_after(text: Option<&str>) -> Result<u64, ExecError> {
    let invalid = || {
        ExecError::new(
            GatehouseCode::ValidationError,
            messages::EVENT_SEQUENCE_INVALID,
        )
    };
    let Some(text) = text else {
        return Ok(0);
    };
    let number = js_number(text).ok_or_else(invalid)?;
    if number.fract() != 0.0 || !(0.0..=MAX_SAFE_INTEGER).contains(&number) {
        return Err(invalid());
    }
    // A safe integer in range: exact as u64.
    Ok(number as u64)
}

/// JavaScript's `Number(text)` for a query value: surrounding whitespace ignored, empty
/// is 0, decimal with fraction and exponent, `0x`/`0o`/`0b` integers, `Infinity`;
/// anything else is `None` (NaN).
fn js_number(text: &str) -> Option<f64> {
    let t = text.trim();
    if t.is_empty() {
        return Some(0.0);
    }
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        // `get`, not slicing: a multi-byte character may straddle byte 2.
        let Some(head) = t.get(..2) else { continue };
        if t.len() > 2 && head.eq_ignore_ascii_case(prefix) {
            let digits = &t[2..];
            return u128::from_str_radix(digits, radix)
                .ok()
                .filter(|_| digits.bytes().all(|b| b.is_ascii_alphanumeric()))
                .map(|v| v as f64);
        }
    }
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(t);
    if unsigned == "Infinity" {
        return Some(if t.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    // Digits, at most one dot, an optional exponent: nothing Rust's parser accepts
    // beyond JavaScript's (no "inf", "nan").
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let mantissa_ok = !mantissa.is_empty()
        && mantissa != "."
        && mantissa.bytes().filter(|b| *b == b'.').count() <= 1
        && mantissa.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    let exponent_ok = exponent.is_none_or(|e| {
        let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    });
    if !(mantissa_ok && exponent_ok) {
        return None;
    }
    t.parse::<f64>().ok()
}

async fn get_session(
    State(state): State<AppState>,
    Extension(mount): Extension<Mount>,
    Tenant(tenant): Tenant,
    Path((room_id, session_id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let exec = state.executions.clone();
    let session = exec.get(&tenant, &room_id, &session_id).await?;
    Ok(session_data(mount, StatusCode::OK, &session))
}

/// A validation refusal in AgentPlat's words.
fn invalid(message: impl Into<String>) -> ApiError {
    agentplat(GatehouseCode::ValidationError, message)
}

/// A required, non-blank string field of the intervention body.
fn required_text(
    body: &serde_json::Map<String, Value>,
    field: &str,
    required_message: &str,
    max_chars: usize,
) -> Result<String, ApiError> {
    match body.get(field) {
        None | Some(Value::Null) => Err(invalid(required_message)),
        Some(Value::String(text)) if text.trim().is_empty() => Err(invalid(required_message)),
        Some(Value::String(text)) if text.chars().count() > max_chars => Err(invalid(format!(
            "{field} must be at most {max_chars} characters"
        ))),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(_) => Err(invalid(format!("{field} must be a string"))),
    }
}

/// `expectedRevision` as a revision: a non-negative safe integer (`1.0` is 1, as in
/// JavaScript). Anything else (absent, `null`, text, negative, fractional) is `None`,
/// which AgentPlat's `state.revision !== expectedRevision` never matches: a revision
/// conflict, unless the request is a replay.
fn expected_revision(value: Option<&Value>) -> Option<u64> {
    let value = value?;
    value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|n| n.fract() == 0.0 && (0.0..=MAX_SAFE_INTEGER).contains(n))
            .map(|n| n as u64)
    })
}

/// A `POST .../interventions` body as read: the request, and the requester it names.
#[derive(Debug)]
struct InterventionBody {
    request: NewIntervention,
    /// `requestedByParticipantId` when it is a non-blank string of at most
    /// [`MAX_PARTICIPANT_ID_CHARS`] (else none: it names no participant). Read only
    /// where no authentication names the requester.
    requested_by: Option<String>,
}

/// Read a `POST .../interventions` body as AgentPlat does (`readJsonObject`, then
/// `RoomExecutionCoordinator.requestIntervention`'s checks, in its order and words).
/// A missing or unusable `expectedRevision` is not refused here: it is a revision
/// conflict where AgentPlat compares it ([`expected_revision`]).
fn parse_intervention(bytes: &[u8]) -> Result<InterventionBody, ApiError> {
    let text = String::from_utf8_lossy(bytes);
    if text.trim().is_empty() {
        return Err(agentplat(
            GatehouseCode::BadRequest,
            messages::JSON_BODY_REQUIRED,
        ));
    }
    let value: Value = serde_json::from_str(&text)
        .map_err(|_| agentplat(GatehouseCode::BadRequest, messages::JSON_BODY_INVALID))?;
    let Value::Object(body) = &value else {
        return Err(invalid(messages::JSON_BODY_NOT_OBJECT));
    };
    // The request-wide text rule (no NUL), as every body read by `decode_json` has it.
    check_no_nul(&value).map_err(reshape)?;
    let operation_id = required_text(
        body,
        "operationId",
        messages::OPERATION_ID_REQUIRED,
        MAX_OPERATION_ID_CHARS,
    )?;
    let instruction = required_text(
        body,
        "instruction",
        messages::INSTRUCTION_REQUIRED,
        MAX_INSTRUCTION_CHARS,
    )?;
    let checkpoint = match body.get("checkpoint").and_then(Value::as_str) {
        Some(name) => Checkpoint::from_wire(name),
        None => Checkpoint::Unknown(String::new()),
    };
    if !checkpoint.is_known() {
        return Err(invalid(messages::CHECKPOINT_INVALID));
    }
    let requested_by = body
        .get("requestedByParticipantId")
        .and_then(Value::as_str)
        .filter(|id| !id.trim().is_empty() && id.chars().count() <= MAX_PARTICIPANT_ID_CHARS)
        .map(str::to_string);
    Ok(InterventionBody {
        request: NewIntervention {
            expected_revision: expected_revision(body.get("expectedRevision")),
            operation_id,
            // AgentPlat stores the instruction trimmed; a replay compares the same text.
            instruction: instruction.trim().to_string(),
            checkpoint,
        },
        requested_by,
    })
}

/// `POST .../authority` body, read as `ChangeAuthorityBody` but with `expectedRevision`
/// taken as [`expected_revision`] takes it (a missing one is a revision conflict, as on
/// an intervention request).
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct AuthorityBody {
    #[serde(default)]
    expected_revision: Option<Value>,
    #[serde(default)]
    authority_revision: Option<String>,
    #[serde(default)]
    role_revision: Option<String>,
}

/// `POST .../authority`: compare-and-set the session's authority and role revisions
/// (B1). Interventions requested before the change are rejected at their checkpoint.
async fn change_authority(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    Path((room_id, session_id)): Path<(String, String)>,
    body: crate::api::extract::JsonBody<AuthorityBody>,
) -> Result<Response, ApiError> {
    let change = AuthorityChange {
        expected_revision: expected_revision(body.value.expected_revision.as_ref()),
        authority_revision: body.value.authority_revision,
        role_revision: body.value.role_revision,
    };
    let exec = state.executions.clone();
    let session = exec
        .change_authority(&tenant, &room_id, &session_id, &change)
        .await?;
    Ok(data(StatusCode::OK, session))
}

/// Who requests an intervention: the API key's actor; on a request admitted by
/// AgentPlat's header-only tenant auth (no actor), the body's
/// `requestedByParticipantId`, as AgentPlat's route takes it (`actor?.actorId ??
/// input.requestedByParticipantId`). This server has no room participants to check it
/// against: that auth is for a trusted network only. None named: AgentPlat's 403.
fn requester(
    actor: String,
    header_only: bool,
    requested_by: Option<String>,
) -> Result<String, ApiError> {
    if !header_only {
        return Ok(actor);
    }
    requested_by.ok_or_else(|| agentplat(GatehouseCode::Forbidden, messages::REQUESTER_NOT_HUMAN))
}

async fn request_intervention(
    State(state): State<AppState>,
    Extension(mount): Extension<Mount>,
    Tenant(tenant): Tenant,
    ActorName(actor): ActorName,
    header_only: Option<Extension<TenantHeaderOnly>>,
    Path((room_id, session_id)): Path<(String, String)>,
    request: Request,
) -> Result<Response, ApiError> {
    let bytes = read_body(request, state.config.max_body_bytes)
        .await
        .map_err(reshape)?;
    let body = parse_intervention(&bytes)?;
    let exec = state.executions.clone();
    // AgentPlat looks the room up before the requester, and both before the session.
    if !exec.room_exists(&tenant, &room_id).await? {
        return Err(agentplat(
            GatehouseCode::NotFound,
            messages::room_not_found(&room_id),
        ));
    }
    let requester = requester(actor, header_only.is_some(), body.requested_by)?;
    let session = exec
        .request_intervention(&tenant, &room_id, &session_id, &body.request, &requester)
        .await?;
    Ok(session_data(mount, StatusCode::ACCEPTED, &session))
}

async fn list_events(
    State(state): State<AppState>,
    Extension(mount): Extension<Mount>,
    Tenant(tenant): Tenant,
    Path((room_id, session_id)): Path<(String, String)>,
    uri: Uri,
) -> Result<Response, ApiError> {
    let after = parse_after(first_after(&uri).as_deref())?;
    let exec = state.executions.clone();
    let session = exec.get(&tenant, &room_id, &session_id).await?;
    let events = session.events.iter().filter(|e| e.sequence > after);
    Ok(match mount {
        Mount::Api => data(StatusCode::OK, events.collect::<Vec<_>>()),
        Mount::AgentPlatRoot => data(
            StatusCode::OK,
            events.map(AgentPlatEvent).collect::<Vec<_>>(),
        ),
    })
}

/// One SSE frame: `id:` (when given), `event: agentplat.<type>`, `data:` the envelope.
fn sse_frame(id: Option<&str>, envelope: &StreamEnvelope) -> Bytes {
    let data = serde_json::to_string(envelope).unwrap_or_else(|_| {
        // A frame always serializes; this keeps the stream well-formed regardless.
        format!(
            r#"{{"version":{},"sequence":{},"type":"failed","content":"{}"}}"#,
            envelope.version,
            envelope.sequence,
            messages::STREAM_FAILED
        )
    });
    let mut text = String::new();
    if let Some(id) = id {
        text.push_str(&format!("id: {id}\n"));
    }
    text.push_str(&format!(
        "event: {}\ndata: {data}\n\n",
        envelope.sse_event_name()
    ));
    Bytes::from(text)
}

/// AgentPlat's failure frame, the `sequence`-th of its connection (its `content`
/// exposes nothing, as `streamToSSE` does by default). On the root paths exactly
/// AgentPlat's (`id: stream:<sequence>`); under `/api` with Gatehouse's machine code
/// saying why, and no `id:`, so a reconnecting `EventSource` keeps the last event it had.
fn failed_frame(mount: Mount, sequence: u64, code: GatehouseCode) -> Bytes {
    let mut envelope = StreamEnvelope::failed(sequence, messages::STREAM_FAILED);
    match mount {
        Mount::AgentPlatRoot => sse_frame(Some(&envelope.sse_id(sequence)), &envelope),
        Mount::Api => {
            envelope.extra.insert(
                "gatehouseCode".to_string(),
                Value::String(code.as_str().to_string()),
            );
            sse_frame(None, &envelope)
        }
    }
}

/// The frame carrying `event` as the `sequence`-th of its connection: on the root paths
/// AgentPlat's event JSON and id (`stream:<sequence>`), under `/api` Gatehouse's event
/// and `stream:<event sequence>`.
fn event_frame(
    mount: Mount,
    sequence: u64,
    event: &ExecutionEvent,
) -> Result<Bytes, serde_json::Error> {
    Ok(match mount {
        Mount::AgentPlatRoot => {
            let payload = match serde_json::to_value(AgentPlatEvent(event))? {
                Value::Object(map) => map,
                _ => Default::default(),
            };
            let envelope = StreamEnvelope::session_event_payload(sequence, payload);
            sse_frame(Some(&envelope.sse_id(sequence)), &envelope)
        }
        Mount::Api => {
            let envelope = StreamEnvelope::session_event(sequence, event)?;
            sse_frame(Some(&envelope.sse_id(event.sequence)), &envelope)
        }
    })
}

struct StreamState {
    mount: Mount,
    exec: ExecutionStore,
    tenant: String,
    room_id: String,
    session_id: String,
    /// The last session-event sequence sent.
    after: u64,
    /// Envelope frames sent on this connection (AgentPlat numbers them from 1).
    frames: u64,
    queue: VecDeque<Bytes>,
    shutdown: tokio::sync::watch::Receiver<bool>,
    heartbeat: Duration,
    last_sent: Instant,
    finished: bool,
}

impl StreamState {
    fn push_failed(&mut self, code: GatehouseCode) {
        self.frames += 1;
        self.queue
            .push_back(failed_frame(self.mount, self.frames, code));
        self.finished = true;
    }

    fn push_event(&mut self, event: &ExecutionEvent) {
        self.frames += 1;
        match event_frame(self.mount, self.frames, event) {
            Ok(frame) => self.queue.push_back(frame),
            Err(err) => {
                tracing::warn!(session_id = %self.session_id, error = %err, "encoding a session event failed; ending the stream");
                self.frames -= 1;
                self.push_failed(GatehouseCode::InternalError);
            }
        }
    }
}

async fn next_frame(mut st: StreamState) -> Option<(Result<Bytes, Infallible>, StreamState)> {
    loop {
        if let Some(frame) = st.queue.pop_front() {
            st.last_sent = Instant::now();
            return Some((Ok(frame), st));
        }
        if st.finished || *st.shutdown.borrow() {
            return None;
        }
        match st.exec.get(&st.tenant, &st.room_id, &st.session_id).await {
            Ok(session) => {
                let after = st.after;
                for event in session.events.iter().filter(|e| e.sequence > after) {
                    st.push_event(event);
                    st.after = event.sequence;
                }
                if session.status.is_terminal() {
                    // Everything up to the reconciliation was sent: the log is complete.
                    st.finished = true;
                    continue;
                }
            }
            Err(err) if err.code == GatehouseCode::NotFound => {
                st.push_failed(GatehouseCode::NotFound);
                continue;
            }
            Err(err) => {
                tracing::warn!(session_id = %st.session_id, error = %err, "event stream read failed; ending the stream");
                st.push_failed(GatehouseCode::InternalError);
                continue;
            }
        }
        if st.last_sent.elapsed() >= st.heartbeat {
            st.last_sent = Instant::now();
            return Some((Ok(Bytes::from_static(b":heartbeat\n\n")), st));
        }
        let mut shutdown = st.shutdown.clone();
        tokio::select! {
            _ = tokio::time::sleep(STREAM_POLL) => {}
            _ = shutdown.wait_for(|stop| *stop) => return None,
        }
    }
}

/// Where a stream starts. Under `/api`: after the `Last-Event-ID`
/// (`stream:<sequence>`) of a reconnect, which wins over `?after=` (an `EventSource`
/// resends its first URL). Then (and always on the root paths, where AgentPlat ignores
/// `Last-Event-ID`): after `?after=` (AgentPlat's `Number(...)`), else from the first
/// event.
fn stream_start(mount: Mount, headers: &HeaderMap, after: Option<&str>) -> Result<u64, ExecError> {
    if mount == Mount::Api {
        if let Some(last) = headers
            .get("last-event-id")
            .and_then(|v| v.to_str().ok())
            .and_then(stream_id_number)
        {
            return Ok(last);
        }
    }
    parse_after(after)
}

async fn stream_events(
    State(state): State<AppState>,
    Extension(mount): Extension<Mount>,
    Tenant(tenant): Tenant,
    Path((room_id, session_id)): Path<(String, String)>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    // One of the open-stream slots (crate::limits) for as long as the stream is open.
    let Some(slot) = state.watchers.acquire() else {
        return crate::limits::streams_full(&state.watchers, crate::error::ErrorShape::AgentPlat);
    };
    // Gatehouse's reconnect hint; AgentPlat's route sends none.
    let queue = match mount {
        Mount::Api => VecDeque::from([Bytes::from(format!(
            "retry: {}\n\n",
            state.config.sse_retry.as_millis()
        ))]),
        Mount::AgentPlatRoot => VecDeque::new(),
    };
    let mut st = StreamState {
        mount,
        exec: state.executions.clone(),
        tenant,
        room_id,
        session_id,
        after: 0,
        frames: 0,
        queue,
        shutdown: state.shutdown.clone(),
        heartbeat: state.config.heartbeat,
        last_sent: Instant::now(),
        finished: false,
    };
    // As AgentPlat's stream route: the answer is a 200 stream; what goes wrong reading
    // the session is its failure frame.
    match stream_start(mount, &headers, first_after(&uri).as_deref()) {
        Ok(after) => st.after = after,
        Err(err) => st.push_failed(err.code),
    }
    let stream = slot.hold(futures::stream::unfold(st, next_frame));
    let mut response = Response::new(Body::from_stream(stream));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, no-transform"),
    );
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn after_reads_as_javascript_numbers_do() {
        for (text, expected) in [
            ("", Some(0)),
            ("  7 ", Some(7)),
            ("0", Some(0)),
            ("-0", Some(0)),
            ("1.0", Some(1)),
            ("1e2", Some(100)),
            ("0x10", Some(16)),
            ("0b11", Some(3)),
            ("9007199254740991", Some(9_007_199_254_740_991)),
            ("9007199254740992", None),
            ("-1", None),
            ("1.5", None),
            ("abc", None),
            ("Infinity", None),
            ("inf", None),
            ("NaN", None),
            ("1e", None),
            (".", None),
            ("0x", None),
            ("1,2", None),
            // Found by schemathesis: a multi-byte character across byte 2 panicked.
            ("]\u{e0}\u{a7ad}\u{f9} i", None),
            ("\u{e0}1", None),
            ("0\u{e9}", None),
        ] {
            assert_eq!(parse_after(Some(text)).ok(), expected, "{text:?}");
        }
        assert_eq!(parse_after(None).ok(), Some(0));
        let err = parse_after(Some("abc")).unwrap_err();
        assert_eq!(err.code, GatehouseCode::ValidationError);
        assert_eq!(err.message, messages::EVENT_SEQUENCE_INVALID);
    }

    #[test]
    fn last_event_id_wins_over_a_stale_after() {
        let mut headers = HeaderMap::new();
        assert_eq!(stream_start(Mount::Api, &headers, Some("2")).unwrap(), 2);
        headers.insert("last-event-id", HeaderValue::from_static("stream:5"));
        assert_eq!(stream_start(Mount::Api, &headers, Some("2")).unwrap(), 5);
        assert_eq!(stream_start(Mount::Api, &headers, Some("abc")).unwrap(), 5);
        headers.insert("last-event-id", HeaderValue::from_static("garbage"));
        assert_eq!(stream_start(Mount::Api, &headers, Some("2")).unwrap(), 2);
    }

    #[test]
    fn the_root_paths_ignore_last_event_id_as_agentplat_does() {
        let mut headers = HeaderMap::new();
        headers.insert("last-event-id", HeaderValue::from_static("stream:3"));
        let root = Mount::AgentPlatRoot;
        assert_eq!(stream_start(root, &headers, None).unwrap(), 0);
        assert_eq!(stream_start(root, &headers, Some("2")).unwrap(), 2);
    }

    #[test]
    fn failure_frames_are_framed_per_mount() {
        assert_eq!(
            failed_frame(Mount::AgentPlatRoot, 1, GatehouseCode::NotFound),
            Bytes::from_static(
                b"id: stream:1\nevent: agentplat.failed\ndata: {\"version\":1,\"sequence\":1,\"type\":\"failed\",\"content\":\"Stream failed\"}\n\n"
            )
        );
        assert_eq!(
            failed_frame(Mount::Api, 2, GatehouseCode::NotFound),
            Bytes::from_static(
                b"event: agentplat.failed\ndata: {\"version\":1,\"sequence\":2,\"type\":\"failed\",\"content\":\"Stream failed\",\"gatehouseCode\":\"NOT_FOUND\"}\n\n"
            )
        );
    }

    #[test]
    fn an_unusable_expected_revision_is_none_not_a_refusal() {
        let revision = |body: &str| {
            parse_intervention(body.as_bytes())
                .unwrap()
                .request
                .expected_revision
        };
        let rest = r#""operationId":"op","instruction":"x","checkpoint":"pre_step""#;
        assert_eq!(revision(&format!("{{{rest}}}")), None);
        assert_eq!(
            revision(&format!(r#"{{"expectedRevision":3.0,{rest}}}"#)),
            Some(3)
        );
        for unusable in ["null", "\"1\"", "-1", "1.5", "true"] {
            let body = format!(r#"{{"expectedRevision":{unusable},{rest}}}"#);
            assert_eq!(revision(&body), None, "{body}");
        }
    }

    #[test]
    fn intervention_bodies_are_refused_in_agentplat_words() {
        let refusal = |body: &str| {
            let err = parse_intervention(body.as_bytes()).unwrap_err();
            (
                err.code,
                err.detail.as_str().unwrap_or_default().to_string(),
            )
        };
        let ok = r#"{"expectedRevision":0,"operationId":"op","instruction":" x ","checkpoint":"pre_step"}"#;
        let body = parse_intervention(ok.as_bytes()).unwrap().request;
        assert_eq!(body.instruction, "x");
        assert_eq!(body.checkpoint, Checkpoint::PreStep);
        assert_eq!(body.expected_revision, Some(0));
        for (body, code, message) in [
            ("", GatehouseCode::BadRequest, messages::JSON_BODY_REQUIRED),
            (
                "  \n",
                GatehouseCode::BadRequest,
                messages::JSON_BODY_REQUIRED,
            ),
            (
                "{not json",
                GatehouseCode::BadRequest,
                messages::JSON_BODY_INVALID,
            ),
            (
                "[1,2]",
                GatehouseCode::ValidationError,
                messages::JSON_BODY_NOT_OBJECT,
            ),
            (
                "null",
                GatehouseCode::ValidationError,
                messages::JSON_BODY_NOT_OBJECT,
            ),
            (
                r#"{"expectedRevision":0,"instruction":"x","checkpoint":"pre_step"}"#,
                GatehouseCode::ValidationError,
                messages::OPERATION_ID_REQUIRED,
            ),
            (
                r#"{"expectedRevision":0,"operationId":"op","instruction":"   ","checkpoint":"pre_step"}"#,
                GatehouseCode::ValidationError,
                messages::INSTRUCTION_REQUIRED,
            ),
            (
                r#"{"expectedRevision":0,"operationId":"op","instruction":"x","checkpoint":"mid_air"}"#,
                GatehouseCode::ValidationError,
                messages::CHECKPOINT_INVALID,
            ),
            (
                r#"{"expectedRevision":0,"operationId":"op","instruction":"x"}"#,
                GatehouseCode::ValidationError,
                messages::CHECKPOINT_INVALID,
            ),
            (
                r#"{"expectedRevision":0,"operationId":7,"instruction":"x","checkpoint":"pre_step"}"#,
                GatehouseCode::ValidationError,
                "operationId must be a string",
            ),
        ] {
            assert_eq!(refusal(body), (code, message.to_string()), "{body}");
        }
    }
}
