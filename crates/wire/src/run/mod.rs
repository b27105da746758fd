//! The `/run` wire (CONTRACT.md A1): the request the SDK sends a runner, the runner's
//! result, and the NDJSON stream records.
//!
//! Key order matters (byte-level parity with Agenta's goldens): struct fields are
//! declared in emission order, and unknown keys (kept in `extra`) are written last.
//!
//! Every type is used from here (`gatehouse_wire::run::RunRequest`); the files group them:
//!
//! | file | what |
//! |---|---|
//! | `request.rs` | [`RunRequest`], its builder and [`RunRequestProblem`]; harness, sandbox, sandbox permission, harness files |
//! | `message.rs` | [`ChatMessage`] and its content blocks |
//! | `tools.rs` | permissions, custom tools, the callback gateway, MCP servers, skills |
//! | `model.rs` | the connection choice, model capabilities, the resolved model connection |
//! | `context.rs` | trace propagation, telemetry, the run's own `runContext` |
//! | `result.rs` | [`RunResult`], [`RunEvent`], [`RunStreamRecord`] |
//!
//! `request.rs` and `result.rs` use the others; the others use none of each other.

mod context;
mod message;
mod model;
mod request;
mod result;
mod tools;

pub use context::{
    CaptureContent, OtlpExporter, Propagation, RequestContext, RunContext, RunContextReference,
    RunContextRun, RunContextTrace, RunContextWorkflow, Telemetry, TelemetryCapture,
    TelemetryExporters,
};
pub use message::{ChatMessage, ContentBlock, ContentBlockType, MessageContent};
pub use model::{
    Connection, ConnectionMode, CredentialBinding, CredentialMode, CredentialUsage, Endpoint,
    EnvironmentBindingKind, ModelCapabilities, ModelConnection, ModelCredential, SandboxCredential,
};
pub use request::{
    Enforcement, FilesystemMode, Harness, HarnessFile, HarnessMode, NetworkEgress, NetworkMode,
    RunRequest, RunRequestProblem, Sandbox, SandboxPermission,
};
pub use result::{AgentUsage, HarnessCapabilities, RunEvent, RunResult, RunStreamRecord};
pub use tools::{
    GatewayIntegration, GatewayPolicy, GatewayTool, HeaderBindingKind, HttpMethod, McpConnection,
    McpCredential, McpCredentialBinding, McpCredentialUsage, McpServerConfig, PermissionMode,
    PermissionRule, Permissions, RenderHint, ResolvedToolSpec, RulePermission, SkillFile, ToolCall,
    ToolCallback, ToolKind, WireSkill,
};

/// A JSON object whose values are strings, in insertion order (headers, environment,
/// context bindings).
pub type StringMap = indexmap::IndexMap<String, String>;
