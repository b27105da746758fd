//! Execution sessions and run interventions (CONTRACT.md B1-B3), AgentPlat's Rooms API.
//! Fields are camelCase; success bodies are wrapped in [`DataEnvelope`]; the event
//! stream's SSE frames carry a [`StreamEnvelope`].
//!
//! Reading is tolerant, writing exact: a status, checkpoint or event type this version
//! does not know is kept as `Unknown(text)` (and written back as it came), never a
//! decode failure; what AgentPlat may omit (`agentRevisionId` and
//! `agentRevisionDigest` on a host without an agent registry) is optional.

use serde::{Deserialize, Serialize};

use crate::json::open_enum;
use crate::JsonObject;

/// The most interventions one session may hold (B3).
pub const MAX_INTERVENTIONS_PER_SESSION: usize = 256;
/// Default dispatch lease, milliseconds (B3).
pub const DEFAULT_LEASE_MS: u64 = 30_000;
/// Shortest allowed dispatch lease, milliseconds.
pub const MIN_LEASE_MS: u64 = 1;
/// Longest allowed dispatch lease, milliseconds.
pub const MAX_LEASE_MS: u64 = 300_000;
/// The header AgentPlat's default authentication (`headerTenantAuth`) reads the tenant from.
pub const TENANT_HEADER: &str = "X-Agentplat-Tenant-Id";

/// AgentPlat's success envelope: `{"data": ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DataEnvelope<T> {
    /// The payload.
    pub data: T,
}

open_enum! {
    schema: documented;
    /// Status of an execution session.
    pub enum ExecutionSessionStatus {
        /// The run is going.
        Active = "active",
        /// The run is parked (e.g. at an approval gate).
        Paused = "paused",
        /// The run finished.
        Completed = "completed",
        /// The run failed.
        Failed = "failed",
        /// The run was cancelled (including by a `stop` intervention).
        Canceled = "canceled",
    }
}

impl ExecutionSessionStatus {
    /// True for completed, failed and canceled. An unknown status is not known to be
    /// terminal.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Canceled)
    }
}

open_enum! {
    schema: documented;
    /// Where in a run an intervention may be applied.
    pub enum Checkpoint {
        /// Before the next inference step.
        PreStep = "pre_step",
        /// After model output, before continuation.
        PostOutput = "post_output",
        /// Before a protected external action.
        PreAction = "pre_action",
    }
}

open_enum! {
    schema: documented;
    /// Status of an intervention. `pending` means REQUESTED, nothing more: it is not
    /// evidence that anything stopped or changed.
    pub enum InterventionStatus {
        /// Requested, not yet claimed.
        Pending = "pending",
        /// Claimed by a dispatcher under a lease.
        Dispatching = "dispatching",
        /// Applied at its checkpoint (evidence: the `intervention_applied` event).
        Applied = "applied",
        /// Not applied, with a reason.
        Rejected = "rejected",
    }
}

impl InterventionStatus {
    /// True for applied and rejected.
    pub fn is_final(&self) -> bool {
        matches!(self, Self::Applied | Self::Rejected)
    }
}

open_enum! {
    schema: documented;
    /// Kinds of execution-session event (append-only log).
    pub enum ExecutionEventType {
        /// The session was opened for a run.
        SessionOpened = "session_opened",
        /// An intervention was requested.
        InterventionRequested = "intervention_requested",
        /// A dispatcher claimed an intervention.
        InterventionClaimed = "intervention_claimed",
        /// An intervention was applied at its checkpoint: the evidence.
        InterventionApplied = "intervention_applied",
        /// An intervention was rejected.
        InterventionRejected = "intervention_rejected",
        /// The run ended and the session was reconciled.
        SessionReconciled = "session_reconciled",
    }
}

/// One run intervention on an execution session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Intervention {
    /// The caller's idempotency id; a replay with the same payload returns the session.
    pub operation_id: String,
    /// Who asked: the authenticated actor, or (on an AgentPlat host whose authentication
    /// names none) the request body's `requestedByParticipantId`.
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
    /// Gatehouse: the session revision the request was made at. With the two below it
    /// binds the request to what was in force when it was made (B1): a claim or a
    /// resolution under another authority or role revision rejects it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_revision: Option<u64>,
    /// Gatehouse: the session's authority revision when the request was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authority_revision: Option<String>,
    /// Gatehouse: the session's role revision when the request was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_revision: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `POST /api/rooms/{roomId}/execution-sessions/{sessionId}/authority` body (a
/// Gatehouse route): the room's authority or role revision moved on (a permission was
/// granted or revoked). Interventions requested before it are not applied under it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ChangeAuthorityBody {
    /// The session revision the caller saw (compare-and-set).
    pub expected_revision: u64,
    /// The authority revision now in force (`null`: none).
    #[serde(default)]
    pub authority_revision: Option<String>,
    /// The role revision now in force (`null`: none).
    #[serde(default)]
    pub role_revision: Option<String>,
}

