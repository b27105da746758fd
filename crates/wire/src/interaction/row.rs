//! The session-interaction row (A4) a gate writes: its kind, status, `data` (request,
//! references, selector, resolution, stamped parameters) and flags; and the answers that
//! carry rows.

use serde::{Deserialize, Serialize};

#[cfg(feature = "schema")]
use super::validation::NullableUuid;
#[cfg(feature = "schema")]
use crate::json::Nullable;
use crate::json::{open_enum, present_or_null};
use crate::JsonObject;

open_enum! {
    /// What kind of gate an interaction is.
    pub enum InteractionKind {
        /// "May I run this tool?" Answered with `{"approved": bool, ...}`.
        UserApproval = "user_approval",
        /// A free-form question to the user.
        UserInput = "user_input",
        /// A tool the client executes itself.
        ClientTool = "client_tool",
    }
}

open_enum! {
    /// The lifecycle of an interaction row (NOT the verdict).
    ///
    /// `pending -> responded` (answered through the API) `-> resolved` (the runner consumed
    /// it); `pending -> resolved` (answered in band); `-> cancelled` (stale turn, killed
    /// session).
    pub enum InteractionStatus {
        /// Waiting for an answer.
        Pending = "pending",
        /// Answered through the API; the resume is queued.
        Responded = "responded",
        /// The runner consumed the answer.
        Resolved = "resolved",
        /// The gate went away unanswered.
        Cancelled = "cancelled",
    }
}

/// One reference, written as Agenta's API renders it: `{"version", "slug", "id"}`, each key
/// present, `null` when unset. A reader accepts any order and absent keys.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Reference {
    /// The revision's version (revisions only), as a string.
    #[serde(default)]
    pub version: Option<String>,
    /// The entity's slug.
    #[serde(default)]
    pub slug: Option<String>,
    /// The entity's id.
    #[serde(default)]
    pub id: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `data.references`: which workflow, variant and (when saved) revision the turn ran.
/// A run from unsaved (dirty) config has no `workflow_revision`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    /// The turn's stamped `effectiveParameters`, verbatim: `Some(Some(params))`. A row
    /// renders `null` when the turn had none (`Some(None)`: legacy row, over the cap,
    /// non-session); a create request leaves the key out (`None`), never `null`, never
    /// `{}`. Never drop this field.
    #[serde(
        default,
        deserialize_with = "present_or_null",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Nullable<JsonObject>", extend("minProperties" = 1)))]
    pub parameters: Option<Option<JsonObject>>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl InteractionData {
    /// The stamped config, when the row has a non-empty one.
    pub fn stamped_parameters(&self) -> Option<&JsonObject> {
        self.parameters
            .as_ref()
            .and_then(Option::as_ref)
            .filter(|p| !p.is_empty())
    }
}

/// Delivery flags of an interaction.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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

/// What a Gatehouse row shows of its binding (`gate` on the row; absent on an Agenta
/// host): the revision and the digest the server computed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GateBinding {
    /// The gate's revision (1 when written).
    pub revision: i64,
    /// The gate digest (v1: `sha256:<64 hex>`).
    pub digest: String,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The session-interaction row (A4), its keys in the order Agenta's API renders them
/// (`Lifecycle` fields, `id`, then the row), every key written, `null` when unset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionInteraction {
    /// RFC 3339 creation time.
    #[serde(default)]
    pub created_at: Option<String>,
    /// RFC 3339 last update time.
    #[serde(default)]
    pub updated_at: Option<String>,
    /// RFC 3339 deletion time.
    #[serde(default)]
    pub deleted_at: Option<String>,
    /// Who created it (a UUID: Agenta's model refuses anything else).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "NullableUuid"))]
    pub created_by_id: Option<String>,
    /// Who last updated it (a UUID).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "NullableUuid"))]
    pub updated_by_id: Option<String>,
    /// Who deleted it (a UUID).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "NullableUuid"))]
    pub deleted_by_id: Option<String>,
    /// Row id (UUID). `respond` is keyed by this, not by `token`.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "NullableUuid"))]
    pub id: Option<String>,
    /// Owning project (UUID).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "NullableUuid"))]
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
    /// What the gate asks, bound (Gatehouse only, after Agenta's keys; absent on an
    /// Agenta host): its revision and digest (C8). A respond that carries the digest
    /// lands only while the gate is still what was shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateBinding>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SessionInteraction {
    /// The stamped config this gate was opened under, when it has one.
    pub fn stamped_parameters(&self) -> Option<&JsonObject> {
        self.data
            .as_ref()
            .and_then(InteractionData::stamped_parameters)
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
