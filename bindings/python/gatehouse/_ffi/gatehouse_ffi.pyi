# The type stub of gatehouse_ffi.py, written by bindings/python/make_stub.py
# (`cargo xtask bindings`): do not edit.

import asyncio
import datetime
import enum
import typing


class InternalError(Exception):
    ...

def uniffi_set_event_loop(eventloop: asyncio.BaseEventLoop) -> None:
    ...

class GatehouseErrorKind(enum.Enum):
    """The kind of a [`GatehouseError`], without its text: handy in records (approve-all
    failures) and for `when`/`switch` over outcomes.
    """
    ALREADY_ANSWERED = 0
    NOT_FOUND = 1
    REVISION_CONFLICT = 2
    OPERATION_CONFLICT = 3
    DISPATCH_OWNERSHIP_LOST = 4
    RESOLVED_DIFFERENTLY = 5
    INTERVENTION_LIMIT = 6
    SESSION_NOT_ACTIVE = 7
    TURN_NOT_CONTINUABLE = 8
    STALE_EXECUTION = 9
    IDEMPOTENCY_KEY_REUSED = 10
    STALE_GATE = 11
    ANSWER_OWNER_UNKNOWN = 12
    PROJECT_MISMATCH = 13
    CONFLICT = 14
    CAPABILITY_UNAVAILABLE = 15
    UNAUTHORIZED = 16
    FORBIDDEN = 17
    TENANT_REJECTED = 18
    VALIDATION = 19
    INVALID = 20
    PAYLOAD_TOO_LARGE = 21
    RATE_LIMITED = 22
    SERVER = 23
    TRANSPORT = 24
    DECODE = 25
    STREAM_FAILED = 26
    ACCEPTED_UNREADABLE = 27
    TIMEOUT = 28
    CONFIG = 29
    INTERNAL = 30

class ApproveAllFailure:
    """One approve-all target that failed for a reason other than "already answered"."""
    interaction_id: str
    kind: GatehouseErrorKind
    msg: str
    details: typing.Optional[str]
    retryable: bool
    def __init__(self, *, interaction_id: str, kind: GatehouseErrorKind, msg: str, details: typing.Optional[str], retryable: bool) -> None:
        ...

class InteractionKind:
    """What kind of gate an interaction is."""
    class USER_APPROVAL(InteractionKind):
        """"May I run this tool?": answered with approve or deny."""
        def __init__(self) -> None:
            ...
    class USER_INPUT(InteractionKind):
        """A free-form question to the user."""
        def __init__(self) -> None:
            ...
    class CLIENT_TOOL(InteractionKind):
        """A tool the client executes itself."""
        def __init__(self) -> None:
            ...
    class UNKNOWN(InteractionKind):
        """A kind this version does not know (a newer server), kept as the server wrote it."""
        value: str
        def __init__(self, value: str) -> None:
            ...
    def is_USER_APPROVAL(self) -> bool:
        ...
    def is_user_approval(self) -> bool:
        ...
    def is_USER_INPUT(self) -> bool:
        ...
    def is_user_input(self) -> bool:
        ...
    def is_CLIENT_TOOL(self) -> bool:
        ...
    def is_client_tool(self) -> bool:
        ...
    def is_UNKNOWN(self) -> bool:
        ...
    def is_unknown(self) -> bool:
        ...

class InteractionStatus:
    """The lifecycle of an interaction (not its verdict)."""
    class PENDING(InteractionStatus):
        """Waiting for an answer."""
        def __init__(self) -> None:
            ...
    class RESPONDED(InteractionStatus):
        """Answered through the API; the resume is queued."""
        def __init__(self) -> None:
            ...
    class RESOLVED(InteractionStatus):
        """The runner consumed the answer."""
        def __init__(self) -> None:
            ...
    class CANCELLED(InteractionStatus):
        """The gate went away unanswered."""
        def __init__(self) -> None:
            ...
    class UNKNOWN(InteractionStatus):
        """A status this version does not know (a newer server), kept as the server wrote it."""
        value: str
        def __init__(self, value: str) -> None:
            ...
    def is_PENDING(self) -> bool:
        ...
    def is_pending(self) -> bool:
        ...
    def is_RESPONDED(self) -> bool:
        ...
    def is_responded(self) -> bool:
        ...
    def is_RESOLVED(self) -> bool:
        ...
    def is_resolved(self) -> bool:
        ...
    def is_CANCELLED(self) -> bool:
        ...
    def is_cancelled(self) -> bool:
        ...
    def is_UNKNOWN(self) -> bool:
        ...
    def is_unknown(self) -> bool:
        ...

JsonText = str

class InteractionRequest:
    """What the gated tool call wanted to do."""
    tool: typing.Optional[str]
    args: typing.Optional[JsonText]
    tool_call_id: typing.Optional[str]
    def __init__(self, *, tool: typing.Optional[str], args: typing.Optional[JsonText], tool_call_id: typing.Optional[str]) -> None:
        ...
    @property
    def args_dict(self) -> typing.Optional[typing.Dict[str, typing.Any]]:
        """`args` parsed: the tool call's arguments (None when absent)."""
        ...

Timestamp = datetime.datetime

class Interaction:
    """One session interaction (a gate), as a phone shows it."""
    id: str
    project_id: typing.Optional[str]
    session_id: str
    turn_id: typing.Optional[str]
    token: str
    kind: InteractionKind
    status: InteractionStatus
    request: typing.Optional[InteractionRequest]
    references: typing.Optional[JsonText]
    parameters: typing.Optional[JsonText]
    resolution: typing.Optional[JsonText]
    delivered_in_band: bool
    delivered_webhook: bool
    created_at: typing.Optional[Timestamp]
    updated_at: typing.Optional[Timestamp]
    revision: typing.Optional[int]
    digest: typing.Optional[str]
    def __init__(self, *, id: str, project_id: typing.Optional[str], session_id: str, turn_id: typing.Optional[str], token: str, kind: InteractionKind, status: InteractionStatus, request: typing.Optional[InteractionRequest], references: typing.Optional[JsonText], parameters: typing.Optional[JsonText], resolution: typing.Optional[JsonText], delivered_in_band: bool, delivered_webhook: bool, created_at: typing.Optional[Timestamp], updated_at: typing.Optional[Timestamp], revision: typing.Optional[int], digest: typing.Optional[str]) -> None:
        ...
    @property
    def parameters_dict(self) -> typing.Optional[typing.Dict[str, typing.Any]]:
        """`parameters` parsed: the stamped config (None when absent)."""
        ...
    @property
    def resolution_dict(self) -> typing.Optional[typing.Dict[str, typing.Any]]:
        """`resolution` parsed: the recorded answer and verdict (None when absent)."""
        ...
    @property
    def references_dict(self) -> typing.Optional[typing.Dict[str, typing.Any]]:
        """`references` parsed: the turn's workflow references (None when absent)."""
        ...

class ApproveAllReport:
    """The per-target outcome of [`GatehouseClient::approve_all`]. One failing target never
    hides another's result.
    """
    answered: typing.List[Interaction]
    already_answered: typing.List[str]
    failed: typing.List[ApproveAllFailure]
    all_already_answered: bool
    def __init__(self, *, answered: typing.List[Interaction], already_answered: typing.List[str], failed: typing.List[ApproveAllFailure], all_already_answered: bool) -> None:
        ...

class RespondOutcome:
    """What an answer did."""
    class CONTINUED(RespondOutcome):
        """Recorded; the turn continues as `execution_id` (`pending_delivery`, `running`; or
        `recoverable` when its delivery failed: `resume_continuation`), driven by the
        command `command_id`.
        """
        interaction: Interaction
        command_id: str
        command_state: str
        execution_id: str
        execution_state: str
        def __init__(self, interaction: Interaction, command_id: str, command_state: str, execution_id: str, execution_state: str) -> None:
            ...
    class ALREADY_RECORDED(RespondOutcome):
        """The same verdict was already recorded; nothing new was created."""
        interaction: Interaction
        execution_id: str
        execution_state: str
        def __init__(self, interaction: Interaction, execution_id: str, execution_state: str) -> None:
            ...
    class AWAITING_OTHER_GATES(RespondOutcome):
        """Recorded; the turn waits for its other gates."""
        interaction: Interaction
        execution_id: str
        def __init__(self, interaction: Interaction, execution_id: str) -> None:
            ...
    class ANSWERED(RespondOutcome):
        """A legacy host recorded the answer; it says nothing of the continuation."""
        interaction: Interaction
        def __init__(self, interaction: Interaction) -> None:
            ...
    def is_CONTINUED(self) -> bool:
        ...
    def is_continued(self) -> bool:
        ...
    def is_ALREADY_RECORDED(self) -> bool:
        ...
    def is_already_recorded(self) -> bool:
        ...
    def is_AWAITING_OTHER_GATES(self) -> bool:
        ...
    def is_awaiting_other_gates(self) -> bool:
        ...
    def is_ANSWERED(self) -> bool:
        ...
    def is_answered(self) -> bool:
        ...

