//! What the agent may call and how: the permission policy (`permissions`), resolved
//! custom tools (`customTools`) and their callback gateway (`toolCallback`), MCP
//! servers (`mcpServers`) and skills (`skills`).

use serde::{Deserialize, Serialize};

use super::StringMap;
#[cfg(feature = "schema")]
use crate::json::Nullable;
use crate::json::{open_enum, present_or_null};
use crate::JsonObject;

open_enum! {
    /// The default tool permission policy (`permissions.default`; Agenta's default is
    /// `allow_reads`).
    #[derive(Default)]
    pub enum PermissionMode {
        /// Every tool runs.
        Allow = "allow",
        /// Every tool asks first.
        Ask = "ask",
        /// Every tool is refused.
        Deny = "deny",
        /// Read-only tools run, the rest ask (Agenta's default).
        #[default]
        AllowReads = "allow_reads",
    }
}

open_enum! {
    /// A permission a rule or a tool spec assigns: `allow`, `ask` or `deny`.
    pub enum RulePermission {
        /// Run without asking.
        Allow = "allow",
        /// Gate on a person's approval.
        Ask = "ask",
        /// Refuse.
        Deny = "deny",
    }
}

open_enum! {
    /// The executor axis of a resolved tool (`kind`).
    pub enum ToolKind {
        /// Called back through the tool gateway (`callRef`) or directly (`call`).
        Callback = "callback",
        /// Code the runner executes (`runtime`, `code`, `env`).
        Code = "code",
        /// Executed by the client application.
        Client = "client",
        /// A harness built-in.
        Builtin = "builtin",
    }
}

open_enum! {
    /// HTTP method of a direct tool call.
    pub enum HttpMethod {
        /// GET.
        Get = "GET",
        /// POST.
        Post = "POST",
        /// PUT.
        Put = "PUT",
        /// DELETE.
        Delete = "DELETE",
    }
}

/// `toolCallback`: where callback (gateway) tools route their calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolCallback {
    /// The gateway URL.
    pub endpoint: String,
    /// The `Authorization` header value for the gateway (a secret; not fingerprinted).
    /// Agenta always writes the key, `null` when unset (`Some(None)`); absent is `None`.
    #[serde(
        default,
        deserialize_with = "present_or_null",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Nullable<String>"))]
    pub authorization: Option<Option<String>>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ToolCallback {
    /// A callback to `endpoint` with `authorization`, written as Agenta writes it (the key
    /// always present, `null` when unset).
    pub fn new(endpoint: impl Into<String>, authorization: Option<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            authorization: Some(authorization),
            extra: JsonObject::new(),
        }
    }

    /// The authorization value, when set.
    pub fn authorization(&self) -> Option<&str> {
        self.authorization.as_ref().and_then(Option::as_deref)
    }
}

/// `permissions`: the default policy and ordered rules.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Permissions {
    /// The default policy.
    pub default: PermissionMode,
    /// Rules, first match wins. Written only when non-empty (an empty list read is kept:
    /// `[]` and absent hash differently in the fingerprint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Vec<PermissionRule>", extend("minItems" = 1)))]
    pub rules: Option<Vec<PermissionRule>>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Permissions {
    /// The rules (none when absent).
    pub fn rules(&self) -> &[PermissionRule] {
        self.rules.as_deref().unwrap_or_default()
    }
}

/// One permission rule: `{"pattern": "Bash(npm run:*)", "permission": "allow"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolCall {
    /// HTTP method.
    pub method: HttpMethod,
    /// Absolute path from the platform origin, e.g. `/api/workflows/invoke`.
    pub path: String,
    /// Static, server-fixed body fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "JsonObject"))]
    pub body: Option<JsonObject>,
    /// Dotted body path -> `$ctx.<key>` token filled from the run context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "StringMap"))]
    pub context: Option<StringMap>,
    /// Dotted body path where the model's arguments go (e.g. `data.inputs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub args_into: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `render`: how a client should display a tool's result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RenderHint {
    /// Render kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub kind: Option<String>,
    /// Component name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub component: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A resolved tool the runner hands the harness (`customTools[]`), its keys in Agenta's
