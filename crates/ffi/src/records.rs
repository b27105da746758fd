//! Records and enums for every value that crosses the FFI, converted from the wire types.
//!
//! Free-form JSON (tool arguments, references, stamped parameters, resolutions, event
//! details) crosses as [`JsonText`]; everything a phone app branches on is typed.

use std::time::SystemTime;

use gatehouse_wire::capabilities as wcap;
use gatehouse_wire::execution as wexec;
use gatehouse_wire::interaction as wint;

use crate::error::GatehouseError;
use crate::json::JsonText;

/// What kind of gate an interaction is.
#[derive(Debug, Clone, PartialEq, Eq, Hash, uniffi::Enum)]
pub enum InteractionKind {
    /// "May I run this tool?": answered with approve or deny.
    UserApproval,
    /// A free-form question to the user.
    UserInput,
    /// A tool the client executes itself.
    ClientTool,
    /// A kind this version does not know (a newer server), kept as the server wrote it.
    Unknown {
        /// The wire value.
        value: String,
    },
}

impl From<&wint::InteractionKind> for InteractionKind {
    fn from(kind: &wint::InteractionKind) -> Self {
        match kind {
            wint::InteractionKind::UserApproval => Self::UserApproval,
            wint::InteractionKind::UserInput => Self::UserInput,
            wint::InteractionKind::ClientTool => Self::ClientTool,
            other => Self::Unknown {
                value: other.as_str().to_string(),
            },
        }
    }
}

/// The lifecycle of an interaction (not its verdict).
#[derive(Debug, Clone, PartialEq, Eq, Hash, uniffi::Enum)]
pub enum InteractionStatus {
    /// Waiting for an answer.
    Pending,
    /// Answered through the API; the resume is queued.
    Responded,
    /// The runner consumed the answer.
    Resolved,
    /// The gate went away unanswered.
    Cancelled,
    /// A status this version does not know (a newer server), kept as the server wrote it.
    Unknown {
        /// The wire value.
        value: String,
    },
}

impl From<&wint::InteractionStatus> for InteractionStatus {
    fn from(status: &wint::InteractionStatus) -> Self {
        match status {
            wint::InteractionStatus::Pending => Self::Pending,
            wint::InteractionStatus::Responded => Self::Responded,
            wint::InteractionStatus::Resolved => Self::Resolved,
            wint::InteractionStatus::Cancelled => Self::Cancelled,
            other => Self::Unknown {
                value: other.as_str().to_string(),
            },
        }
    }
}

/// What the gated tool call wanted to do.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct InteractionRequest {
    /// Tool name, e.g. `Bash`.
    pub tool: Option<String>,
    /// Tool arguments as JSON text.
    pub args: Option<JsonText>,
    /// The model's tool call id.
    pub tool_call_id: Option<String>,
}

/// One session interaction (a gate), as a phone shows it.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct Interaction {
    /// Row id: what `respond_to_interaction` takes.
    pub id: String,
    /// Owning project.
    pub project_id: Option<String>,
    /// The agent session.
    pub session_id: String,
    /// The turn that gated.
    pub turn_id: Option<String>,
    /// The runner's token for this gate.
    pub token: String,
    /// What kind of gate.
    pub kind: InteractionKind,
    /// Lifecycle status. Gatehouse always writes one; a row without one (a host whose
    /// model leaves it unset) reads as `Unknown` with an empty value, never as a guess.
    pub status: InteractionStatus,
    /// What the gate asks about.
    pub request: Option<InteractionRequest>,
    /// The turn's workflow references as JSON text (`workflow`, `workflow_variant`,
    /// `workflow_revision`).
    pub references: Option<JsonText>,
    /// The config the gated turn runs under (stamped `effectiveParameters`) as JSON text;
    /// absent for a legacy row.
    pub parameters: Option<JsonText>,
    /// The recorded answer and, once resolved, the verdict, as JSON text.
    pub resolution: Option<JsonText>,
    /// The runner delivered the gate in band.
    pub delivered_in_band: bool,
    /// The gate was delivered by webhook.
    pub delivered_webhook: bool,
    /// Creation time (Swift `Date`, Kotlin `java.time.Instant`, Python `datetime`);
    /// absent when the host sent none or a time that is not RFC 3339.
    pub created_at: Option<SystemTime>,
    /// Last update time; absent as `created_at`.
    pub updated_at: Option<SystemTime>,
    /// The gate's revision (Gatehouse's rows; absent on an Agenta host): moved on when
    /// what the gate asks changes.
    pub revision: Option<i64>,
    /// The gate digest the host shows (`gate.digest`, CONTRACT.md C8). An answer given
    /// with `respond_to_gate` carries the digest this library computes from this record
    /// (its id, revision and request), so it lands only on the gate the app displayed.
    pub digest: Option<String>,
}

