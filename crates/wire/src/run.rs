//! The `/run` wire (CONTRACT.md A1): the request the SDK sends a runner, the runner's
//! result, and the NDJSON stream records.
//!
//! Key order matters (byte-level parity with Agenta's goldens): struct fields are
//! declared in emission order, and unknown keys (kept in `extra`) are written last.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::JsonObject;

/// The content of a chat message: plain text or a list of blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum MessageContent {
    /// Plain text.
    Text(String),
    /// Content blocks.
    Blocks(Vec<ContentBlock>),
}

/// One chat message: `{role, content}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChatMessage {
    /// `user`, `assistant`, `system` or `tool`.
    pub role: String,
    /// Text or blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<MessageContent>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ChatMessage {
    /// A message with plain text content.
    pub fn text(role: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: Some(MessageContent::Text(text.into())),
            extra: JsonObject::new(),
        }
    }
}

/// The kinds of content block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContentBlockType {
    /// Text.
    Text,
    /// An inline image.
    Image,
    /// A resource by URI.
    Resource,
    /// An uploaded attachment.
    Attachment,
    /// A tool call the assistant made.
    ToolCall,
    /// The result of a tool call.
    ToolResult,
}

/// One content block. Which fields are set depends on `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContentBlock {
    /// The block kind.
    #[serde(rename = "type")]
    pub block_type: ContentBlockType,
    /// Text (text blocks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64 data (images).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Resource URI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// Attachment id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachment_id: Option<String>,
    /// Attachment file name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// Attachment size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Tool call id (tool_call / tool_result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Tool name (tool_call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// Tool input (tool_call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<serde_json::Value>,
    /// Tool output (tool_result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<serde_json::Value>,
    /// The tool failed (tool_result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ContentBlock {
    /// A block of `block_type` with every optional field unset.
    pub fn empty(block_type: ContentBlockType) -> Self {
        Self {
            block_type,
            text: None,
            data: None,
            mime_type: None,
            uri: None,
            attachment_id: None,
            filename: None,
            size: None,
            tool_call_id: None,
            tool_name: None,
            input: None,
            output: None,
            is_error: None,
            extra: JsonObject::new(),
        }
    }
}

impl ContentBlock {
    /// A `text` block.
    ///
    /// ```
    /// use gatehouse_wire::run::ContentBlock;
    /// let block = ContentBlock::text_block("hi");
    /// assert_eq!(serde_json::to_string(&block).unwrap(), r#"{"type":"text","text":"hi"}"#);
    /// ```
    pub fn text_block(text: impl Into<String>) -> Self {
        let mut block = Self::empty(ContentBlockType::Text);
        block.text = Some(text.into());
        block
    }
}

/// A JSON object whose values are strings, in insertion order (headers, environment,
/// context bindings).
pub type StringMap = indexmap::IndexMap<String, String>;

/// Serde helpers shared by the wire types.
pub(crate) mod serde_helpers {
    use serde::{Deserialize, Deserializer};

    /// A key that must be present but may be `null` (serde treats a missing `Option`
    /// as `None` unless the field has a `deserialize_with`).
    pub fn required_nullable<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de>,
    {
        Option::<T>::deserialize(deserializer)
    }

    /// `null` reads as the default value (an empty list, for instance).
    pub fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de> + Default,
    {
        Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
    }

    /// An optional object that, when present, must have at least one key.
    pub fn non_empty_object<'de, D>(deserializer: D) -> Result<Option<crate::JsonObject>, D::Error>
    where
        D: Deserializer<'de>,
    {
        let value = Option::<crate::JsonObject>::deserialize(deserializer)?;
        match value {
            Some(map) if map.is_empty() => Err(serde::de::Error::custom(
                "must be a non-empty object when present (an empty stamp is omitted, never sent)",
            )),
            other => Ok(other),
        }
    }
}

use serde_helpers::{non_empty_object, null_as_default, required_nullable};

/// Schema-only marker: a key that is required but may be `null` (`anyOf [T, null]`).
/// schemars' `required` alone would drop the `null`.
struct Nullable<T>(std::marker::PhantomData<T>);

impl<T: JsonSchema> JsonSchema for Nullable<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Nullable_{}", T::schema_name()).into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Option<T> as JsonSchema>::json_schema(generator)
    }
}

// ---------------------------------------------------------------------------------------
// Enumerations
// ---------------------------------------------------------------------------------------

/// Which agent harness the runner starts (`harness`, A1 #1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Harness {
    /// Pi, core build.
    PiCore,
    /// Pi, Agenta build.
    PiAgenta,
    /// Claude Code.
    Claude,
    /// OpenAI Codex (the only harness that takes a `harnessMode`).
    Codex,
}

impl Harness {
    /// The snake_case wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PiCore => "pi_core",
            Self::PiAgenta => "pi_agenta",
            Self::Claude => "claude",
            Self::Codex => "codex",
        }
    }
}

/// Where the harness runs (`sandbox`, A1 #2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Sandbox {
    /// On the runner host.
    Local,
    /// In a Daytona sandbox.
    Daytona,
}

impl Sandbox {
    /// The snake_case wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Daytona => "daytona",
        }
    }
}

/// Codex's approval/sandbox mode (`harnessMode`, A1 #21; codex only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum HarnessMode {
    /// `agent`: asks before writes outside the workspace.
    #[serde(rename = "agent")]
    Agent,
    /// `read-only`.
    #[serde(rename = "read-only")]
    ReadOnly,
    /// `agent-full-access`.
    #[serde(rename = "agent-full-access")]
    AgentFullAccess,
}

