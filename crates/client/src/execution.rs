//! Execution sessions and run interventions (CONTRACT.md B1-B3, C3, C5, C6): read a
//! run's session and its event log, watch the log as SSE, and request interventions
//! whose outcome is reported truthfully: "requested" from the create call, "applied"
//! only on the server's persisted evidence (status `applied` AND the
//! `intervention_applied` event).
//!
//! The paths follow the client's [`Upstream`](crate::Upstream) (its routes are in
//! `routes.rs`): `/api/rooms/...` on Gatehouse, `/rooms/...` at the root of an AgentPlat
//! host. The event stream reads AgentPlat's versioned SSE envelope
//! (`{"version":1,"sequence":n,"type":...,"payload":{...}}`, the session event in
//! `payload`) and, from older Gatehouse servers, bare events.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::Stream;
use gatehouse_wire::error::GatehouseCode;
use gatehouse_wire::execution::{
    Checkpoint, DataEnvelope, ExecutionEvent, ExecutionEventType, ExecutionSession,
    ExecutionSessionStatus, InterventionStatus, RequestInterventionBody, StreamEnvelope,
    EVENT_STREAM_EVENT_NAME, FAILED_TYPE, SESSION_EVENT_TYPE, STREAM_ENVELOPE_VERSION,
};

use crate::client::Client;
use crate::error::{Error, Operation, Result};
use crate::retry::RetryPolicy;
use crate::sse::{FailuresReset, ReconnectingSse, SseEvent, SsePolicy};
use crate::transport::{Call, Replay};

/// First poll interval of [`InterventionHandle::wait_applied`].
const WAIT_POLL_INITIAL: Duration = Duration::from_millis(20);
/// Longest poll interval of [`InterventionHandle::wait_applied`].
const WAIT_POLL_MAX: Duration = Duration::from_millis(250);

/// What to ask of a running agent. Build with [`InterventionRequest::new`].
///
/// ```
/// use gatehouse_client::InterventionRequest;
/// use gatehouse_wire::execution::Checkpoint;
/// let stop = InterventionRequest::new(3, "stop", Checkpoint::PreAction).operation_id("op-1");
/// assert_eq!(stop.operation_id.as_deref(), Some("op-1"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterventionRequest {
    /// The session revision the caller last saw (compare-and-set).
    pub expected_revision: u64,
    /// `stop` halts the run at the checkpoint; anything else is injected into the next step.
    pub instruction: String,
    /// Where to apply it.
    pub checkpoint: Checkpoint,
    /// The idempotency id; `None`: the client generates a UUID v4 and reuses it for
    /// its own retries, so a retry replays instead of duplicating.
    pub operation_id: Option<String>,
    /// Who asks (`requestedByParticipantId`); `None`: the client's configured
    /// participant, if any. Only a host whose authentication names no actor reads it.
    pub requested_by_participant_id: Option<String>,
}

impl InterventionRequest {
    /// A request with a client-generated operation id.
    ///
    /// ```
    /// use gatehouse_wire::execution::Checkpoint;
    /// let r = gatehouse_client::InterventionRequest::new(1, "be brief", Checkpoint::PreStep);
    /// assert!(r.operation_id.is_none());
    /// ```
    pub fn new(
        expected_revision: u64,
        instruction: impl Into<String>,
        checkpoint: Checkpoint,
    ) -> Self {
        Self {
            expected_revision,
            instruction: instruction.into(),
            checkpoint,
            operation_id: None,
            requested_by_participant_id: None,
        }
    }

    /// Use this operation id (e.g. to replay a request made before a crash).
    ///
    /// ```
    /// use gatehouse_wire::execution::Checkpoint;
    /// let r = gatehouse_client::InterventionRequest::new(1, "stop", Checkpoint::PreStep).operation_id("op-7");
    /// assert_eq!(r.operation_id.as_deref(), Some("op-7"));
    /// ```
    pub fn operation_id(mut self, id: impl Into<String>) -> Self {
        self.operation_id = Some(id.into());
        self
    }