/// An RFC 3339 time as a `SystemTime`; `None` for text that is not one (a host's own
/// format reads as "no time", never as an error that hides the record).
pub(crate) fn timestamp(text: Option<&str>) -> Option<SystemTime> {
    let parsed = chrono::DateTime::parse_from_rfc3339(text?).ok()?;
    Some(SystemTime::from(parsed.with_timezone(&chrono::Utc)))
}

fn optional_json<T: serde::Serialize>(
    value: Option<&T>,
) -> Result<Option<JsonText>, GatehouseError> {
    value.map(JsonText::from_serialize).transpose()
}

impl TryFrom<&wint::SessionInteraction> for Interaction {
    type Error = GatehouseError;

    fn try_from(row: &wint::SessionInteraction) -> Result<Self, GatehouseError> {
        let id = row.id.clone().ok_or_else(|| GatehouseError::Decode {
            msg: format!(
                "the server sent an interaction without an id (session {}, token {})",
                row.session_id, row.token
            ),
            details: None,
        })?;
        let data = row.data.as_ref();
        let request = data
            .and_then(|d| d.request.as_ref())
            .map(|r| -> Result<InteractionRequest, GatehouseError> {
                Ok(InteractionRequest {
                    tool: r.tool.clone(),
                    args: r.args.as_ref().map(JsonText::from_value),
                    tool_call_id: r.tool_call_id.clone(),
                })
            })
            .transpose()?;
        Ok(Self {
            id,
            project_id: row.project_id.clone(),
            session_id: row.session_id.clone(),
            turn_id: row.turn_id.clone(),
            token: row.token.clone(),
            kind: (&row.kind).into(),
            status: row
                .status
                .as_ref()
                .map(Into::into)
                .unwrap_or(InteractionStatus::Unknown {
                    value: String::new(),
                }),
            request,
            references: optional_json(data.and_then(|d| d.references.as_ref()))?,
            parameters: optional_json(
                data.and_then(|d| d.parameters.as_ref())
                    .and_then(Option::as_ref),
            )?,
            resolution: optional_json(data.and_then(|d| d.resolution.as_ref()))?,
            delivered_in_band: row.flags.delivered_in_band,
            delivered_webhook: row.flags.delivered_webhook,
            created_at: timestamp(row.created_at.as_deref()),
            updated_at: timestamp(row.updated_at.as_deref()),
            revision: row.gate.as_ref().map(|gate| gate.revision),
            digest: row.gate.as_ref().map(|gate| gate.digest.clone()),
        })
    }
}

/// Convert a page of rows.
pub(crate) fn interactions(
    rows: &[wint::SessionInteraction],
) -> Result<Vec<Interaction>, GatehouseError> {
    rows.iter().map(Interaction::try_from).collect()
}

impl InteractionKind {
    /// The wire spelling.
    fn wire_value(&self) -> &str {
        match self {
            Self::UserApproval => "user_approval",
            Self::UserInput => "user_input",
            Self::ClientTool => "client_tool",
            Self::Unknown { value } => value,
        }
    }
}

impl InteractionStatus {
    /// The wire spelling.
    fn wire_value(&self) -> &str {
        match self {
            Self::Pending => "pending",
            Self::Responded => "responded",
            Self::Resolved => "resolved",
            Self::Cancelled => "cancelled",
            Self::Unknown { value } => value,
        }
    }
}