impl HarnessMode {
    /// The wire spelling (`agent`, `read-only`, `agent-full-access`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Agent => "agent",
            Self::ReadOnly => "read-only",
            Self::AgentFullAccess => "agent-full-access",
        }
    }
}

/// The default tool permission policy (`permissions.default`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PermissionMode {
    /// Every tool runs.
    Allow,
    /// Every tool asks first.
    Ask,
    /// Every tool is refused.
    Deny,
    /// Read-only tools run, the rest ask (Agenta's default).
    #[default]
    AllowReads,
}

/// A permission a rule or a tool spec assigns: `allow`, `ask` or `deny`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RulePermission {
    /// Run without asking.
    Allow,
    /// Gate on a person's approval.
    Ask,
    /// Refuse.
    Deny,
}

/// The executor axis of a resolved tool (`kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Called back through the tool gateway (`callRef`) or directly (`call`).
    Callback,
    /// Code the runner executes (`runtime`, `code`, `env`).
    Code,
    /// Executed by the client application.
    Client,
    /// A harness built-in.
    Builtin,
}

/// HTTP method of a direct tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum HttpMethod {
    /// GET.
    Get,
    /// POST.
    Post,
    /// PUT.
    Put,
    /// DELETE.
    Delete,
}

// ---------------------------------------------------------------------------------------
// Nested request types
// ---------------------------------------------------------------------------------------

/// `context`: the run's per-call protocol context (W3C trace propagation).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RequestContext {
    /// The trace-propagation headers.
    pub propagation: Propagation,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `context.propagation`: both keys are always written, `null` when unset
/// (`"baggage": null` round-trips).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Propagation {
    /// W3C `traceparent`.
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(required, with = "Nullable<String>")]
    pub traceparent: Option<String>,
    /// W3C `baggage`.
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(required, with = "Nullable<String>")]
    pub baggage: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `telemetry`: where the run's spans go and whether content is captured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Telemetry {
    /// The capture policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture: Option<TelemetryCapture>,
    /// The exporters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exporters: Option<TelemetryExporters>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `telemetry.capture`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TelemetryCapture {
    /// `telemetry.capture.content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<CaptureContent>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `telemetry.capture.content`: whether message and tool content is put on spans.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CaptureContent {
    /// Capture content (Agenta's default is on).
    pub enabled: bool,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `telemetry.exporters`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TelemetryExporters {
    /// The OTLP exporter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otlp: Option<OtlpExporter>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `telemetry.exporters.otlp`: the traces endpoint and its `authorization` header.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OtlpExporter {
    /// OTLP/HTTP traces endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Headers (the credential rides `authorization`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<StringMap>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `toolCallback`: where callback (gateway) tools route their calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCallback {
    /// The gateway URL.
    pub endpoint: String,
    /// The `Authorization` header value for the gateway (a secret; not fingerprinted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `permissions`: the default policy and ordered rules.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Permissions {
    /// The default policy.
    pub default: PermissionMode,
    /// Rules, first match wins. Written only when non-empty.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(with = "Option<Vec<PermissionRule>>")]
    pub rules: Vec<PermissionRule>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One permission rule: `{"pattern": "Bash(npm run:*)", "permission": "allow"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PermissionRule {
    /// Tool pattern, e.g. `Read`, `Bash(npm run:*)`, `mcp__server__tool`.
    pub pattern: String,
    /// What the rule decides.
    pub permission: RulePermission,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `call`: the direct-call descriptor of a callback tool (instead of `callRef`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCall {
    /// HTTP method.
    pub method: HttpMethod,
    /// Absolute path from the platform origin, e.g. `/api/workflows/invoke`.
    pub path: String,
    /// Static, server-fixed body fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<JsonObject>,
    /// Dotted body path -> `$ctx.<key>` token filled from the run context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<StringMap>,
    /// Dotted body path where the model's arguments go (e.g. `data.inputs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_into: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `render`: how a client should display a tool's result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RenderHint {
    /// Render kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Component name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A resolved tool the runner hands the harness (`customTools[]`).
///
/// A callback tool carries `call` XOR `callRef`, never both (a document with both is
/// rejected on parse and by the schema).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("not" = {"required": ["call", "callRef"]}))]
pub struct ResolvedToolSpec {
    /// Tool name as the model sees it.
    pub name: String,
    /// Description for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the tool's arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<JsonObject>,
    /// The tool only reads (runs without asking under `allow_reads`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// Executor axis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ToolKind>,
    /// Gateway reference of a callback tool (XOR `call`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_ref: Option<String>,
    /// Direct-call descriptor of a callback tool (XOR `callRef`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<ToolCall>,
    /// Argument path -> `$ctx.<key>` token, filled server-side (callRef tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_bindings: Option<StringMap>,
    /// Call timeout in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Runtime of a code tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// Source of a code tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Environment of a code tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<StringMap>,
    /// Display hint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render: Option<RenderHint>,
    /// Per-tool permission, overriding the default policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<RulePermission>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The parse-side mirror of [`ResolvedToolSpec`], checked for `call` XOR `callRef`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResolvedToolSpecRepr {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    input_schema: Option<JsonObject>,
    #[serde(default)]
    read_only: Option<bool>,
    #[serde(default)]
    kind: Option<ToolKind>,
    #[serde(default)]
    call_ref: Option<String>,
    #[serde(default)]
    call: Option<ToolCall>,
    #[serde(default)]
    context_bindings: Option<StringMap>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    runtime: Option<String>,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    env: Option<StringMap>,
    #[serde(default)]
    render: Option<RenderHint>,
    #[serde(default)]
    permission: Option<RulePermission>,
    #[serde(flatten)]
    extra: JsonObject,
}

impl<'de> Deserialize<'de> for ResolvedToolSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let r = ResolvedToolSpecRepr::deserialize(deserializer)?;
        if r.call.is_some() && r.call_ref.is_some() {
            return Err(serde::de::Error::custom(format!(
                "tool `{}` carries both `call` and `callRef`; a tool has one or the other",
                r.name
            )));
        }
        Ok(Self {
            name: r.name,
            description: r.description,
            input_schema: r.input_schema,
            read_only: r.read_only,
            kind: r.kind,
            call_ref: r.call_ref,
            call: r.call,
            context_bindings: r.context_bindings,
            timeout_ms: r.timeout_ms,
            runtime: r.runtime,
            code: r.code,
            env: r.env,
            render: r.render,
            permission: r.permission,
            extra: r.extra,
        })
    }
}

