//! Agenta's error envelope of the session-control routes: `{code, message, retryable,
//! details?, next_step?}`, top-level (respond's 409 and 422, the Idempotency-Key 422 of
//! cancel) or under FastAPI's `detail` (the inputs plane, runner admission).
//!
//! Agenta's router builds these bodies as dicts (no pydantic model); the names here are
//! Agenta's (`code` values) and the hand-written schemas' (`ErrorEnvelope`,
//! `DetailWrappedEnvelope`). A key is absent rather than `null`: `details` is left out when
//! empty, `next_step` appears only where the router gives one.

use serde::{Deserialize, Serialize};

use crate::interaction::InteractionStatus;
use crate::JsonObject;

use super::SessionExecutionState;

/// The `code` of Agenta's error envelope: one per meaning, so a client tells two 409s
/// apart without reading a message. A code this version does not know is kept as
/// `Unknown(text)` and written back as read.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// 422: the request breaks a rule; `details` names `field` and `reason` (e.g.
    /// `Idempotency-Key`/`required`, `answers`/`anchor_missing`).
    ValidationError,
    /// 409: the interaction belongs to another execution than `expected_execution_id`
    /// (`details.current_execution_id`), or `answers[]` spans executions.
    ExecutionMismatch,
    /// 409: the `Idempotency-Key` was used before with another request; never retried.
    IdempotencyKeyReused,
    /// 409: the answer cannot be applied: the row is no longer pending
    /// (`details.interaction_status`), or the source execution can no longer be continued
    /// (`details.execution_state` or `details.terminal_outcome`).
    ExecutionTerminal,
    /// 409 (runner admission): a turn runs; `retryable`, with `next_step`.
    SessionBusy,
    /// 404 (`DELETE /sessions/{id}/inputs/{input_id}`): no such pending input.
    PendingInputNotFound,
    /// 409 (`DELETE /sessions/{id}/inputs/{input_id}`): the input was already promoted to
    /// an execution.
    PendingInputPromoted,
    /// A code this version does not know, kept as it was sent.
    Unknown(String),
}

impl ErrorCode {
    /// The spelling of every code this version knows.
    pub const KNOWN: &'static [&'static str] = &[
        "validation_error",
        "execution_mismatch",
        "idempotency_key_reused",
        "execution_terminal",
        "session_busy",
        "pending_input_not_found",
        "pending_input_promoted",
    ];

    /// The wire spelling (an unknown code's own text).
    pub fn as_str(&self) -> &str {
        match self {
            Self::ValidationError => "validation_error",
            Self::ExecutionMismatch => "execution_mismatch",
            Self::IdempotencyKeyReused => "idempotency_key_reused",
            Self::ExecutionTerminal => "execution_terminal",
            Self::SessionBusy => "session_busy",
            Self::PendingInputNotFound => "pending_input_not_found",
            Self::PendingInputPromoted => "pending_input_promoted",
            Self::Unknown(text) => text,
        }
    }

    /// The code of a wire spelling; `Unknown` when this version does not know it.
    pub fn from_wire(text: &str) -> Self {
        match text {
            "validation_error" => Self::ValidationError,
            "execution_mismatch" => Self::ExecutionMismatch,
            "idempotency_key_reused" => Self::IdempotencyKeyReused,
            "execution_terminal" => Self::ExecutionTerminal,
            "session_busy" => Self::SessionBusy,
            "pending_input_not_found" => Self::PendingInputNotFound,
            "pending_input_promoted" => Self::PendingInputPromoted,
            other => Self::Unknown(other.to_string()),
        }
    }

    /// True unless this is an `Unknown` code.
    pub fn is_known(&self) -> bool {
        !matches!(self, Self::Unknown(_))
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = ErrorCode;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<ErrorCode, E> {
                Ok(ErrorCode::from_wire(text))
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

// Open: a host's error codes grow, and every reader (generated ones too) must take a new one.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for ErrorCode {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ErrorCode".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let values: Vec<(&str, &str)> = Self::KNOWN.iter().map(|code| (*code, "")).collect();
        crate::json::string_enum_schema(
            "ErrorCode",
            "The code of Agenta's session-control error envelope.",
            &values,
            true,
        )
    }
}