/// order (the spec's base fields, then the executor's).
///
/// A callback tool carries `call` XOR `callRef`, never both (a document with both is
/// rejected on parse and by the schema).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", schemars(extend("not" = {"required": ["call", "callRef"]})))]
pub struct ResolvedToolSpec {
    /// Tool name as the model sees it.
    pub name: String,
    /// Description for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub description: Option<String>,
    /// JSON Schema of the tool's arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "JsonObject"))]
    pub input_schema: Option<JsonObject>,
    /// Display hint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "RenderHint"))]
    pub render: Option<RenderHint>,
    /// The tool only reads (runs without asking under `allow_reads`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "bool"))]
    pub read_only: Option<bool>,
    /// Per-tool permission, overriding the default policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "RulePermission"))]
    pub permission: Option<RulePermission>,
    /// Executor axis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "ToolKind"))]
    pub kind: Option<ToolKind>,
    /// Gateway reference of a callback tool (XOR `call`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub call_ref: Option<String>,
    /// Direct-call descriptor of a callback tool (XOR `callRef`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "ToolCall"))]
    pub call: Option<ToolCall>,
    /// Argument path -> `$ctx.<key>` token, filled server-side (callRef tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "StringMap"))]
    pub context_bindings: Option<StringMap>,
    /// Call timeout in milliseconds (a whole number; `120000.0` reads as `120000`).
    #[serde(
        default,
        deserialize_with = "crate::json::optional_whole_u64",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "u64"))]
    pub timeout_ms: Option<u64>,
    /// Argument names the model may write that the call must not carry (0.125.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Vec<String>"))]
    pub ephemeral_args: Option<Vec<String>>,
    /// Runtime of a code tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub runtime: Option<String>,
    /// Source of a code tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub code: Option<String>,
    /// Environment of a code tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "StringMap"))]
    pub env: Option<StringMap>,
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
    render: Option<RenderHint>,
    #[serde(default)]
    read_only: Option<bool>,
    #[serde(default)]
    permission: Option<RulePermission>,
    #[serde(default)]
    kind: Option<ToolKind>,
    #[serde(default)]
    call_ref: Option<String>,
    #[serde(default)]
    call: Option<ToolCall>,
    #[serde(default)]
    context_bindings: Option<StringMap>,
    #[serde(default, deserialize_with = "crate::json::optional_whole_u64")]
    timeout_ms: Option<u64>,
    #[serde(default)]
    ephemeral_args: Option<Vec<String>>,
    #[serde(default)]
    runtime: Option<String>,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    env: Option<StringMap>,
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
            render: r.render,
            read_only: r.read_only,
            permission: r.permission,
            kind: r.kind,
            call_ref: r.call_ref,
            call: r.call,
            context_bindings: r.context_bindings,
            timeout_ms: r.timeout_ms,
            ephemeral_args: r.ephemeral_args,
            runtime: r.runtime,
            code: r.code,
            env: r.env,
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
            render: None,
            read_only: None,
            permission: None,
            kind: None,
            call_ref: None,
            call: None,
            context_bindings: None,
            timeout_ms: None,
            ephemeral_args: None,
            runtime: None,
            code: None,
            env: None,
            extra: JsonObject::new(),
        }
    }
}

/// `mcpServers[]`: a resolved external HTTP MCP server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct McpConnection {
    /// Transport, e.g. `http`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub connection_type: Option<String>,
    /// Server URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub url: Option<String>,
    /// Public (non-secret) headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "StringMap"))]
    pub headers: Option<StringMap>,
    /// Secret header values, resolved for this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Vec<McpCredential>"))]
    pub credentials: Option<Vec<McpCredential>>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One secret MCP header: `{binding: {kind: "header", name}, value, usage: "opaque_http"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct McpCredentialBinding {
    /// Always `header`.
    pub kind: HeaderBindingKind,
    /// Header name.
    pub name: String,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_enum! {
    /// The only MCP credential binding kind: `header`.
    pub enum HeaderBindingKind {
        /// An HTTP header.
        Header = "header",
    }
}

open_enum! {
    /// The only MCP credential usage: `opaque_http`.
    pub enum McpCredentialUsage {
        /// Sent as-is over HTTP.
        OpaqueHttp = "opaque_http",
    }
}

/// `skills[]`: a resolved inline skill package.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct WireSkill {
    /// Skill name.
    pub name: String,
    /// When to use it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub description: Option<String>,
    /// The SKILL.md body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub body: Option<String>,
    /// Bundled files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Vec<SkillFile>"))]
    pub files: Option<Vec<SkillFile>>,
    /// Only the user may invoke it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "bool"))]
    pub disable_model_invocation: Option<bool>,
    /// Bundled files may be executable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "bool"))]
    pub allow_executable_files: Option<bool>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One bundled file of a skill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SkillFile {
    /// Path relative to the skill folder.
    pub path: String,
    /// File content.
    pub content: String,
    /// Mark it executable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "bool"))]
    pub executable: Option<bool>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `gatewayPolicy` (0.125.1): the compiled per-tool decisions of the agent's gateway
/// connections, read only by the runner.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GatewayPolicy {
    /// Integration name -> its compiled policy.
    #[serde(default)]
    pub integrations: indexmap::IndexMap<String, GatewayIntegration>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One integration of a [`GatewayPolicy`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GatewayIntegration {
    /// The provider, e.g. `composio`.
    pub provider: String,
    /// The connection slug.
    pub connection: String,
    /// The concrete toolkit version.
    pub toolkit_version: String,
    /// Tool key -> its compiled decision.
    #[serde(default)]
    pub tools: indexmap::IndexMap<String, GatewayTool>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One compiled tool decision of a [`GatewayIntegration`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GatewayTool {
    /// What the tool may do.
    pub permission: RulePermission,
    /// Tri-state: `true` reads, `false` writes, `null` unknown (always written).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(required, with = "Nullable<bool>"))]
    pub read_only: Option<bool>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}