    /// Ask as this room participant (overrides the client's configured participant).
    ///
    /// ```
    /// use gatehouse_wire::execution::Checkpoint;
    /// let r = gatehouse_client::InterventionRequest::new(1, "stop", Checkpoint::PreStep).requested_by("human-1");
    /// assert_eq!(r.requested_by_participant_id.as_deref(), Some("human-1"));
    /// ```
    pub fn requested_by(mut self, participant_id: impl Into<String>) -> Self {
        self.requested_by_participant_id = Some(participant_id.into());
        self
    }
}

/// Where an intervention stands, as far as the server's persisted state shows.
///
/// ```
/// use gatehouse_client::InterventionState;
/// assert!(!InterventionState::Requested.is_final());
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
// One value per poll or answer: the evidence is kept inline, where callers match it.
#[allow(clippy::large_enum_variant)]
pub enum InterventionState {
    /// Requested, nothing more: NOT evidence that anything stopped or changed.
    Requested,
    /// A dispatcher claimed it under a lease and is applying it.
    Dispatching {
        /// Claims so far.
        attempts: u32,
    },
    /// Applied at its checkpoint; `evidence` is the persisted `intervention_applied` event.
    Applied {
        /// The server's event.
        evidence: ExecutionEvent,
    },
    /// Not applied.
    Rejected {
        /// The server's reason.
        reason: String,
    },
    /// A status this version does not know (a newer server's): not known to be applied.
    Unknown {
        /// The status as the server spelled it.
        status: String,
    },
}

impl InterventionState {
    /// True for applied and rejected.
    ///
    /// ```
    /// let r = gatehouse_client::InterventionState::Rejected { reason: "late".into() };
    /// assert!(r.is_final());
    /// ```
    pub fn is_final(&self) -> bool {
        matches!(self, Self::Applied { .. } | Self::Rejected { .. })
    }

    /// Read the state of `operation_id` from a session document. `None` when the
    /// session holds no such intervention. `applied` without the persisted
    /// `intervention_applied` event is NOT reported as applied (it stays `Dispatching`).
    ///
    /// ```
    /// # fn demo(session: &gatehouse_wire::execution::ExecutionSession) {
    /// if let Some(state) = gatehouse_client::InterventionState::of(session, "op-1") {
    ///     println!("{state:?}");
    /// }
    /// # }
    /// ```
    pub fn of(session: &ExecutionSession, operation_id: &str) -> Option<Self> {
        let intervention = session.intervention(operation_id)?;
        Some(match &intervention.status {
            InterventionStatus::Pending => Self::Requested,
            InterventionStatus::Dispatching => Self::Dispatching {
                attempts: intervention.attempts,
            },
            InterventionStatus::Applied => match session.applied_evidence(operation_id) {
                Some(evidence) => Self::Applied {
                    evidence: evidence.clone(),
                },
                None => Self::Dispatching {
                    attempts: intervention.attempts,
                },
            },
            InterventionStatus::Rejected => Self::Rejected {
                reason: intervention
                    .resolution_reason
                    .clone()
                    .unwrap_or_else(|| "rejected without a reason".to_string()),
            },
            other => Self::Unknown {
                status: other.as_str().to_string(),
            },
        })
    }
}

/// How [`InterventionHandle::wait_applied`] ended. Only `Applied` is a success, and it
/// always carries the server's persisted evidence.
///
/// ```
/// use gatehouse_client::InterventionOutcome;
/// assert!(!InterventionOutcome::TimedOut.is_applied());
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
// One value per wait: the evidence is kept inline, where callers match it.
#[allow(clippy::large_enum_variant)]
pub enum InterventionOutcome {
    /// Applied at its checkpoint.
    Applied {
        /// The persisted `intervention_applied` event.
        evidence: ExecutionEvent,
    },
    /// Rejected by the server (e.g. the run ended before the checkpoint).
    Rejected {
        /// The server's reason.
        reason: String,
    },
    /// The session ended while the intervention was still not resolved (AgentPlat
    /// leaves such an intervention `pending`; Gatehouse's server rejects it).
    UnresolvedAtTerminal {
        /// The session's terminal status.
        status: ExecutionSessionStatus,
    },
    /// Neither happened within the timeout (the run may still reach the checkpoint).
    TimedOut,
}

impl InterventionOutcome {
    /// True only for `Applied`.
    ///
    /// ```
    /// let r = gatehouse_client::InterventionOutcome::Rejected { reason: "x".into() };
    /// assert!(!r.is_applied());
    /// ```
    pub fn is_applied(&self) -> bool {
        matches!(self, Self::Applied { .. })
    }
}