impl ResolvedToolSpec {
    /// A tool with only a name.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: None,
            input_schema: None,
            read_only: None,
            kind: None,
            call_ref: None,
            call: None,
            context_bindings: None,
            timeout_ms: None,
            runtime: None,
            code: None,
            env: None,
            render: None,
            permission: None,
            extra: JsonObject::new(),
        }
    }
}

/// `mcpServers[]`: a resolved external HTTP MCP server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpServerConfig {
    /// Server name.
    pub name: String,
    /// How to reach it.
    pub connection: McpConnection,
    /// Tool policy for the server's tools (opaque).
    pub policy: JsonObject,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// How the runner reaches one MCP server. Public `headers` and secret `credentials`
/// stay separate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpConnection {
    /// Transport, e.g. `http`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub connection_type: Option<String>,
    /// Server URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Public (non-secret) headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<StringMap>,
    /// Secret header values, resolved for this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<Vec<McpCredential>>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One secret MCP header: `{binding: {kind: "header", name}, value, usage: "opaque_http"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpCredential {
    /// Which header carries it.
    pub binding: McpCredentialBinding,
    /// The secret value (never fingerprinted, never logged).
    pub value: String,
    /// Always `opaque_http`.
    pub usage: McpCredentialUsage,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `binding` of an MCP credential.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpCredentialBinding {
    /// Always `header`.
    pub kind: HeaderBindingKind,
    /// Header name.
    pub name: String,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The only MCP credential binding kind: `header`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HeaderBindingKind {
    /// An HTTP header.
    Header,
}

/// The only MCP credential usage: `opaque_http`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum McpCredentialUsage {
    /// Sent as-is over HTTP.
    OpaqueHttp,
}

/// `skills[]`: a resolved inline skill package.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireSkill {
    /// Skill name.
    pub name: String,
    /// When to use it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The SKILL.md body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Bundled files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<SkillFile>>,
    /// Only the user may invoke it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_model_invocation: Option<bool>,
    /// Bundled files may be executable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_executable_files: Option<bool>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One bundled file of a skill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SkillFile {
    /// Path relative to the skill folder.
    pub path: String,
    /// File content.
    pub content: String,
    /// Mark it executable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executable: Option<bool>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Outbound network mode of the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NetworkMode {
    /// Open network.
    On,
    /// No network.
    Off,
    /// Only the allowlisted hosts.
    Allowlist,
}

/// Filesystem access of the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FilesystemMode {
    /// Read-write.
    On,
    /// Read-only.
    Readonly,
    /// No filesystem.
    Off,
}

/// How hard the sandbox boundary is enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Enforcement {
    /// Fail the run when the boundary cannot be enforced.
    Strict,
    /// Enforce what the sandbox can.
    BestEffort,
}

/// `sandboxPermission.network`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NetworkEgress {
    /// Network mode.
    pub mode: NetworkMode,
    /// Allowed hosts (for `allowlist`).
    pub allowlist: Vec<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `sandboxPermission`: the declared sandbox security boundary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxPermission {
    /// Outbound network policy.
    pub network: NetworkEgress,
    /// Filesystem access, when declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filesystem: Option<FilesystemMode>,
    /// Enforcement level.
    pub enforcement: Enforcement,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Which connection the author chose.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionMode {
    /// An Agenta-managed connection (the default; with no slug it is not written).
    #[default]
    Agenta,
    /// The author's own connection.
    SelfManaged,
}

/// `connection`: the author's connection CHOICE (non-secret routing config). Written only
/// when it is not the default (`agenta` without a slug).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Connection {
    /// The mode.
    pub mode: ConnectionMode,
    /// A named connection's slug.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slug: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Connection {
    /// True for the project default (`agenta`, no slug, nothing else), which is not written.
    pub fn is_default(&self) -> bool {
        self.mode == ConnectionMode::Agenta && self.slug.is_none() && self.extra.is_empty()
    }
}

/// `modelCapabilities`: what the model accepts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelCapabilities {
    /// Input modalities, e.g. `["text", "image"]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_modalities: Option<Vec<String>>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// How the model's credentials are supplied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CredentialMode {
    /// Through environment variables (`credentials[].binding.kind = environment`).
    Env,
    /// The runtime already has them.
    RuntimeProvided,
    /// No credentials.
    None,
}