/// The row an app passes back (a gate it listed): what answering it needs (its id,
/// session, turn, token, kind and status) and what its digest covers (its request and
/// revision); the rest is not read back.
impl TryFrom<&Interaction> for wint::SessionInteraction {
    type Error = GatehouseError;

    fn try_from(gate: &Interaction) -> Result<Self, GatehouseError> {
        serde_json::from_value(serde_json::json!({
            "id": gate.id,
            "project_id": gate.project_id,
            "session_id": gate.session_id,
            "turn_id": gate.turn_id,
            "token": gate.token,
            "kind": gate.kind.wire_value(),
            // An empty `Unknown` is a row that came without a status: it goes back without.
            "status": Some(gate.status.wire_value()).filter(|value| !value.is_empty()),
            "data": {"request": match &gate.request {
                Some(request) => serde_json::json!({
                    "tool": request.tool,
                    "args": request.args.as_ref().map(JsonText::to_value).transpose()?,
                    "tool_call_id": request.tool_call_id,
                }),
                None => serde_json::Value::Null,
            }},
            "gate": gate.revision.map(|revision| serde_json::json!({
                "revision": revision,
                "digest": gate.digest.clone().unwrap_or_default(),
            })),
        }))
        .map_err(|e| GatehouseError::Invalid {
            msg: format!("the interaction {} does not read back as a row", gate.id),
            details: Some(e.to_string()),
        })
    }
}

/// The gate digest (CONTRACT.md C8, v1): `sha256:` and the hex SHA-256 of the RFC 8785
/// text of `["gatehouse.gate.v1", id, revision, tool, tool_call_id, args]`; `args_json`
/// is the arguments as JSON text (absent: `null`). The same function the server and the
/// Rust client use, so every language gets the same digest (the shared vectors,
/// `tests/data/gate_digest.vectors.json`, check it).
#[uniffi::export]
pub fn gate_digest(
    id: String,
    revision: i64,
    tool: Option<String>,
    tool_call_id: Option<String>,
    args_json: Option<JsonText>,
) -> Result<String, GatehouseError> {
    let args = args_json.as_ref().map(JsonText::to_value).transpose()?;
    Ok(wint::gate_digest(&wint::GateDigestInput {
        id: &id,
        revision,
        tool: tool.as_deref(),
        tool_call_id: tool_call_id.as_deref(),
        args: args.as_ref(),
    }))
}

/// A capability a host may or may not serve.
#[derive(Debug, Clone, PartialEq, Eq, Hash, uniffi::Enum)]
pub enum Capability {
    /// The interaction endpoints.
    Interactions,
    /// The interaction watch stream.
    InteractionWatch,
    /// The service tier (invoke).
    Invoke,
    /// The runner tier (`/run`).
    Runs,
    /// Execution sessions and interventions.
    Execution,
    /// The execution event stream.
    ExecutionEventStream,
    /// Many gates answered in one request (approve-all uses it when served).
    InteractionBatch,
    /// A respond carrying the gate's digest is checked (`StaleGate` when the gate
    /// changed after it was read); without it the answer is not bound to what was shown.
    AnswerDigest,
    /// A capability this version does not know (a newer host), kept as the host wrote it.
    Unknown {
        /// The wire value.
        value: String,
    },
}

impl Capability {
    /// The mobile facade's capability of a wire one; `None` for one the facade does not
    /// offer as a capability (`durable_approvals`: the facade says the contract a host
    /// speaks with `GatehouseClient::agenta_contract` instead).
    fn of_wire(capability: wcap::Capability) -> Option<Self> {
        Some(match capability {
            wcap::Capability::Interactions => Self::Interactions,
            wcap::Capability::InteractionWatch => Self::InteractionWatch,
            wcap::Capability::Invoke => Self::Invoke,
            wcap::Capability::Runs => Self::Runs,
            wcap::Capability::Execution => Self::Execution,
            wcap::Capability::ExecutionEventStream => Self::ExecutionEventStream,
            wcap::Capability::InteractionBatch => Self::InteractionBatch,
            wcap::Capability::AnswerDigest => Self::AnswerDigest,
            wcap::Capability::DurableApprovals => return None,
        })
    }
}

