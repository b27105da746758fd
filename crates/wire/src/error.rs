//! Error envelopes: Agenta's FastAPI `{"detail": ...}`, AgentPlat's
//! `{"error": {"code", "message", "details"}}`, and Gatehouse's machine codes (C3).
//!
//! Gatehouse's own server adds a machine-readable code to every error body:
//! `"code"` beside `"detail"` on the Agenta-shaped routes, and `"gatehouseCode"`
//! inside `"error"` on the AgentPlat-shaped routes (whose own `"code"` is the
//! coarse upstream one, e.g. `CONFLICT`). Upstream clients ignore the extra key.

use serde::{Deserialize, Serialize};

use crate::JsonObject;

/// Gatehouse's machine-readable error code: one per distinct meaning, so that a
/// client never has to parse a message to tell two 409s apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[cfg_attr(feature = "schema", schemars(transform = crate::json::StringEnum { name: "GatehouseCode", open: true }))]
pub enum GatehouseCode {
    /// 400: the request is malformed (bad JSON, bad query string, bad id).
    BadRequest,
    /// 422 (Agenta routes) or 400 (AgentPlat routes): the body has the wrong shape.
    ValidationError,
    /// 401: no or unknown API key.
    Unauthorized,
    /// 403: the key is known but may not do this.
    Forbidden,
    /// 404: the addressed thing does not exist (or belongs to another project).
    NotFound,
    /// 404: no such route on this host; the capability is not configured.
    RouteNotFound,
    /// 413: the body is over the size limit.
    PayloadTooLarge,
    /// 409: the interaction is no longer pending (answered elsewhere, or cancelled).
    AlreadyAnswered,
    /// 409: `expectedRevision` does not match, or the session changed concurrently.
    RevisionConflict,
    /// 409: the `operationId` is bound to another request.
    OperationConflict,
    /// 409: the dispatch token does not match the current claim.
    DispatchOwnershipLost,
    /// 409: the intervention was already resolved to another outcome.
    ResolvedDifferently,
    /// 409: an `Idempotency-Key` was reused with a different request body.
    IdempotencyKeyReused,
    /// 409: the respond's `digest` is not the gate's: the gate changed after the client
    /// read it (C8). Nothing was recorded; read the gate again and show it.
    StaleGate,
    /// 409: the execution session is bound to another run/task/participant.
    BindingConflict,
    /// 409: the session already holds the maximum number of interventions (256).
    InterventionLimit,
    /// 409: the session or run is in a state that does not allow this.
    InvalidState,
    /// 409: the execution session is not active (its run ended): it takes no more
    /// interventions (AgentPlat: "Execution session is not active").
    SessionNotActive,
    /// 400: the route needs a tenant and the request named none (AgentPlat: "Missing
    /// required X-Agentplat-Tenant-Id header").
    TenantRequired,
    /// 403: the request's tenant is not one this API key may act in (for hosts that bind
    /// keys to tenants).
    UnknownTenant,
    /// 409: any other conflict.
    Conflict,
    /// 502: the runtime adapter failed.
    AdapterError,
    /// 500: the server failed.
    InternalError,
    /// 503: the server is shutting down or overloaded, or its database is unavailable
    /// (unreachable, out of space, or locked past the server's wait bound: that answer
    /// carries `Retry-After`). Try again.
    Unavailable,
}

impl GatehouseCode {
    /// The HTTP status Gatehouse's server answers with for this code.
    ///
    /// ```
    /// use gatehouse_wire::error::GatehouseCode;
    /// assert_eq!(GatehouseCode::AlreadyAnswered.http_status(), 409);
    /// ```
    pub fn http_status(self) -> u16 {
        use GatehouseCode::*;
        match self {
            BadRequest | TenantRequired => 400,
            ValidationError => 422,
            Unauthorized => 401,
            Forbidden | UnknownTenant => 403,
            NotFound | RouteNotFound => 404,
            PayloadTooLarge => 413,
            AlreadyAnswered
            | RevisionConflict
            | OperationConflict
            | DispatchOwnershipLost
            | ResolvedDifferently
            | IdempotencyKeyReused
            | StaleGate
            | BindingConflict
            | InterventionLimit
            | InvalidState
            | SessionNotActive
            | Conflict => 409,
            AdapterError => 502,
            InternalError => 500,
            Unavailable => 503,
        }
    }

