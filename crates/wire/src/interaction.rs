//! Session interactions (CONTRACT.md A4, A5): the row a gate writes, and the request
//! and response bodies of the interaction endpoints, plus the watch stream's events.
//!
//! A row is written as Agenta's API renders it (FastAPI over its `SessionInteraction`
//! model): every key present, `null` when unset, in the model's order (lifecycle fields
//! first); a reference as `{version, slug, id}`. The readers are tolerant: a key may be
//! absent, an enum value this version does not know is kept, unknown keys survive.

use serde::{Deserialize, Serialize};

#[cfg(feature = "schema")]
use crate::json::Nullable;
use crate::json::{open_enum, present_or_null};
use crate::JsonObject;

/// The JSON Schema `pattern` of a UUID as Agenta's API writes one (hyphenated hex).
pub const UUID_PATTERN: &str =
    "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";

/// True for a UUID in the hyphenated form ([`UUID_PATTERN`]).
pub fn is_uuid(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(index, byte)| match index {
            8 | 13 | 18 | 23 => *byte == b'-',
            _ => byte.is_ascii_hexdigit(),
        })
}

/// Schema-only: a UUID string, or `null`.
#[cfg(feature = "schema")]
struct NullableUuid;

#[cfg(feature = "schema")]
impl schemars::JsonSchema for NullableUuid {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NullableUuid".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": ["string", "null"],
            "format": "uuid",
            "pattern": UUID_PATTERN
        })
    }
}

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

/// Flag filters of a query (each `null` = either).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InteractionQueryFlags {
    /// Filter on `delivered_in_band`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_in_band: Option<bool>,
    /// Filter on `delivered_webhook`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_webhook: Option<bool>,
}

/// The `query` of a query request: every filter is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "schema", schemars(transform = crate::json::StringEnum { name: "Order", open: false }))]
pub enum Order {
    /// Oldest first.
    Ascending,
    /// Newest first.
    Descending,
}

/// Agenta's windowing (paging) parameters, checked as Agenta checks them
/// ([`Windowing::problems`]): `next` a UUID, `newest`/`oldest` RFC 3339 times, `rate`
/// within `0.0..=1.0`, `interval` positive.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Windowing {
    /// Only rows created at or before this RFC 3339 time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub newest: Option<String>,
    /// Only rows created at or after this RFC 3339 time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub oldest: Option<String>,
    /// Cursor: the id (a UUID) of the last row of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "NullableUuid"))]
    pub next: Option<String>,
    /// Page size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Sort order (default ascending).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<Order>,
    /// Agenta's bucketing interval, a positive integer (accepted, unused by interaction
    /// queries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("exclusiveMinimum" = 0)))]
    pub interval: Option<i64>,
    /// Agenta's sampling rate, `0.0..=1.0` (accepted, unused by interaction queries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("minimum" = 0.0, "maximum" = 1.0)))]
    pub rate: Option<f64>,
}

/// One way a request body breaks a rule Agenta's API enforces: where (the key path inside
/// the body), what, and pydantic's error type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProblem {
    /// The key path inside the body, e.g. `["windowing", "rate"]`.
    pub path: Vec<String>,
    /// What is wrong, in pydantic's words where it has them.
    pub message: String,
    /// Pydantic's error type, e.g. `uuid_parsing`, `missing`, `extra_forbidden`.
    pub kind: &'static str,
}

impl FieldProblem {
    fn at(path: &[&str], message: impl Into<String>, kind: &'static str) -> Self {
        Self {
            path: path.iter().map(|p| p.to_string()).collect(),
            message: message.into(),
            kind,
        }
    }
}

/// True for an RFC 3339 date-time (`YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`, `T` or space).
pub fn is_rfc3339(value: &str) -> bool {
    let b = value.as_bytes();
    let digits = |range: std::ops::Range<usize>| {
        b.get(range.clone())
            .is_some_and(|s| s.len() == range.len() && s.iter().all(u8::is_ascii_digit))
    };
    if b.len() < 20
        || !digits(0..4)
        || b[4] != b'-'
        || !digits(5..7)
        || b[7] != b'-'
        || !digits(8..10)
        || !matches!(b[10], b'T' | b't' | b' ')
        || !digits(11..13)
        || b[13] != b':'
        || !digits(14..16)
        || b[16] != b':'
        || !digits(17..19)
    {
        return false;
    }
    let mut at = 19;
    if b.get(at) == Some(&b'.') {
        at += 1;
        let start = at;
        while b.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        if at == start {
            return false;
        }
    }
    match &b[at..] {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit()),
        _ => false,
    }
}