class GateFailure:
    """A failure reported inside a result rather than thrown (one gate of
    [`GatehouseClient::approve_gates`](crate::GatehouseClient::approve_gates)): the error's
    kind, texts and retry flag, exactly as the thrown [`GatehouseError`] would carry them.
    """
    kind: GatehouseErrorKind
    msg: str
    details: typing.Optional[str]
    retryable: bool
    def __init__(self, *, kind: GatehouseErrorKind, msg: str, details: typing.Optional[str], retryable: bool) -> None:
        ...

class GateResult:
    """How one gate of [`GatehouseClient::approve_gates`] went."""
    class ANSWERED(GateResult):
        """Its answer was recorded: what the request that carried it did (every gate of one
        turn shares its request's outcome, whose `interaction` is the request's first gate).
        """
        outcome: RespondOutcome
        def __init__(self, outcome: RespondOutcome) -> None:
            ...
    class FAILED(GateResult):
        """Its answer was not recorded; `failure.kind` says why (`AlreadyAnswered`: settled
        elsewhere; `StaleExecution`: the turn moved on, refresh; ...).
        """
        failure: GateFailure
        def __init__(self, failure: GateFailure) -> None:
            ...
    def is_ANSWERED(self) -> bool:
        ...
    def is_answered(self) -> bool:
        ...
    def is_FAILED(self) -> bool:
        ...
    def is_failed(self) -> bool:
        ...

class GateReport:
    """One gate's line in an [`ApproveGatesReport`]."""
    interaction_id: str
    turn_id: typing.Optional[str]
    result: GateResult
    def __init__(self, *, interaction_id: str, turn_id: typing.Optional[str], result: GateResult) -> None:
        ...

class ApproveGatesReport:
    """The outcome of [`GatehouseClient::approve_gates`]: one line per distinct gate, grouped
    by the request that answered it. One failing gate never hides another's result.
    """
    gates: typing.List[GateReport]
    all_already_answered: bool
    def __init__(self, *, gates: typing.List[GateReport], all_already_answered: bool) -> None:
        ...

class Capability:
    """A capability a host may or may not serve."""
    class INTERACTIONS(Capability):
        """The interaction endpoints."""
        def __init__(self) -> None:
            ...
    class INTERACTION_WATCH(Capability):
        """The interaction watch stream."""
        def __init__(self) -> None:
            ...
    class INVOKE(Capability):
        """The service tier (invoke)."""
        def __init__(self) -> None:
            ...
    class RUNS(Capability):
        """The runner tier (`/run`)."""
        def __init__(self) -> None:
            ...
    class EXECUTION(Capability):
        """Execution sessions and interventions."""
        def __init__(self) -> None:
            ...
    class EXECUTION_EVENT_STREAM(Capability):
        """The execution event stream."""
        def __init__(self) -> None:
            ...
    class INTERACTION_BATCH(Capability):
        """Many gates answered in one request (approve-all uses it when served)."""
        def __init__(self) -> None:
            ...
    class ANSWER_DIGEST(Capability):
        """A respond carrying the gate's digest is checked (`StaleGate` when the gate
        changed after it was read); without it the answer is not bound to what was shown.
        """
        def __init__(self) -> None:
            ...
    class UNKNOWN(Capability):
        """A capability this version does not know (a newer host), kept as the host wrote it."""
        value: str
        def __init__(self, value: str) -> None:
            ...
    def is_INTERACTIONS(self) -> bool:
        ...
    def is_interactions(self) -> bool:
        ...
    def is_INTERACTION_WATCH(self) -> bool:
        ...
    def is_interaction_watch(self) -> bool:
        ...
    def is_INVOKE(self) -> bool:
        ...
    def is_invoke(self) -> bool:
        ...
    def is_RUNS(self) -> bool:
        ...
    def is_runs(self) -> bool:
        ...
    def is_EXECUTION(self) -> bool:
        ...
    def is_execution(self) -> bool:
        ...
    def is_EXECUTION_EVENT_STREAM(self) -> bool:
        ...
    def is_execution_event_stream(self) -> bool:
        ...
    def is_INTERACTION_BATCH(self) -> bool:
        ...
    def is_interaction_batch(self) -> bool:
        ...
    def is_ANSWER_DIGEST(self) -> bool:
        ...
    def is_answer_digest(self) -> bool:
        ...
    def is_UNKNOWN(self) -> bool:
        ...
    def is_unknown(self) -> bool:
        ...

class Capabilities:
    """What a host serves."""
    service: str
    version: str
    capabilities: typing.List[Capability]
    def __init__(self, *, service: str, version: str, capabilities: typing.List[Capability]) -> None:
        ...

class Checkpoint:
    """Where in a run an intervention may be applied."""
    class PRE_STEP(Checkpoint):
        """Before the next inference step."""
        def __init__(self) -> None:
            ...
    class POST_OUTPUT(Checkpoint):
        """After model output, before continuation."""
        def __init__(self) -> None:
            ...
    class PRE_ACTION(Checkpoint):
        """Before a protected external action."""
        def __init__(self) -> None:
            ...
    class UNKNOWN(Checkpoint):
        """A checkpoint this library does not know, kept as sent (and sent as given: the
        host decides whether it knows it).
        """
        value: str
        def __init__(self, value: str) -> None:
            ...
    def is_PRE_STEP(self) -> bool:
        ...
    def is_pre_step(self) -> bool:
        ...
    def is_POST_OUTPUT(self) -> bool:
        ...
    def is_post_output(self) -> bool:
        ...
    def is_PRE_ACTION(self) -> bool:
        ...
    def is_pre_action(self) -> bool:
        ...
    def is_UNKNOWN(self) -> bool:
        ...
    def is_unknown(self) -> bool:
        ...

class CheckpointProgress:
    """How far a run got through its checkpoints."""
    pre_step: int
    post_output: int
    pre_action: int
    last: typing.Optional[Checkpoint]
    def __init__(self, *, pre_step: int, post_output: int, pre_action: int, last: typing.Optional[Checkpoint]) -> None:
        ...

Duration = datetime.timedelta

class Upstream(enum.Enum):
    """Which kind of host the base URL is."""
    GATEHOUSE = 0
    AGENTPLAT = 1
    AGENTA = 2

class AgentaContract(enum.Enum):
    """Which form of Agenta's session contract a host speaks."""
    DURABLE = 0
    LEGACY = 1

class ClientConfig:
    """How to reach a Gatehouse-compatible control plane."""
    base_url: str
    def __init__(self, *, base_url: str, api_key: typing.Optional[str] = ..., project_id: typing.Optional[str] = ..., timeout: typing.Optional[Duration] = ..., upstream: typing.Optional[Upstream] = ..., tenant: typing.Optional[str] = ..., participant_id: typing.Optional[str] = ..., agenta_contract: typing.Optional[AgentaContract] = ...) -> None:
        ...

class ExecutionEventType:
    """Kinds of execution-session event."""
    class SESSION_OPENED(ExecutionEventType):
        """The session was opened for a run."""
        def __init__(self) -> None:
            ...
    class INTERVENTION_REQUESTED(ExecutionEventType):
        """An intervention was requested."""
        def __init__(self) -> None:
            ...
    class INTERVENTION_CLAIMED(ExecutionEventType):
        """A dispatcher claimed an intervention."""
        def __init__(self) -> None:
            ...
    class INTERVENTION_APPLIED(ExecutionEventType):
        """An intervention was applied: the evidence."""
        def __init__(self) -> None:
            ...
    class INTERVENTION_REJECTED(ExecutionEventType):
        """An intervention was rejected."""
        def __init__(self) -> None:
            ...
    class SESSION_RECONCILED(ExecutionEventType):
        """The run ended and the session was reconciled."""
        def __init__(self) -> None:
            ...
    class UNKNOWN(ExecutionEventType):
        """An event type this library does not know, kept as sent."""
        value: str
        def __init__(self, value: str) -> None:
            ...
    def is_SESSION_OPENED(self) -> bool:
        ...
    def is_session_opened(self) -> bool:
        ...
    def is_INTERVENTION_REQUESTED(self) -> bool:
        ...
    def is_intervention_requested(self) -> bool:
        ...
    def is_INTERVENTION_CLAIMED(self) -> bool:
        ...
    def is_intervention_claimed(self) -> bool:
        ...
    def is_INTERVENTION_APPLIED(self) -> bool:
        ...
    def is_intervention_applied(self) -> bool:
        ...
    def is_INTERVENTION_REJECTED(self) -> bool:
        ...
    def is_intervention_rejected(self) -> bool:
        ...
    def is_SESSION_RECONCILED(self) -> bool:
        ...
    def is_session_reconciled(self) -> bool:
        ...
    def is_UNKNOWN(self) -> bool:
        ...
    def is_unknown(self) -> bool:
        ...

