//! Session interactions (CONTRACT.md A4, A5): the row a gate writes, and the request
//! and response bodies of the interaction endpoints, plus the watch stream's events.
//!
//! Every optional field of a row is rendered with `null` (as the server does), except
//! `data.parameters`, which is absent when the turn had no stamped config.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::JsonObject;

/// What kind of gate an interaction is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InteractionKind {
    /// "May I run this tool?" Answered with `{"approved": bool, ...}`.
    UserApproval,
    /// A free-form question to the user.
    UserInput,
    /// A tool the client executes itself.
    ClientTool,
}

/// The lifecycle of an interaction row (NOT the verdict).
///
/// `pending -> responded` (answered through the API) `-> resolved` (the runner consumed
/// it); `pending -> resolved` (answered in band); `-> cancelled` (stale turn, killed session).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InteractionStatus {
    /// Waiting for an answer.
    Pending,
    /// Answered through the API; the resume is queued.
    Responded,
    /// The runner consumed the answer.
    Resolved,
    /// The gate went away unanswered.
    Cancelled,
}

impl InteractionStatus {
    /// The snake_case wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Responded => "responded",
            Self::Resolved => "resolved",
            Self::Cancelled => "cancelled",
        }
    }
}

impl InteractionKind {
    /// The snake_case wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UserApproval => "user_approval",
            Self::UserInput => "user_input",
            Self::ClientTool => "client_tool",
        }
    }
}

/// One reference: `{id?, slug?, version?}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Reference {
    /// The entity's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The entity's slug.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slug: Option<String>,
    /// The revision's version (revisions only), as a string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `data.references`: which workflow, variant and (when saved) revision the turn ran.
/// A run from unsaved (dirty) config has no `workflow_revision`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct References {
    /// The workflow (artifact).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<Reference>,
    /// The workflow variant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_variant: Option<Reference>,
    /// The pinned revision; absent for a dirty draft.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_revision: Option<Reference>,
    /// Other reference families, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl References {
    /// True when no reference is set.
    pub fn is_empty(&self) -> bool {
        self.workflow.is_none()
            && self.workflow_variant.is_none()
            && self.workflow_revision.is_none()
            && self.extra.is_empty()
    }
}

