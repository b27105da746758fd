//! The `/run` request itself: which harness runs where (`harness`, `sandbox`,
//! `harnessMode`, `sandboxPermission`, `harnessFiles`), the 26-key [`RunRequest`] and its
//! builder, and the ways a request can break the contract ([`RunRequestProblem`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    ChatMessage, Connection, McpServerConfig, ModelCapabilities, ModelConnection, Permissions,
    RequestContext, ResolvedToolSpec, RunContext, Telemetry, ToolCallback, WireSkill,
};
use crate::json::{non_empty_object, null_as_default, required_nullable, Nullable};
use crate::JsonObject;

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