/// How a model client consumes a credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CredentialUsage {
    /// Passed as-is over HTTP.
    OpaqueHttp,
    /// Used locally (e.g. to sign).
    LocalUse,
}

/// The only model credential binding kind: `environment`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EnvironmentBindingKind {
    /// An environment variable.
    Environment,
}

/// Where a model credential is bound: `{"kind": "environment", "name": "OPENAI_API_KEY"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CredentialBinding {
    /// Always `environment`.
    pub kind: EnvironmentBindingKind,
    /// Variable name.
    pub name: String,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One model credential: binding, secret value, usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelCredential {
    /// Where it is bound.
    pub binding: CredentialBinding,
    /// The secret (never fingerprinted, never logged).
    pub value: String,
    /// How it is consumed.
    pub usage: CredentialUsage,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `modelConnection.endpoint`: non-secret connection config.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    /// API base URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// API version (Azure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Region (Bedrock, Vertex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Public headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<StringMap>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `modelConnection`: resolved model routing, environment and credentials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelConnection {
    /// Provider, e.g. `openai`.
    pub provider: String,
    /// Deployment, e.g. `direct`.
    pub deployment: String,
    /// How credentials are supplied.
    pub credential_mode: CredentialMode,
    /// The credentials (possibly empty).
    pub credentials: Vec<ModelCredential>,
    /// Non-secret endpoint config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<Endpoint>,
    /// Non-secret environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<StringMap>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `harnessFiles[]`: a file the harness config renders into the session directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HarnessFile {
    /// Path relative to the session directory.
    pub path: String,
    /// File content.
    pub content: String,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `runContext`: the run's own identity. INNER keys are snake_case (they are the
/// namespace `$ctx.<dotted.path>` tokens address).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunContext {
    /// The run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunContextRun>,
    /// The running workflow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<RunContextWorkflow>,
    /// The run's trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<RunContextTrace>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl RunContext {
    /// True when nothing is set (an empty run context is not written).
    pub fn is_empty(&self) -> bool {
        self.run.is_none()
            && self.workflow.is_none()
            && self.trace.is_none()
            && self.extra.is_empty()
    }
}