class ExecutionEvent:
    """One persisted event of an execution session."""
    sequence: int
    event_type: ExecutionEventType
    occurred_at: typing.Optional[Timestamp]
    operation_id: typing.Optional[str]
    checkpoint: typing.Optional[Checkpoint]
    details: typing.Optional[JsonText]
    def __init__(self, *, sequence: int, event_type: ExecutionEventType, occurred_at: typing.Optional[Timestamp], operation_id: typing.Optional[str], checkpoint: typing.Optional[Checkpoint], details: typing.Optional[JsonText]) -> None:
        ...

class ExecutionSessionStatus:
    """Status of an execution session."""
    class ACTIVE(ExecutionSessionStatus):
        """The run is going."""
        def __init__(self) -> None:
            ...
    class PAUSED(ExecutionSessionStatus):
        """The run is parked (e.g. at an approval gate)."""
        def __init__(self) -> None:
            ...
    class COMPLETED(ExecutionSessionStatus):
        """The run finished."""
        def __init__(self) -> None:
            ...
    class FAILED(ExecutionSessionStatus):
        """The run failed."""
        def __init__(self) -> None:
            ...
    class CANCELED(ExecutionSessionStatus):
        """The run was cancelled (including by a `stop` intervention)."""
        def __init__(self) -> None:
            ...
    class UNKNOWN(ExecutionSessionStatus):
        """A status this library does not know (a newer server's), kept as sent."""
        value: str
        def __init__(self, value: str) -> None:
            ...
    def is_ACTIVE(self) -> bool:
        ...
    def is_active(self) -> bool:
        ...
    def is_PAUSED(self) -> bool:
        ...
    def is_paused(self) -> bool:
        ...
    def is_COMPLETED(self) -> bool:
        ...
    def is_completed(self) -> bool:
        ...
    def is_FAILED(self) -> bool:
        ...
    def is_failed(self) -> bool:
        ...
    def is_CANCELED(self) -> bool:
        ...
    def is_canceled(self) -> bool:
        ...
    def is_UNKNOWN(self) -> bool:
        ...
    def is_unknown(self) -> bool:
        ...

class SessionOutcome:
    """How a run ended."""
    status: ExecutionSessionStatus
    reason: typing.Optional[str]
    ended_at: typing.Optional[Timestamp]
    def __init__(self, *, status: ExecutionSessionStatus, reason: typing.Optional[str], ended_at: typing.Optional[Timestamp]) -> None:
        ...

class InterventionStatus:
    """Status of an intervention. `Pending` means requested, nothing more."""
    class PENDING(InterventionStatus):
        """Requested, not yet claimed."""
        def __init__(self) -> None:
            ...
    class DISPATCHING(InterventionStatus):
        """Claimed by a dispatcher under a lease."""
        def __init__(self) -> None:
            ...
    class APPLIED(InterventionStatus):
        """Applied at its checkpoint."""
        def __init__(self) -> None:
            ...
    class REJECTED(InterventionStatus):
        """Not applied, with a reason."""
        def __init__(self) -> None:
            ...
    class UNKNOWN(InterventionStatus):
        """A status this library does not know, kept as sent: not known to be applied."""
        value: str
        def __init__(self, value: str) -> None:
            ...
    def is_PENDING(self) -> bool:
        ...
    def is_pending(self) -> bool:
        ...
    def is_DISPATCHING(self) -> bool:
        ...
    def is_dispatching(self) -> bool:
        ...
    def is_APPLIED(self) -> bool:
        ...
    def is_applied(self) -> bool:
        ...
    def is_REJECTED(self) -> bool:
        ...
    def is_rejected(self) -> bool:
        ...
    def is_UNKNOWN(self) -> bool:
        ...
    def is_unknown(self) -> bool:
        ...

class Intervention:
    """One run intervention on an execution session."""
    operation_id: str
    requested_by_participant_id: str
    instruction: str
    checkpoint: Checkpoint
    status: InterventionStatus
    attempts: int
    requested_at: typing.Optional[Timestamp]
    resolved_at: typing.Optional[Timestamp]
    resolution_reason: typing.Optional[str]
    def __init__(self, *, operation_id: str, requested_by_participant_id: str, instruction: str, checkpoint: Checkpoint, status: InterventionStatus, attempts: int, requested_at: typing.Optional[Timestamp], resolved_at: typing.Optional[Timestamp], resolution_reason: typing.Optional[str]) -> None:
        ...

class ExecutionSession:
    """An execution session: one run bound to a room, task, participant and agent revision."""
    tenant_id: str
    room_id: str
    session_id: str
    run_id: str
    task_id: str
    participant_id: str
    agent_revision_id: typing.Optional[str]
    agent_revision_digest: typing.Optional[str]
    predecessor_session_id: typing.Optional[str]
    runtime_profile: typing.Optional[str]
    authority_revision: typing.Optional[str]
    role_revision: typing.Optional[str]
    revision: int
    status: ExecutionSessionStatus
    checkpoint_progress: typing.Optional[CheckpointProgress]
    outcome: typing.Optional[SessionOutcome]
    interventions: typing.List[Intervention]
    events: typing.List[ExecutionEvent]
    created_at: typing.Optional[Timestamp]
    updated_at: typing.Optional[Timestamp]
    def __init__(self, *, tenant_id: str, room_id: str, session_id: str, run_id: str, task_id: str, participant_id: str, agent_revision_id: typing.Optional[str], agent_revision_digest: typing.Optional[str], predecessor_session_id: typing.Optional[str], runtime_profile: typing.Optional[str], authority_revision: typing.Optional[str], role_revision: typing.Optional[str], revision: int, status: ExecutionSessionStatus, checkpoint_progress: typing.Optional[CheckpointProgress], outcome: typing.Optional[SessionOutcome], interventions: typing.List[Intervention], events: typing.List[ExecutionEvent], created_at: typing.Optional[Timestamp], updated_at: typing.Optional[Timestamp]) -> None:
        ...

class InboxGate:
    """A pending gate and the name of the host it came from: answer it with that host's
    client.
    """
    host: str
    gate: Interaction
    def __init__(self, *, host: str, gate: Interaction) -> None:
        ...

class InboxHostState:
    """What one host did for a page."""
    class READ(InboxHostState):
        """The host answered: `gates` of the page's gates are its; `more` when the next page
        reads on.
        """
        gates: int
        more: bool
        def __init__(self, gates: int, more: bool) -> None:
            ...
    class FAILED(InboxHostState):
        """The host's call failed (down, refused, garbage): none of its gates are in the
        page, and the next page tries it again from the same place.
        """
        kind: GatehouseErrorKind
        msg: str
        details: typing.Optional[str]
        retryable: bool
        def __init__(self, kind: GatehouseErrorKind, msg: str, details: typing.Optional[str], retryable: bool) -> None:
            ...
    class DONE(InboxHostState):
        """Every pending gate of this host was read by an earlier page."""
        def __init__(self) -> None:
            ...
    def is_READ(self) -> bool:
        ...
    def is_read(self) -> bool:
        ...
    def is_FAILED(self) -> bool:
        ...
    def is_failed(self) -> bool:
        ...
    def is_DONE(self) -> bool:
        ...
    def is_done(self) -> bool:
        ...

class InboxHostReport:
    """One host's line of a page."""
    host: str
    state: InboxHostState
    def __init__(self, *, host: str, state: InboxHostState) -> None:
        ...

class InboxPage:
    """One page of an inbox."""
    gates: typing.List[InboxGate]
    hosts: typing.List[InboxHostReport]
    next_cursor: typing.Optional[str]
    def __init__(self, *, gates: typing.List[InboxGate], hosts: typing.List[InboxHostReport], next_cursor: typing.Optional[str]) -> None:
        ...

class TurnStatus(enum.Enum):
    """How an invoked turn ended."""
    PARKED = 0
    COMPLETED = 1
    FAILED = 2

class InvokeOutcome:
    """The answer to [`GatehouseClient::invoke_tool`]: the turn and the gates it opened."""
    status: TurnStatus
    session_id: str
    turn_id: str
    interaction_ids: typing.List[str]
    output: typing.Optional[str]
    def __init__(self, *, status: TurnStatus, session_id: str, turn_id: str, interaction_ids: typing.List[str], output: typing.Optional[str]) -> None:
        ...

class InterventionState:
    """Where an intervention stands, as far as the server's persisted state shows."""
    class REQUESTED(InterventionState):
        """Requested, nothing more: NOT evidence that anything stopped or changed."""
        def __init__(self) -> None:
            ...
    class DISPATCHING(InterventionState):
        """A dispatcher claimed it and is applying it."""
        attempts: int
        def __init__(self, attempts: int) -> None:
            ...
    class APPLIED(InterventionState):
        """Applied at its checkpoint; `evidence` is the persisted `intervention_applied` event."""
        evidence: ExecutionEvent
        def __init__(self, evidence: ExecutionEvent) -> None:
            ...
    class REJECTED(InterventionState):
        """Not applied."""
        reason: str
        def __init__(self, reason: str) -> None:
            ...
    class UNKNOWN(InterventionState):
        """A status this library does not know (a newer server's): not known to be applied."""
        status: str
        def __init__(self, status: str) -> None:
            ...
    def is_REQUESTED(self) -> bool:
        ...
    def is_requested(self) -> bool:
        ...
    def is_DISPATCHING(self) -> bool:
        ...
    def is_dispatching(self) -> bool:
        ...
    def is_APPLIED(self) -> bool:
        ...
    def is_applied(self) -> bool:
        ...
    def is_REJECTED(self) -> bool:
        ...
    def is_rejected(self) -> bool:
        ...
    def is_UNKNOWN(self) -> bool:
        ...
    def is_unknown(self) -> bool:
        ...