/// One event of an execution session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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

/// An execution session: binds one run to a room, task, participant and (on a host with
/// an agent registry) exact agent revision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    /// The exact agent revision (absent on an AgentPlat host without an agent registry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_revision_id: Option<String>,
    /// Digest of that revision (`sha256:...`; absent with it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_revision_digest: Option<String>,
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RequestInterventionBody {
    /// The session revision the caller saw (compare-and-set).
    pub expected_revision: u64,
    /// Idempotency id: a replay with the same payload returns the session.
    pub operation_id: String,
    /// Who asks, for a host whose authentication names no actor (AgentPlat's default
    /// `X-Agentplat-Tenant-Id` authentication): a human room participant with the
    /// `run.intervene` permission. A host that authenticates the actor ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by_participant_id: Option<String>,
    /// What to do (`stop`, or text injected into the next step).
    pub instruction: String,
    /// Where to apply it.
    pub checkpoint: Checkpoint,
}

/// `{"execution": {...}}` on an invoke answer: where the run's execution session is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ExecutionRef {
    /// The room.
    pub room_id: String,
    /// The execution session id.
    pub session_id: String,
    /// Its revision at the time of the answer.
    pub revision: u64,
}

/// The version of AgentPlat's SSE envelope this crate reads and writes
/// (`AGENTPLAT_SSE_VERSION` of `@agentplat/streaming`).
pub const STREAM_ENVELOPE_VERSION: u64 = 1;
/// The envelope `type` (and, prefixed with `agentplat.`, the SSE event name) of a frame
/// carrying one session event in its `payload`.
pub const SESSION_EVENT_TYPE: &str = "execution_session_event";
/// The envelope `type` of the frame that ends a stream that failed (`content` says why).
pub const FAILED_TYPE: &str = "failed";
/// The SSE event name of a frame carrying one session event.
pub const EVENT_STREAM_EVENT_NAME: &str = "agentplat.execution_session_event";
/// The SSE event name of the failure frame.
pub const FAILED_EVENT_NAME: &str = "agentplat.failed";

/// The `data:` of every frame of the execution event stream: AgentPlat's versioned SSE
/// envelope (`@agentplat/streaming`'s `streamToSSE`). `sequence` counts the frames of ONE
/// connection from 1 (AgentPlat's parser requires them contiguous); the session event
/// and its own `sequence` are inside `payload`. A failure is a `failed` frame whose
/// `content` says why.
///
/// ```
/// use gatehouse_wire::execution::StreamEnvelope;
/// let frame: StreamEnvelope = serde_json::from_str(
///     r#"{"version":1,"sequence":1,"type":"failed","content":"Stream failed"}"#,
/// ).unwrap();
/// assert_eq!(frame.content.as_deref(), Some("Stream failed"));
/// assert_eq!(frame.sse_event_name(), "agentplat.failed");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct StreamEnvelope {
    /// The envelope version ([`STREAM_ENVELOPE_VERSION`]); any other is not understood.
    pub version: u64,
    /// This frame's place on its connection, from 1.
    pub sequence: u64,
    /// What the frame carries: [`SESSION_EVENT_TYPE`], [`FAILED_TYPE`], or a type this
    /// version does not know.
    #[serde(rename = "type")]
    pub envelope_type: String,
    /// The run the frame belongs to, when the source names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Text content (a failure's reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The frame's object payload (a session event).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<JsonObject>,
    /// Fields this version does not know, kept for round trips (Gatehouse's server adds
    /// `gatehouseCode` to a failure frame).
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl StreamEnvelope {
    /// The frame carrying `event` as the `sequence`-th frame of its connection.
    pub fn session_event(sequence: u64, event: &ExecutionEvent) -> Result<Self, serde_json::Error> {
        let payload = match serde_json::to_value(event)? {
            serde_json::Value::Object(map) => map,
            _ => JsonObject::new(),
        };
        Ok(Self::session_event_payload(sequence, payload))
    }

    /// The frame carrying a session event already written as a JSON object (e.g. in
    /// AgentPlat's own field order), as the `sequence`-th frame of its connection.
    pub fn session_event_payload(sequence: u64, payload: JsonObject) -> Self {
        Self {
            version: STREAM_ENVELOPE_VERSION,
            sequence,
            envelope_type: SESSION_EVENT_TYPE.to_string(),
            run_id: None,
            content: None,
            payload: Some(payload),
            extra: JsonObject::new(),
        }
    }

    /// The failure frame, the `sequence`-th of its connection, saying `content`.
    pub fn failed(sequence: u64, content: impl Into<String>) -> Self {
        Self {
            version: STREAM_ENVELOPE_VERSION,
            sequence,
            envelope_type: FAILED_TYPE.to_string(),
            run_id: None,
            content: Some(content.into()),
            payload: None,
            extra: JsonObject::new(),
        }
    }

    /// The SSE `event:` name AgentPlat gives this frame: `agentplat.<type>`.
    pub fn sse_event_name(&self) -> String {
        format!("agentplat.{}", self.envelope_type)
    }

    /// The SSE `id:` AgentPlat gives the frame numbered `n`: `<runId or "stream">:<n>`.
    pub fn sse_id(&self, n: u64) -> String {
        format!("{}:{n}", self.run_id.as_deref().unwrap_or("stream"))
    }
}

