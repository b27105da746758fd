//! The execution routes of B2, in AgentPlat's envelope (`{"data": ...}`; errors
//! `{"error": {"code", "message", "gatehouseCode"}}`: [`super::envelope`]), mounted twice
//! over the same handlers ([`Mount`]):
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
//! The event stream (`.../events/stream`, `@agentplat/streaming`'s SSE) is
//! [`super::stream`].

use axum::extract::{Path, Request, State};
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Extension, Router};
use gatehouse_wire::error::{messages, GatehouseCode};
use gatehouse_wire::execution::Checkpoint;
use serde_json::Value;

use super::agentplat_shape::AgentPlatEvent;
use super::cursor::{first_after, parse_after, MAX_SAFE_INTEGER};
use super::envelope::{
    agentplat, agentplat_errors, agentplat_root_errors, data, method_not_allowed, reshape,
    route_not_found, session_data,
};
use super::mount::Mount;
use super::rules::{AuthorityChange, NewIntervention};
use super::stream::stream_events;
use super::tenant::Tenant;
use crate::api::extract::{check_no_nul, read_body, ActorName};
use crate::auth::TenantHeaderOnly;
use crate::error::ApiError;
use crate::AppState;

/// Longest accepted `operationId`, in characters.
pub const MAX_OPERATION_ID_CHARS: usize = 200;
/// Longest accepted `instruction`, in characters.
pub const MAX_INSTRUCTION_CHARS: usize = 4000;
/// Longest `requestedByParticipantId` taken as a requester, in characters (a longer one
/// names no participant: 403, as AgentPlat answers a requester it does not know).
pub const MAX_PARTICIPANT_ID_CHARS: usize = 200;

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

#[cfg(test)]
mod tests {
    use super::*;

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
