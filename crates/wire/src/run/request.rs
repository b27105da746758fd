//! The `/run` request itself: which harness runs where (`harness`, `sandbox`,
//! `harnessMode`, `sandboxPermission`, `harnessFiles`), the [`RunRequest`] (every key
//! Agenta's SDK writes, in its order) and its builder, and the ways a request can depart
//! from the contract ([`RunRequestProblem`]).

use serde::{Deserialize, Serialize};

use super::{
    ChatMessage, Connection, GatewayPolicy, McpServerConfig, ModelCapabilities, ModelConnection,
    Permissions, RequestContext, ResolvedToolSpec, RunContext, SandboxCredential, Telemetry,
    ToolCallback, WireSkill,
};
#[cfg(feature = "schema")]
use crate::json::Nullable;
use crate::json::{non_empty_object, open_enum, present_or_null, required_nullable};
use crate::JsonObject;

open_enum! {
    /// Which agent harness the runner starts (`harness`). `pi_agenta` is Agenta main's Pi
    /// build; `mock` (0.125.1) runs no real agent and omits the tool fields.
    pub enum Harness {
        /// Pi, core build.
        PiCore = "pi_core",
        /// Pi, Agenta build (Agenta main).
        PiAgenta = "pi_agenta",
        /// Claude Code.
        Claude = "claude",
        /// OpenAI Codex (the only harness that takes a `harnessMode`).
        Codex = "codex",
        /// Agenta's deterministic test harness: no tools, no network.
        Mock = "mock",
    }
}

open_enum! {
    /// Where the harness runs (`sandbox`).
    pub enum Sandbox {
        /// On the runner host.
        Local = "local",
        /// In a Daytona sandbox.
        Daytona = "daytona",
    }
}

open_enum! {
    /// Codex's approval/sandbox mode (`harnessMode`; codex only). Absent means the runner's
    /// default, `agent-full-access`.
    pub enum HarnessMode {
        /// `agent`: asks before writes outside the workspace.
        Agent = "agent",
        /// `read-only`.
        ReadOnly = "read-only",
        /// `agent-full-access` (the codex default).
        AgentFullAccess = "agent-full-access",
    }
}

open_enum! {
    /// Outbound network mode of the sandbox.
    pub enum NetworkMode {
        /// Open network.
        On = "on",
        /// No network.
        Off = "off",
        /// Only the allowlisted hosts.
        Allowlist = "allowlist",
    }
}

open_enum! {
    /// Filesystem access of the sandbox.
    pub enum FilesystemMode {
        /// Read-write.
        On = "on",
        /// Read-only.
        Readonly = "readonly",
        /// No filesystem.
        Off = "off",
    }
}

open_enum! {
    /// How hard the sandbox boundary is enforced.
    pub enum Enforcement {
        /// Fail the run when the boundary cannot be enforced.
        Strict = "strict",
        /// Enforce what the sandbox can.
        BestEffort = "best_effort",
    }
}

