//! HTTP errors: every failure answers a JSON body with a machine code.
//!
//! Agenta-shaped routes answer `{"detail": ..., "code": ...}` ([`FastApiErrorBody`]);
//! AgentPlat-shaped routes (execution sessions) answer
//! `{"error": {"code", "message", "gatehouseCode"}}` ([`AgentPlatErrorEnvelope`]).
//! Both carry the request's id (`request_id`, AgentPlat's `requestId`,
//! [`crate::request_id`]). Every `UNAVAILABLE` answer carries `Retry-After` ([`RETRY_AFTER_SECS`]); a storage
//! failure is classified once ([`StoreError::is_unavailable`]): 503 when the database
//! cannot do the work now, else 500.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use gatehouse_wire::error::{AgentPlatErrorEnvelope, FastApiErrorBody, GatehouseCode};
use gatehouse_wire::WireDecodeError;

use crate::db::StoreError;

/// Seconds a client is told to wait (`Retry-After`) before it retries a request refused
/// with `UNAVAILABLE`.
pub const RETRY_AFTER_SECS: u64 = 2;

/// The message of a request refused because the database is unavailable.
pub const DATABASE_UNAVAILABLE: &str =
    "The database is unavailable (unreachable, out of space, or locked); retry after the Retry-After delay";

/// Which error envelope a route speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorShape {
    /// Agenta / FastAPI: `{"detail", "code"}`.
    Agenta,
    /// AgentPlat: `{"error": {"code", "message", "gatehouseCode"}}`.
    AgentPlat,
}

/// An error answer of the HTTP API.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The machine code (decides the HTTP status).
    pub code: GatehouseCode,
    /// A message, or a FastAPI-style list of `{loc, msg, type}` validation errors.
    pub detail: serde_json::Value,
    /// Which envelope to answer with.
    pub shape: ErrorShape,
}

impl ApiError {
    /// An error with a plain message, Agenta-shaped.
    pub fn new(code: GatehouseCode, message: impl Into<String>) -> Self {
        Self {
            code,
            detail: serde_json::Value::String(message.into()),
            shape: ErrorShape::Agenta,
        }
    }

    /// The same error in the AgentPlat envelope.
    pub fn agentplat(mut self) -> Self {
        self.shape = ErrorShape::AgentPlat;
        self
    }

    /// 404 "Interaction not found".
    pub fn interaction_not_found() -> Self {
        Self::new(
            GatehouseCode::NotFound,
            gatehouse_wire::error::messages::INTERACTION_NOT_FOUND,
        )
    }

    /// 409 "Interaction is no longer pending" (`ALREADY_ANSWERED`).
    pub fn not_pending() -> Self {
        Self::new(
            GatehouseCode::AlreadyAnswered,
            gatehouse_wire::error::messages::INTERACTION_NOT_PENDING,
        )
    }

    /// 409 `STALE_GATE`: the respond's digest is not the gate's (C8).
    pub fn stale_gate() -> Self {
        Self::new(
            GatehouseCode::StaleGate,
            gatehouse_wire::error::messages::GATE_CHANGED,
        )
    }

    /// The detail as text: the message, or the validation list as JSON.
    pub fn detail_text(&self) -> String {
        match &self.detail {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        }
    }

    /// 422 naming one field: FastAPI's `[{loc, msg, type}]` list.
    pub fn validation(loc: &[&str], msg: impl Into<String>, kind: &str) -> Self {
        let loc: Vec<serde_json::Value> = loc
            .iter()
            .map(|part| serde_json::Value::String((*part).to_string()))
            .collect();
        Self::validation_at(loc, msg, kind)
    }

    /// 422 at a location given as FastAPI `loc` parts (strings and list indices).
    pub fn validation_at(loc: Vec<serde_json::Value>, msg: impl Into<String>, kind: &str) -> Self {
        Self {
            code: GatehouseCode::ValidationError,
            detail: serde_json::json!([{ "loc": loc, "msg": msg.into(), "type": kind }]),
            shape: ErrorShape::Agenta,
        }
    }