/// What a host serves.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct Capabilities {
    /// The serving product, e.g. `gatehouse`.
    pub service: String,
    /// Its version.
    pub version: String,
    /// What it serves.
    pub capabilities: Vec<Capability>,
}

impl From<&wcap::CapabilitiesResponse> for Capabilities {
    fn from(response: &wcap::CapabilitiesResponse) -> Self {
        Self {
            service: response.service.clone(),
            version: response.version.clone(),
            capabilities: response
                .capabilities
                .iter()
                .filter_map(|c| Capability::of_wire(*c))
                .chain(
                    response
                        .other_capabilities
                        .iter()
                        .map(|value| Capability::Unknown {
                            value: value.clone(),
                        }),
                )
                .collect(),
        }
    }
}

/// Status of an execution session.
#[derive(Debug, Clone, PartialEq, Eq, Hash, uniffi::Enum)]
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
    /// A status this library does not know (a newer server's), kept as sent.
    Unknown {
        /// The status as the server spelled it.
        value: String,
    },
}

impl From<&wexec::ExecutionSessionStatus> for ExecutionSessionStatus {
    fn from(status: &wexec::ExecutionSessionStatus) -> Self {
        match status {
            wexec::ExecutionSessionStatus::Active => Self::Active,
            wexec::ExecutionSessionStatus::Paused => Self::Paused,
            wexec::ExecutionSessionStatus::Completed => Self::Completed,
            wexec::ExecutionSessionStatus::Failed => Self::Failed,
            wexec::ExecutionSessionStatus::Canceled => Self::Canceled,
            other => Self::Unknown {
                value: other.as_str().to_string(),
            },
        }
    }
}

/// Where in a run an intervention may be applied.
#[derive(Debug, Clone, PartialEq, Eq, Hash, uniffi::Enum)]
pub enum Checkpoint {
    /// Before the next inference step.
    PreStep,
    /// After model output, before continuation.
    PostOutput,
    /// Before a protected external action.
    PreAction,
    /// A checkpoint this library does not know, kept as sent (and sent as given: the
    /// host decides whether it knows it).
    Unknown {
        /// The checkpoint's wire spelling.
        value: String,
    },
}

impl From<&wexec::Checkpoint> for Checkpoint {
    fn from(checkpoint: &wexec::Checkpoint) -> Self {
        match checkpoint {
            wexec::Checkpoint::PreStep => Self::PreStep,
            wexec::Checkpoint::PostOutput => Self::PostOutput,
            wexec::Checkpoint::PreAction => Self::PreAction,
            other => Self::Unknown {
                value: other.as_str().to_string(),
            },
        }
    }
}

impl From<Checkpoint> for wexec::Checkpoint {
    fn from(checkpoint: Checkpoint) -> Self {
        match checkpoint {
            Checkpoint::PreStep => Self::PreStep,
            Checkpoint::PostOutput => Self::PostOutput,
            Checkpoint::PreAction => Self::PreAction,
            Checkpoint::Unknown { value } => Self::from_wire(&value),
        }
    }
}

/// Status of an intervention. `Pending` means requested, nothing more.
#[derive(Debug, Clone, PartialEq, Eq, Hash, uniffi::Enum)]
pub enum InterventionStatus {
    /// Requested, not yet claimed.
    Pending,
    /// Claimed by a dispatcher under a lease.
    Dispatching,
    /// Applied at its checkpoint.
    Applied,
    /// Not applied, with a reason.
    Rejected,
    /// A status this library does not know, kept as sent: not known to be applied.
    Unknown {
        /// The status as the server spelled it.
        value: String,
    },
}