/// `sandboxPermission.network`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SandboxPermission {
    /// Outbound network policy.
    pub network: NetworkEgress,
    /// Filesystem access, when declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "FilesystemMode"))]
    pub filesystem: Option<FilesystemMode>,
    /// Enforcement level.
    pub enforcement: Enforcement,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `harnessFiles[]`: a file the harness config renders into the session directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HarnessFile {
    /// Path relative to the session directory.
    pub path: String,
    /// File content.
    pub content: String,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `/run` request (A1): every key Agenta's SDK writes (0.125.1 and main), in its emission
/// order, then unknown keys.
///
/// - always written (`null` when unset): `harness`, `sandbox`, `sessionId`, `agentsMd`,
///   `model`, `messages`, `context`, `telemetry`;
/// - written for every harness but `mock`: `tools`, `customTools`, `toolCallback` (`null`
///   when unset), `permissions`;
/// - written when set: `systemPrompt`, `appendSystemPrompt`, `platformInstructions`,
///   `sandboxPermission`, `connection`, `modelCapabilities`, `modelConnection`,
///   `harnessMode`, `gatewayPolicy`, `runContext`, `turnContext`, `turnId`, `detached`,
///   `projectId`, `controlCommandId`, `effectiveParameters`;
/// - written when non-empty: `mcpServers`, `skills`, `sandboxCredentials`, `harnessFiles`,
///   `permissions.rules`.
///
/// A tolerant reader: `null` reads as absent for an optional key, an empty list is kept as
/// written (`[]` and absent hash differently in the fingerprint), an enum value this version
/// does not know is kept. [`RunRequest::problems`] says where a document departs from the
/// contract; the JSON Schema refuses those documents.
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", schemars(extend("allOf" = [
    {
        "if": {"properties": {"harness": {"const": "mock"}}},
        "else": {"required": ["tools", "customTools", "toolCallback", "permissions"]}
    },
    {
        "if": {"properties": {"harness": {"const": "codex"}}},
        "else": {"not": {"required": ["harnessMode"]}}
    },
    {
        "if": {"required": ["effectiveParameters"]},
        "then": {"properties": {"sessionId": {"type": "string", "minLength": 1}}}
    }
])))]
pub struct RunRequest {
    /// The harness.
    pub harness: Harness,
    /// The sandbox.
    pub sandbox: Sandbox,
    /// The agent session (`null` on a non-session run).
    #[serde(deserialize_with = "required_nullable")]
    #[cfg_attr(feature = "schema", schemars(required, with = "Nullable<String>"))]
    pub session_id: Option<String>,
    /// The AGENTS.md text (the agent's instructions).
    #[serde(deserialize_with = "required_nullable")]
    #[cfg_attr(feature = "schema", schemars(required, with = "Nullable<String>"))]
    pub agents_md: Option<String>,
    /// The model id.
    #[serde(deserialize_with = "required_nullable")]
    #[cfg_attr(feature = "schema", schemars(required, with = "Nullable<String>"))]
    pub model: Option<String>,
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// Trace propagation.
    #[serde(deserialize_with = "required_nullable")]
    #[cfg_attr(
        feature = "schema",
        schemars(required, with = "Nullable<RequestContext>")
    )]
    pub context: Option<RequestContext>,
    /// Telemetry export config.
    #[serde(deserialize_with = "required_nullable")]
    #[cfg_attr(feature = "schema", schemars(required, with = "Nullable<Telemetry>"))]
    pub telemetry: Option<Telemetry>,
    /// Built-in tool names (deprecated, still written; absent on `mock`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Vec<String>"))]
    pub tools: Option<Vec<String>>,
    /// Resolved custom tools (absent on `mock`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Vec<ResolvedToolSpec>"))]
    pub custom_tools: Option<Vec<ResolvedToolSpec>>,
    /// The callback gateway: `null` when unset, absent on `mock`. (In Rust: `None` is
    /// absent, `Some(None)` is `null`.)
    #[serde(
        default,
        deserialize_with = "present_or_null",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Nullable<ToolCallback>"))]
    pub tool_callback: Option<Option<ToolCallback>>,
    /// Permission policy (absent on `mock`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Permissions"))]
    pub permissions: Option<Permissions>,
    /// System prompt override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub system_prompt: Option<String>,
    /// Text appended to the system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub append_system_prompt: Option<String>,
    /// Agenta-owned guidance the runner delivers through the harness's own channel
    /// (0.125.1; not hashed into the fingerprint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub platform_instructions: Option<String>,
    /// MCP servers (written when non-empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Vec<McpServerConfig>", extend("minItems" = 1)))]
    pub mcp_servers: Option<Vec<McpServerConfig>>,
    /// Skills (written when non-empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Vec<WireSkill>", extend("minItems" = 1)))]
    pub skills: Option<Vec<WireSkill>>,
    /// The sandbox boundary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "SandboxPermission"))]
    pub sandbox_permission: Option<SandboxPermission>,
    /// Credentials delivered to the sandbox environment (0.125.1; written when non-empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Vec<SandboxCredential>", extend("minItems" = 1)))]
    pub sandbox_credentials: Option<Vec<SandboxCredential>>,
    /// The author's connection choice (not written for the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Connection"))]
    pub connection: Option<Connection>,
    /// Model capabilities, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "ModelCapabilities"))]
    pub model_capabilities: Option<ModelCapabilities>,
    /// Resolved model connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "ModelConnection"))]
    pub model_connection: Option<ModelConnection>,
    /// Codex mode (codex only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "HarnessMode"))]
    pub harness_mode: Option<HarnessMode>,
    /// Rendered harness config files (written when non-empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Vec<HarnessFile>", extend("minItems" = 1)))]
    pub harness_files: Option<Vec<HarnessFile>>,
    /// The compiled gateway policy (0.125.1; written when the agent has gateway connections).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "GatewayPolicy"))]
    pub gateway_policy: Option<GatewayPolicy>,
    /// The run's own context (inner keys snake_case; written when non-empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "RunContext"))]
    pub run_context: Option<RunContext>,
    /// SDK-rendered context for this turn's prompt (0.125.1; not hashed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub turn_context: Option<String>,
    /// The turn id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub turn_id: Option<String>,
    /// A session-owned (detached) turn (0.125.1; written only as `true`, on a session run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "bool"))]
    pub detached: Option<bool>,
    /// The project id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub project_id: Option<String>,
    /// The durable continuation command that caused this run (0.125.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub control_command_id: Option<String>,
    /// `effectiveParameters`, the turn's effective config: the agent config this
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
    #[cfg_attr(feature = "schema", schemars(with = "JsonObject", extend("minProperties" = 1)))]
    pub effective_parameters: Option<JsonObject>,
    /// Fields this version does not know, kept for round trips (written last).
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A way a [`RunRequest`] departs from the contract (see [`RunRequest::problems`]). The
/// type reads such a request (a tolerant reader); the JSON Schema refuses it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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
    /// A harness other than `mock` lacks one of `tools`, `customTools`, `toolCallback`,
    /// `permissions`.
    MissingToolField {
        /// The missing key.
        key: &'static str,
    },
    /// A list written only when non-empty is empty (`mcpServers`, `skills`,
    /// `sandboxCredentials`, `harnessFiles`, `permissions.rules`).
    EmptyList {
        /// The key.
        key: &'static str,
    },
    /// `runContext` (or one of its parts) is written but empty.
    EmptyRunContext,
    /// A value outside the contract's list (kept as read).
    UnknownValue {
        /// The key, e.g. `harness`.
        key: &'static str,
        /// The value.
        value: String,
    },
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
            Self::MissingToolField { key } => {
                write!(f, "`{key}` is written for every harness but mock")
            }
            Self::EmptyList { key } => {
                write!(f, "`{key}` must be omitted rather than empty")
            }
            Self::EmptyRunContext => f.write_str("`runContext` must be omitted rather than empty"),
            Self::UnknownValue { key, value } => {
                write!(f, "`{key}` value {value:?} is not one the contract lists")
            }
        }
    }
}