/// `data.request`: what the gated tool call wanted to do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InteractionRequest {
    /// Tool name, e.g. `Bash`.
    #[serde(default)]
    pub tool: Option<String>,
    /// Tool arguments (any JSON).
    #[serde(default)]
    pub args: Option<serde_json::Value>,
    /// The model's tool call id.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `data.selector` (Agenta's data selector; opaque here).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Selector {
    /// Environment key.
    #[serde(default)]
    pub key: Option<String>,
    /// Dot path into the referenced entity's data.
    #[serde(default)]
    pub path: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `data` of an interaction row.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InteractionData {
    /// What the gate asks about.
    #[serde(default)]
    pub request: Option<InteractionRequest>,
    /// The turn's workflow references (attribution, and the legacy resume path).
    #[serde(default)]
    pub references: Option<References>,
    /// Agenta's selector.
    #[serde(default)]
    pub selector: Option<Selector>,
    /// The answer (after respond: `{"answer": {...}}`) and, once resolved,
    /// `verdict` and `tool_call_id`.
    #[serde(default)]
    pub resolution: Option<JsonObject>,
    /// The turn's stamped `effectiveParameters`, verbatim. Absent when the turn had
    /// none (legacy row, over the cap, non-session). Never drop this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minProperties" = 1))]
    pub parameters: Option<JsonObject>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Delivery flags of an interaction.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InteractionFlags {
    /// The runner delivered the gate in band (to an attached UI).
    #[serde(default)]
    pub delivered_in_band: bool,
    /// The gate was delivered by webhook.
    #[serde(default)]
    pub delivered_webhook: bool,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The session-interaction row (A4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionInteraction {
    /// Row id (UUID). `respond` is keyed by this, not by `token`.
    #[serde(default)]
    pub id: Option<String>,
    /// Owning project (UUID).
    #[serde(default)]
    pub project_id: Option<String>,
    /// The agent session.
    pub session_id: String,
    /// The turn that gated.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The runner's idempotency token for this gate.
    pub token: String,
    /// What kind of gate.
    pub kind: InteractionKind,
    /// Lifecycle status.
    #[serde(default)]
    pub status: Option<InteractionStatus>,
    /// Request, references, resolution and stamped parameters.
    #[serde(default)]
    pub data: Option<InteractionData>,
    /// Delivery flags.
    #[serde(default)]
    pub flags: InteractionFlags,
    /// Free-form tags.
    #[serde(default)]
    pub tags: Option<JsonObject>,
    /// Free-form metadata.
    #[serde(default)]
    pub meta: Option<JsonObject>,
    /// RFC 3339 creation time.
    #[serde(default)]
    pub created_at: Option<String>,
    /// RFC 3339 last update time.
    #[serde(default)]
    pub updated_at: Option<String>,
    /// RFC 3339 deletion time.
    #[serde(default)]
    pub deleted_at: Option<String>,
    /// Who created it.
    #[serde(default)]
    pub created_by_id: Option<String>,
    /// Who last updated it.
    #[serde(default)]
    pub updated_by_id: Option<String>,
    /// Who deleted it.
    #[serde(default)]
    pub deleted_by_id: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SessionInteraction {
    /// The stamped config this gate was opened under, when it has one.
    pub fn stamped_parameters(&self) -> Option<&JsonObject> {
        self.data
            .as_ref()
            .and_then(|d| d.parameters.as_ref())
            .filter(|p| !p.is_empty())
    }

    /// The gate's tool call id from `data.request`, when set.
    pub fn request_tool_call_id(&self) -> Option<&str> {
        self.data
            .as_ref()
            .and_then(|d| d.request.as_ref())
            .and_then(|r| r.tool_call_id.as_deref())
    }

    /// True while the row can still be answered.
    pub fn is_pending(&self) -> bool {
        self.status == Some(InteractionStatus::Pending)
    }
}

/// `{"count": 1, "interaction": row}`: the answer of get, respond, create, transition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InteractionResponse {
    /// 1 when `interaction` is set.
    #[serde(default)]
    pub count: u64,
    /// The row.
    #[serde(default)]
    pub interaction: Option<SessionInteraction>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `{"count": n, "interactions": [row...]}`: the answer of query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InteractionsResponse {
    /// Number of rows in this page.
    #[serde(default)]
    pub count: u64,
    /// The rows.
    #[serde(default)]
    pub interactions: Vec<SessionInteraction>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Flag filters of a query (each `null` = either).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InteractionQueryFlags {
    /// Filter on `delivered_in_band`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_in_band: Option<bool>,
    /// Filter on `delivered_webhook`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_webhook: Option<bool>,
}

/// The `query` of a query request: every filter is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InteractionQuery {
    /// Only this session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Only this turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// Only this kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<InteractionKind>,
    /// Only this status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<InteractionStatus>,
    /// Flag filters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flags: Option<InteractionQueryFlags>,
    /// Only rows a person can still answer (status `pending`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub actionable_only: bool,
}

/// Sort order of a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Oldest first.
    Ascending,
    /// Newest first.
    Descending,
}

/// Agenta's windowing (paging) parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Windowing {
    /// Only rows created at or before this RFC 3339 time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newest: Option<String>,
    /// Only rows created at or after this RFC 3339 time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oldest: Option<String>,
    /// Cursor: the id of the last row of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// Page size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Sort order (default ascending).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<Order>,
    /// Agenta's bucketing interval (accepted, unused by interaction queries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<i64>,
    /// Agenta's sampling rate (accepted, unused by interaction queries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
}

/// `POST /sessions/interactions/query` body.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InteractionQueryRequest {
    /// Filters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<InteractionQuery>,
    /// Paging.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windowing: Option<Windowing>,
}

/// The answer to a `user_approval` gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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

impl ApprovalAnswer {
    /// This answer as the JSON object a respond body carries.
    pub fn to_object(&self) -> JsonObject {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(map)) => map,
            // A struct of a bool and two optional strings always serializes to an object.
            _ => JsonObject::new(),
        }
    }
}

/// `POST /sessions/interactions/{id}/respond` body: `{"answer": {...}}`.
/// A `user_approval` answer is an [`ApprovalAnswer`]; other kinds take any object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RespondRequest {
    /// The answer object.
    pub answer: JsonObject,
}

impl RespondRequest {
    /// A respond body for an approval gate.
    pub fn approval(answer: &ApprovalAnswer) -> Self {
        Self {
            answer: answer.to_object(),
        }
    }
}

/// `POST /sessions/interactions/` body: the runner opening a gate. Idempotent on
/// `(project, session_id, token)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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

/// A resolution's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The tool call ran.
    Approved,
    /// The tool call was skipped.
    Denied,
}

/// `resolution` of a transition: `{verdict, tool_call_id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Resolution {
    /// What happened.
    pub verdict: Verdict,
    /// The tool call it applied to.
    #[serde(default)]
    pub tool_call_id: Option<String>,
}