impl Client {
    /// Execution sessions and run interventions (B2, C6): read a run's session and
    /// events, watch them, request an intervention and wait for the persisted evidence.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// let session = client.execution().get_session("room-1", "es-1").await?;
    /// # let _ = session; Ok(()) }
    /// ```
    pub fn execution(&self) -> Execution {
        Execution::new(self.clone())
    }
}

/// Execution sessions (B2). Obtain with [`Client::execution`](crate::Client::execution).
///
/// On a host without the execution service, the first call learns it from the
/// route-not-found 404 (or from `GET /api/capabilities` if it was read) and fails with
/// [`Error::CapabilityUnavailable`]; later calls fail the same way without any request.
///
/// ```no_run
/// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
/// use std::time::Duration;
/// use gatehouse_client::{InterventionOutcome, InterventionRequest};
/// use gatehouse_wire::execution::Checkpoint;
/// let session = client.execution().get_session("room-1", "es-1").await?;
/// let handle = client
///     .execution()
///     .request_intervention("room-1", "es-1", InterventionRequest::new(session.revision, "stop", Checkpoint::PreAction))
///     .await?;
/// match handle.wait_applied(Duration::from_secs(30)).await? {
///     InterventionOutcome::Applied { evidence } => println!("stopped (event {})", evidence.sequence),
///     other => println!("not applied: {other:?}"),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Execution {
    client: Client,
}

impl Execution {
    pub(crate) fn new(client: Client) -> Self {
        Self { client }
    }

    /// `GET [/api]/rooms/{room}/execution-sessions/{session}`.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// let session = client.execution().get_session("room-1", "es-1").await?;
    /// println!("{} at revision {}", session.status.as_str(), session.revision);
    /// # Ok(()) }
    /// ```
    pub async fn get_session(&self, room_id: &str, session_id: &str) -> Result<ExecutionSession> {
        let call = Call::new(Operation::GetExecutionSession, &[room_id, session_id]);
        let envelope: DataEnvelope<ExecutionSession> = self.client.call_json(&call).await?;
        Ok(envelope.data)
    }

    /// `POST .../authority` (a Gatehouse route, not AgentPlat's): the room's authority or
    /// role revision moved on. Interventions requested before the change are rejected at
    /// their checkpoint, with that reason, instead of applied under the new authority.
    /// A stale `expected_revision` is [`Error::RevisionConflict`]. On
    /// [`Upstream::AgentPlat`](crate::Upstream::AgentPlat), which has no such route, it
    /// fails at once with [`Error::Config`] and sends nothing.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// let session = client.execution().get_session("room-1", "es-1").await?;
    /// client
    ///     .execution()
    ///     .change_authority("room-1", "es-1", session.revision, Some("auth-8".into()), None)
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn change_authority(
        &self,
        room_id: &str,
        session_id: &str,
        expected_revision: u64,
        authority_revision: Option<String>,
        role_revision: Option<String>,
    ) -> Result<ExecutionSession> {
        let body = gatehouse_wire::execution::ChangeAuthorityBody {
            expected_revision,
            authority_revision,
            role_revision,
        };
        let call = Call::new(Operation::ChangeExecutionAuthority, &[room_id, session_id])
            .json_body(&body)?;
        let envelope: DataEnvelope<ExecutionSession> = self.client.call_json(&call).await?;
        Ok(envelope.data)
    }