/// `runContext.run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunContextRun {
    /// Run kind, e.g. `test`, `playground`, `api`.
    pub kind: String,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `runContext.workflow`: artifact, variant, revision, draft flag.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunContextWorkflow {
    /// The workflow (artifact).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<RunContextReference>,
    /// The variant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<RunContextReference>,
    /// The revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<RunContextReference>,
    /// The run uses unsaved (draft) config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_draft: Option<bool>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `{id?, slug?, version?}` inside `runContext.workflow`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunContextReference {
    /// Id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Slug.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slug: Option<String>,
    /// Version (revisions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `runContext.trace`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunContextTrace {
    /// 32 hex characters.
    pub trace_id: String,
    /// 16 hex characters.
    pub span_id: String,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

// ---------------------------------------------------------------------------------------
// The request
// ---------------------------------------------------------------------------------------

/// The `/run` request (A1): 26 keys in Agenta's emission order, then unknown keys.
///
/// - always written (`null` when unset): `harness`, `sandbox`, `sessionId`, `agentsMd`,
///   `model`, `messages`, `context`, `telemetry`, `tools`, `customTools`, `toolCallback`,
///   `permissions`;
/// - written when set: `systemPrompt`, `appendSystemPrompt`, `sandboxPermission`,
///   `connection`, `modelCapabilities`, `modelConnection`, `harnessMode`, `runContext`,
///   `turnId`, `projectId`, `effectiveParameters`;
/// - written when non-empty: `mcpServers`, `skills`, `harnessFiles`, `permissions.rules`.
///
/// Build one with [`RunRequest::new`] and the `with_*` setters. A session run gets its
/// `effectiveParameters` from [`RunRequest::for_session`] (or
/// [`RunRequest::with_effective_parameters`] after [`RunRequest::with_session_id`]);
/// a non-session run never carries the key.
///
/// ```
/// use gatehouse_wire::run::{ChatMessage, Harness, RunRequest, Sandbox};
/// use gatehouse_wire::effective::StampPolicy;
///
/// let params = serde_json::json!({"agent": {"llm": {"model": "m"}}});
/// let (request, outcome) = RunRequest::new(Harness::PiCore, Sandbox::Local, "m", vec![ChatMessage::text("user", "hi")])
///     .for_session("sess-1", params.clone(), &StampPolicy::default());
/// assert!(outcome.is_stamped());
/// assert_eq!(request.effective_parameters.unwrap()["agent"]["llm"]["model"], "m");
///
/// // Without a session, no key, whatever the parameters.
/// let (request, _) = RunRequest::new(Harness::Claude, Sandbox::Local, "m", vec![])
///     .with_effective_parameters(params, &StampPolicy::default());
/// assert!(!serde_json::to_string(&request).unwrap().contains("effectiveParameters"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunRequest {
    /// A1 #1: The harness.
    pub harness: Harness,
    /// A1 #2: The sandbox.
    pub sandbox: Sandbox,
    /// A1 #3: The agent session (`null` on a non-session run).
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(required, with = "Nullable<String>")]
    pub session_id: Option<String>,
    /// A1 #4: The AGENTS.md text (the agent's instructions).
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(required, with = "Nullable<String>")]
    pub agents_md: Option<String>,
    /// A1 #5: The model id.
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(required, with = "Nullable<String>")]
    pub model: Option<String>,
    /// A1 #6: The conversation.
    pub messages: Vec<ChatMessage>,
    /// A1 #7: Trace propagation.
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(required, with = "Nullable<RequestContext>")]
    pub context: Option<RequestContext>,
    /// A1 #8: Telemetry export config.
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(required, with = "Nullable<Telemetry>")]
    pub telemetry: Option<Telemetry>,
    /// A1 #9: Built-in tool names (deprecated, still written).
    pub tools: Vec<String>,
    /// A1 #10: Resolved custom tools.
    pub custom_tools: Vec<ResolvedToolSpec>,
    /// A1 #11: The callback gateway.
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(required, with = "Nullable<ToolCallback>")]
    pub tool_callback: Option<ToolCallback>,
    /// A1 #12: Permission policy.
    pub permissions: Permissions,
    /// A1 #13: System prompt override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// A1 #14: Text appended to the system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append_system_prompt: Option<String>,
    /// A1 #15: MCP servers (written when non-empty).
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(with = "Option<Vec<McpServerConfig>>")]
    pub mcp_servers: Vec<McpServerConfig>,
    /// A1 #16: Skills (written when non-empty).
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(with = "Option<Vec<WireSkill>>")]
    pub skills: Vec<WireSkill>,
    /// A1 #17: The sandbox boundary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_permission: Option<SandboxPermission>,
    /// A1 #18: The author's connection choice (not written for the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<Connection>,
    /// A1 #19: Model capabilities, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_capabilities: Option<ModelCapabilities>,
    /// A1 #20: Resolved model connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_connection: Option<ModelConnection>,
    /// A1 #21: Codex mode (codex only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness_mode: Option<HarnessMode>,
    /// A1 #22: Rendered harness config files (written when non-empty).
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(with = "Option<Vec<HarnessFile>>")]
    pub harness_files: Vec<HarnessFile>,
    /// A1 #23: The run's own context (inner keys snake_case).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_context: Option<RunContext>,
    /// A1 #24: The turn id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// A1 #25: The project id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// A1 #26: `effectiveParameters`, the turn's effective config: the agent config this
    /// turn actually runs under (after reference hydration, or the caller's inline config),
    /// with credential-shaped fields (`headers`, `authorization` on `mcps`/`tools` entries
    /// and their `connection`/`call`) stripped, and at most the stamp cap in size (64 KiB by
    /// default, measured as Python's `json.dumps`). Opaque to the runner, which echoes it
    /// verbatim onto the interaction row a gate writes (`data.parameters`) so a resume runs
    /// under the same config. Optional: present only on a session run (`sessionId` a
    /// non-empty string) whose stamp is a non-empty object within the cap; otherwise the
    /// key is absent (never `null`, never `{}`).
    #[serde(
        default,
        deserialize_with = "non_empty_object",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(extend("minProperties" = 1))]
    pub effective_parameters: Option<JsonObject>,
    /// Fields this version does not know, kept for round trips (written last).
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A way a [`RunRequest`] breaks the contract (see [`RunRequest::problems`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunRequestProblem {
    /// A custom tool carries both `call` and `callRef`.
    CallAndCallRef {
        /// The tool's name.
        tool: String,
    },
    /// `harnessMode` is set on a harness other than codex.
    HarnessModeWithoutCodex,
    /// `effectiveParameters` is set but `sessionId` is not a non-empty string.
    EffectiveParametersWithoutSession,
    /// `effectiveParameters` is an empty object.
    EmptyEffectiveParameters,
}

impl std::fmt::Display for RunRequestProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::CallAndCallRef { tool } => {
                write!(f, "tool `{tool}` carries both `call` and `callRef`")
            }
            Self::HarnessModeWithoutCodex => {
                f.write_str("`harnessMode` is only for the codex harness")
            }
            Self::EffectiveParametersWithoutSession => f.write_str(
                "`effectiveParameters` is only for a session run (non-empty `sessionId`)",
            ),
            Self::EmptyEffectiveParameters => {
                f.write_str("`effectiveParameters` must be omitted rather than empty")
            }
        }
    }
}

impl RunRequest {
    /// A request with the always-written keys set: no session, no context, no telemetry,
    /// no tools, no callback, permissions `allow_reads`.
    pub fn new(
        harness: Harness,
        sandbox: Sandbox,
        model: impl Into<String>,
        messages: Vec<ChatMessage>,
    ) -> Self {
        Self {
            harness,
            sandbox,
            session_id: None,
            agents_md: None,
            model: Some(model.into()),
            messages,
            context: None,
            telemetry: None,
            tools: Vec::new(),
            custom_tools: Vec::new(),
            tool_callback: None,
            permissions: Permissions::default(),
            system_prompt: None,
            append_system_prompt: None,
            mcp_servers: Vec::new(),
            skills: Vec::new(),
            sandbox_permission: None,
            connection: None,
            model_capabilities: None,
            model_connection: None,
            harness_mode: None,
            harness_files: Vec::new(),
            run_context: None,
            turn_id: None,
            project_id: None,
            effective_parameters: None,
            extra: JsonObject::new(),
        }
    }

    /// True when this is a session run (`sessionId` is a non-empty string).
    pub fn is_session_run(&self) -> bool {
        self.session_id.as_deref().is_some_and(|s| !s.is_empty())
    }

    /// Set `sessionId`. Clearing it (or setting it empty) also removes
    /// `effectiveParameters`, which only a session run may carry.
    pub fn with_session_id(mut self, session_id: Option<String>) -> Self {
        self.session_id = session_id;
        if !self.is_session_run() {
            self.effective_parameters = None;
        }
        self
    }