    /// 422 for a body that decoded as JSON but has the wrong shape: names the path
    /// (`data.inputs.messages[0].role` becomes `["body","data","inputs","messages",0,"role"]`).
    pub fn from_decode(err: &WireDecodeError) -> Self {
        let mut loc = vec![serde_json::Value::String("body".to_string())];
        for segment in err.path.split('.').filter(|p| !p.is_empty()) {
            let mut parts = segment.split('[');
            if let Some(name) = parts.next().filter(|n| !n.is_empty()) {
                loc.push(serde_json::Value::String(name.to_string()));
            }
            for index in parts {
                let index = index.trim_end_matches(']');
                match index.parse::<u64>() {
                    Ok(i) => loc.push(serde_json::Value::from(i)),
                    Err(_) => loc.push(serde_json::Value::String(index.to_string())),
                }
            }
        }
        let path = if err.path.is_empty() { "." } else { &err.path };
        Self::validation_at(loc, format!("{} (at {path})", err.reason), "value_error")
    }

    /// 503 `UNAVAILABLE` for a database that cannot do the work now (logged; answered
    /// with `Retry-After`).
    pub fn database_unavailable(err: &StoreError) -> Self {
        tracing::warn!(error = %err, "the database is unavailable; answering 503");
        Self::new(GatehouseCode::Unavailable, DATABASE_UNAVAILABLE)
    }

    /// 500 for a storage failure (logged; the body does not leak SQL).
    pub fn internal(context: &str, err: &dyn std::fmt::Display) -> Self {
        tracing::error!(%context, error = %err, "internal error");
        Self::new(
            GatehouseCode::InternalError,
            format!("Internal error: {context}"),
        )
    }

    /// This error in the envelope of the route at `path`: AgentPlat's under `/rooms/`
    /// (where a validation error is a 400 `BAD_REQUEST`, as AgentPlat answers), else
    /// unchanged.
    pub fn shaped_for_path(mut self, path: &str) -> Self {
        if path.contains("/rooms/") {
            if self.code == GatehouseCode::ValidationError {
                self.code = GatehouseCode::BadRequest;
                self.detail = serde_json::Value::String(self.message_text());
            }
            self.shape = ErrorShape::AgentPlat;
        }
        self
    }

    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    fn message_text(&self) -> String {
        match &self.detail {
            serde_json::Value::String(s) => s.clone(),
            other => FastApiErrorBody {
                detail: other.clone(),
                code: None,
                request_id: None,
                extra: Default::default(),
            }
            .detail_text(),
        }
    }
}

impl From<StoreError> for ApiError {
    /// A write that lost a race to a concurrent one (a unique key taken meanwhile, a
    /// serialization failure or deadlock on Postgres) is a typed 409 `CONFLICT` the
    /// caller may retry; a database that cannot do the work now
    /// ([`StoreError::is_unavailable`]: unreachable, out of space, locked past the wait
    /// bound) is a 503 `UNAVAILABLE` with `Retry-After`; anything else is a 500 (logged,
    /// never the SQL).
    fn from(err: StoreError) -> Self {
        if err.is_concurrent_conflict() {
            tracing::warn!(error = %err, "a write lost a race to a concurrent request");
            return Self::new(
                GatehouseCode::Conflict,
                "A concurrent request changed the same record; retry the request",
            );
        }
        if err.is_unavailable() {
            return Self::database_unavailable(&err);
        }
        Self::internal("storage", &err)
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.code, self.message_text())
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        // The request's id, so a client can quote it and an operator find its log lines.
        let request_id = crate::request_id::current();
        let body = match self.shape {
            ErrorShape::Agenta => serde_json::to_vec(&FastApiErrorBody {
                detail: self.detail.clone(),
                code: Some(self.code),
                request_id,
                extra: Default::default(),
            }),
            ErrorShape::AgentPlat => {
                let mut envelope = AgentPlatErrorEnvelope::new(self.code, self.message_text());
                if !self.detail.is_string() {
                    envelope.error.details = Some(self.detail.clone());
                }
                envelope.error.request_id = request_id;
                serde_json::to_vec(&envelope)
            }
        }
        .unwrap_or_else(|_| br#"{"detail":"Internal error","code":"INTERNAL_ERROR"}"#.to_vec());
        let mut response = (status, body).into_response();
        response.headers_mut().insert(
            axum::http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if self.code == GatehouseCode::Unavailable {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                HeaderValue::from(RETRY_AFTER_SECS),
            );
        }
        response
    }
}

/// A `Result` whose error is an HTTP error answer.
pub type ApiResult<T> = Result<T, ApiError>;
