//! The service tier's invoke body (Agenta's `POST /invoke`), the turns listing, and the
//! minimal workflow registry of the reference control plane.

use serde::{Deserialize, Serialize};

use crate::execution::ExecutionRef;
use crate::interaction::References;
use crate::run::{ChatMessage, RulePermission};
use crate::JsonObject;

/// `data.inputs` of an invoke.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InvokeInputs {
    /// The conversation to run (for a resume: rebuilt history plus the approval envelope).
    #[serde(default)]
    pub messages: Vec<ChatMessage>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `data` of an invoke.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InvokeData {
    /// The inputs.
    #[serde(default)]
    pub inputs: InvokeInputs,
    /// Inline config. Non-empty: runs under it and suppresses reference hydration (A6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<JsonObject>,
    /// Inline revision. Non-empty: suppresses reference hydration too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<JsonObject>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `POST /api/invoke` body (Agenta's invoke shape).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InvokeRequest {
    /// The agent session; a session run is stamped with `effectiveParameters`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Workflow references (hydration source, and attribution).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub references: Option<References>,
    /// Inputs and inline config.
    pub data: InvokeData,
}

/// The model a [`ToolTurn`] names when it is given none (its outputs and its gate's
/// stamped config show it).
pub const TOOL_TURN_MODEL: &str = "gatehouse/harness";

/// The common invoke, built for you: one turn of the reference control plane's
/// deterministic agent that calls one tool under one permission. With `ask` (the
/// default) the turn parks at an approval gate for that call, so an app, a test or a
/// quick start has a gate to answer; `allow` runs the tool, `deny` skips it. Any other
/// turn takes the full [`InvokeRequest`].
///
/// ```
/// use gatehouse_wire::invoke::ToolTurn;
/// use gatehouse_wire::run::RulePermission;
/// let request = ToolTurn::new("clean up /tmp", "Bash")
///     .session("s-1")
///     .args(serde_json::json!({"command": "rm -rf /tmp/cache"}))
///     .permission(RulePermission::Ask)
///     .to_request();
/// assert_eq!(request.session_id.as_deref(), Some("s-1"));
/// let agent = &request.data.parameters.as_ref().unwrap()["agent"];
/// assert_eq!(agent["runner"]["permissions"]["default"], "ask");
/// assert_eq!(agent["script"][0]["tool"], "Bash");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolTurn {
    session_id: Option<String>,
    prompt: String,
    tool: String,
    args: serde_json::Value,
    permission: RulePermission,
    model: String,
}

impl ToolTurn {
    /// A turn that is asked `prompt` and calls `tool` with `{}`, asking first, in a new
    /// session (the server names it).
    pub fn new(prompt: impl Into<String>, tool: impl Into<String>) -> Self {
        Self {
            session_id: None,
            prompt: prompt.into(),
            tool: tool.into(),
            args: serde_json::Value::Object(JsonObject::new()),
            permission: RulePermission::Ask,
            model: TOOL_TURN_MODEL.to_string(),
        }
    }

    /// The agent session (a new turn in a session cancels its still-pending gates).
    pub fn session(mut self, session_id: impl Into<String>) -> Self {
        self.session_id = Some(session_id.into());
        self
    }

    /// The tool call's arguments (any JSON; what the gate shows as `data.request.args`).
    pub fn args(mut self, args: serde_json::Value) -> Self {
        self.args = args;
        self
    }

    /// What the turn's permissions decide for the call: `ask` (a gate), `allow`, `deny`.
    pub fn permission(mut self, permission: RulePermission) -> Self {
        self.permission = permission;
        self
    }

    /// The model the config names (`agent.llm.model`; default [`TOOL_TURN_MODEL`]).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// The `POST /api/invoke` body: the prompt as the user's message, and an inline
    /// config whose script calls the tool, then says "done".
    pub fn to_request(&self) -> InvokeRequest {
        let parameters = serde_json::json!({"agent": {
            "llm": {"model": self.model},
            "runner": {"permissions": {"default": self.permission.as_str()}},
            "script": [{"tool": self.tool, "args": self.args}, {"say": "done"}]
        }});
        InvokeRequest {
            session_id: self.session_id.clone(),
            references: None,
            data: InvokeData {
                inputs: InvokeInputs {
                    messages: vec![ChatMessage::text("user", self.prompt.clone())],
                    extra: JsonObject::new(),
                },
                parameters: parameters.as_object().cloned(),
                revision: None,
                extra: JsonObject::new(),
            },
        }
    }
}