    /// Stamp `effectiveParameters` from the turn's config `params` (A2): redacted,
    /// measured, and set only when this is a session run and the stamp is a non-empty
    /// object within `policy.max_bytes`. In every other case the key is removed. The
    /// outcome says what happened (and which fields were stripped) so the caller can log it.
    ///
    /// `params` is consumed (see [`crate::effective::stamp_effective_parameters`]): the
    /// stamp is that object itself, redacted in place, never a copy. A caller that still
    /// needs the config afterwards passes a clone.
    pub fn with_effective_parameters(
        mut self,
        params: serde_json::Value,
        policy: &crate::effective::StampPolicy,
    ) -> (Self, crate::effective::StampOutcome) {
        use crate::effective::{stamp_effective_parameters, StampOutcome};
        self.effective_parameters = None;
        if !self.is_session_run() {
            return (self, StampOutcome::NoSession);
        }
        match stamp_effective_parameters(params, policy) {
            Ok(stamped) => {
                let outcome = StampOutcome::Stamped {
                    measured_bytes: stamped.measured_bytes,
                    stripped: stamped.stripped,
                };
                self.effective_parameters = Some(stamped.parameters);
                (self, outcome)
            }
            Err(reason) => (self, StampOutcome::NotStamped(reason)),
        }
    }

    /// A session run: set `sessionId` and stamp `effectiveParameters` in one step
    /// (`params` is consumed, as in [`RunRequest::with_effective_parameters`]).
    pub fn for_session(
        self,
        session_id: impl Into<String>,
        params: serde_json::Value,
        policy: &crate::effective::StampPolicy,
    ) -> (Self, crate::effective::StampOutcome) {
        self.with_session_id(Some(session_id.into()))
            .with_effective_parameters(params, policy)
    }

    /// Set `agentsMd`.
    pub fn with_agents_md(mut self, agents_md: impl Into<String>) -> Self {
        self.agents_md = Some(agents_md.into());
        self
    }

    /// Set `context` (trace propagation).
    pub fn with_context(mut self, context: RequestContext) -> Self {
        self.context = Some(context);
        self
    }

    /// Set `telemetry`.
    pub fn with_telemetry(mut self, telemetry: Telemetry) -> Self {
        self.telemetry = Some(telemetry);
        self
    }

    /// Set the deprecated built-in `tools` list.
    pub fn with_tools(mut self, tools: Vec<String>) -> Self {
        self.tools = tools;
        self
    }

    /// Set `customTools`.
    pub fn with_custom_tools(mut self, tools: Vec<ResolvedToolSpec>) -> Self {
        self.custom_tools = tools;
        self
    }

    /// Set `toolCallback`.
    pub fn with_tool_callback(mut self, callback: ToolCallback) -> Self {
        self.tool_callback = Some(callback);
        self
    }

    /// Set `permissions`.
    pub fn with_permissions(mut self, permissions: Permissions) -> Self {
        self.permissions = permissions;
        self
    }

    /// Set `systemPrompt`.
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Set `appendSystemPrompt`.
    pub fn with_append_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.append_system_prompt = Some(prompt.into());
        self
    }

    /// Set `mcpServers`.
    pub fn with_mcp_servers(mut self, servers: Vec<McpServerConfig>) -> Self {
        self.mcp_servers = servers;
        self
    }

    /// Set `skills`.
    pub fn with_skills(mut self, skills: Vec<WireSkill>) -> Self {
        self.skills = skills;
        self
    }

    /// Set `sandboxPermission`.
    pub fn with_sandbox_permission(mut self, permission: SandboxPermission) -> Self {
        self.sandbox_permission = Some(permission);
        self
    }

    /// Set `connection`; the default choice (`agenta`, no slug) is stored as `None`, so
    /// it is not written.
    pub fn with_connection(mut self, connection: Connection) -> Self {
        self.connection = (!connection.is_default()).then_some(connection);
        self
    }

    /// Set `modelCapabilities`.
    pub fn with_model_capabilities(mut self, capabilities: ModelCapabilities) -> Self {
        self.model_capabilities = Some(capabilities);
        self
    }

    /// Set `modelConnection`.
    pub fn with_model_connection(mut self, connection: ModelConnection) -> Self {
        self.model_connection = Some(connection);
        self
    }

    /// Set `harnessMode`. It belongs to codex only: on another harness the request
    /// reports [`RunRequestProblem::HarnessModeWithoutCodex`].
    pub fn with_harness_mode(mut self, mode: HarnessMode) -> Self {
        self.harness_mode = Some(mode);
        self
    }

    /// Set `harnessFiles`.
    pub fn with_harness_files(mut self, files: Vec<HarnessFile>) -> Self {
        self.harness_files = files;
        self
    }

    /// Set `runContext`; an empty one is stored as `None`, so it is not written.
    pub fn with_run_context(mut self, run_context: RunContext) -> Self {
        self.run_context = (!run_context.is_empty()).then_some(run_context);
        self
    }

    /// Set `turnId`.
    pub fn with_turn_id(mut self, turn_id: impl Into<String>) -> Self {
        self.turn_id = Some(turn_id.into());
        self
    }

    /// Set `projectId`.
    pub fn with_project_id(mut self, project_id: impl Into<String>) -> Self {
        self.project_id = Some(project_id.into());
        self
    }

    /// Every way this request breaks the contract; empty when it is well-formed.
    pub fn problems(&self) -> Vec<RunRequestProblem> {
        let mut problems = Vec::new();
        for tool in &self.custom_tools {
            if tool.call.is_some() && tool.call_ref.is_some() {
                problems.push(RunRequestProblem::CallAndCallRef {
                    tool: tool.name.clone(),
                });
            }
        }
        if self.harness_mode.is_some() && self.harness != Harness::Codex {
            problems.push(RunRequestProblem::HarnessModeWithoutCodex);
        }
        if let Some(params) = &self.effective_parameters {
            if !self.is_session_run() {
                problems.push(RunRequestProblem::EffectiveParametersWithoutSession);
            }
            if params.is_empty() {
                problems.push(RunRequestProblem::EmptyEffectiveParameters);
            }
        }
        problems
    }
}