/// Agenta's error envelope `{code, message, retryable, details?, next_step?}` (the
/// sessions router's `JSONResponse` bodies; hand-written schema `ErrorEnvelope`). Match on
/// `code`, `retryable` and `details`, never on `message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ErrorEnvelope {
    /// What went wrong, one code per meaning.
    pub code: ErrorCode,
    /// A message for people.
    pub message: String,
    /// Whether the same request may succeed later.
    pub retryable: bool,
    /// Structured detail: `field`/`reason`, `current_execution_id`, `interaction_status`,
    /// `execution_state`, `terminal_outcome`, `input_id`. Absent when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "JsonObject"))]
    pub details: Option<JsonObject>,
    /// What to do about it (only on some errors, e.g. the Idempotency-Key 422s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub next_step: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ErrorEnvelope {
    /// The envelope of an error body, top-level or under FastAPI's `detail`; `None` when
    /// the body is neither (a plain `{"detail": "..."}`, a validation list).
    ///
    /// ```
    /// use gatehouse_wire::sessions::{ErrorCode, ErrorEnvelope};
    /// let body = serde_json::json!({"detail": {"code": "session_busy", "message": "busy", "retryable": true}});
    /// assert_eq!(ErrorEnvelope::from_body(&body).unwrap().code, ErrorCode::SessionBusy);
    /// assert!(ErrorEnvelope::from_body(&serde_json::json!({"detail": "gone"})).is_none());
    /// ```
    pub fn from_body(body: &serde_json::Value) -> Option<Self> {
        let candidate = match body.get("detail") {
            Some(detail @ serde_json::Value::Object(_)) if body.get("code").is_none() => detail,
            _ => body,
        };
        // Only an object with a string `code` is an envelope; `{"detail": {...}}` without
        // one is another error shape (the cancel conflicts).
        candidate.get("code")?.as_str()?;
        crate::from_json_value(candidate.clone()).ok()
    }

    /// A string of `details`.
    pub fn detail_str(&self, key: &str) -> Option<&str> {
        self.details.as_ref()?.get(key)?.as_str()
    }

    /// `details.current_execution_id` (`execution_mismatch`, `session_busy`).
    pub fn current_execution_id(&self) -> Option<&str> {
        self.detail_str("current_execution_id")
    }

    /// `details.interaction_status` (`execution_terminal` on a row no longer pending).
    pub fn interaction_status(&self) -> Option<InteractionStatus> {
        self.detail_str("interaction_status")
            .map(InteractionStatus::from_wire)
    }

    /// `details.execution_state` (`execution_terminal`: the source execution stops or
    /// ended).
    pub fn execution_state(&self) -> Option<SessionExecutionState> {
        self.detail_str("execution_state")
            .map(SessionExecutionState::from_wire)
    }

    /// `details.terminal_outcome` (`execution_terminal`: another settler won), e.g.
    /// `lost`, `stopped`, `continued`: the execution row's free-text outcome, not a
    /// command's.
    pub fn terminal_outcome(&self) -> Option<&str> {
        self.detail_str("terminal_outcome")
    }

    /// `details.field` (`validation_error`), e.g. `Idempotency-Key`, `answers`.
    pub fn field(&self) -> Option<&str> {
        self.detail_str("field")
    }

    /// `details.reason` (`validation_error`), e.g. `required`, `too_long`.
    pub fn reason(&self) -> Option<&str> {
        self.detail_str("reason")
    }
}

/// FastAPI's `{"detail": {code, message, retryable, details?, next_step?}}`: the envelope
/// as the inputs plane (`DELETE /sessions/{id}/inputs/{input_id}`) and runner admission
/// raise it (`HTTPException`; hand-written schema `DetailWrappedEnvelope`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DetailWrappedEnvelope {
    /// The envelope.
    pub detail: ErrorEnvelope,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}