    /// `GET .../events?after=N`: the events with a sequence above `after` (all when `None`).
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// for event in client.execution().events("room-1", "es-1", Some(3)).await? {
    ///     println!("{} {:?}", event.sequence, event.event_type);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn events(
        &self,
        room_id: &str,
        session_id: &str,
        after: Option<u64>,
    ) -> Result<Vec<ExecutionEvent>> {
        let mut call = Call::new(Operation::ListExecutionEvents, &[room_id, session_id]);
        if let Some(after) = after {
            call.query.push(("after", after.to_string()));
        }
        let envelope: DataEnvelope<Vec<ExecutionEvent>> = self.client.call_json(&call).await?;
        Ok(envelope.data)
    }

    /// `GET .../events?after=<text>` with `after` sent exactly as given, for tools that
    /// pass a caller's value through: the host decides what it accepts (AgentPlat and
    /// Gatehouse read it as JavaScript's `Number(...)` and refuse anything but a
    /// non-negative integer with [`Error::Validation`]).
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// let events = client.execution().events_after_text("room-1", "es-1", "3").await?;
    /// # let _ = events; Ok(()) }
    /// ```
    pub async fn events_after_text(
        &self,
        room_id: &str,
        session_id: &str,
        after: &str,
    ) -> Result<Vec<ExecutionEvent>> {
        let mut call = Call::new(Operation::ListExecutionEvents, &[room_id, session_id]);
        call.query.push(("after", after.to_string()));
        let envelope: DataEnvelope<Vec<ExecutionEvent>> = self.client.call_json(&call).await?;
        Ok(envelope.data)
    }

    /// `GET .../events/stream[?after=N]` as a typed stream (see [`ExecutionEventStream`]);
    /// `after` is sent when given (absent means from the first event), and on every
    /// reconnect.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// use futures::StreamExt;
    /// let mut events = client.execution().watch_events("room-1", "es-1", None);
    /// while let Some(event) = events.next().await {
    ///     println!("{:?}", event?.event_type);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn watch_events(
        &self,
        room_id: &str,
        session_id: &str,
        after: Option<u64>,
    ) -> ExecutionEventStream {
        ExecutionEventStream::new(
            self.client.clone(),
            room_id.to_string(),
            session_id.to_string(),
            after,
        )
    }

    /// `POST .../interventions` (answers 202). The operation id is the request's, or a
    /// fresh UUID v4 that the client's own retries reuse (a retry replays, the server
    /// answers the current session). The returned handle's [`state`](InterventionHandle::state)
    /// is `Requested`: nothing has been applied yet.
    ///
    /// Typed refusals: [`Error::RevisionConflict`] (stale `expected_revision`, or a lost
    /// race), [`Error::OperationConflict`] (the id is bound to another request),
    /// [`Error::InterventionLimit`], [`Error::SessionNotActive`], [`Error::Forbidden`]
    /// (the requester may not intervene), [`Error::TenantRejected`],
    /// [`Error::Validation`], [`Error::NotFound`], [`Error::CapabilityUnavailable`].
    /// When the host accepted the request but its answer cannot be read, the error is
    /// [`Error::AcceptedUnreadable`]: the intervention was requested.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// use gatehouse_wire::execution::Checkpoint;
    /// let req = gatehouse_client::InterventionRequest::new(4, "be brief", Checkpoint::PreStep);
    /// let handle = client.execution().request_intervention("room-1", "es-1", req).await?;
    /// println!("requested as {}", handle.operation_id());
    /// # Ok(()) }
    /// ```
    pub async fn request_intervention(
        &self,
        room_id: &str,
        session_id: &str,
        request: InterventionRequest,
    ) -> Result<InterventionHandle> {
        let operation_id = request
            .operation_id
            .clone()
            .filter(|id| !id.trim().is_empty())
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let requested_by = request
            .requested_by_participant_id
            .clone()
            .or_else(|| self.client.participant_id().map(str::to_string));
        let body = RequestInterventionBody {
            expected_revision: request.expected_revision,
            operation_id: operation_id.clone(),
            requested_by_participant_id: requested_by,
            instruction: request.instruction.clone(),
            checkpoint: request.checkpoint.clone(),
        };
        let mut call =
            Call::new(Operation::RequestIntervention, &[room_id, session_id]).json_body(&body)?;
        // Safe to re-send: the same operation id replays on the server.
        call.replay = Replay::Safe;
        let answered = self.client.send(&call).await?;
        let status = answered.status.as_u16();
        // From here the host has accepted the request: it landed, whatever the answer says.
        let landed = |path: String, reason: String, snippet: String| Error::AcceptedUnreadable {
            operation: Operation::RequestIntervention,
            status,
            operation_id: Some(operation_id.clone()),
            path,
            reason,
            snippet,
        };
        let envelope: DataEnvelope<ExecutionSession> = match self
            .client
            .transport()
            .json(Operation::RequestIntervention, answered)
            .await
        {
            Ok(envelope) => envelope,
            Err(Error::Decode {
                path,
                reason,
                snippet,
                ..
            }) => return Err(landed(path, reason, snippet)),
            Err(other) => return Err(other),
        };
        let session = envelope.data;
        if session.intervention(&operation_id).is_none() {
            return Err(landed(
                "data.interventions".to_string(),
                format!("the answered session holds no intervention {operation_id:?}"),
                String::new(),
            ));
        }
        Ok(InterventionHandle {
            execution: self.clone(),
            room_id: room_id.to_string(),
            session_id: session_id.to_string(),
            operation_id,
            session,
        })
    }

    /// A handle on an intervention requested earlier (by this process or another, e.g.
    /// an operator's CLI), read from the session: [`Error::NotFound`] when the session
    /// holds no intervention with `operation_id`. Its state is what the server has
    /// persisted; `Applied` only with the `intervention_applied` event.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// let handle = client.execution().intervention("room-1", "es-1", "op-1").await?;
    /// let outcome = handle.wait_applied(std::time::Duration::from_secs(30)).await?;
    /// println!("{outcome:?}");
    /// # Ok(()) }
    /// ```
    pub async fn intervention(
        &self,
        room_id: &str,
        session_id: &str,
        operation_id: &str,
    ) -> Result<InterventionHandle> {
        let session = self.get_session(room_id, session_id).await?;
        if session.intervention(operation_id).is_none() {
            return Err(Error::NotFound {
                operation: Operation::GetExecutionSession,
                detail: format!("the session holds no intervention {operation_id:?}"),
            });
        }
        Ok(InterventionHandle {
            execution: self.clone(),
            room_id: room_id.to_string(),
            session_id: session_id.to_string(),
            operation_id: operation_id.to_string(),
            session,
        })
    }
}