// ---------------------------------------------------------------------------------------
// The result and the stream
// ---------------------------------------------------------------------------------------

/// One structured event of a run, kept verbatim (every field, in its order). Its `type`
/// is a non-empty string (`message`, `thought`, `tool_call`, `tool_result`,
/// `interaction_request`, `usage`, `error`, `done`, ...); other event types are kept,
/// not rejected. A typeless event inside a [`RunResult`] is dropped on parse.
#[derive(Debug, Clone, PartialEq)]
pub struct RunEvent {
    fields: JsonObject,
}

impl RunEvent {
    /// An event of `event_type` with `fields` after the `type` key (a `type` inside
    /// `fields` is ignored).
    pub fn new(event_type: impl Into<String>, fields: JsonObject) -> Self {
        let mut all = JsonObject::new();
        all.insert(
            "type".to_string(),
            serde_json::Value::String(event_type.into()),
        );
        for (key, value) in fields {
            if key != "type" {
                all.insert(key, value);
            }
        }
        Self { fields: all }
    }

    /// Wrap an object that has a non-empty string `type`; `None` otherwise.
    pub fn from_object(fields: JsonObject) -> Option<Self> {
        match fields.get("type") {
            Some(serde_json::Value::String(t)) if !t.is_empty() => Some(Self { fields }),
            _ => None,
        }
    }

    /// The event type.
    pub fn event_type(&self) -> &str {
        self.fields
            .get("type")
            .and_then(|v| v.as_str())
            .unwrap_or_default()
    }

    /// A field of the event.
    pub fn get(&self, key: &str) -> Option<&serde_json::Value> {
        self.fields.get(key)
    }

    /// Every field, `type` included, in wire order.
    pub fn fields(&self) -> &JsonObject {
        &self.fields
    }

    /// The event as its JSON object.
    pub fn into_object(self) -> JsonObject {
        self.fields
    }
}

impl Serialize for RunEvent {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.fields.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RunEvent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let fields = JsonObject::deserialize(deserializer)?;
        Self::from_object(fields)
            .ok_or_else(|| serde::de::Error::custom("a run event needs a non-empty string `type`"))
    }
}

impl JsonSchema for RunEvent {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RunEvent".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "One structured event of a run, keyed by `type` (message, thought, tool_call, tool_result, interaction_request, usage, error, done, ...). Every other field is kept verbatim.",
            "type": "object",
            "properties": {"type": {"type": "string", "minLength": 1}},
            "required": ["type"],
            "additionalProperties": true
        })
    }
}

/// `events` of a result: a typeless event is dropped, not rejected.
fn events_dropping_typeless<'de, D>(deserializer: D) -> Result<Option<Vec<RunEvent>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let Some(items) = Option::<Vec<JsonObject>>::deserialize(deserializer)? else {
        return Ok(None);
    };
    let mut events = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        match item.get("type") {
            None | Some(serde_json::Value::Null) => continue,
            Some(serde_json::Value::String(t)) if t.is_empty() => continue,
            Some(serde_json::Value::String(_)) => {}
            Some(other) => {
                return Err(serde::de::Error::custom(format!(
                    "events[{index}].type must be a string, got {other}"
                )))
            }
        }
        events.extend(RunEvent::from_object(item));
    }
    Ok(Some(events))
}

/// The schema of `RunResult.events`: objects whose `type`, when present, is a string
/// (a typeless event is accepted on the wire and dropped on parse).
fn result_events_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "description": "The run's events. An event without a `type` is dropped on parse (not rejected).",
        "type": ["array", "null"],
        "items": {
            "type": "object",
            "properties": {"type": {"type": ["string", "null"]}},
            "additionalProperties": true
        }
    })
}

/// `usage`: tokens and cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgentUsage {
    /// Input tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<u64>,
    /// Output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<u64>,
    /// Total tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Cost in USD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

fn yes() -> bool {
    true
}

/// `capabilities`: what the harness can do (the 11 flags; absent flags take Agenta's
/// defaults: `textMessages` true, the rest false).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HarnessCapabilities {
    /// Text messages.
    #[serde(default = "yes")]
    pub text_messages: bool,
    /// Image input.
    #[serde(default)]
    pub images: bool,
    /// File attachments.
    #[serde(default)]
    pub file_attachments: bool,
    /// MCP tools.
    #[serde(default)]
    pub mcp_tools: bool,
    /// Tool calls.
    #[serde(default)]
    pub tool_calls: bool,
    /// Reasoning output.
    #[serde(default)]
    pub reasoning: bool,
    /// Plan mode.
    #[serde(default)]
    pub plan_mode: bool,
    /// Permission gates.
    #[serde(default)]
    pub permissions: bool,
    /// Usage reporting.
    #[serde(default)]
    pub usage: bool,
    /// Streaming deltas.
    #[serde(default)]
    pub streaming_deltas: bool,
    /// Session lifecycle.
    #[serde(default)]
    pub session_lifecycle: bool,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Default for HarnessCapabilities {
    fn default() -> Self {
        Self {
            text_messages: true,
            images: false,
            file_attachments: false,
            mcp_tools: false,
            tool_calls: false,
            reasoning: false,
            plan_mode: false,
            permissions: false,
            usage: false,
            streaming_deltas: false,
            session_lifecycle: false,
            extra: JsonObject::new(),
        }
    }
}