/// The number at the end of an SSE event id as AgentPlat spells them (`stream:7`,
/// `<runId>:7`), or a bare number (`7`); `None` for anything else.
///
/// ```
/// use gatehouse_wire::execution::stream_id_number;
/// assert_eq!(stream_id_number("stream:7"), Some(7));
/// assert_eq!(stream_id_number(" 12 "), Some(12));
/// assert_eq!(stream_id_number("stream:x"), None);
/// ```
pub fn stream_id_number(id: &str) -> Option<u64> {
    let id = id.trim();
    let number = id.rsplit_once(':').map(|(_, n)| n).unwrap_or(id);
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    number.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_values_are_kept_and_written_back() {
        let event: ExecutionEvent = serde_json::from_value(serde_json::json!({
            "sequence": 9, "type": "intervention_escalated", "checkpoint": "mid_flight",
            "occurredAt": "2026-12-01T00:00:00Z", "level": 2
        }))
        .unwrap();
        assert_eq!(
            event.event_type,
            ExecutionEventType::Unknown("intervention_escalated".into())
        );
        assert_eq!(
            event.checkpoint,
            Some(Checkpoint::Unknown("mid_flight".into()))
        );
        assert!(!event.event_type.is_known());
        let back = serde_json::to_value(&event).unwrap();
        assert_eq!(back["type"], "intervention_escalated");
        assert_eq!(back["checkpoint"], "mid_flight");
        assert_eq!(back["level"], 2);
        assert_eq!(
            ExecutionSessionStatus::from_wire("archived"),
            ExecutionSessionStatus::Unknown("archived".into())
        );
        assert!(!ExecutionSessionStatus::from_wire("archived").is_terminal());
        assert_eq!(
            InterventionStatus::from_wire("applied"),
            InterventionStatus::Applied
        );
        for known in Checkpoint::KNOWN {
            let checkpoint = Checkpoint::from_wire(known);
            assert!(checkpoint.is_known(), "{known}");
            assert_eq!(checkpoint.as_str(), *known);
        }
    }

    #[test]
    fn a_session_without_an_agent_registry_reads() {
        let session: ExecutionSession = serde_json::from_value(serde_json::json!({
            "tenantId": "tenant-1", "roomId": "r", "sessionId": "exec-1", "runId": "run",
            "taskId": "task", "participantId": "agent-1", "revision": 0, "status": "active",
            "interventions": [], "events": [{"sequence": 1, "type": "session_opened", "occurredAt": "t"}],
            "createdAt": "t", "updatedAt": "t"
        }))
        .unwrap();
        assert_eq!(session.agent_revision_id, None);
        let back = serde_json::to_value(&session).unwrap();
        assert!(back.get("agentRevisionId").is_none());
    }

    #[test]
    fn envelopes_are_written_in_agentplat_order() {
        let event = ExecutionEvent {
            sequence: 4,
            event_type: ExecutionEventType::InterventionApplied,
            occurred_at: "t".into(),
            operation_id: Some("op-1".into()),
            checkpoint: Some(Checkpoint::PreStep),
            details: None,
            extra: JsonObject::new(),
        };
        let frame = StreamEnvelope::session_event(1, &event).unwrap();
        assert_eq!(
            serde_json::to_string(&frame).unwrap(),
            r#"{"version":1,"sequence":1,"type":"execution_session_event","payload":{"sequence":4,"type":"intervention_applied","occurredAt":"t","operationId":"op-1","checkpoint":"pre_step"}}"#
        );
        assert_eq!(frame.sse_event_name(), EVENT_STREAM_EVENT_NAME);
        assert_eq!(frame.sse_id(3), "stream:3");
        let failed = StreamEnvelope::failed(2, "Stream failed");
        assert_eq!(
            serde_json::to_string(&failed).unwrap(),
            r#"{"version":1,"sequence":2,"type":"failed","content":"Stream failed"}"#
        );
        assert_eq!(failed.sse_event_name(), FAILED_EVENT_NAME);
    }
}