class RequestedIntervention:
    """The answer to [`GatehouseClient::request_intervention`]: the request was recorded.
    Keep `operation_id` to wait for it (or to replay the request after a crash).
    """
    room_id: str
    session_id: str
    operation_id: str
    state: InterventionState
    session: ExecutionSession
    def __init__(self, *, room_id: str, session_id: str, operation_id: str, state: InterventionState, session: ExecutionSession) -> None:
        ...

class SessionEvent:
    """One durable event of a session's log."""
    sequence: typing.Optional[int]
    execution_id: str
    event_type: str
    created_at: typing.Optional[Timestamp]
    payload: JsonText
    def __init__(self, *, sequence: typing.Optional[int], execution_id: str, event_type: str, created_at: typing.Optional[Timestamp], payload: JsonText) -> None:
        ...

class SessionSnapshot:
    """A session's state in one read."""
    execution_id: typing.Optional[str]
    execution_state: str
    pending_interactions: typing.List[Interaction]
    latest_sequence: typing.Optional[int]
    history_complete: typing.Optional[bool]
    durable_approvals: bool
    def __init__(self, *, execution_id: typing.Optional[str], execution_state: str, pending_interactions: typing.List[Interaction], latest_sequence: typing.Optional[int], history_complete: typing.Optional[bool], durable_approvals: bool) -> None:
        ...

class StopRequested:
    """A Stop the host recorded. Recorded is not stopped: `wait_for_stop` says how it settled."""
    command_id: str
    command_state: str
    execution_id: typing.Optional[str]
    execution_state: str
    idempotency_key: str
    is_stopping: bool
    def __init__(self, *, command_id: str, command_state: str, execution_id: typing.Optional[str], execution_state: str, idempotency_key: str, is_stopping: bool) -> None:
        ...

class StreamFailure:
    """Why a watch is reconnecting: the failure, as an [`ApproveAllFailure`](crate::ApproveAllFailure)
    names one (kind, sentence, detail, whether a retry helps).
    """
    kind: GatehouseErrorKind
    msg: str
    details: typing.Optional[str]
    retryable: bool
    def __init__(self, *, kind: GatehouseErrorKind, msg: str, details: typing.Optional[str], retryable: bool) -> None:
        ...

class GatehouseError(Exception):
    """Everything that can go wrong in a Gatehouse call."""
    @property
    def kind(self) -> GatehouseErrorKind:
        """Which kind of error this is, without its text (as `GateFailure.kind`)."""
        ...
    @property
    def retryable(self) -> bool:
        """True when the same call may succeed if tried again later (as `GateFailure.retryable`)."""
        ...
    class AlreadyAnswered(GatehouseError):
        """The interaction is no longer pending: another device (or the runner) answered it,
        or the gate was cancelled. Benign for a person: refresh and move on.
        """
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class NotFound(GatehouseError):
        """The interaction, execution session or other entity does not exist."""
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class RevisionConflict(GatehouseError):
        """An execution-session write carried a stale revision: re-read and decide again."""
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class OperationConflict(GatehouseError):
        """The operation id is already bound to a different request."""
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class DispatchOwnershipLost(GatehouseError):
        """An intervention dispatcher lost its lease before resolving."""
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class ResolvedDifferently(GatehouseError):
        """The intervention was already resolved with a different outcome."""
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class InterventionLimit(GatehouseError):
        """The execution session already holds the most interventions it may (256)."""
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class SessionNotActive(GatehouseError):
        """The execution session is not active (its run ended): nothing can be steered."""
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class TurnNotContinuable(GatehouseError):
        """The turn the gate belongs to can no longer be continued (Agenta's durable respond:
        a Stop won, another answer continued it, or it was lost): the answer cannot apply.
        Refresh the session.
        """
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class StaleExecution(GatehouseError):
        """The interaction belongs to another execution than the one the answer expected:
        refresh and answer the gate of the current turn.
        """
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class IdempotencyKeyReused(GatehouseError):
        """The idempotency key was already used for another request. Never retried: send
        the new request under a new key.
        """
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class StaleGate(GatehouseError):
        """The gate changed after the app read it (its digest is not the one the answer
        carried): nothing was recorded. Read the gate again, show it, and answer that.
        """
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class AnswerOwnerUnknown(GatehouseError):
        """The gate is answered, and this host cannot show whose answer landed (the answer's
        outcome was lost; the row records no answer to compare with ours). Show the gate
        as answered, never as "answered on another device".
        """
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class ProjectMismatch(GatehouseError):
        """The host answered with another project's rows than the one asked for (Agenta
        takes the project from its API key): nothing of them is shown.
        """
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class Conflict(GatehouseError):
        """Any other conflict (409); `details` starts with Gatehouse's machine code when the
        server sent one (e.g. `INVALID_STATE`).
        """
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class CapabilityUnavailable(GatehouseError):
        """The host does not serve this capability (for example execution sessions on a
        `--no-execution` server). A fact about the host: retrying will not help.
        """
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class Unauthorized(GatehouseError):
        """The API key was missing or not accepted (401)."""
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class Forbidden(GatehouseError):
        """Permission denied (403): the API key, or on AgentPlat the requesting participant
        (not a human room participant, or without `run.intervene`), may not do this.
        """
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class TenantRejected(GatehouseError):
        """The host needs a tenant it was not given (set `tenant` in the config), or refuses
        the one given.
        """
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class Validation(GatehouseError):
        """The request failed the server's validation (400 `VALIDATION_ERROR`, 422), e.g. an
        invalid checkpoint.
        """
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class Invalid(GatehouseError):
        """The request was refused as malformed (400 and other 4xx), or an argument given to
        this library was not valid (a bad base URL, text that is not JSON).
        """
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class PayloadTooLarge(GatehouseError):
        """The request body is over the server's limit (413)."""
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class RateLimited(GatehouseError):
        """The server asked to slow down (429) and the client's retries ran out."""
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class Server(GatehouseError):
        """The server failed (5xx), or answered with a status nobody expected."""
        msg: str
        details: typing.Optional[str]
        status: int
        def __init__(self, msg: str, details: typing.Optional[str], status: int) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class Transport(GatehouseError):
        """The request did not reach the server, or the connection broke."""
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class Decode(GatehouseError):
        """The server answered with a body this library could not read."""
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class StreamFailed(GatehouseError):
        """The server's event stream failed (its `agentplat.failed` frame)."""
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class AcceptedUnreadable(GatehouseError):
        """The host ACCEPTED the write (2xx): it landed; only its answer could not be read.
        Do not report it as failed: read the state again.
        """
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class Timeout(GatehouseError):
        """The call did not finish within the configured timeout."""
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class Config(GatehouseError):
        """The client was configured with something unusable (a bad base URL, an API key
        that is not a valid header value). Nothing was sent.
        """
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...
    class Internal(GatehouseError):
        """A bug inside this library (a caught panic, or a runtime that could not start).
        Reported instead of crashing the app.
        """
        msg: str
        details: typing.Optional[str]
        def __init__(self, msg: str, details: typing.Optional[str]) -> None:
            ...
        def error_kind(self) -> GatehouseErrorKind:
            """The kind of this error, without its text (the `kind` property in every language
            reads it).
            """
            ...
        def is_retryable(self) -> bool:
            """True when the same call may succeed if tried again later (the `retryable`
            property in every language reads it).
            """
            ...

class InterventionOutcome:
    """How waiting for an intervention ended. Only `Applied` is a success, and it always
    carries the server's persisted evidence.
    """
    class APPLIED(InterventionOutcome):
        """Applied at its checkpoint."""
        evidence: ExecutionEvent
        def __init__(self, evidence: ExecutionEvent) -> None:
            ...
    class REJECTED(InterventionOutcome):
        """Rejected by the server (e.g. the run ended before the checkpoint)."""
        reason: str
        def __init__(self, reason: str) -> None:
            ...
    class UNRESOLVED_AT_TERMINAL(InterventionOutcome):
        """The run ended while the intervention was still unresolved."""
        status: ExecutionSessionStatus
        def __init__(self, status: ExecutionSessionStatus) -> None:
            ...
    class TIMED_OUT(InterventionOutcome):
        """Neither happened within the timeout (the run may still reach the checkpoint)."""
        def __init__(self) -> None:
            ...
    def is_APPLIED(self) -> bool:
        ...
    def is_applied(self) -> bool:
        ...
    def is_REJECTED(self) -> bool:
        ...
    def is_rejected(self) -> bool:
        ...
    def is_UNRESOLVED_AT_TERMINAL(self) -> bool:
        ...
    def is_unresolved_at_terminal(self) -> bool:
        ...
    def is_TIMED_OUT(self) -> bool:
        ...
    def is_timed_out(self) -> bool:
        ...