/// A requested intervention. Its [`state`](Self::state) starts as `Requested`; only
/// [`wait_applied`](Self::wait_applied) (or [`refresh`](Self::refresh)) reading the
/// server's persisted evidence reports `Applied`.
#[derive(Debug, Clone)]
pub struct InterventionHandle {
    execution: Execution,
    room_id: String,
    session_id: String,
    operation_id: String,
    session: ExecutionSession,
}

impl InterventionHandle {
    /// The operation id (keep it to replay the request after a crash).
    pub fn operation_id(&self) -> &str {
        &self.operation_id
    }

    /// The room.
    pub fn room_id(&self) -> &str {
        &self.room_id
    }

    /// The execution session.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The session as the create call answered it.
    pub fn session(&self) -> &ExecutionSession {
        &self.session
    }

    /// The state the create call's answer shows: `Requested` for a new request (a
    /// replay of an older one may show further progress).
    pub fn state(&self) -> InterventionState {
        InterventionState::of(&self.session, &self.operation_id)
            .unwrap_or(InterventionState::Requested)
    }

    /// Read the session again and report the intervention's state.
    pub async fn refresh(&self) -> Result<InterventionState> {
        let session = self
            .execution
            .get_session(&self.room_id, &self.session_id)
            .await?;
        self.state_in(&session)
    }

    fn state_in(&self, session: &ExecutionSession) -> Result<InterventionState> {
        InterventionState::of(session, &self.operation_id).ok_or_else(|| Error::Decode {
            operation: Operation::GetExecutionSession,
            status: 200,
            path: "data.interventions".to_string(),
            reason: format!(
                "the session no longer holds intervention {:?}",
                self.operation_id
            ),
            snippet: String::new(),
        })
    }