impl From<&ToolTurn> for InvokeRequest {
    fn from(turn: &ToolTurn) -> Self {
        turn.to_request()
    }
}

/// How an invoked turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "schema", schemars(transform = crate::json::StringEnum { name: "TurnStatus", open: false }))]
pub enum TurnStatus {
    /// Stopped at an approval gate; resumes when answered.
    Parked,
    /// Finished.
    Completed,
    /// Failed (or was halted by a `stop` intervention).
    Failed,
}

/// The answer to `POST /api/invoke`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InvokeResponse {
    /// How the turn ended.
    pub status: TurnStatus,
    /// The agent session (generated when the caller sent none).
    pub session_id: String,
    /// The turn.
    pub turn_id: String,
    /// The model the turn ran under (`agent.llm.model`).
    #[serde(default)]
    pub model: Option<String>,
    /// The turn's output text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Gates the turn opened (pending interactions).
    #[serde(default)]
    pub interaction_ids: Vec<String>,
    /// The run's execution session, when the execution service is enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ExecutionRef>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One turn of a session, as listed by `GET /api/sessions/{session_id}/turns`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Turn {
    /// The turn id.
    pub turn_id: String,
    /// How it ended (or `parked`).
    pub status: TurnStatus,
    /// The model it ran under.
    #[serde(default)]
    pub model: Option<String>,
    /// Its output text.
    #[serde(default)]
    pub output: Option<String>,
    /// True when this turn resumed a gated turn.
    pub resumed: bool,
    /// The interaction it resumed from, for a resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_from_interaction_id: Option<String>,
    /// RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `{"session_id", "count", "turns": [...]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TurnsResponse {
    /// The session.
    pub session_id: String,
    /// Number of turns.
    pub count: u64,
    /// Turns, oldest first.
    pub turns: Vec<Turn>,
    /// Every tool call the session's turns ran, once each, oldest first (the tool-run
    /// ledger: a tool call approved once appears once, whatever crashed or was retried).
    #[serde(default)]
    pub tool_runs: Vec<ToolRunEntry>,
}

/// One tool call a session ran (the tool-run ledger, written before the tool ran).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolRunEntry {
    /// The tool call id (for an approved gate: the gated call's id).
    pub tool_call_id: String,
    /// The tool.
    pub tool: String,
    /// The turn attempt that ran it (a recorded turn, or an attempt that died after
    /// running it; its retry then reports it as run without running it again).
    pub turn_id: String,
    /// The answered gate whose resume ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interaction_id: Option<String>,
    /// When it ran (RFC 3339).
    pub ran_at: String,
}

/// `{"slug": S}`: names a workflow or variant to create-or-reuse.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SlugRef {
    /// The slug.
    pub slug: String,
}

/// `POST /api/workflows/revisions/commit` body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CommitRevisionRequest {
    /// The workflow (created if missing).
    pub workflow: SlugRef,
    /// The variant (created if missing); its HEAD moves to the new revision.
    pub variant: SlugRef,
    /// The revision's config.
    pub parameters: JsonObject,
}

/// `{"id", "slug"}` of a created-or-found entity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EntityRef {
    /// UUID.
    pub id: String,
    /// Slug.
    pub slug: String,
}

/// `{"id", "slug", "version"}` of a committed revision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RevisionRef {
    /// UUID.
    pub id: String,
    /// Slug (short hash).
    pub slug: String,
    /// Version number within the variant, as a string ("1", "2", ...).
    pub version: String,
}

/// The answer to a revision commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CommitRevisionResponse {
    /// The workflow.
    pub workflow: EntityRef,
    /// The variant.
    pub variant: EntityRef,
    /// The new revision (now the variant's HEAD).
    pub revision: RevisionRef,
}