impl From<&wexec::InterventionStatus> for InterventionStatus {
    fn from(status: &wexec::InterventionStatus) -> Self {
        match status {
            wexec::InterventionStatus::Pending => Self::Pending,
            wexec::InterventionStatus::Dispatching => Self::Dispatching,
            wexec::InterventionStatus::Applied => Self::Applied,
            wexec::InterventionStatus::Rejected => Self::Rejected,
            other => Self::Unknown {
                value: other.as_str().to_string(),
            },
        }
    }
}

/// One run intervention on an execution session.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct Intervention {
    /// The idempotency id.
    pub operation_id: String,
    /// Who asked (the authenticated actor, or the participant named in the request).
    pub requested_by_participant_id: String,
    /// What to do.
    pub instruction: String,
    /// Where to apply it.
    pub checkpoint: Checkpoint,
    /// Lifecycle.
    pub status: InterventionStatus,
    /// How many claims it has had.
    pub attempts: i32,
    /// When it was requested; absent when the host's time is not RFC 3339.
    pub requested_at: Option<SystemTime>,
    /// When it was applied or rejected (absent as `requested_at`).
    pub resolved_at: Option<SystemTime>,
    /// Why it was applied or rejected.
    pub resolution_reason: Option<String>,
}

impl From<&wexec::Intervention> for Intervention {
    fn from(i: &wexec::Intervention) -> Self {
        Self {
            operation_id: i.operation_id.clone(),
            requested_by_participant_id: i.requested_by_participant_id.clone(),
            instruction: i.instruction.clone(),
            checkpoint: (&i.checkpoint).into(),
            status: (&i.status).into(),
            attempts: to_i32(i.attempts),
            requested_at: timestamp(Some(&i.requested_at)),
            resolved_at: timestamp(i.resolved_at.as_deref()),
            resolution_reason: i.resolution_reason.clone(),
        }
    }
}

/// Kinds of execution-session event.
#[derive(Debug, Clone, PartialEq, Eq, Hash, uniffi::Enum)]
pub enum ExecutionEventType {
    /// The session was opened for a run.
    SessionOpened,
    /// An intervention was requested.
    InterventionRequested,
    /// A dispatcher claimed an intervention.
    InterventionClaimed,
    /// An intervention was applied: the evidence.
    InterventionApplied,
    /// An intervention was rejected.
    InterventionRejected,
    /// The run ended and the session was reconciled.
    SessionReconciled,
    /// An event type this library does not know, kept as sent.
    Unknown {
        /// The type as the server spelled it.
        value: String,
    },
}

impl From<&wexec::ExecutionEventType> for ExecutionEventType {
    fn from(t: &wexec::ExecutionEventType) -> Self {
        match t {
            wexec::ExecutionEventType::SessionOpened => Self::SessionOpened,
            wexec::ExecutionEventType::InterventionRequested => Self::InterventionRequested,
            wexec::ExecutionEventType::InterventionClaimed => Self::InterventionClaimed,
            wexec::ExecutionEventType::InterventionApplied => Self::InterventionApplied,
            wexec::ExecutionEventType::InterventionRejected => Self::InterventionRejected,
            wexec::ExecutionEventType::SessionReconciled => Self::SessionReconciled,
            other => Self::Unknown {
                value: other.as_str().to_string(),
            },
        }
    }
}

/// One persisted event of an execution session.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct ExecutionEvent {
    /// Position in the session's log, from 1.
    pub sequence: i64,
    /// What happened.
    pub event_type: ExecutionEventType,
    /// When; absent when the host's time is not RFC 3339.
    pub occurred_at: Option<SystemTime>,
    /// The intervention it concerns.
    pub operation_id: Option<String>,
    /// The checkpoint it concerns.
    pub checkpoint: Option<Checkpoint>,
    /// Structured detail as JSON text.
    pub details: Option<JsonText>,
}

impl From<&wexec::ExecutionEvent> for ExecutionEvent {
    fn from(e: &wexec::ExecutionEvent) -> Self {
        Self {
            sequence: to_i64(e.sequence),
            event_type: (&e.event_type).into(),
            occurred_at: timestamp(Some(&e.occurred_at)),
            operation_id: e.operation_id.clone(),
            checkpoint: e.checkpoint.as_ref().map(Into::into),
            details: e.details.as_ref().map(JsonText::from_value),
        }
    }
}