/// The `/run` result. On failure `ok` is false and `error` a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    /// The run succeeded.
    pub ok: bool,
    /// Final output text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// The conversation after the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<ChatMessage>>,
    /// The run's events (typeless ones dropped on parse).
    #[serde(
        default,
        deserialize_with = "events_dropping_typeless",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(schema_with = "result_events_schema")]
    pub events: Option<Vec<RunEvent>>,
    /// Token usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<AgentUsage>,
    /// Why the model stopped, e.g. `end_turn`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Harness capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<HarnessCapabilities>,
    /// The session the run used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The model the run used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The run's trace id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// Failure message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl RunResult {
    /// A failed result: `{"ok": false, "error": message}`.
    pub fn failure(message: impl Into<String>) -> Self {
        Self {
            ok: false,
            output: None,
            messages: None,
            events: None,
            usage: None,
            stop_reason: None,
            capabilities: None,
            session_id: None,
            model: None,
            trace_id: None,
            error: Some(message.into()),
            extra: JsonObject::new(),
        }
    }

    /// A successful result with `output` and nothing else set.
    pub fn success(output: impl Into<String>) -> Self {
        let mut result = Self::failure(String::new());
        result.ok = true;
        result.error = None;
        result.output = Some(output.into());
        result
    }
}

/// One line of the NDJSON `/run` stream (`Accept: application/x-ndjson`): any number of
/// `{"kind":"event","event":{...}}` then exactly one `{"kind":"result","result":{...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunStreamRecord {
    /// A run event.
    Event {
        /// The event.
        event: RunEvent,
    },
    /// The final result (the last line).
    Result {
        /// The result (boxed: it is much larger than an event).
        result: Box<RunResult>,
    },
}

/// Decode the inner `event`/`result` value, naming its path in the error (serde's
/// internally tagged enums lose the path of the inner field).
fn stream_record_field<T, E>(record: &mut JsonObject, field: &str) -> Result<T, E>
where
    T: serde::de::DeserializeOwned,
    E: serde::de::Error,
{
    let value = record
        .remove(field)
        .ok_or_else(|| E::custom(format!("missing field `{field}`")))?;
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        let at = if path == "." {
            field.to_string()
        } else {
            format!("{field}.{path}")
        };
        E::custom(format!("at {at}: {}", err.into_inner()))
    })
}

impl<'de> Deserialize<'de> for RunStreamRecord {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut record = JsonObject::deserialize(deserializer)?;
        let kind = match record.get("kind") {
            Some(serde_json::Value::String(kind)) => kind.clone(),
            Some(other) => {
                return Err(serde::de::Error::custom(format!(
                    "`kind` must be \"event\" or \"result\", got {other}"
                )))
            }
            None => return Err(serde::de::Error::custom("missing field `kind`")),
        };
        match kind.as_str() {
            "event" => Ok(Self::Event {
                event: stream_record_field(&mut record, "event")?,
            }),
            "result" => Ok(Self::Result {
                result: stream_record_field(&mut record, "result")?,
            }),
            other => Err(serde::de::Error::custom(format!(
                "unknown `kind` \"{other}\", expected \"event\" or \"result\""
            ))),
        }
    }
}

impl RunStreamRecord {
    /// Parse one NDJSON line. A blank line, and an event without a `type` (dropped, as
    /// in a result), give `Ok(None)`.
    ///
    /// ```
    /// use gatehouse_wire::run::RunStreamRecord;
    /// let line = r#"{"kind":"event","event":{"type":"message","text":"hi"}}"#;
    /// assert!(matches!(RunStreamRecord::from_ndjson_line(line), Ok(Some(RunStreamRecord::Event { .. }))));
    /// assert!(RunStreamRecord::from_ndjson_line(r#"{"kind":"event","event":{"text":"x"}}"#).unwrap().is_none());
    /// ```
    pub fn from_ndjson_line(line: &str) -> Result<Option<Self>, crate::WireDecodeError> {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return Ok(None);
        }
        let value: serde_json::Value = crate::from_json_slice(trimmed.as_bytes())?;
        let typeless_event = value.get("kind").and_then(|k| k.as_str()) == Some("event")
            && value
                .get("event")
                .and_then(|e| e.as_object())
                .is_some_and(|e| RunEvent::from_object(e.clone()).is_none());
        if typeless_event {
            return Ok(None);
        }
        crate::from_json_value(value).map(Some)
    }

    /// The final-result record.
    pub fn result(result: RunResult) -> Self {
        Self::Result {
            result: Box::new(result),
        }
    }

    /// An event record.
    pub fn event(event: RunEvent) -> Self {
        Self::Event { event }
    }

    /// This record as one NDJSON line (no trailing newline).
    pub fn to_ndjson_line(&self) -> String {
        // Serializing these types cannot fail: every map key is a string.
        serde_json::to_string(self).unwrap_or_default()
    }
}