impl RunRequest {
    /// A request with the always-written keys set: no session, no context, no telemetry,
    /// no tools, no callback, permissions `allow_reads` (none of the tool keys on `mock`).
    pub fn new(
        harness: Harness,
        sandbox: Sandbox,
        model: impl Into<String>,
        messages: Vec<ChatMessage>,
    ) -> Self {
        let tool_keys = harness != Harness::Mock;
        Self {
            harness,
            sandbox,
            session_id: None,
            agents_md: None,
            model: Some(model.into()),
            messages,
            context: None,
            telemetry: None,
            tools: tool_keys.then(Vec::new),
            custom_tools: tool_keys.then(Vec::new),
            tool_callback: tool_keys.then_some(None),
            permissions: tool_keys.then(Permissions::default),
            system_prompt: None,
            append_system_prompt: None,
            platform_instructions: None,
            mcp_servers: None,
            skills: None,
            sandbox_permission: None,
            sandbox_credentials: None,
            connection: None,
            model_capabilities: None,
            model_connection: None,
            harness_mode: None,
            harness_files: None,
            gateway_policy: None,
            run_context: None,
            turn_context: None,
            turn_id: None,
            detached: None,
            project_id: None,
            control_command_id: None,
            effective_parameters: None,
            extra: JsonObject::new(),
        }
    }

    /// The permission policy the runner applies: `permissions`, or Agenta's default
    /// (`allow_reads`, no rules) when the request carries none (`mock`).
    pub fn effective_permissions(&self) -> Permissions {
        self.permissions.clone().unwrap_or_default()
    }

    /// The callback gateway, when one is set.
    pub fn callback(&self) -> Option<&ToolCallback> {
        self.tool_callback.as_ref().and_then(Option::as_ref)
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
        self,
        params: serde_json::Value,
        policy: &crate::effective::StampPolicy,
    ) -> (Self, crate::effective::StampOutcome) {
        self.set_stamp(|| crate::effective::stamp_effective_parameters(params, policy))
    }