class LifecycleState:
    """A turn started or ended."""
    class RUNNING(LifecycleState):
        """A turn is running."""
        def __init__(self) -> None:
            ...
    class ENDED(LifecycleState):
        """The turn ended (completed, parked at a gate, or failed)."""
        def __init__(self) -> None:
            ...
    class UNKNOWN(LifecycleState):
        """A state this version does not know (a newer server), kept as the server wrote it."""
        value: str
        def __init__(self, value: str) -> None:
            ...
    def is_RUNNING(self) -> bool:
        ...
    def is_running(self) -> bool:
        ...
    def is_ENDED(self) -> bool:
        ...
    def is_ended(self) -> bool:
        ...
    def is_UNKNOWN(self) -> bool:
        ...
    def is_unknown(self) -> bool:
        ...

class ListenerError(Exception):
    """A [`WatchListener`] method failed (in Kotlin, Swift or Python: it threw). The watch
    ignores it and goes on.

    Without an error type uniffi would turn a foreign exception into a Rust panic; with
    it, the exception arrives as a value (`From<UnexpectedUniFFICallbackError>`).
    """
    class Failed(ListenerError):
        """The listener failed; `reason` is the foreign exception's text."""
        reason: str
        def __init__(self, reason: str) -> None:
            ...

class SessionEventUpdate:
    """One item of a [`SessionEventWatch`]."""
    class CONNECTED(SessionEventUpdate):
        """(Re)connected, replaying the durable events after `after`."""
        after: int
        def __init__(self, after: int) -> None:
            ...
    class EVENT(SessionEventUpdate):
        """A durable event (each sequence once, across reconnects)."""
        event: SessionEvent
        def __init__(self, event: SessionEvent) -> None:
            ...
    class READY(SessionEventUpdate):
        """The replay is done; live frames follow."""
        def __init__(self) -> None:
            ...
    class FRAME(SessionEventUpdate):
        """A live frame (not replayed)."""
        execution_id: str
        frame_type: str
        payload: JsonText
        def __init__(self, execution_id: str, frame_type: str, payload: JsonText) -> None:
            ...
    class RECONNECTING(SessionEventUpdate):
        """The connection dropped; the stream reconnects after the last sequence seen."""
        attempt: int
        failure: StreamFailure
        def __init__(self, attempt: int, failure: StreamFailure) -> None:
            ...
    class CLOSED(SessionEventUpdate):
        """The host closed the stream for good (e.g. `authorization_revoked`); it ends."""
        reason: str
        def __init__(self, reason: str) -> None:
            ...
    def is_CONNECTED(self) -> bool:
        ...
    def is_connected(self) -> bool:
        ...
    def is_EVENT(self) -> bool:
        ...
    def is_event(self) -> bool:
        ...
    def is_READY(self) -> bool:
        ...
    def is_ready(self) -> bool:
        ...
    def is_FRAME(self) -> bool:
        ...
    def is_frame(self) -> bool:
        ...
    def is_RECONNECTING(self) -> bool:
        ...
    def is_reconnecting(self) -> bool:
        ...
    def is_CLOSED(self) -> bool:
        ...
    def is_closed(self) -> bool:
        ...

class StopOutcome:
    """How a Stop settled. Stopped, failed and lost come only from the session's events."""
    class STOPPED(StopOutcome):
        """The turn stopped."""
        execution_id: str
        def __init__(self, execution_id: str) -> None:
            ...
    class NOT_RUNNING(StopOutcome):
        """Nothing was running (or a newer turn had started: the host's answer does not tell)."""
        def __init__(self) -> None:
            ...
    class SUPERSEDED_BY_NEWER_TURN(StopOutcome):
        """The turn ended without a stop event while a newer turn runs."""
        running_execution_id: str
        def __init__(self, running_execution_id: str) -> None:
            ...
    class FAILED(StopOutcome):
        """The turn failed."""
        execution_id: str
        code: str
        error_message: str
        def __init__(self, execution_id: str, code: str, error_message: str) -> None:
            ...
    class LOST(StopOutcome):
        """The turn was lost (its runner went away)."""
        execution_id: str
        reason: str
        def __init__(self, execution_id: str, reason: str) -> None:
            ...
    class UNRESOLVED(StopOutcome):
        """No outcome could be established; read the session again."""
        execution_id: typing.Optional[str]
        state: str
        timed_out: bool
        def __init__(self, execution_id: typing.Optional[str], state: str, timed_out: bool) -> None:
            ...
    def is_STOPPED(self) -> bool:
        ...
    def is_stopped(self) -> bool:
        ...
    def is_NOT_RUNNING(self) -> bool:
        ...
    def is_not_running(self) -> bool:
        ...
    def is_SUPERSEDED_BY_NEWER_TURN(self) -> bool:
        ...
    def is_superseded_by_newer_turn(self) -> bool:
        ...
    def is_FAILED(self) -> bool:
        ...
    def is_failed(self) -> bool:
        ...
    def is_LOST(self) -> bool:
        ...
    def is_lost(self) -> bool:
        ...
    def is_UNRESOLVED(self) -> bool:
        ...
    def is_unresolved(self) -> bool:
        ...

class ToolPermission(enum.Enum):
    """What an invoked turn's permissions decide for its tool call."""
    ASK = 0
    ALLOW = 1
    DENY = 2

class WatchEvent:
    """One event of a session's watch stream."""
    class READY(WatchEvent):
        """The server says the stream is live."""
        session_id: typing.Optional[str]
        def __init__(self, session_id: typing.Optional[str]) -> None:
            ...
    class INTERACTION(WatchEvent):
        """An interaction of the session changed status: a gate opened (`Pending`) or closed."""
        session_id: str
        status: InteractionStatus
        interaction_id: typing.Optional[str]
        interaction: typing.Optional[Interaction]
        def __init__(self, session_id: str, status: InteractionStatus, interaction_id: typing.Optional[str], interaction: typing.Optional[Interaction]) -> None:
            ...
    class RECORDS_CHANGED(WatchEvent):
        """The session's transcript changed."""
        session_id: str
        def __init__(self, session_id: str) -> None:
            ...
    class LIFECYCLE(WatchEvent):
        """A turn started or ended."""
        session_id: str
        state: LifecycleState
        def __init__(self, session_id: str, state: LifecycleState) -> None:
            ...
    def is_READY(self) -> bool:
        ...
    def is_ready(self) -> bool:
        ...
    def is_INTERACTION(self) -> bool:
        ...
    def is_interaction(self) -> bool:
        ...
    def is_RECORDS_CHANGED(self) -> bool:
        ...
    def is_records_changed(self) -> bool:
        ...
    def is_LIFECYCLE(self) -> bool:
        ...
    def is_lifecycle(self) -> bool:
        ...

class WatchUpdate:
    """One element of a session's watch sequence."""
    class CONNECTED(WatchUpdate):
        """The stream (re)connected: re-query the session's gates now (events are
        notifications, not a log; some may have been missed while disconnected).
        """
        def __init__(self) -> None:
            ...
    class EVENT(WatchUpdate):
        """An event from the server."""
        event: WatchEvent
        def __init__(self, event: WatchEvent) -> None:
            ...
    class RECONNECTING(WatchUpdate):
        """The connection failed or dropped; the stream reconnects with backoff by itself."""
        attempt: int
        failure: StreamFailure
        def __init__(self, attempt: int, failure: StreamFailure) -> None:
            ...
    def is_CONNECTED(self) -> bool:
        ...
    def is_connected(self) -> bool:
        ...
    def is_EVENT(self) -> bool:
        ...
    def is_event(self) -> bool:
        ...
    def is_RECONNECTING(self) -> bool:
        ...
    def is_reconnecting(self) -> bool:
        ...

class ExecutionEventWatchProtocol(typing.Protocol):
    """An execution session's events as a pull stream, each once in sequence order; ends
    (`None`) after the session is reconciled. Cold, nothing read ahead, reconnects by
    itself resuming after the last event seen.
    """
    def cancel(self) -> None:
        """Stop: a pending `next()` returns `None`, the connection closes."""
        ...
    async def next(self) -> typing.Optional[ExecutionEvent]:
        """The next event, or `None` when the log is complete (the session was reconciled)
        or the stream was cancelled. Call from one task at a time.
        """
        ...

class ExecutionEventWatch(ExecutionEventWatchProtocol):
    """An execution session's events as a pull stream, each once in sequence order; ends
    (`None`) after the session is reconciled. Cold, nothing read ahead, reconnects by
    itself resuming after the last event seen.
    """
    def cancel(self) -> None:
        """Stop: a pending `next()` returns `None`, the connection closes."""
        ...
    async def next(self) -> typing.Optional[ExecutionEvent]:
        """The next event, or `None` when the log is complete (the session was reconciled)
        or the stream was cancelled. Call from one task at a time.
        """
        ...