/// How far a run got through its checkpoints.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct CheckpointProgress {
    /// `pre_step` checkpoints reached.
    pub pre_step: i64,
    /// `post_output` checkpoints reached.
    pub post_output: i64,
    /// `pre_action` checkpoints reached.
    pub pre_action: i64,
    /// The last checkpoint reached.
    pub last: Option<Checkpoint>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct SessionOutcome {
    /// The terminal status.
    pub status: ExecutionSessionStatus,
    /// Why.
    pub reason: Option<String>,
    /// When; absent when the host sent none or a time that is not RFC 3339.
    pub ended_at: Option<SystemTime>,
}

/// An execution session: one run bound to a room, task, participant and agent revision.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct ExecutionSession {
    /// Tenant (the project id).
    pub tenant_id: String,
    /// The room.
    pub room_id: String,
    /// This session's id.
    pub session_id: String,
    /// The bound run.
    pub run_id: String,
    /// The task.
    pub task_id: String,
    /// The agent participant.
    pub participant_id: String,
    /// The exact agent revision (absent on an AgentPlat host without an agent registry).
    pub agent_revision_id: Option<String>,
    /// Digest of that revision (absent with it).
    pub agent_revision_digest: Option<String>,
    /// The failed session this one recovers, when it is a retry.
    pub predecessor_session_id: Option<String>,
    /// The runtime profile.
    pub runtime_profile: Option<String>,
    /// The authority revision in force.
    pub authority_revision: Option<String>,
    /// The role revision in force.
    pub role_revision: Option<String>,
    /// Compare-and-set revision: pass it to `request_intervention`.
    pub revision: i64,
    /// Lifecycle.
    pub status: ExecutionSessionStatus,
    /// Checkpoints reached so far.
    pub checkpoint_progress: Option<CheckpointProgress>,
    /// How the run ended.
    pub outcome: Option<SessionOutcome>,
    /// Interventions, oldest first.
    pub interventions: Vec<Intervention>,
    /// Events, by sequence.
    pub events: Vec<ExecutionEvent>,
    /// Creation time; absent when the host sent none or a time that is not RFC 3339.
    pub created_at: Option<SystemTime>,
    /// Last update time; absent as `created_at`.
    pub updated_at: Option<SystemTime>,
}

impl From<&wexec::ExecutionSession> for ExecutionSession {
    fn from(s: &wexec::ExecutionSession) -> Self {
        Self {
            tenant_id: s.tenant_id.clone(),
            room_id: s.room_id.clone(),
            session_id: s.session_id.clone(),
            run_id: s.run_id.clone(),
            task_id: s.task_id.clone(),
            participant_id: s.participant_id.clone(),
            agent_revision_id: s.agent_revision_id.clone(),
            agent_revision_digest: s.agent_revision_digest.clone(),
            predecessor_session_id: s.predecessor_session_id.clone(),
            runtime_profile: s.runtime_profile.clone(),
            authority_revision: s.authority_revision.clone(),
            role_revision: s.role_revision.clone(),
            revision: to_i64(s.revision),
            status: (&s.status).into(),
            checkpoint_progress: s.checkpoint_progress.as_ref().map(|p| CheckpointProgress {
                pre_step: to_i64(p.pre_step),
                post_output: to_i64(p.post_output),
                pre_action: to_i64(p.pre_action),
                last: p.last.as_ref().map(Into::into),
            }),
            outcome: s.outcome.as_ref().map(|o| SessionOutcome {
                status: (&o.status).into(),
                reason: o.reason.clone(),
                ended_at: timestamp(o.ended_at.as_deref()),
            }),
            interventions: s.interventions.iter().map(Into::into).collect(),
            events: s.events.iter().map(Into::into).collect(),
            created_at: timestamp(s.created_at.as_deref()),
            updated_at: timestamp(s.updated_at.as_deref()),
        }
    }
}

