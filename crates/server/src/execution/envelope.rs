//! AgentPlat's envelope, in which every execution route answers (both mounts of
//! [`super::api`]): a value as `{"data": ...}` (a session in the mount's JSON: Gatehouse's
//! wire types under `/api`, AgentPlat's own at the root, [`super::agentplat_shape`]), an
//! error as `{"error": {"code", "message", "gatehouseCode"}}`, also the errors of the
//! layers every route shares (auth, extractors), which answer Agenta's `{"detail",
//! "code"}` and are re-wrapped here; and the answer to a method a path does not serve.

use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use gatehouse_wire::error::{messages, GatehouseCode};
use gatehouse_wire::execution::{DataEnvelope, ExecutionSession};
use serde_json::Value;

use super::agentplat_shape::AgentPlatSession;
use super::mount::Mount;
use super::rules::ExecError;
use crate::error::ApiError;

/// Under `/api`, a method the path does not serve: 405, in AgentPlat's envelope.
pub(super) fn method_not_allowed() -> Response {
    let mut response = agentplat(GatehouseCode::BadRequest, "Method Not Allowed").into_response();
    *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
    response
}

/// AgentPlat (hono) answers a path it has with an unserved method as it answers an
/// unknown path.
pub(super) fn route_not_found() -> Response {
    agentplat(GatehouseCode::RouteNotFound, messages::ROUTE_NOT_FOUND).into_response()
}

/// Largest error body re-wrapped into AgentPlat's envelope.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// The error answers of the `/api` mount, in AgentPlat's envelope.
pub(super) async fn agentplat_errors(response: Response) -> Response {
    to_agentplat(response, false).await
}

/// The error answers of the root paths, in AgentPlat's envelope and its 401 message.
pub(super) async fn agentplat_root_errors(response: Response) -> Response {
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
pub(super) fn agentplat(code: GatehouseCode, message: impl Into<String>) -> ApiError {
    ApiError::new(code, message).agentplat()
}

impl From<ExecError> for ApiError {
    fn from(err: ExecError) -> Self {
        agentplat(err.code, err.message)
    }
}

/// The same error in AgentPlat's envelope (validation lists joined into one message).
pub(super) fn reshape(err: ApiError) -> ApiError {
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

pub(super) fn data<T: serde::Serialize>(status: StatusCode, value: T) -> Response {
    match serde_json::to_vec(&DataEnvelope { data: value }) {
        Ok(body) => (status, [(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(err) => reshape(ApiError::internal("encoding the response", &err)).into_response(),
    }
}

/// A session answer in the mount's JSON.
pub(super) fn session_data(
    mount: Mount,
    status: StatusCode,
    session: &ExecutionSession,
) -> Response {
    match mount {
        Mount::Api => data(status, session),
        Mount::AgentPlatRoot => data(status, AgentPlatSession::of(session)),
    }
}
