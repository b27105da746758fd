//! What the agent may call and how: the permission policy (`permissions`), resolved
//! custom tools (`customTools`) and their callback gateway (`toolCallback`), MCP
//! servers (`mcpServers`) and skills (`skills`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::StringMap;
use crate::json::null_as_default;
use crate::JsonObject;

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
