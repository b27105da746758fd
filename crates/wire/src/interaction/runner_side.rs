//! The runner's side of a gate (A5): open it (create), move it (transition, with a
//! `user_approval` row's strict resolution), cancel a turn's stale gates.

use serde::{Deserialize, Serialize};

use super::row::{InteractionData, InteractionFlags, InteractionKind, InteractionStatus};
#[cfg(feature = "schema")]
use super::row::{InteractionRequest, References, Selector};
use super::validation::FieldProblem;
use crate::json::open_enum;
use crate::JsonObject;

/// Schema-only: `data` of a create request, whose `parameters` is a non-empty object when
/// present (the stamp: never `null`, never `{}`).
#[cfg(feature = "schema")]
#[derive(schemars::JsonSchema)]
#[allow(dead_code)]
struct CreateInteractionData {
    #[serde(default)]
    request: Option<InteractionRequest>,
    #[serde(default)]
    references: Option<References>,
    #[serde(default)]
    selector: Option<Selector>,
    #[serde(default)]
    resolution: Option<JsonObject>,
    /// The turn's stamped `effectiveParameters`, verbatim; omitted when the turn had none.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "JsonObject", extend("minProperties" = 1)))]
    parameters: Option<JsonObject>,
}

/// `POST /sessions/interactions/` body: the runner opening a gate. Idempotent on
/// `(project, session_id, token)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CreateInteractionRequest {
    /// The agent session.
    pub session_id: String,
    /// The turn that gated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// The runner's token for this gate.
    pub token: String,
    /// What kind of gate.
    pub kind: InteractionKind,
    /// Request, references, stamped parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<CreateInteractionData>"))]
    pub data: Option<InteractionData>,
    /// Delivery flags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flags: Option<InteractionFlags>,
    /// Free-form tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<JsonObject>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

open_enum! {
    /// A resolution's verdict.
    pub enum Verdict {
        /// The tool call ran.
        Approved = "approved",
        /// The tool call was skipped.
        Denied = "denied",
    }
}

/// The resolution of a `user_approval` row, exactly as Agenta's
/// `SessionInteractionResolution` takes it: `{verdict, tool_call_id}`, both required, no
/// other key. (Other kinds take any object.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Resolution {
    /// What happened.
    pub verdict: Verdict,
    /// The tool call it applied to.
    pub tool_call_id: String,
}

impl Resolution {
    /// Check a transition's `resolution` for a `user_approval` row; every problem, with
    /// its path inside the resolution, when Agenta would refuse it (422).
    pub fn from_object(resolution: &JsonObject) -> Result<Self, Vec<FieldProblem>> {
        let mut problems = Vec::new();
        let verdict = match resolution.get("verdict") {
            Some(serde_json::Value::String(v)) if v == "approved" => Some(Verdict::Approved),
            Some(serde_json::Value::String(v)) if v == "denied" => Some(Verdict::Denied),
            Some(_) => {
                problems.push(FieldProblem::at(
                    &["verdict"],
                    "Input should be 'approved' or 'denied'",
                    "literal_error",
                ));
                None
            }
            None => {
                problems.push(FieldProblem::at(&["verdict"], "Field required", "missing"));
                None
            }
        };
        let tool_call_id = match resolution.get("tool_call_id") {
            Some(serde_json::Value::String(id)) => Some(id.clone()),
            Some(_) => {
                problems.push(FieldProblem::at(
                    &["tool_call_id"],
                    "Input should be a valid string",
                    "string_type",
                ));
                None
            }
            None => {
                problems.push(FieldProblem::at(
                    &["tool_call_id"],
                    "Field required",
                    "missing",
                ));
                None
            }
        };
        for key in resolution.keys() {
            if key != "verdict" && key != "tool_call_id" {
                problems.push(FieldProblem::at(
                    &[key.as_str()],
                    "Extra inputs are not permitted",
                    "extra_forbidden",
                ));
            }
        }
        match (verdict, tool_call_id) {
            (Some(verdict), Some(tool_call_id)) if problems.is_empty() => Ok(Self {
                verdict,
                tool_call_id,
            }),
            _ => Err(problems),
        }
    }

    /// This resolution as the JSON object a transition carries.
    pub fn to_object(&self) -> JsonObject {
        let mut map = JsonObject::new();
        map.insert(
            "verdict".into(),
            serde_json::Value::String(self.verdict.as_str().to_string()),
        );
        map.insert(
            "tool_call_id".into(),
            serde_json::Value::String(self.tool_call_id.clone()),
        );
        map
    }
}

/// `POST /sessions/interactions/transition` body (runner side, keyed by token). A
/// `resolution` goes only with status `responded` or `resolved`; on a `user_approval` row it
/// must be a strict [`Resolution`], on other kinds any object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(extend("if" = {"required": ["resolution"], "properties": {"resolution": {"type": "object"}}},
                  "then" = {"properties": {"status": {"enum": ["responded", "resolved"]}}})))]
pub struct TransitionRequest {
    /// The agent session.
    pub session_id: String,
    /// The gate's token.
    pub token: String,
    /// The new status.
    pub status: InteractionStatus,
    /// The resolution, when resolving.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<JsonObject>,
}

impl TransitionRequest {
    /// The check Agenta's request model makes before looking at the row: a resolution only
    /// on a transition to `responded` or `resolved`.
    pub fn problems(&self) -> Vec<FieldProblem> {
        let settles = matches!(
            self.status,
            InteractionStatus::Responded | InteractionStatus::Resolved
        );
        if self.resolution.is_some() && !settles {
            return vec![FieldProblem::at(
                &[],
                "Value error, resolution is only valid when status is responded or resolved",
                "value_error",
            )];
        }
        Vec::new()
    }
}

/// `POST /sessions/interactions/cancel-stale` body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CancelStaleRequest {
    /// The agent session.
    pub session_id: String,
    /// Cancel pending gates of turns other than this (the live) one.
    pub turn_id: String,
    /// Only these tokens, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<Vec<String>>,
}

/// `{"cancelled": n}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CancelStaleResponse {
    /// How many rows were cancelled.
    pub cancelled: u64,
}