class SessionEventWatchProtocol(typing.Protocol):
    """A session's durable events, then its live frames, as a pull stream
    ([`GatehouseClient::open_session_events`](crate::GatehouseClient::open_session_events)):
    `next()` until `None`, `cancel()` to stop. Nothing is read ahead.
    """
    def cancel(self) -> None:
        """Stop: a pending `next()` returns `None`; the connection is closed."""
        ...
    async def next(self) -> typing.Optional[SessionEventUpdate]:
        """The next update; `None` once the stream ended or was cancelled."""
        ...

class SessionEventWatch(SessionEventWatchProtocol):
    """A session's durable events, then its live frames, as a pull stream
    ([`GatehouseClient::open_session_events`](crate::GatehouseClient::open_session_events)):
    `next()` until `None`, `cancel()` to stop. Nothing is read ahead.
    """
    def cancel(self) -> None:
        """Stop: a pending `next()` returns `None`; the connection is closed."""
        ...
    async def next(self) -> typing.Optional[SessionEventUpdate]:
        """The next update; `None` once the stream ended or was cancelled."""
        ...

class SessionWatchProtocol(typing.Protocol):
    """A session's gates as a pull stream: await [`SessionWatch::next`] until it returns
    `None`. Cold (the first `next()` connects), nothing read ahead, reconnects by itself
    (each reconnect is a [`WatchUpdate::Reconnecting`] then [`WatchUpdate::Connected`]);
    a failure a retry cannot fix (unauthorized, bad session id, no watch capability) is
    thrown once, then the stream is over. The Swift, Kotlin and Python async sequences
    are built on it.
    """
    def cancel(self) -> None:
        """Stop: a pending `next()` returns `None`, the connection closes, every later
        `next()` returns `None`. Calling it twice is harmless.
        """
        ...
    async def next(self) -> typing.Optional[WatchUpdate]:
        """The next update, or `None` when the stream is over (cancelled, or ended by the
        server after a failure already thrown). Call from one task at a time (a second
        concurrent call waits for the first).
        """
        ...

class SessionWatch(SessionWatchProtocol):
    """A session's gates as a pull stream: await [`SessionWatch::next`] until it returns
    `None`. Cold (the first `next()` connects), nothing read ahead, reconnects by itself
    (each reconnect is a [`WatchUpdate::Reconnecting`] then [`WatchUpdate::Connected`]);
    a failure a retry cannot fix (unauthorized, bad session id, no watch capability) is
    thrown once, then the stream is over. The Swift, Kotlin and Python async sequences
    are built on it.
    """
    def cancel(self) -> None:
        """Stop: a pending `next()` returns `None`, the connection closes, every later
        `next()` returns `None`. Calling it twice is harmless.
        """
        ...
    async def next(self) -> typing.Optional[WatchUpdate]:
        """The next update, or `None` when the stream is over (cancelled, or ended by the
        server after a failure already thrown). Call from one task at a time (a second
        concurrent call waits for the first).
        """
        ...

class WatchListener:
    """Implemented by the app (Kotlin, Swift, Python) to hear a watched session.

    Methods are called from a background thread, one at a time, in stream order. They
    should return quickly (post to the UI thread). An exception thrown by a method
    arrives as a [`ListenerError`] and is ignored; the watch goes on.
    """
    def on_connected(self) -> None:
        """The stream (re)connected. Re-query the session's gates now: events are
        notifications, not a log, and some may have been missed while disconnected.
        """
        ...
    def on_event(self, event: WatchEvent) -> None:
        """An event from the server."""
        ...
    def on_reconnecting(self, attempt: int, error: GatehouseError) -> None:
        """The connection failed or dropped; the watch reconnects with backoff.
        `attempt` counts consecutive failures.
        """
        ...
    def on_closed(self, error: typing.Optional[GatehouseError]) -> None:
        """The watch ended by itself: `error` is set when it hit a failure a retry cannot
        fix (unauthorized, bad session id, no watch capability). Not called after
        `cancel()`.
        """
        ...

class WatchListenerImpl(WatchListener):
    """Implemented by the app (Kotlin, Swift, Python) to hear a watched session.

    Methods are called from a background thread, one at a time, in stream order. They
    should return quickly (post to the UI thread). An exception thrown by a method
    arrives as a [`ListenerError`] and is ignored; the watch goes on.
    """
    def on_connected(self) -> None:
        """The stream (re)connected. Re-query the session's gates now: events are
        notifications, not a log, and some may have been missed while disconnected.
        """
        ...
    def on_event(self, event: WatchEvent) -> None:
        """An event from the server."""
        ...
    def on_reconnecting(self, attempt: int, error: GatehouseError) -> None:
        """The connection failed or dropped; the watch reconnects with backoff.
        `attempt` counts consecutive failures.
        """
        ...
    def on_closed(self, error: typing.Optional[GatehouseError]) -> None:
        """The watch ended by itself: `error` is set when it hit a failure a retry cannot
        fix (unauthorized, bad session id, no watch capability). Not called after
        `cancel()`.
        """
        ...

class WatchHandleProtocol(typing.Protocol):
    """A running watch. `cancel()`, or dropping the handle (Kotlin `close()`, Swift
    deinit, Python garbage collection), stops it and closes the connection.
    """
    def cancel(self) -> None:
        """Stop the watch. When it returns, no listener method is running or will be
        called again (unless called from inside a listener method, which then finishes).
        Calling it twice is harmless.
        """
        ...
    def is_finished(self) -> bool:
        """True once `cancel()` was called or the watch ended by itself."""
        ...

class WatchHandle(WatchHandleProtocol):
    """A running watch. `cancel()`, or dropping the handle (Kotlin `close()`, Swift
    deinit, Python garbage collection), stops it and closes the connection.
    """
    def cancel(self) -> None:
        """Stop the watch. When it returns, no listener method is running or will be
        called again (unless called from inside a listener method, which then finishes).
        Calling it twice is harmless.
        """
        ...
    def is_finished(self) -> bool:
        """True once `cancel()` was called or the watch ended by itself."""
        ...