/// A wire count as the signed integer Kotlin (`Long`), Swift (`Int64`) and Java read
/// naturally; counts beyond `i64::MAX` (never seen) saturate.
pub(crate) fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A small wire count as a signed 32-bit integer (Kotlin `Int`, Swift `Int32`), saturating.
pub(crate) fn to_i32(value: u32) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}

/// Which form of Agenta's session contract a host speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, uniffi::Enum)]
pub enum AgentaContract {
    /// Durable approvals and durable Stop (Agenta v0.121 and later): a respond answers
    /// with the continuation, a Stop is a recorded command.
    Durable,
    /// The contract before it (a respond answers the row; no Stop).
    Legacy,
}

impl From<AgentaContract> for gatehouse_client::AgentaContract {
    fn from(contract: AgentaContract) -> Self {
        match contract {
            AgentaContract::Durable => Self::Durable,
            AgentaContract::Legacy => Self::Legacy,
        }
    }
}

impl TryFrom<gatehouse_client::AgentaContract> for AgentaContract {
    type Error = GatehouseError;

    fn try_from(contract: gatehouse_client::AgentaContract) -> Result<Self, GatehouseError> {
        Ok(match contract {
            gatehouse_client::AgentaContract::Durable => Self::Durable,
            gatehouse_client::AgentaContract::Legacy => Self::Legacy,
            _ => return Err(GatehouseError::unknown_variant("agenta contract")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Timestamps cross as times; a row without a status reads as an empty `Unknown` and
    /// goes back without one; a capability this version does not know is kept.
    #[test]
    fn a_row_reads_with_times_a_status_and_unknown_capabilities_kept() {
        let row: wint::SessionInteraction = serde_json::from_value(serde_json::json!({
            "id": "i1", "session_id": "s1", "token": "tok", "kind": "user_approval",
            "created_at": "2026-12-07T22:00:01.5+01:00", "updated_at": "yesterday",
        }))
        .unwrap();
        let gate = Interaction::try_from(&row).unwrap();
        let created = gate.created_at.unwrap();
        let since_epoch = created.duration_since(SystemTime::UNIX_EPOCH).unwrap();
        assert_eq!(since_epoch.as_millis(), 1_796_677_201_500);
        assert_eq!(gate.updated_at, None);
        assert_eq!(
            gate.status,
            InteractionStatus::Unknown {
                value: String::new()
            }
        );
        let back = wint::SessionInteraction::try_from(&gate).unwrap();
        assert_eq!(back.status, None);

        let response: wcap::CapabilitiesResponse = serde_json::from_value(serde_json::json!({
            "service": "gatehouse", "version": "9",
            "capabilities": ["interactions", "teleport", "durable_approvals"],
        }))
        .unwrap();
        assert_eq!(
            Capabilities::from(&response).capabilities,
            vec![
                Capability::Interactions,
                Capability::Unknown {
                    value: "teleport".into()
                }
            ]
        );
    }

    /// A value newer than this library crosses as `Unknown` with the server's spelling,
    /// and a checkpoint the app names that way goes back out as it was spelled.
    #[test]
    fn unknown_execution_values_cross_as_unknown() {
        let session: wexec::ExecutionSession = serde_json::from_value(serde_json::json!({
            "tenantId": "tenant-1", "roomId": "r", "sessionId": "s", "runId": "run",
            "taskId": "t", "participantId": "agent-1", "revision": 2, "status": "archived",
            "interventions": [{"operationId": "op", "requestedByParticipantId": "human-1",
                "instruction": "x", "checkpoint": "mid_flight", "status": "escalated",
                "attempts": 0, "requestedAt": "t"}],
            "events": [{"sequence": 1, "type": "session_paused", "occurredAt": "t"}]
        }))
        .unwrap();
        let record = ExecutionSession::from(&session);
        assert_eq!(
            record.status,
            ExecutionSessionStatus::Unknown {
                value: "archived".into()
            }
        );
        assert_eq!(record.agent_revision_id, None);
        let item = &record.interventions[0];
        assert_eq!(
            item.checkpoint,
            Checkpoint::Unknown {
                value: "mid_flight".into()
            }
        );
        assert_eq!(
            item.status,
            InterventionStatus::Unknown {
                value: "escalated".into()
            }
        );
        assert_eq!(
            record.events[0].event_type,
            ExecutionEventType::Unknown {
                value: "session_paused".into()
            }
        );
        let out: wexec::Checkpoint = Checkpoint::Unknown {
            value: "mid_flight".into(),
        }
        .into();
        assert_eq!(out.as_str(), "mid_flight");
        let known: wexec::Checkpoint = Checkpoint::Unknown {
            value: "pre_step".into(),
        }
        .into();
        assert_eq!(known, wexec::Checkpoint::PreStep);
    }

    /// An execution session's times cross as times too, each on its own: a time that is
    /// not RFC 3339 reads as absent and never hides the record or its other times.
    #[test]
    fn execution_times_cross_as_times() {
        let session: wexec::ExecutionSession = serde_json::from_value(serde_json::json!({
            "tenantId": "tenant-1", "roomId": "r", "sessionId": "s", "runId": "run",
            "taskId": "t", "participantId": "agent-1", "revision": 3, "status": "completed",
            "outcome": {"status": "completed", "endedAt": "2026-12-07T21:00:03Z"},
            "interventions": [{"operationId": "op", "requestedByParticipantId": "human-1",
                "instruction": "x", "checkpoint": "pre_step", "status": "applied",
                "attempts": 1, "requestedAt": "2026-12-07T21:00:01.250Z",
                "resolvedAt": "soon"}],
            "events": [{"sequence": 1, "type": "intervention_applied",
                "occurredAt": "2026-12-07T22:00:02+01:00"}],
            "createdAt": "2026-12-07T21:00:00Z", "updatedAt": "later"
        }))
        .unwrap();
        let record = ExecutionSession::from(&session);
        let ms = |t: Option<SystemTime>| {
            t.map(|t| {
                t.duration_since(SystemTime::UNIX_EPOCH)
                    .unwrap()
                    .as_millis()
            })
        };
        assert_eq!(ms(record.created_at), Some(1_796_677_200_000));
        assert_eq!(record.updated_at, None);
        assert_eq!(
            ms(record.interventions[0].requested_at),
            Some(1_796_677_201_250)
        );
        assert_eq!(record.interventions[0].resolved_at, None);
        assert_eq!(ms(record.events[0].occurred_at), Some(1_796_677_202_000));
        let outcome = record.outcome.expect("the outcome");
        assert_eq!(ms(outcome.ended_at), Some(1_796_677_203_000));
    }

    /// A gate the app passes back reads as the row it came from, in what answering it
    /// needs (id, session, turn, token, kind, status); unknown spellings go back as sent.
    #[test]
    fn a_listed_gate_reads_back_as_its_row() {
        for (kind, status) in [
            ("user_approval", "pending"),
            ("client_tool", "responded"),
            ("a_new_kind", "a_new_status"),
        ] {
            let row: wint::SessionInteraction = serde_json::from_value(serde_json::json!({
                "id": "i1", "project_id": "p1", "session_id": "s1", "turn_id": "t1",
                "token": "tok", "kind": kind, "status": status,
                "data": {"request": {"tool": "Bash", "args": {"command": "ls"}}},
            }))
            .unwrap();
            let gate = Interaction::try_from(&row).unwrap();
            let back = wint::SessionInteraction::try_from(&gate).unwrap();
            assert_eq!(back.id.as_deref(), Some("i1"));
            assert_eq!(back.project_id.as_deref(), Some("p1"));
            assert_eq!(back.session_id, "s1");
            assert_eq!(back.turn_id.as_deref(), Some("t1"));
            assert_eq!(back.token, "tok");
            assert_eq!(back.kind.as_str(), kind);
            assert_eq!(back.status.as_ref().map(|s| s.as_str()), Some(status));
        }
    }
}