    /// Set `effectiveParameters` to the stamp `stamp` makes, on a session run only (the key
    /// is removed otherwise, and when nothing is stamped); says what happened.
    fn set_stamp(
        mut self,
        stamp: impl FnOnce() -> Result<crate::effective::Stamped, crate::effective::NotStamped>,
    ) -> (Self, crate::effective::StampOutcome) {
        use crate::effective::StampOutcome;
        self.effective_parameters = None;
        if !self.is_session_run() {
            return (self, StampOutcome::NoSession);
        }
        match stamp() {
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

    /// A session run stamped from a config read with its measure
    /// ([`crate::effective::MeasuredConfig`]): the same request and outcome as
    /// [`RunRequest::for_session`] of its object, without walking the parts the redaction
    /// leaves whole. The config is only read; the stamp on the request is a redacted copy.
    pub fn for_session_measured(
        self,
        session_id: impl Into<String>,
        config: &crate::effective::MeasuredConfig,
        policy: &crate::effective::StampPolicy,
    ) -> (Self, crate::effective::StampOutcome) {
        self.with_session_id(Some(session_id.into())).set_stamp(|| {
            crate::effective::stamp_measured(config, policy).map(|view| view.to_stamped())
        })
    }

    /// The `/run` body of this request with `stamp` as its `effectiveParameters`, written
    /// straight from the caller's config (nothing copied): the bytes a service sends.
    /// The stamp goes only on a session run (a non-empty `sessionId`), as
    /// [`with_effective_parameters`](Self::with_effective_parameters) decides; a request
    /// that already holds `effectiveParameters` keeps its own.
    ///
    /// ```
    /// use gatehouse_wire::effective::{stamp_borrowed, StampPolicy};
    /// use gatehouse_wire::run::{ChatMessage, Harness, RunRequest, Sandbox};
    /// let config = serde_json::json!({"agent": {"llm": {"model": "m"}}});
    /// let stamp = stamp_borrowed(config.as_object().unwrap(), &StampPolicy::default()).unwrap();
    /// let request = RunRequest::new(Harness::PiCore, Sandbox::Local, "m", vec![ChatMessage::text("user", "hi")])
    ///     .with_session_id(Some("s-1".into()));
    /// let bytes = request.to_json_with_stamp(&stamp).unwrap();
    /// let back: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    /// assert_eq!(back["effectiveParameters"], config);
    /// ```
    pub fn to_json_with_stamp(
        &self,
        stamp: &crate::effective::StampedView<'_>,
    ) -> Result<Vec<u8>, serde_json::Error> {
        let session_run = self.session_id.as_deref().is_some_and(|s| !s.is_empty());
        let mut bytes = serde_json::to_vec(self)?;
        if !session_run || self.effective_parameters.is_some() {
            return Ok(bytes);
        }
        if !self.extra.is_empty() {
            // Unknown keys are written after `effectiveParameters`: place it through an
            // owned copy.
            let mut owned = self.clone();
            owned.effective_parameters = Some(stamp.to_object());
            return serde_json::to_vec(&owned);
        }
        // `effectiveParameters` is the last key: splice it in before the closing brace.
        if bytes.pop() != Some(b'}') {
            return serde_json::to_vec(self);
        }
        bytes.extend_from_slice(b",\"effectiveParameters\":");
        serde_json::to_writer(&mut bytes, stamp)?;
        bytes.push(b'}');
        Ok(bytes)
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
        self.tools = Some(tools);
        self
    }

    /// Set `customTools`.
    pub fn with_custom_tools(mut self, tools: Vec<ResolvedToolSpec>) -> Self {
        self.custom_tools = Some(tools);
        self
    }

    /// Set `toolCallback`.
    pub fn with_tool_callback(mut self, callback: ToolCallback) -> Self {
        self.tool_callback = Some(Some(callback));
        self
    }

    /// Set `permissions`.
    pub fn with_permissions(mut self, permissions: Permissions) -> Self {
        self.permissions = Some(permissions);
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

    /// Set `mcpServers` (an empty list is not written).
    pub fn with_mcp_servers(mut self, servers: Vec<McpServerConfig>) -> Self {
        self.mcp_servers = (!servers.is_empty()).then_some(servers);
        self
    }

    /// Set `skills` (an empty list is not written).
    pub fn with_skills(mut self, skills: Vec<WireSkill>) -> Self {
        self.skills = (!skills.is_empty()).then_some(skills);
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

    /// Set `harnessFiles` (an empty list is not written).
    pub fn with_harness_files(mut self, files: Vec<HarnessFile>) -> Self {
        self.harness_files = (!files.is_empty()).then_some(files);
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

    /// Every way this request departs from the contract; empty when it is well-formed.
    pub fn problems(&self) -> Vec<RunRequestProblem> {
        let mut problems = Vec::new();
        let mut unknown = |key: &'static str, known: bool, value: &str| {
            if !known {
                problems.push(RunRequestProblem::UnknownValue {
                    key,
                    value: value.to_string(),
                });
            }
        };
        unknown("harness", self.harness.is_known(), self.harness.as_str());
        unknown("sandbox", self.sandbox.is_known(), self.sandbox.as_str());
        if let Some(mode) = &self.harness_mode {
            unknown("harnessMode", mode.is_known(), mode.as_str());
        }
        if let Some(permissions) = &self.permissions {
            unknown(
                "permissions.default",
                permissions.default.is_known(),
                permissions.default.as_str(),
            );
        }
        for tool in self.custom_tools.iter().flatten() {
            if tool.call.is_some() && tool.call_ref.is_some() {
                problems.push(RunRequestProblem::CallAndCallRef {
                    tool: tool.name.clone(),
                });
            }
        }
        if self.harness_mode.is_some() && self.harness != Harness::Codex {
            problems.push(RunRequestProblem::HarnessModeWithoutCodex);
        }
        if self.harness != Harness::Mock {
            let present = [
                ("tools", self.tools.is_some()),
                ("customTools", self.custom_tools.is_some()),
                ("toolCallback", self.tool_callback.is_some()),
                ("permissions", self.permissions.is_some()),
            ];
            for (key, present) in present {
                if !present {
                    problems.push(RunRequestProblem::MissingToolField { key });
                }
            }
        }
        let empty_lists = [
            (
                "mcpServers",
                self.mcp_servers.as_ref().is_some_and(Vec::is_empty),
            ),
            ("skills", self.skills.as_ref().is_some_and(Vec::is_empty)),
            (
                "sandboxCredentials",
                self.sandbox_credentials.as_ref().is_some_and(Vec::is_empty),
            ),
            (
                "harnessFiles",
                self.harness_files.as_ref().is_some_and(Vec::is_empty),
            ),
            (
                "permissions.rules",
                self.permissions
                    .as_ref()
                    .and_then(|p| p.rules.as_ref())
                    .is_some_and(Vec::is_empty),
            ),
        ];
        for (key, empty) in empty_lists {
            if empty {
                problems.push(RunRequestProblem::EmptyList { key });
            }
        }
        if self
            .run_context
            .as_ref()
            .is_some_and(RunContext::has_empty_part)
        {
            problems.push(RunRequestProblem::EmptyRunContext);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effective::{MeasuredConfig, StampOutcome, StampPolicy};
    use crate::run::{Harness, Sandbox};

    fn request() -> RunRequest {
        RunRequest::new(
            Harness::PiCore,
            Sandbox::Local,
            "m",
            vec![ChatMessage::text("user", "hi")],
        )
    }

    /// The measured stamp puts the same `effectiveParameters` on the request, and says the
    /// same, as the stamp of the config's object.
    #[test]
    fn a_measured_config_stamps_the_request_as_its_object_does() {
        let policy = StampPolicy::default();
        for text in [
            r#"{"agent": {"mcps": [{"name": "n", "connection": {"url": "https://h/?token=1", "headers": {"a": "b"}}}], "llm": {"api_key": "k", "model": "m"}}}"#,
            r#"{"agent": {"instructions": "be brief", "tools": [{"name": "t", "inputSchema": {"properties": {"token": {}}}}]}}"#,
            r#"{}"#,
        ] {
            let config = MeasuredConfig::from_json(text).unwrap();
            let (measured, measured_outcome) =
                request().for_session_measured("s", &config, &policy);
            let (walked, walked_outcome) = request().for_session(
                "s",
                serde_json::Value::Object(config.object().clone()),
                &policy,
            );
            assert_eq!(measured_outcome, walked_outcome, "{text}");
            assert_eq!(measured, walked, "{text}");
        }
        let config = MeasuredConfig::from_json(r#"{"a": 1}"#).unwrap();
        let (unstamped, outcome) = request().for_session_measured("", &config, &policy);
        assert_eq!(outcome, StampOutcome::NoSession);
        assert!(unstamped.effective_parameters.is_none());
    }
}
