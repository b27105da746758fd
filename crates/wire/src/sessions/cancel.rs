//! Durable Stop: `POST /sessions/{session_id}/cancel` (Agenta's
//! `cancel_session_execution`).
//!
//! A Stop records a `cancel` command and answers at once: 202 when a turn runs (or is
//! parked on a gate and named), with the command `pending` and the execution `stopping`;
//! 200 when there is nothing to stop, with the command `obsolete` and no execution. The
//! run's outcome is not in the answer: read it from the snapshot or the events.

use serde::{Deserialize, Serialize};

use crate::JsonObject;

use super::{SessionCommandRef, SessionExecutionState};

/// The Stop body (Agenta's `SessionCancelRequest`; the body itself is optional, and
/// without one the Stop targets whatever runs). Written with only the keys that are set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionCancelRequest {
    /// Stop only this execution: a 409 when it is not the running one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_execution_id: Option<String>,
    /// Fields this version does not know, kept for round trips (Agenta forbids them).
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SessionCancelRequest {
    /// A Stop of this execution only.
    pub fn expecting(execution_id: impl Into<String>) -> Self {
        Self {
            expected_execution_id: Some(execution_id.into()),
            extra: JsonObject::new(),
        }
    }
}

/// `{id, state}` of the execution a Stop names (Agenta's `SessionExecutionRef`): the
/// target and `stopping` (202), or `null` and `idle` (200). `id` is written `null`, never
/// left out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionExecutionRef {
    /// The target execution, or `null` when nothing runs.
    #[serde(default)]
    pub id: Option<String>,
    /// `stopping` or `idle` (Agenta's model lists these; any other is kept).
    pub state: SessionExecutionState,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The Stop's 202 and 200 (Agenta's `SessionCancelResponse`). A replay with the same
/// `Idempotency-Key` and expectation answers the stored command (202 when it has a
/// target, even once `applied`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionCancelResponse {
    /// The `cancel` command: `pending` (202) or `obsolete` (200).
    pub command: SessionCommandRef,
    /// The execution it stops.
    pub execution: SessionExecutionRef,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SessionCancelResponse {
    /// True when a turn is being stopped (the 202 form), false when nothing ran (200).
    pub fn is_stopping(&self) -> bool {
        self.execution.id.is_some()
    }
}

/// `{message, current_execution_id}`: the expected execution is not the running one (or
/// nothing runs, `null`), or it already has a terminal outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CancelExecutionConflict {
    /// "expected execution 'X' is not the running execution (current: Y|none)".
    pub message: String,
    /// The running execution, or `null` (written `null`, never left out).
    #[serde(deserialize_with = "crate::json::required_nullable")]
    #[cfg_attr(feature = "schema", schemars(with = "crate::json::Nullable<String>"))]
    pub current_execution_id: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `{message, state}`: the command cannot be claimed (a steer binding).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CancelNotClaimable {
    /// What happened.
    pub message: String,
    /// The command's state.
    pub state: String,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `detail` of a Stop error, one of three forms.
#[derive(Debug, Clone, PartialEq)]
pub enum CancelErrorDetail {
    /// 409: stale expectation (`{message, current_execution_id}`).
    ExecutionConflict(CancelExecutionConflict),
    /// 409: the command cannot be claimed (`{message, state}`).
    NotClaimable(CancelNotClaimable),
    /// A plain message: 409 for the same `Idempotency-Key` with another
    /// `expected_execution_id`, 404 command not found, 422 invalid session id.
    Message(String),
}

impl Serialize for CancelErrorDetail {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::ExecutionConflict(detail) => detail.serialize(serializer),
            Self::NotClaimable(detail) => detail.serialize(serializer),
            Self::Message(text) => serializer.serialize_str(text),
        }
    }
}

// By hand: which form is told by its keys, so that an error names the form's field
// (an untagged enum would only say that no form matched).
impl<'de> Deserialize<'de> for CancelErrorDetail {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match serde_json::Value::deserialize(deserializer)? {
            serde_json::Value::String(text) => Ok(Self::Message(text)),
            serde_json::Value::Object(map) => {
                let not_claimable =
                    map.contains_key("state") && !map.contains_key("current_execution_id");
                let value = serde_json::Value::Object(map);
                let located = |err: crate::WireDecodeError| {
                    D::Error::custom(format!("at {}: {}", err.path, err.reason))
                };
                if not_claimable {
                    crate::from_json_value(value)
                        .map(Self::NotClaimable)
                        .map_err(located)
                } else {
                    crate::from_json_value(value)
                        .map(Self::ExecutionConflict)
                        .map_err(located)
                }
            }
            other => Err(D::Error::custom(format!(
                "expected a message or an object, got {other}"
            ))),
        }
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for CancelErrorDetail {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CancelErrorDetail".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let conflict = generator.subschema_for::<CancelExecutionConflict>();
        let not_claimable = generator.subschema_for::<CancelNotClaimable>();
        schemars::json_schema!({
            "anyOf": [
                conflict,
                not_claimable,
                {"type": "string", "description": "A plain message."}
            ]
        })
    }
}

/// The error bodies of the Stop route (FastAPI's `{"detail": ...}`; hand-written schema
/// `CancelError`), apart from the Idempotency-Key 422, which is a top-level
/// [`super::ErrorEnvelope`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CancelError {
    /// What went wrong.
    pub detail: CancelErrorDetail,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}
