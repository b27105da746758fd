//! The respond endpoint's body (A5): an answer, and the approval answer of a
//! `user_approval` gate.

use serde::{Deserialize, Serialize};

use crate::JsonObject;

/// The answer to a `user_approval` gate: what a respond's `answer` is in the published
/// schema and OpenAPI document, where it is closed (`additionalProperties: false`), so a
/// client generated from them refuses `{"aproved": true}` rather than sending a denial.
/// The server reads more tolerantly, as Agenta's router does (any object, `approved` by
/// truthiness, the object kept as sent): readers tolerant, writers exact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
pub struct ApprovalAnswer {
    /// Approve (true) or deny (false) the tool call.
    pub approved: bool,
    /// The tool call being answered (overrides the row's, see A6 precedence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// A message for the agent; a non-blank one becomes a trailing user message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Python's truthiness of a JSON value (`bool(x)`).
fn truthy(value: &serde_json::Value) -> bool {
    use serde_json::Value;
    match value {
        Value::Null | Value::Bool(false) => false,
        Value::Bool(true) => true,
        Value::Number(n) => crate::numbers::literal_to_f64(n.as_str()) != 0.0,
        Value::String(s) => !s.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
    }
}

impl ApprovalAnswer {
    /// This answer as the JSON object a respond body carries.
    pub fn to_object(&self) -> JsonObject {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(map)) => map,
            // A struct of a bool and two optional strings always serializes to an object.
            _ => JsonObject::new(),
        }
    }

    /// Read a respond `answer` as Agenta's dispatcher does: `approved` is the truthiness
    /// of whatever is there (`{}` is a denial), `tool_call_id` and `message` are taken when
    /// they are strings.
    ///
    /// ```
    /// use gatehouse_wire::interaction::ApprovalAnswer;
    /// let answer = ApprovalAnswer::from_answer(&serde_json::Map::new());
    /// assert!(!answer.approved);
    /// ```
    pub fn from_answer(answer: &JsonObject) -> Self {
        let text = |key: &str| answer.get(key).and_then(|v| v.as_str()).map(str::to_string);
        Self {
            approved: answer.get("approved").is_some_and(truthy),
            tool_call_id: text("tool_call_id"),
            message: text("message"),
        }
    }
}

/// `POST /sessions/interactions/{id}/respond` body: `{"answer": {...}}`. As in Agenta,
/// the answer may be missing or `null` (read as `{}`, which denies an approval). The
/// schema says the answer is an [`ApprovalAnswer`] (closed: what a client writes); the
/// field stays the object as sent, which the server reads as Agenta's router does (any
/// object, extra keys kept in the row).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RespondRequest {
    /// The answer object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<ApprovalAnswer>"))]
    pub answer: Option<JsonObject>,
    /// The gate's digest as the client read it (`gate.digest`, C8; Gatehouse only): the
    /// answer is recorded only while the gate is still that one, else 409 `STALE_GATE`
    /// and nothing is recorded. Absent: not checked (Agenta's clients).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

impl RespondRequest {
    /// A respond body for an approval gate.
    pub fn approval(answer: &ApprovalAnswer) -> Self {
        Self {
            answer: Some(answer.to_object()),
            digest: None,
        }
    }

    /// The answer as Agenta's router takes it: `body.answer or {}`.
    pub fn answer_or_empty(&self) -> JsonObject {
        self.answer.clone().unwrap_or_default()
    }
}