    /// The SCREAMING_SNAKE_CASE wire spelling, e.g. `"ALREADY_ANSWERED"`.
    pub fn as_str(self) -> &'static str {
        use GatehouseCode::*;
        match self {
            BadRequest => "BAD_REQUEST",
            ValidationError => "VALIDATION_ERROR",
            Unauthorized => "UNAUTHORIZED",
            Forbidden => "FORBIDDEN",
            NotFound => "NOT_FOUND",
            RouteNotFound => "ROUTE_NOT_FOUND",
            PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            AlreadyAnswered => "ALREADY_ANSWERED",
            RevisionConflict => "REVISION_CONFLICT",
            OperationConflict => "OPERATION_CONFLICT",
            DispatchOwnershipLost => "DISPATCH_OWNERSHIP_LOST",
            ResolvedDifferently => "RESOLVED_DIFFERENTLY",
            IdempotencyKeyReused => "IDEMPOTENCY_KEY_REUSED",
            StaleGate => "STALE_GATE",
            BindingConflict => "BINDING_CONFLICT",
            InterventionLimit => "INTERVENTION_LIMIT",
            InvalidState => "INVALID_STATE",
            SessionNotActive => "SESSION_NOT_ACTIVE",
            TenantRequired => "TENANT_REQUIRED",
            UnknownTenant => "UNKNOWN_TENANT",
            Conflict => "CONFLICT",
            AdapterError => "ADAPTER_ERROR",
            InternalError => "INTERNAL_ERROR",
            Unavailable => "UNAVAILABLE",
        }
    }

    /// Parse the wire spelling; `None` for a code this version does not know.
    pub fn parse(code: &str) -> Option<Self> {
        serde_json::from_value(serde_json::Value::String(code.to_string())).ok()
    }

    /// The coarse AgentPlat code that carries this meaning on the AgentPlat-shaped routes.
    pub fn agentplat_code(self) -> AgentPlatErrorCode {
        use GatehouseCode::*;
        match self {
            BadRequest | PayloadTooLarge | TenantRequired => AgentPlatErrorCode::BadRequest,
            ValidationError => AgentPlatErrorCode::ValidationError,
            Unauthorized => AgentPlatErrorCode::Unauthorized,
            Forbidden | UnknownTenant => AgentPlatErrorCode::Forbidden,
            NotFound | RouteNotFound => AgentPlatErrorCode::NotFound,
            AlreadyAnswered
            | RevisionConflict
            | OperationConflict
            | DispatchOwnershipLost
            | ResolvedDifferently
            | IdempotencyKeyReused
            | StaleGate
            | BindingConflict
            | InterventionLimit
            | InvalidState
            | SessionNotActive
            | Conflict => AgentPlatErrorCode::Conflict,
            AdapterError => AgentPlatErrorCode::AdapterError,
            InternalError | Unavailable => AgentPlatErrorCode::InternalError,
        }
    }
}

/// A machine code read tolerantly: a code this version does not know (a newer server's)
/// is `None`, never a failed read of the whole error body. A value that is not a string
/// is still refused (as the schema refuses it).
pub(crate) fn known_code<'de, D>(deserializer: D) -> Result<Option<GatehouseCode>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let code = Option::<String>::deserialize(deserializer)?;
    Ok(code.as_deref().and_then(GatehouseCode::parse))
}

impl std::fmt::Display for GatehouseCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Agenta's (FastAPI's) error body: `{"detail": "..."}`, where `detail` is a string
/// or, for validation errors, a list of `{loc, msg, type}` objects. Gatehouse adds `code`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FastApiErrorBody {
    /// A message, or FastAPI's list of validation errors.
    pub detail: serde_json::Value,
    /// Gatehouse's machine code (absent from a real Agenta server; a code this version
    /// does not know reads as `None`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "known_code"
    )]
    pub code: Option<GatehouseCode>,
    /// The id of the request this answers (`X-Request-Id`), for finding its log lines
    /// (absent from a real Agenta server and from answers given before a request was
    /// read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl FastApiErrorBody {
    /// A Gatehouse error in the Agenta shape: `{"detail": message, "code": code}`.
    pub fn new(code: GatehouseCode, message: impl Into<String>) -> Self {
        Self {
            detail: serde_json::Value::String(message.into()),
            code: Some(code),
            request_id: None,
            extra: JsonObject::new(),
        }
    }

    /// The detail as one readable line (a validation list is joined).
    pub fn detail_text(&self) -> String {
        match &self.detail {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Array(items) => items
                .iter()
                .map(|item| {
                    let loc = item
                        .get("loc")
                        .and_then(|l| l.as_array())
                        .map(|parts| {
                            parts
                                .iter()
                                .map(|p| match p {
                                    serde_json::Value::String(s) => s.clone(),
                                    other => other.to_string(),
                                })
                                .collect::<Vec<_>>()
                                .join(".")
                        })
                        .unwrap_or_default();
                    let msg = item
                        .get("msg")
                        .and_then(|m| m.as_str())
                        .unwrap_or("invalid");
                    if loc.is_empty() {
                        msg.to_string()
                    } else {
                        format!("{loc}: {msg}")
                    }
                })
                .collect::<Vec<_>>()
                .join("; "),
            other => other.to_string(),
        }
    }
}