    /// Poll the session until the intervention is applied (with its persisted
    /// `intervention_applied` event), rejected, left unresolved by a terminal session,
    /// or `timeout` passes. Never reports `Applied` without the evidence.
    ///
    /// ```no_run
    /// # async fn demo(handle: gatehouse_client::InterventionHandle) -> Result<(), gatehouse_client::Error> {
    /// use gatehouse_client::InterventionOutcome;
    /// match handle.wait_applied(std::time::Duration::from_secs(10)).await? {
    ///     InterventionOutcome::Applied { evidence } => println!("applied at {:?}", evidence.checkpoint),
    ///     InterventionOutcome::Rejected { reason } => println!("rejected: {reason}"),
    ///     InterventionOutcome::UnresolvedAtTerminal { status } => println!("run ended ({}) first", status.as_str()),
    ///     InterventionOutcome::TimedOut => println!("still waiting for the checkpoint"),
    ///     other => println!("not applied: {other:?}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn wait_applied(&self, timeout: Duration) -> Result<InterventionOutcome> {
        let deadline = Instant::now() + timeout;
        let mut delay = WAIT_POLL_INITIAL;
        loop {
            let session = self
                .execution
                .get_session(&self.room_id, &self.session_id)
                .await?;
            match self.state_in(&session)? {
                InterventionState::Applied { evidence } => {
                    return Ok(InterventionOutcome::Applied { evidence })
                }
                InterventionState::Rejected { reason } => {
                    return Ok(InterventionOutcome::Rejected { reason })
                }
                // Not resolved yet (or in a state this version does not know): keep
                // waiting; never report it applied.
                _ => {}
            }
            if session.status.is_terminal() {
                return Ok(InterventionOutcome::UnresolvedAtTerminal {
                    status: session.status.clone(),
                });
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(InterventionOutcome::TimedOut);
            }
            tokio::time::sleep(delay.min(deadline - now)).await;
            delay = (delay * 2).min(WAIT_POLL_MAX);
        }
    }
}

/// A `Stream` of a session's [`ExecutionEvent`]s, in sequence order, each once.
///
/// - Reads AgentPlat's SSE envelope: each `execution_session_event` frame carries one
///   session event in `payload` (the envelope's own `sequence` counts frames per
///   connection and is not used); a bare event (older Gatehouse servers) reads too; a
///   frame type this version does not know is skipped.
/// - Reconnects on transport errors, 5xx, an idle connection (the client's stream idle
///   timeout) or a close before the session was reconciled, resuming with `?after=` the
///   last SESSION event sequence seen; after as many consecutive failures as the retry
///   policy's `max_attempts` it yields the error and ends.
/// - Ends after the `session_reconciled` event (the log is complete).
/// - Yields one `Err` and ends on a failure a retry cannot fix: 404, 401, an absent
///   capability, the server's `agentplat.failed` frame ([`Error::StreamFailed`], or
///   [`Error::NotFound`] when Gatehouse's server says the session does not exist), an
///   envelope version other than 1 ([`Error::Decode`] naming it).
pub struct ExecutionEventStream {
    inner: Pin<Box<dyn Stream<Item = Result<ExecutionEvent>> + Send>>,
}

impl std::fmt::Debug for ExecutionEventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecutionEventStream")
            .finish_non_exhaustive()
    }
}

impl Stream for ExecutionEventStream {
    type Item = Result<ExecutionEvent>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl ExecutionEventStream {
    fn new(client: Client, room_id: String, session_id: String, after: Option<u64>) -> Self {
        let events = EventLog {
            room_id,
            session_id,
            send_after: after.is_some(),
            after: after.unwrap_or(0),
            reconciled: false,
        };
        Self {
            inner: ReconnectingSse::stream(client, events),
        }
    }
}

/// What is specific to the execution event stream: read the envelope, resume after the
/// last session-event sequence seen, drop overlaps, end after `session_reconciled`, and
/// give up after the retry policy's `max_attempts` consecutive failures.
struct EventLog {
    room_id: String,
    session_id: String,
    /// Whether `?after=` is sent while nothing was delivered (the caller gave one).
    send_after: bool,
    /// The last session-event sequence delivered (or the caller's `after`).
    after: u64,
    reconciled: bool,
}

impl EventLog {
    /// Deliver one session event unless a reconnect already delivered it.
    fn deliver(&mut self, event: ExecutionEvent, queue: &mut VecDeque<ExecutionEvent>) {
        if event.sequence <= self.after {
            return; // already delivered (a reconnect overlaps)
        }
        self.after = event.sequence;
        if event.event_type == ExecutionEventType::SessionReconciled {
            self.reconciled = true;
        }
        queue.push_back(event);
    }