class GatehouseClientProtocol(typing.Protocol):
    """A client for one control plane and project. Cheap to share between threads; every
    network call is async and throws [`GatehouseError`].
    """
    def agenta_contract(self) -> typing.Optional[AgentaContract]:
        """The form of Agenta's contract this client knows the host to speak (no network):
        pinned in the config, or learned from its capabilities; none while unknown.
        """
        ...
    async def approve_all(self, ids: typing.List[str], approved: bool) -> ApproveAllReport:
        """Answer many gates at once (in parallel, under a bound) with the same verdict.
        Never throws for a single target: each one's outcome is in the report.
        """
        ...
    async def approve_gates(self, gates: typing.List[Interaction], approved: bool, message: typing.Union[object, typing.Optional[str]] = ...) -> ApproveGatesReport:
        """Answer many gates the app listed (`list_pending_interactions`) with one verdict,
        grouped by turn: on a host that speaks Agenta's durable contract, one respond with
        every gate of a turn (at most 100 a request), expecting that turn, so the turn
        continues once with every answer; a gate without a turn alone. On any other host
        as `approve_all` (the batch, or one respond per gate), each answered gate
        `RespondOutcome::Answered`. Never throws for a gate: each one's result is in the
        report. Duplicate gates are answered once.
        """
        ...
    def base_url(self) -> str:
        """The base URL this client talks to."""
        ...
    async def capabilities(self) -> Capabilities:
        """What the host serves (read once, then cached by the client)."""
        ...
    async def get_execution_session(self, room_id: str, session_id: str) -> ExecutionSession:
        """One execution session (the run it binds, its interventions and events). Throws
        `CapabilityUnavailable` on a host without the execution service.
        """
        ...
    async def get_interaction(self, id: str) -> Interaction:
        """One interaction by id."""
        ...
    async def invoke_tool(self, prompt: str, tool: str, args: typing.Union[object, typing.Optional[JsonText]] = ..., permission: typing.Union[object, typing.Optional[ToolPermission]] = ..., session_id: typing.Union[object, typing.Optional[str]] = ...) -> InvokeOutcome:
        """Open a gate yourself: run a turn of the reference server's deterministic agent
        that is asked `prompt` and calls `tool` with `args` (JSON text; `{}` when absent)
        under `permission` (`Ask` when absent: the turn parks at a gate, whose id is in
        the outcome's `interaction_ids`). In `session_id`, or a new session the server
        names. For tests, examples and quick starts; a host without the service tier
        (Agenta, AgentPlat) throws `CapabilityUnavailable`. Never retried (an invoke is
        not idempotent).
        """
        ...
    async def list_pending_interactions(self, session_id: typing.Union[object, typing.Optional[str]] = ...) -> typing.List[Interaction]:
        """Every pending interaction of the project (all pages), or of one session."""
        ...
    def open_execution_events(self, room_id: str, session_id: str, after: typing.Union[object, typing.Optional[int]] = ...) -> ExecutionEventWatch:
        """An execution session's events as a pull stream (see [`ExecutionEventWatch`]): from
        the first event, or after sequence `after`; it ends once the session is
        reconciled. The Swift, Kotlin and Python async sequences wrap it.
        """
        ...
    def open_session_events(self, session_id: str, after: int = ...) -> SessionEventWatch:
        """A session's durable events after sequence `after` (0: all), then its live frames:
        a pull stream that resumes after the last sequence seen when the connection drops.
        """
        ...
    def open_session_watch(self, session_id: str) -> SessionWatch:
        """A session's gates as a pull stream (see [`SessionWatch`]): the base of Swift's
        `sessionUpdates` `AsyncThrowingStream`, Kotlin's `sessionUpdates` `Flow` and
        Python's `session_updates` async iterator. Nothing connects until the first
        `next()`.
        """
        ...
    async def request_intervention(self, room_id: str, session_id: str, expected_revision: int, instruction: str, checkpoint: Checkpoint, operation_id: typing.Union[object, typing.Optional[str]] = ..., requested_by_participant_id: typing.Union[object, typing.Optional[str]] = ...) -> RequestedIntervention:
        """Ask the running agent to stop (`instruction` = `stop`) or to take an instruction
        into its next step, at `checkpoint`. `expected_revision` is the session revision
        you last saw (a stale one throws `RevisionConflict`). The answer means
        "requested", nothing more: call `wait_for_intervention` to learn whether it was
        applied. `operation_id` makes a retry replay instead of duplicating; the client
        generates one when absent. `requested_by_participant_id` names who asks on an
        AgentPlat host that does not authenticate the actor (default: the config's
        `participant_id`). Throws `AcceptedUnreadable` when the host accepted the
        request but its answer could not be read: it WAS requested.
        """
        ...
    async def respond_to_gate(self, gate: Interaction, approved: bool, message: typing.Union[object, typing.Optional[str]] = ..., idempotency_key: typing.Union[object, typing.Optional[str]] = ...) -> RespondOutcome:
        """Answer the gate the app displayed (a record from `list_pending_interactions` or
        `get_interaction`), bound to it: the answer carries the digest of that record (its
        id, revision, tool, arguments and call id, computed here as `gate_digest` does),
        so a host that checks it (capability `AnswerDigest`) records it only while the
        gate is still what was shown, else throws `StaleGate` with nothing recorded. Its
        turn is expected and its session read, as `respond_with_outcome` with them. On a
        host without the capability (Agenta, an older Gatehouse) the answer is sent
        without the digest and is not bound.
        """
        ...
    async def respond_to_interaction(self, id: str, approved: bool, message: typing.Union[object, typing.Optional[str]] = ..., tool_call_id: typing.Union[object, typing.Optional[str]] = ..., idempotency_key: typing.Union[object, typing.Optional[str]] = ...) -> Interaction:
        """Answer an approval gate: approve or deny, with an optional message for the agent
        and the tool call being answered. Throws `AlreadyAnswered` when another device
        answered first (benign: refresh). Safe to retry after a transport error: the
        client carries an idempotency key and never reports its own landed answer as
        already answered. Pass your own `idempotency_key` (e.g. one you saved with the
        user's tap) to make a retry after an app restart safe too: the same key replays
        the answer that landed instead of reporting it as already answered.
        """
        ...
    async def respond_with_outcome(self, id: str, approved: bool, message: typing.Union[object, typing.Optional[str]] = ..., tool_call_id: typing.Union[object, typing.Optional[str]] = ..., idempotency_key: typing.Union[object, typing.Optional[str]] = ..., expected_execution_id: typing.Union[object, typing.Optional[str]] = ..., session_id: typing.Union[object, typing.Optional[str]] = ...) -> RespondOutcome:
        """Answer a gate and say what the answer did (every host). On a durable host always
        under an `Idempotency-Key` (this one, or a fresh one), expecting the turn
        `expected_execution_id` (the gate's `turn_id`: the answer never lands on a turn the
        person did not see); `session_id` lets the client read the host's contract.
        """
        ...
    async def resume_continuation(self, session_id: str) -> bool:
        """Deliver again a continuation whose delivery failed; false when there was none."""
        ...
    async def session_snapshot(self, session_id: str) -> SessionSnapshot:
        """A session's snapshot."""
        ...
    async def stop_session(self, session_id: str, expected_execution_id: typing.Union[object, typing.Optional[str]] = ..., idempotency_key: typing.Union[object, typing.Optional[str]] = ...) -> StopRequested:
        """Stop the session's running turn: a recorded command, not yet applied. With
        `expected_execution_id`, refused (`StaleExecution`) when another turn runs now.
        """
        ...
    async def wait_for_intervention(self, room_id: str, session_id: str, operation_id: str, timeout: Duration) -> InterventionOutcome:
        """Wait up to `timeout` for an intervention to be applied (with the server's
        persisted evidence), rejected, or left unresolved by the end of the run.
        """
        ...
    async def wait_for_stop(self, session_id: str, stop: StopRequested, timeout: Duration) -> StopOutcome:
        """Follow a recorded Stop until it settles, at most `timeout`."""
        ...
    def watch_session(self, session_id: str, listener: WatchListener) -> WatchHandle:
        """Watch a session's gates: `listener` hears every (re)connect (revalidate then),
        every event, every reconnect attempt, and the end of the stream. The returned
        handle's `cancel()` (or dropping/closing it) stops the watch.
        """
        ...