/// AgentPlat's coarse error codes (B1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AgentPlatErrorCode {
    /// 400.
    BadRequest,
    /// 400.
    ValidationError,
    /// 401.
    Unauthorized,
    /// 403.
    Forbidden,
    /// 404 (a missing session and an absent route alike).
    NotFound,
    /// 409.
    Conflict,
    /// 502.
    AdapterError,
    /// 500.
    InternalError,
}

impl AgentPlatErrorCode {
    /// The HTTP status AgentPlat pairs with this code.
    pub fn http_status(self) -> u16 {
        match self {
            Self::BadRequest | Self::ValidationError => 400,
            Self::Unauthorized => 401,
            Self::Forbidden => 403,
            Self::NotFound => 404,
            Self::Conflict => 409,
            Self::AdapterError => 502,
            Self::InternalError => 500,
        }
    }
}

/// AgentPlat's error envelope: `{"error": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AgentPlatErrorEnvelope {
    /// The error.
    pub error: AgentPlatError,
}

/// The inside of AgentPlat's error envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AgentPlatError {
    /// The coarse code, e.g. `CONFLICT`. Kept as text so an unknown code still parses.
    pub code: String,
    /// Human-readable message, e.g. "Execution session revision conflict".
    pub message: String,
    /// Optional structured details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
    /// Gatehouse's machine code (absent from a real AgentPlat server; a code this
    /// version does not know reads as `None`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "known_code"
    )]
    pub gatehouse_code: Option<GatehouseCode>,
    /// The id of the request this answers (`X-Request-Id`), for finding its log lines
    /// (absent from a real AgentPlat server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl AgentPlatErrorEnvelope {
    /// A Gatehouse error in the AgentPlat shape.
    pub fn new(code: GatehouseCode, message: impl Into<String>) -> Self {
        Self {
            error: AgentPlatError {
                code: code.agentplat_code_str().to_string(),
                message: message.into(),
                details: None,
                gatehouse_code: Some(code),
                request_id: None,
                extra: JsonObject::new(),
            },
        }
    }
}

impl GatehouseCode {
    fn agentplat_code_str(self) -> &'static str {
        match self.agentplat_code() {
            AgentPlatErrorCode::BadRequest => "BAD_REQUEST",
            AgentPlatErrorCode::ValidationError => "VALIDATION_ERROR",
            AgentPlatErrorCode::Unauthorized => "UNAUTHORIZED",
            AgentPlatErrorCode::Forbidden => "FORBIDDEN",
            AgentPlatErrorCode::NotFound => "NOT_FOUND",
            AgentPlatErrorCode::Conflict => "CONFLICT",
            AgentPlatErrorCode::AdapterError => "ADAPTER_ERROR",
            AgentPlatErrorCode::InternalError => "INTERNAL_ERROR",
        }
    }
}