impl Windowing {
    /// Every rule Agenta's `Windowing` model enforces that this one breaks; empty when
    /// Agenta accepts it. Paths are relative to the windowing object.
    pub fn problems(&self) -> Vec<FieldProblem> {
        let mut problems = Vec::new();
        for (key, value) in [("newest", &self.newest), ("oldest", &self.oldest)] {
            if value.as_deref().is_some_and(|t| !is_rfc3339(t)) {
                problems.push(FieldProblem::at(
                    &[key],
                    "Input should be a valid datetime",
                    "datetime_from_date_parsing",
                ));
            }
        }
        if self.next.as_deref().is_some_and(|n| !is_uuid(n)) {
            problems.push(FieldProblem::at(
                &["next"],
                "Input should be a valid UUID",
                "uuid_parsing",
            ));
        }
        if self.interval.is_some_and(|i| i <= 0) {
            problems.push(FieldProblem::at(
                &["interval"],
                "Value error, Bucket interval must be a positive integer.",
                "value_error",
            ));
        }
        if self.rate.is_some_and(|r| !(0.0..=1.0).contains(&r)) {
            problems.push(FieldProblem::at(
                &["rate"],
                "Value error, Sampling rate must be between 0.0 and 1.0.",
                "value_error",
            ));
        }
        problems
    }
}

/// `POST /sessions/interactions/query` body.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InteractionQueryRequest {
    /// Filters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<InteractionQuery>,
    /// Paging.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windowing: Option<Windowing>,
}

/// The answer to a `user_approval` gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
/// the answer may be missing or `null` (read as `{}`, which denies an approval). A
/// `user_approval` answer is an [`ApprovalAnswer`]; other kinds take any object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RespondRequest {
    /// The answer object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<JsonObject>,
}

impl RespondRequest {
    /// A respond body for an approval gate.
    pub fn approval(answer: &ApprovalAnswer) -> Self {
        Self {
            answer: Some(answer.to_object()),
        }
    }

    /// The answer as Agenta's router takes it: `body.answer or {}`.
    pub fn answer_or_empty(&self) -> JsonObject {
        self.answer.clone().unwrap_or_default()
    }
}

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

open_enum! {
    /// Lifecycle state in a watch `lifecycle` event.
    pub enum LifecycleState {
        /// A turn is running.
        Running = "running",
        /// The turn ended (completed, parked or failed).
        Ended = "ended",
    }
}

/// The `data` of one event on `GET /sessions/streams/watch` (SSE). The SSE event name
/// equals `type`. Agenta's `ready` event carries `{}` (no `type`): an object without a
/// `type` reads as [`WatchEvent::Ready`]. A client must revalidate (re-query) after every
/// (re)connect, since events are notifications, not a log.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
            // Agenta's `ready` frame is `data: {}`.
            None => "ready".to_string(),
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

#[cfg(feature = "schema")]
impl schemars::JsonSchema for WatchEvent {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "WatchEvent".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let status = generator.subschema_for::<InteractionStatus>();
        let state = generator.subschema_for::<LifecycleState>();
        schemars::json_schema!({
            "oneOf": [
                {
                    "description": "The stream is live (sent first). Agenta sends `{}`.",
                    "type": "object",
                    "properties": {
                        "type": {"const": "ready"},
                        "session_id": {"type": ["string", "null"]}
                    }
                },
                {
                    "description": "An interaction of the session changed status.",
                    "type": "object",
                    "properties": {
                        "type": {"const": "interaction"},
                        "session_id": {"type": "string"},
                        "status": status,
                        "interaction_id": {"type": "string"}
                    },
                    "required": ["type", "session_id", "status"]
                },
                {
                    "description": "The session's records (transcript) changed.",
                    "type": "object",
                    "properties": {
                        "type": {"const": "records-changed"},
                        "session_id": {"type": "string"}
                    },
                    "required": ["type", "session_id"]
                },
                {
                    "description": "A turn started or ended.",
                    "type": "object",
                    "properties": {
                        "type": {"const": "lifecycle"},
                        "session_id": {"type": "string"},
                        "state": state
                    },
                    "required": ["type", "session_id", "state"]
                }
            ]
        })
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