    /// One envelope frame: a session event, the failure frame, or a type to skip.
    fn envelope(
        &mut self,
        client: &Client,
        data: &[u8],
        queue: &mut VecDeque<ExecutionEvent>,
    ) -> Result<()> {
        let transport = client.transport();
        let frame: StreamEnvelope = transport.decode(Self::OPERATION, 200, data)?;
        if frame.version != STREAM_ENVELOPE_VERSION {
            return Err(Error::Decode {
                operation: Self::OPERATION,
                status: 200,
                path: "version".to_string(),
                reason: format!(
                    "unsupported AgentPlat SSE envelope version {} (this client reads version {STREAM_ENVELOPE_VERSION})",
                    frame.version
                ),
                snippet: String::new(),
            });
        }
        match frame.envelope_type.as_str() {
            SESSION_EVENT_TYPE => {
                let payload = serde_json::Value::Object(frame.payload.unwrap_or_default());
                let bytes = serde_json::to_vec(&payload).unwrap_or_default();
                let event: ExecutionEvent = transport
                    .decode(Self::OPERATION, 200, &bytes)
                    .map_err(|err| match err {
                        Error::Decode {
                            operation,
                            status,
                            path,
                            reason,
                            snippet,
                        } => Error::Decode {
                            operation,
                            status,
                            path: format!("payload.{path}"),
                            reason,
                            snippet,
                        },
                        other => other,
                    })?;
                self.deliver(event, queue);
                Ok(())
            }
            FAILED_TYPE => Err(stream_failure(client, &frame)),
            other => {
                tracing::debug!(
                    frame_type = other,
                    "skipping an event stream frame of a type this client does not know"
                );
                Ok(())
            }
        }
    }
}

/// The error of a `failed` frame: Gatehouse's server names a missing session with its
/// machine code; otherwise the frame's text is all there is.
fn stream_failure(client: &Client, frame: &StreamEnvelope) -> Error {
    let operation = EventLog::OPERATION;
    let detail = client.transport().scrub(
        frame
            .content
            .as_deref()
            .unwrap_or(gatehouse_wire::error::messages::STREAM_FAILED),
    );
    let code = frame
        .extra
        .get("gatehouseCode")
        .and_then(serde_json::Value::as_str)
        .and_then(GatehouseCode::parse);
    match code {
        Some(GatehouseCode::NotFound) => Error::NotFound { operation, detail },
        _ => Error::StreamFailed { operation, detail },
    }
}

impl SsePolicy for EventLog {
    type Item = ExecutionEvent;
    const OPERATION: Operation = Operation::WatchExecutionEvents;
    const FAILURES_RESET: FailuresReset = FailuresReset::OnData;
    const DISCONNECTED_LOG: &'static str = "execution event stream disconnected";
    const CLOSED_DETAIL: &'static str =
        "the server closed the event stream before the session was reconciled";
    const CLOSED_SOURCE: &'static str = "event stream closed by the server";

    fn request(&self) -> Call {
        let mut call = Call::new(Self::OPERATION, &[&self.room_id, &self.session_id]);
        // Absent `after` means from the first event (on AgentPlat and Gatehouse alike).
        if self.send_after || self.after > 0 {
            call.query.push(("after", self.after.to_string()));
        }
        call
    }

    fn reconnect_delay(
        &self,
        retry: RetryPolicy,
        failures: u32,
        _retry_hint: Option<Duration>,
    ) -> Duration {
        retry.backoff(failures, None)
    }

    fn connected(&mut self, _queue: &mut VecDeque<ExecutionEvent>) {}

    fn event(
        &mut self,
        client: &Client,
        event: &SseEvent,
        queue: &mut VecDeque<ExecutionEvent>,
    ) -> Result<()> {
        let data = event.data.as_bytes();
        // AgentPlat's envelope is an object with a `version`; anything else under the
        // session-event name is a bare event (older Gatehouse servers).
        let is_envelope = serde_json::from_slice::<serde_json::Value>(data)
            .ok()
            .is_some_and(|value| value.get("version").is_some());
        if is_envelope {
            return self.envelope(client, data, queue);
        }
        if event.event != EVENT_STREAM_EVENT_NAME {
            return Ok(());
        }
        let event: ExecutionEvent = client.transport().decode(Self::OPERATION, 200, data)?;
        self.deliver(event, queue);
        Ok(())
    }

    fn disconnected(
        &mut self,
        retry: RetryPolicy,
        attempt: u32,
        error: Error,
        _queue: &mut VecDeque<ExecutionEvent>,
    ) -> Result<()> {
        if attempt >= retry.max_attempts.max(1) {
            Err(error)
        } else {
            Ok(())
        }
    }

    fn is_complete(&self) -> bool {
        self.reconciled
    }
}