/// The exact upstream messages, so both sides agree on the text too.
pub mod messages {
    /// Agenta 404 for an interaction.
    pub const INTERACTION_NOT_FOUND: &str = "Interaction not found";
    /// Agenta 409 for respond/transition on a non-pending row.
    pub const INTERACTION_NOT_PENDING: &str = "Interaction is no longer pending";
    /// Gatehouse 409 (`STALE_GATE`) for a respond whose digest is not the gate's (C8).
    pub const GATE_CHANGED: &str =
        "The gate changed after it was read: read it again before answering";
    /// AgentPlat 404 for an absent route (an unconfigured capability).
    pub const ROUTE_NOT_FOUND: &str = "Route not found";
    /// AgentPlat 404 for a missing execution session.
    pub const EXECUTION_SESSION_NOT_FOUND: &str = "Execution session not found";
    /// AgentPlat 409 for a stale `expectedRevision`.
    pub const REVISION_CONFLICT: &str = "Execution session revision conflict";
    /// AgentPlat 409 for a lost compare-and-set race.
    pub const CHANGED_CONCURRENTLY: &str = "Execution session changed concurrently";
    /// AgentPlat 409 for an `operationId` reused with another payload.
    pub const OPERATION_CONFLICT: &str = "Run intervention operationId is bound to another request";
    /// AgentPlat 409 for a resolve with a stale dispatch token.
    pub const DISPATCH_OWNERSHIP_LOST: &str = "Run intervention dispatch ownership was lost";
    /// AgentPlat 409 for resolving an intervention to a different outcome.
    pub const RESOLVED_DIFFERENTLY: &str = "Run intervention was already resolved differently";
    /// AgentPlat 502 for a runtime that skipped `pre_action` on protected work.
    pub const PROTECTED_WITHOUT_PRE_ACTION: &str =
        "Runtime completed protected work without invoking pre_action";
    /// AgentPlat 404 (agent registry) for an agent revision it does not have.
    pub const AGENT_REVISION_NOT_FOUND: &str = "Agent revision not found";
    /// AgentPlat 409 (agent registry) for a revision of another agent than the run's
    /// participant.
    pub const AGENT_REVISION_OTHER_PARTICIPANT: &str =
        "Agent revision does not match the assigned Room participant";
    /// AgentPlat 409 when a session already holds 256 interventions.
    pub const INTERVENTION_LIMIT: &str = "Execution session intervention limit was reached";
    /// AgentPlat 409 for an intervention on a session that is no longer active.
    pub const SESSION_NOT_ACTIVE: &str = "Execution session is not active";
    /// AgentPlat 409 for an intervention on a session whose room run is not running.
    pub const RUN_NOT_RUNNING: &str = "Run intervention requires a running Room run";
    /// AgentPlat 400 (`BAD_REQUEST`) from `headerTenantAuth` without the tenant header.
    pub const MISSING_TENANT_HEADER: &str = "Missing required X-Agentplat-Tenant-Id header";
    /// AgentPlat 401 when the authentication resolves no tenant.
    pub const AUTHENTICATION_REQUIRED: &str = "Authentication is required";
    /// AgentPlat 403: the requester is not a human participant of the room.
    pub const REQUESTER_NOT_HUMAN: &str =
        "Run interventions require a human Agent Room participant";
    /// AgentPlat 403: the human requester lacks the `run.intervene` permission.
    pub const REQUESTER_LACKS_PERMISSION: &str = "Human participant lacks run.intervene permission";
    /// AgentPlat 400 (`VALIDATION_ERROR`) for a checkpoint that is not one of the three.
    pub const CHECKPOINT_INVALID: &str = "Run intervention checkpoint is invalid";
    /// AgentPlat 400 (`VALIDATION_ERROR`) for a missing or blank `operationId`.
    pub const OPERATION_ID_REQUIRED: &str = "operationId is required";
    /// AgentPlat 400 (`VALIDATION_ERROR`) for a missing or blank `instruction`.
    pub const INSTRUCTION_REQUIRED: &str = "instruction is required";
    /// AgentPlat 400 (`VALIDATION_ERROR`) for an `after` that is not a non-negative integer.
    pub const EVENT_SEQUENCE_INVALID: &str = "Execution session event sequence is invalid";
    /// AgentPlat 400 (`BAD_REQUEST`) for an empty body.
    pub const JSON_BODY_REQUIRED: &str = "A JSON request body is required";
    /// AgentPlat 400 (`BAD_REQUEST`) for a body that is not JSON.
    pub const JSON_BODY_INVALID: &str = "Request body must be valid JSON";
    /// AgentPlat 400 (`VALIDATION_ERROR`) for a JSON body that is not an object.
    pub const JSON_BODY_NOT_OBJECT: &str = "Request body must be an object";
    /// AgentPlat 500 for an unexpected failure.
    pub const UNEXPECTED_ERROR: &str = "An unexpected error occurred";
    /// `@agentplat/streaming`'s `content` of a `failed` frame (details not exposed).
    pub const STREAM_FAILED: &str = "Stream failed";

    /// AgentPlat 404 (`NOT_FOUND`) for a room the tenant does not have.
    pub fn room_not_found(room_id: &str) -> String {
        format!("Room \"{room_id}\" was not found")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_codes_do_not_fail_a_read() {
        let body: AgentPlatErrorEnvelope = serde_json::from_value(serde_json::json!({
            "error": {"code": "TEAPOT", "message": "short and stout", "gatehouseCode": "NEWER_CODE"}
        }))
        .unwrap();
        assert_eq!(body.error.code, "TEAPOT");
        assert_eq!(body.error.gatehouse_code, None);
        let body: FastApiErrorBody =
            serde_json::from_value(serde_json::json!({"detail": "x", "code": "NEWER"})).unwrap();
        assert_eq!(body.code, None);
        assert!(serde_json::from_value::<FastApiErrorBody>(
            serde_json::json!({"detail": "x", "code": 7})
        )
        .is_err());
        let body: FastApiErrorBody = serde_json::from_value(
            serde_json::json!({"detail": "x", "code": "SESSION_NOT_ACTIVE"}),
        )
        .unwrap();
        assert_eq!(body.code, Some(GatehouseCode::SessionNotActive));
        assert_eq!(GatehouseCode::SessionNotActive.http_status(), 409);
        assert_eq!(
            GatehouseCode::TenantRequired.agentplat_code(),
            AgentPlatErrorCode::BadRequest
        );
    }
}
