//! Execution sessions and run interventions (CONTRACT.md B1-B3), AgentPlat's Rooms API.
//! Fields are camelCase; success bodies are wrapped in [`DataEnvelope`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::JsonObject;

/// The most interventions one session may hold (B3).
pub const MAX_INTERVENTIONS_PER_SESSION: usize = 256;
/// Default dispatch lease, milliseconds (B3).
pub const DEFAULT_LEASE_MS: u64 = 30_000;
/// Shortest allowed dispatch lease, milliseconds.
pub const MIN_LEASE_MS: u64 = 1;
/// Longest allowed dispatch lease, milliseconds.
pub const MAX_LEASE_MS: u64 = 300_000;
/// The SSE event name of the execution event stream.
pub const EVENT_STREAM_EVENT_NAME: &str = "agentplat.execution_session_event";

/// AgentPlat's success envelope: `{"data": ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DataEnvelope<T> {
    /// The payload.
    pub data: T,
}

/// Status of an execution session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionSessionStatus {
    /// The run is going.
    Active,
    /// The run is parked (e.g. at an approval gate).
    Paused,
    /// The run finished.
    Completed,
    /// The run failed.
    Failed,
    /// The run was cancelled (including by a `stop` intervention).
    Canceled,
}

impl ExecutionSessionStatus {
    /// True for completed, failed and canceled.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Canceled)
    }

    /// The snake_case wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Paused => "paused",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Canceled => "canceled",
        }
    }
}

/// Where in a run an intervention may be applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Checkpoint {
    /// Before the next inference step.
    PreStep,
    /// After model output, before continuation.
    PostOutput,
    /// Before a protected external action.
    PreAction,
}

impl Checkpoint {
    /// The snake_case wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PreStep => "pre_step",
            Self::PostOutput => "post_output",
            Self::PreAction => "pre_action",
        }
    }
}

/// Status of an intervention. `pending` means REQUESTED, nothing more: it is not
/// evidence that anything stopped or changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InterventionStatus {
    /// Requested, not yet claimed.
    Pending,
    /// Claimed by a dispatcher under a lease.
    Dispatching,
    /// Applied at its checkpoint (evidence: the `intervention_applied` event).
    Applied,
    /// Not applied, with a reason.
    Rejected,
}

impl InterventionStatus {
    /// True for applied and rejected.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Applied | Self::Rejected)
    }

    /// The snake_case wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Dispatching => "dispatching",
            Self::Applied => "applied",
            Self::Rejected => "rejected",
        }
    }
}

/// One run intervention on an execution session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Intervention {
    /// The caller's idempotency id; a replay with the same payload returns the session.
    pub operation_id: String,
    /// The authenticated actor that asked (never taken from the body).
    pub requested_by_participant_id: String,
    /// What to do: `stop` halts the run; anything else is injected into the next step.
    pub instruction: String,
    /// Where to apply it.
    pub checkpoint: Checkpoint,
    /// Lifecycle.
    pub status: InterventionStatus,
    /// How many claims it has had.
    #[serde(default)]
    pub attempts: u32,
    /// The current claim's token (only while dispatching).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch_token: Option<String>,
    /// When the current claim's lease runs out (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch_lease_expires_at: Option<String>,
    /// When it was requested (RFC 3339).
    pub requested_at: String,
    /// When it was applied or rejected (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_at: Option<String>,
    /// Why it was applied or rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution_reason: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Kinds of execution-session event (append-only log).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionEventType {
    /// The session was opened for a run.
    SessionOpened,
    /// An intervention was requested.
    InterventionRequested,
    /// A dispatcher claimed an intervention.
    InterventionClaimed,
    /// An intervention was applied at its checkpoint: the evidence.
    InterventionApplied,
    /// An intervention was rejected.
    InterventionRejected,
    /// The run ended and the session was reconciled.
    SessionReconciled,
}

/// One event of an execution session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionEvent {
    /// Position in the session's log, from 1.
    pub sequence: u64,
    /// What happened.
    #[serde(rename = "type")]
    pub event_type: ExecutionEventType,
    /// When (RFC 3339).
    pub occurred_at: String,
    /// The intervention it concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
    /// The checkpoint it concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Checkpoint>,
    /// Structured detail (e.g. the step at which a stop halted the run, a rejection reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// How far a run got through its checkpoints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointProgress {
    /// `pre_step` checkpoints reached.
    #[serde(default)]
    pub pre_step: u64,
    /// `post_output` checkpoints reached.
    #[serde(default)]
    pub post_output: u64,
    /// `pre_action` checkpoints reached.
    #[serde(default)]
    pub pre_action: u64,
    /// The last checkpoint reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<Checkpoint>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionOutcome {
    /// The terminal status.
    pub status: ExecutionSessionStatus,
    /// Why (failure message, or the stop that halted it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
}

/// An execution session: binds one run to a room, task, participant and exact agent revision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionSession {
    /// Tenant (Gatehouse: the project id).
    pub tenant_id: String,
    /// The room.
    pub room_id: String,
    /// This session's id.
    pub session_id: String,
    /// The bound run.
    pub run_id: String,
    /// The task the run works on.
    pub task_id: String,
    /// The agent participant running it.
    pub participant_id: String,
    /// The exact agent revision.
    pub agent_revision_id: String,
    /// Digest of that revision (`sha256:...`).
    pub agent_revision_digest: String,
    /// The failed session this one recovers, when it is a retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predecessor_session_id: Option<String>,
    /// The runtime profile the run uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_profile: Option<String>,
    /// The authority revision in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authority_revision: Option<String>,
    /// The role revision in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_revision: Option<String>,
    /// Compare-and-set revision; every write increments it.
    pub revision: u64,
    /// Lifecycle.
    pub status: ExecutionSessionStatus,
    /// Checkpoints reached so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_progress: Option<CheckpointProgress>,
    /// How the run ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<SessionOutcome>,
    /// Interventions, oldest first.
    #[serde(default)]
    pub interventions: Vec<Intervention>,
    /// Events, by sequence.
    #[serde(default)]
    pub events: Vec<ExecutionEvent>,
    /// RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ExecutionSession {
    /// The intervention with this operation id.
    pub fn intervention(&self, operation_id: &str) -> Option<&Intervention> {
        self.interventions
            .iter()
            .find(|i| i.operation_id == operation_id)
    }

    /// The persisted `intervention_applied` event for this operation id: the only
    /// evidence that an intervention took effect.
    pub fn applied_evidence(&self, operation_id: &str) -> Option<&ExecutionEvent> {
        self.events.iter().find(|e| {
            e.event_type == ExecutionEventType::InterventionApplied
                && e.operation_id.as_deref() == Some(operation_id)
        })
    }
}

/// `POST /rooms/{roomId}/execution-sessions/{sessionId}/interventions` body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestInterventionBody {
    /// The session revision the caller saw (compare-and-set).
    pub expected_revision: u64,
    /// Idempotency id: a replay with the same payload returns the session.
    pub operation_id: String,
    /// What to do (`stop`, or text injected into the next step).
    pub instruction: String,
    /// Where to apply it.
    pub checkpoint: Checkpoint,
}

/// `{"execution": {...}}` on an invoke answer: where the run's execution session is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExecutionRef {
    /// The room.
    pub room_id: String,
    /// The execution session id.
    pub session_id: String,
    /// Its revision at the time of the answer.
    pub revision: u64,
}