/// `POST /sessions/interactions/transition` body (runner side, keyed by token).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TransitionRequest {
    /// The agent session.
    pub session_id: String,
    /// The gate's token.
    pub token: String,
    /// The new status.
    pub status: InteractionStatus,
    /// The resolution, when resolving.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<Resolution>,
}

/// `POST /sessions/interactions/cancel-stale` body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CancelStaleResponse {
    /// How many rows were cancelled.
    pub cancelled: u64,
}

/// Lifecycle state in a watch `lifecycle` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LifecycleState {
    /// A turn is running.
    Running,
    /// The turn ended (completed, parked or failed).
    Ended,
}

/// The `data` of one event on `GET /sessions/streams/watch` (SSE). The SSE event name
/// equals `type`. A client must revalidate (re-query) after every (re)connect, since
/// events are notifications, not a log.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type")]
pub enum WatchEvent {
    /// The stream is live (newer servers send it first).
    #[serde(rename = "ready")]
    Ready {
        /// The watched session.
        #[serde(default)]
        session_id: Option<String>,
    },
    /// An interaction of the session changed status.
    #[serde(rename = "interaction")]
    Interaction {
        /// The watched session.
        session_id: String,
        /// Its new status.
        status: InteractionStatus,
        /// Which row (Gatehouse adds it; upstream may not).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        interaction_id: Option<String>,
    },
    /// The session's records (transcript) changed.
    #[serde(rename = "records-changed")]
    RecordsChanged {
        /// The watched session.
        session_id: String,
    },
    /// A turn started or ended.
    #[serde(rename = "lifecycle")]
    Lifecycle {
        /// The watched session.
        session_id: String,
        /// Running or ended.
        state: LifecycleState,
    },
}

// Deserialized by hand (same shape as the derive) so that an error names the field's
// path: serde's internally tagged enums lose it.
#[derive(Deserialize)]
struct WatchReady {
    #[serde(default)]
    session_id: Option<String>,
}

#[derive(Deserialize)]
struct WatchInteraction {
    session_id: String,
    status: InteractionStatus,
    #[serde(default)]
    interaction_id: Option<String>,
}

#[derive(Deserialize)]
struct WatchRecordsChanged {
    session_id: String,
}

#[derive(Deserialize)]
struct WatchLifecycle {
    session_id: String,
    state: LifecycleState,
}

fn watch_variant<T, E>(event: JsonObject) -> Result<T, E>
where
    T: serde::de::DeserializeOwned,
    E: serde::de::Error,
{
    crate::from_json_value(serde_json::Value::Object(event))
        .map_err(|err| E::custom(format!("at {}: {}", err.path, err.reason)))
}

impl<'de> Deserialize<'de> for WatchEvent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let event = JsonObject::deserialize(deserializer)?;
        let event_type = match event.get("type") {
            Some(serde_json::Value::String(t)) => t.clone(),
            Some(other) => {
                return Err(serde::de::Error::custom(format!(
                    "`type` must be a string, got {other}"
                )))
            }
            None => return Err(serde::de::Error::custom("missing field `type`")),
        };
        match event_type.as_str() {
            "ready" => {
                let v: WatchReady = watch_variant(event)?;
                Ok(Self::Ready {
                    session_id: v.session_id,
                })
            }
            "interaction" => {
                let v: WatchInteraction = watch_variant(event)?;
                Ok(Self::Interaction {
                    session_id: v.session_id,
                    status: v.status,
                    interaction_id: v.interaction_id,
                })
            }
            "records-changed" => {
                let v: WatchRecordsChanged = watch_variant(event)?;
                Ok(Self::RecordsChanged {
                    session_id: v.session_id,
                })
            }
            "lifecycle" => {
                let v: WatchLifecycle = watch_variant(event)?;
                Ok(Self::Lifecycle {
                    session_id: v.session_id,
                    state: v.state,
                })
            }
            other => Err(serde::de::Error::custom(format!(
                "unknown watch event `type` \"{other}\", expected ready, interaction, records-changed or lifecycle"
            ))),
        }
    }
}

impl WatchEvent {
    /// The SSE `event:` name this event is sent under.
    pub fn event_name(&self) -> &'static str {
        match self {
            Self::Ready { .. } => "ready",
            Self::Interaction { .. } => "interaction",
            Self::RecordsChanged { .. } => "records-changed",
            Self::Lifecycle { .. } => "lifecycle",
        }
    }
}