class GatehouseClient(GatehouseClientProtocol):
    """A client for one control plane and project. Cheap to share between threads; every
    network call is async and throws [`GatehouseError`].
    """
    def __init__(self, config: ClientConfig) -> None:
        """Build a client. Nothing is sent until the first call; a malformed base URL or
        API key fails here with [`GatehouseError::Config`].
        """
        ...
    def agenta_contract(self) -> typing.Optional[AgentaContract]:
        """The form of Agenta's contract this client knows the host to speak (no network):
        pinned in the config, or learned from its capabilities; none while unknown.
        """
        ...
    async def approve_all(self, ids: typing.List[str], approved: bool) -> ApproveAllReport:
        """Answer many gates at once (in parallel, under a bound) with the same verdict.
        Never throws for a single target: each one's outcome is in the report.
        """
        ...
    async def approve_gates(self, gates: typing.List[Interaction], approved: bool, message: typing.Union[object, typing.Optional[str]] = ...) -> ApproveGatesReport:
        """Answer many gates the app listed (`list_pending_interactions`) with one verdict,
        grouped by turn: on a host that speaks Agenta's durable contract, one respond with
        every gate of a turn (at most 100 a request), expecting that turn, so the turn
        continues once with every answer; a gate without a turn alone. On any other host
        as `approve_all` (the batch, or one respond per gate), each answered gate
        `RespondOutcome::Answered`. Never throws for a gate: each one's result is in the
        report. Duplicate gates are answered once.
        """
        ...
    def base_url(self) -> str:
        """The base URL this client talks to."""
        ...
    async def capabilities(self) -> Capabilities:
        """What the host serves (read once, then cached by the client)."""
        ...
    async def get_execution_session(self, room_id: str, session_id: str) -> ExecutionSession:
        """One execution session (the run it binds, its interventions and events). Throws
        `CapabilityUnavailable` on a host without the execution service.
        """
        ...
    async def get_interaction(self, id: str) -> Interaction:
        """One interaction by id."""
        ...
    async def invoke_tool(self, prompt: str, tool: str, args: typing.Union[object, typing.Optional[JsonText]] = ..., permission: typing.Union[object, typing.Optional[ToolPermission]] = ..., session_id: typing.Union[object, typing.Optional[str]] = ...) -> InvokeOutcome:
        """Open a gate yourself: run a turn of the reference server's deterministic agent
        that is asked `prompt` and calls `tool` with `args` (JSON text; `{}` when absent)
        under `permission` (`Ask` when absent: the turn parks at a gate, whose id is in
        the outcome's `interaction_ids`). In `session_id`, or a new session the server
        names. For tests, examples and quick starts; a host without the service tier
        (Agenta, AgentPlat) throws `CapabilityUnavailable`. Never retried (an invoke is
        not idempotent).
        """
        ...
    async def list_pending_interactions(self, session_id: typing.Union[object, typing.Optional[str]] = ...) -> typing.List[Interaction]:
        """Every pending interaction of the project (all pages), or of one session."""
        ...
    def open_execution_events(self, room_id: str, session_id: str, after: typing.Union[object, typing.Optional[int]] = ...) -> ExecutionEventWatch:
        """An execution session's events as a pull stream (see [`ExecutionEventWatch`]): from
        the first event, or after sequence `after`; it ends once the session is
        reconciled. The Swift, Kotlin and Python async sequences wrap it.
        """
        ...
    def open_session_events(self, session_id: str, after: int = ...) -> SessionEventWatch:
        """A session's durable events after sequence `after` (0: all), then its live frames:
        a pull stream that resumes after the last sequence seen when the connection drops.
        """
        ...
    def open_session_watch(self, session_id: str) -> SessionWatch:
        """A session's gates as a pull stream (see [`SessionWatch`]): the base of Swift's
        `sessionUpdates` `AsyncThrowingStream`, Kotlin's `sessionUpdates` `Flow` and
        Python's `session_updates` async iterator. Nothing connects until the first
        `next()`.
        """
        ...
    async def request_intervention(self, room_id: str, session_id: str, expected_revision: int, instruction: str, checkpoint: Checkpoint, operation_id: typing.Union[object, typing.Optional[str]] = ..., requested_by_participant_id: typing.Union[object, typing.Optional[str]] = ...) -> RequestedIntervention:
        """Ask the running agent to stop (`instruction` = `stop`) or to take an instruction
        into its next step, at `checkpoint`. `expected_revision` is the session revision
        you last saw (a stale one throws `RevisionConflict`). The answer means
        "requested", nothing more: call `wait_for_intervention` to learn whether it was
        applied. `operation_id` makes a retry replay instead of duplicating; the client
        generates one when absent. `requested_by_participant_id` names who asks on an
        AgentPlat host that does not authenticate the actor (default: the config's
        `participant_id`). Throws `AcceptedUnreadable` when the host accepted the
        request but its answer could not be read: it WAS requested.
        """
        ...
    async def respond_to_gate(self, gate: Interaction, approved: bool, message: typing.Union[object, typing.Optional[str]] = ..., idempotency_key: typing.Union[object, typing.Optional[str]] = ...) -> RespondOutcome:
        """Answer the gate the app displayed (a record from `list_pending_interactions` or
        `get_interaction`), bound to it: the answer carries the digest of that record (its
        id, revision, tool, arguments and call id, computed here as `gate_digest` does),
        so a host that checks it (capability `AnswerDigest`) records it only while the
        gate is still what was shown, else throws `StaleGate` with nothing recorded. Its
        turn is expected and its session read, as `respond_with_outcome` with them. On a
        host without the capability (Agenta, an older Gatehouse) the answer is sent
        without the digest and is not bound.
        """
        ...
    async def respond_to_interaction(self, id: str, approved: bool, message: typing.Union[object, typing.Optional[str]] = ..., tool_call_id: typing.Union[object, typing.Optional[str]] = ..., idempotency_key: typing.Union[object, typing.Optional[str]] = ...) -> Interaction:
        """Answer an approval gate: approve or deny, with an optional message for the agent
        and the tool call being answered. Throws `AlreadyAnswered` when another device
        answered first (benign: refresh). Safe to retry after a transport error: the
        client carries an idempotency key and never reports its own landed answer as
        already answered. Pass your own `idempotency_key` (e.g. one you saved with the
        user's tap) to make a retry after an app restart safe too: the same key replays
        the answer that landed instead of reporting it as already answered.
        """
        ...
    async def respond_with_outcome(self, id: str, approved: bool, message: typing.Union[object, typing.Optional[str]] = ..., tool_call_id: typing.Union[object, typing.Optional[str]] = ..., idempotency_key: typing.Union[object, typing.Optional[str]] = ..., expected_execution_id: typing.Union[object, typing.Optional[str]] = ..., session_id: typing.Union[object, typing.Optional[str]] = ...) -> RespondOutcome:
        """Answer a gate and say what the answer did (every host). On a durable host always
        under an `Idempotency-Key` (this one, or a fresh one), expecting the turn
        `expected_execution_id` (the gate's `turn_id`: the answer never lands on a turn the
        person did not see); `session_id` lets the client read the host's contract.
        """
        ...
    async def resume_continuation(self, session_id: str) -> bool:
        """Deliver again a continuation whose delivery failed; false when there was none."""
        ...
    async def session_snapshot(self, session_id: str) -> SessionSnapshot:
        """A session's snapshot."""
        ...
    async def stop_session(self, session_id: str, expected_execution_id: typing.Union[object, typing.Optional[str]] = ..., idempotency_key: typing.Union[object, typing.Optional[str]] = ...) -> StopRequested:
        """Stop the session's running turn: a recorded command, not yet applied. With
        `expected_execution_id`, refused (`StaleExecution`) when another turn runs now.
        """
        ...
    async def wait_for_intervention(self, room_id: str, session_id: str, operation_id: str, timeout: Duration) -> InterventionOutcome:
        """Wait up to `timeout` for an intervention to be applied (with the server's
        persisted evidence), rejected, or left unresolved by the end of the run.
        """
        ...
    async def wait_for_stop(self, session_id: str, stop: StopRequested, timeout: Duration) -> StopOutcome:
        """Follow a recorded Stop until it settles, at most `timeout`."""
        ...
    def watch_session(self, session_id: str, listener: WatchListener) -> WatchHandle:
        """Watch a session's gates: `listener` hears every (re)connect (revalidate then),
        every event, every reconnect attempt, and the end of the stream. The returned
        handle's `cancel()` (or dropping/closing it) stops the watch.
        """
        ...

class GatehouseInboxProtocol(typing.Protocol):
    """Several hosts' (or projects') pending gates as one paged list. Add each host's client
    under a stable name, then call [`pending`](Self::pending) with the last page's
    `next_cursor` until it is `None`.
    """
    def add_host(self, name: str, client: GatehouseClient) -> None:
        """Add a host's client under `name` (stable: the cursor keys the host by it). A name
        used twice or empty, or more than 32 hosts, throws `Config`; the inbox is then as
        it was.
        """
        ...
    def host_names(self) -> typing.List[str]:
        """The hosts' names, in the order they were added."""
        ...
    async def pending(self, cursor: typing.Optional[str], per_host: int) -> InboxPage:
        """The next page: up to `per_host` pending gates (1 to 500) from every host not read
        to its end, all asked at once; `cursor` is the last page's `next_cursor` (`None`:
        from the start). Throws only for a cursor or page size it cannot use (`Config`);
        a host's failure is in its report.
        """
        ...

class GatehouseInbox(GatehouseInboxProtocol):
    """Several hosts' (or projects') pending gates as one paged list. Add each host's client
    under a stable name, then call [`pending`](Self::pending) with the last page's
    `next_cursor` until it is `None`.
    """
    def __init__(self) -> None:
        """An inbox with no host."""
        ...
    def add_host(self, name: str, client: GatehouseClient) -> None:
        """Add a host's client under `name` (stable: the cursor keys the host by it). A name
        used twice or empty, or more than 32 hosts, throws `Config`; the inbox is then as
        it was.
        """
        ...
    def host_names(self) -> typing.List[str]:
        """The hosts' names, in the order they were added."""
        ...
    async def pending(self, cursor: typing.Optional[str], per_host: int) -> InboxPage:
        """The next page: up to `per_host` pending gates (1 to 500) from every host not read
        to its end, all asked at once; `cursor` is the last page's `next_cursor` (`None`:
        from the start). Throws only for a cursor or page size it cannot use (`Config`);
        a host's failure is in its report.
        """
        ...

def gate_digest(id: str, revision: int, tool: typing.Optional[str], tool_call_id: typing.Optional[str], args_json: typing.Optional[JsonText]) -> str:
    """The gate digest (CONTRACT.md C8, v1): `sha256:` and the hex SHA-256 of the RFC 8785
    text of `["gatehouse.gate.v1", id, revision, tool, tool_call_id, args]`; `args_json`
    is the arguments as JSON text (absent: `null`). The same function the server and the
    Rust client use, so every language gets the same digest (the shared vectors,
    `tests/data/gate_digest.vectors.json`, check it).
    """
    ...

__all__ = ['InternalError', 'GatehouseErrorKind', 'InteractionKind', 'InteractionStatus', 'RespondOutcome', 'GateResult', 'Capability', 'Checkpoint', 'Upstream', 'AgentaContract', 'ExecutionEventType', 'ExecutionSessionStatus', 'InterventionStatus', 'InboxHostState', 'TurnStatus', 'InterventionState', 'GatehouseError', 'InterventionOutcome', 'LifecycleState', 'ListenerError', 'SessionEventUpdate', 'StopOutcome', 'ToolPermission', 'WatchEvent', 'WatchUpdate', 'ApproveAllFailure', 'InteractionRequest', 'Interaction', 'ApproveAllReport', 'GateFailure', 'GateReport', 'ApproveGatesReport', 'Capabilities', 'CheckpointProgress', 'ClientConfig', 'ExecutionEvent', 'SessionOutcome', 'Intervention', 'ExecutionSession', 'InboxGate', 'InboxHostReport', 'InboxPage', 'InvokeOutcome', 'RequestedIntervention', 'SessionEvent', 'SessionSnapshot', 'StopRequested', 'StreamFailure', 'gate_digest', 'ExecutionEventWatch', 'ExecutionEventWatchProtocol', 'SessionEventWatch', 'SessionEventWatchProtocol', 'SessionWatch', 'SessionWatchProtocol', 'WatchListenerImpl', 'WatchListener', 'WatchHandle', 'WatchHandleProtocol', 'GatehouseClient', 'GatehouseClientProtocol', 'GatehouseInbox', 'GatehouseInboxProtocol']
