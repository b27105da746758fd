//! Agenta's durable session control (Agenta v0.121 and later; a Gatehouse host that lists
//! the capability `durable_approvals`): the contract a host speaks, the session snapshot,
//! its replayable events, the durable Stop and how it settled, and the resume of a
//! continuation whose delivery failed.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use gatehouse_wire::sessions::{
    DurableEventPayload, DurableEventType, SessionCancelRequest, SessionCancelResponse,
    SessionCommandRef, SessionContinuationResumeResponse, SessionDurableEvent,
    SessionExecutionError, SessionExecutionRef, SessionExecutionState, SessionLiveFrame,
    SessionRelayClose, SessionSnapshotResponse,
};

use crate::client::Client;
use crate::error::{Error, Operation, Result};
use crate::retry::RetryPolicy;
use crate::sse::{FailuresReset, ReconnectingSse, SseEvent, SsePolicy};
use crate::transport::{Call, Replay};
use crate::upstream::AgentaContract;

/// Longest wait between two reconnects of a [`SessionEventStream`], and between two
/// snapshot reads of [`Sessions::wait_for_stop`].
///
/// ```
/// assert_eq!(gatehouse_client::MAX_SESSION_EVENTS_RECONNECT_DELAY.as_secs(), 30);
/// ```
pub const MAX_SESSION_EVENTS_RECONNECT_DELAY: Duration = Duration::from_secs(30);

impl Client {
    /// Agenta's durable session control: snapshot, events, Stop, resume.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// let snapshot = client.sessions().snapshot("sess_demo_01").await?;
    /// println!("{} gates wait", snapshot.pending.interactions.len());
    /// # Ok(()) }
    /// ```
    pub fn sessions(&self) -> Sessions {
        Sessions {
            client: self.clone(),
        }
    }
}

/// The session-control endpoints. Obtain with [`Client::sessions`]; cheap to create.
#[derive(Debug, Clone)]
pub struct Sessions {
    client: Client,
}

/// A Stop the host recorded ([`Sessions::stop`]): the command and the execution it
/// targets. Recorded is not applied: [`Sessions::wait_for_stop`] says how it settled.
#[derive(Debug, Clone, PartialEq)]
pub struct StopRequested {
    /// The `cancel` command (`pending` when recorded; `obsolete` when nothing ran).
    pub command: SessionCommandRef,
    /// The execution it stops (`stopping`), or `{id: null, state: idle}` when nothing ran.
    pub execution: SessionExecutionRef,
    /// The `Idempotency-Key` it was sent under (a repeat with it replays the command).
    pub idempotency_key: String,
}

impl StopRequested {
    /// True when a turn was running (or parked) and is being stopped (the 202); false
    /// when there was nothing to stop (the 200, command `obsolete`).
    ///
    /// ```
    /// let stop: gatehouse_client::StopRequested = gatehouse_client::StopRequested {
    ///     command: serde_json::from_value(serde_json::json!({"id": "c1", "state": "obsolete"})).unwrap(),
    ///     execution: serde_json::from_value(serde_json::json!({"id": null, "state": "idle"})).unwrap(),
    ///     idempotency_key: "k".into(),
    /// };
    /// assert!(!stop.is_stopping());
    /// ```
    pub fn is_stopping(&self) -> bool {
        self.execution.id.is_some()
    }
}

/// How a Stop settled ([`Sessions::wait_for_stop`]). Only an event of the session's
/// durable log (or the host's own 200) makes it more than [`StopOutcome::Unresolved`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StopOutcome {
    /// The turn stopped (`execution.stopped`).
    Stopped {
        /// The stopped execution.
        execution_id: String,
        /// The event that says so.
        event: Box<SessionDurableEvent>,
    },
    /// Nothing was running when the Stop arrived (the host answered 200 with an
    /// `obsolete` command; that answer does not tell "nothing ran" from "a newer turn had
    /// started", both settle the command `obsolete`).
    NotRunning,
    /// The targeted turn ended without a stop, failure or loss event while a newer turn
    /// runs: the Stop no longer applied to what runs now.
    SupersededByNewerTurn {
        /// The execution that runs now.
        running_execution_id: String,
    },
    /// The turn failed (`execution.failed`).
    Failed {
        /// The failed execution.
        execution_id: String,
        /// Its error, as the event says it.
        error: SessionExecutionError,
    },
    /// The turn was lost (`execution.lost`): its runner went away.
    Lost {
        /// The lost execution.
        execution_id: String,
        /// The event's reason.
        reason: String,
    },
    /// No outcome could be established: the timeout ran out while the turn still read
    /// `state`, or the turn no longer runs but no event says how it ended (the host's
    /// events are off, or something else ended it). Read the session again.
    Unresolved {
        /// The session's execution, as last read.
        execution_id: Option<String>,
        /// Its state, as last read.
        state: SessionExecutionState,
        /// True when the timeout ran out while the turn was still live.
        timed_out: bool,
    },
}

impl Sessions {
    /// The form of Agenta's session contract the host speaks: pinned, or learned from
    /// its capabilities (asked once, then from the client's cache): Gatehouse's
    /// `GET /api/capabilities`, else the snapshot of `session_id` (its
    /// `capabilities.durable_approvals`; a host without the snapshot route is a legacy
    /// one). With nothing known and no session to read, the legacy contract (this is not
    /// cached: the next call with a session asks).
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// let contract = client.sessions().contract(Some("sess_demo_01")).await?;
    /// println!("the host speaks the {contract} contract");
    /// # Ok(()) }
    /// ```
    pub async fn contract(&self, session_id: Option<&str>) -> Result<AgentaContract> {
        let cache = self.client.capability_cache();
        if let Some(known) = cache.agenta_contract() {
            return Ok(known);
        }
        if !cache.discovery_absent() {
            match self.client.capabilities().get().await {
                Ok(_) => {
                    if let Some(known) = cache.agenta_contract() {
                        return Ok(known);
                    }
                }
                Err(Error::CapabilityUnavailable {
                    capability: None, ..
                }) => {}
                Err(other) => return Err(other),
            }
        }
        if let Some(session_id) = session_id {
            match self.snapshot(session_id).await {
                Ok(_) => {}
                // The snapshot route is absent: the host predates the durable contract.
                Err(Error::CapabilityUnavailable { .. }) => cache.learn_legacy(),
                Err(other) => return Err(other),
            }
            if let Some(known) = cache.agenta_contract() {
                return Ok(known);
            }
        }
        Ok(AgentaContract::Legacy)
    }

    /// A session's snapshot (`GET /api/sessions/{session_id}`): its execution state,
    /// pending gates and inputs, how far its events go, and the host's session
    /// capabilities (which this client then keeps: the contract the host speaks).
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// let snapshot = client.sessions().snapshot("sess_demo_01").await?;
    /// println!("{:?}", snapshot.execution_state.state);
    /// # Ok(()) }
    /// ```
    pub async fn snapshot(&self, session_id: &str) -> Result<SessionSnapshotResponse> {
        let call = Call::new(Operation::GetSessionSnapshot, &[session_id]);
        let snapshot: SessionSnapshotResponse = self.client.call_json(&call).await?;
        self.client
            .capability_cache()
            .learn_session_capabilities(&snapshot.capabilities);
        Ok(snapshot)
    }

    /// Deliver again a continuation whose delivery failed (a respond answered with
    /// `execution.state: recoverable`): `POST /api/sessions/{session_id}/continuations/resume`.
    /// `true` when one was redelivered, `false` when there was none to redeliver (none,
    /// or one is executing).
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// if !client.sessions().resume_continuation("sess_demo_01").await? {
    ///     println!("nothing to resume");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn resume_continuation(&self, session_id: &str) -> Result<bool> {
        let call = Call::new(Operation::ResumeSessionContinuation, &[session_id]);
        let response: SessionContinuationResumeResponse = self.client.call_json(&call).await?;
        Ok(response.resumed)
    }

    /// Stop the session's running turn (`POST /api/sessions/{session_id}/cancel`) under
    /// a fresh `Idempotency-Key`. `expected_execution_id` (the turn the person saw)
    /// refuses the Stop with [`Error::StaleExecution`] when another turn runs now.
    /// Returns the recorded command: recorded is not stopped; see
    /// [`wait_for_stop`](Self::wait_for_stop).
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// let sessions = client.sessions();
    /// let stop = sessions.stop("sess_demo_01", Some("7d3f2c1e-5b6a-4c8d-9e0f-a1b2c3d4e5f6")).await?;
    /// let outcome = sessions.wait_for_stop("sess_demo_01", &stop, std::time::Duration::from_secs(30)).await?;
    /// println!("{outcome:?}");
    /// # Ok(()) }
    /// ```
    pub async fn stop(
        &self,
        session_id: &str,
        expected_execution_id: Option<&str>,
    ) -> Result<StopRequested> {
        let key = uuid::Uuid::new_v4().to_string();
        self.stop_with_idempotency_key(session_id, expected_execution_id, &key)
            .await
    }

    /// [`stop`](Self::stop) under a caller-chosen `Idempotency-Key`: the same key with the
    /// same expectation replays the recorded command (safe after an app restart). Re-sent
    /// under the client's retry policy when the outcome is unknown (transport error,
    /// timeout, 429, 5xx), always with the same key.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// let stop = client.sessions().stop_with_idempotency_key("sess_demo_01", None, "stop-1").await?;
    /// # let _ = stop; Ok(()) }
    /// ```
    pub async fn stop_with_idempotency_key(
        &self,
        session_id: &str,
        expected_execution_id: Option<&str>,
        idempotency_key: &str,
    ) -> Result<StopRequested> {
        let op = Operation::CancelSession;
        let body = match expected_execution_id {
            Some(id) => SessionCancelRequest::expecting(id),
            None => SessionCancelRequest::default(),
        };
        let mut call = Call::new(op, &[session_id]).json_body(&body)?;
        call.idempotency_key = Some(idempotency_key.to_string());
        // Safe to re-send: the same key and expectation replay the recorded command.
        call.replay = Replay::Safe;
        let answered = self.client.send(&call).await?;
        let status = answered.status.as_u16();
        match self
            .client
            .transport()
            .json::<SessionCancelResponse>(op, answered)
            .await
        {
            Ok(response) => Ok(StopRequested {
                command: response.command,
                execution: response.execution,
                idempotency_key: idempotency_key.to_string(),
            }),
            Err(Error::Decode {
                path,
                reason,
                snippet,
                ..
            }) => Err(Error::AcceptedUnreadable {
                operation: op,
                status,
                operation_id: Some(idempotency_key.to_string()),
                path,
                reason,
                snippet,
            }),
            Err(other) => Err(other),
        }
    }

    /// Follow a recorded Stop until it settles, at most `timeout`: reads the snapshot
    /// (backing off under the client's retry policy, at most
    /// [`MAX_SESSION_EVENTS_RECONNECT_DELAY`] apart) until the targeted turn no longer
    /// runs or stops, then reads the session's durable events for how it ended. Never
    /// says stopped without the `execution.stopped` event.
    ///
    /// A failure reading the snapshot that a retry cannot fix ends the wait with that
    /// error; retryable ones are retried until the timeout.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// use gatehouse_client::StopOutcome;
    /// let sessions = client.sessions();
    /// let stop = sessions.stop("sess_demo_01", None).await?;
    /// match sessions.wait_for_stop("sess_demo_01", &stop, std::time::Duration::from_secs(30)).await? {
    ///     StopOutcome::Stopped { .. } => println!("stopped"),
    ///     StopOutcome::Unresolved { state, .. } => println!("not settled yet: {state:?}"),
    ///     other => println!("{other:?}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn wait_for_stop(
        &self,
        session_id: &str,
        stop: &StopRequested,
        timeout: Duration,
    ) -> Result<StopOutcome> {
        let Some(target) = stop.execution.id.as_deref() else {
            return Ok(StopOutcome::NotRunning);
        };
        let deadline = Instant::now() + timeout;
        let mut policy = self.client.transport().retry_policy();
        policy.max_backoff = policy
            .max_backoff
            .max(Duration::from_millis(1))
            .min(MAX_SESSION_EVENTS_RECONNECT_DELAY);
        let mut polls: u32 = 0;
        // The log's end while the turn was still live: its outcome comes after it.
        let mut after: Option<u64> = None;
        let mut last: Option<(Option<String>, SessionExecutionState)> = None;
        loop {
            let read = self.snapshot(session_id).await;
            match read {
                Ok(snapshot) => {
                    let state = snapshot.execution_state;
                    let live = state.id.as_deref() == Some(target)
                        && matches!(
                            state.state,
                            SessionExecutionState::Running
                                | SessionExecutionState::Stopping
                                | SessionExecutionState::Active
                        );
                    if !live {
                        let found = self
                            .outcome_in_events(
                                session_id,
                                target,
                                &stop.command.id,
                                after,
                                deadline,
                            )
                            .await;
                        if let Some(outcome) = found {
                            return Ok(outcome);
                        }
                        return Ok(match state.id {
                            Some(running)
                                if running != target
                                    && state.state == SessionExecutionState::Running =>
                            {
                                StopOutcome::SupersededByNewerTurn {
                                    running_execution_id: running,
                                }
                            }
                            execution_id => StopOutcome::Unresolved {
                                execution_id,
                                state: state.state,
                                timed_out: false,
                            },
                        });
                    }
                    if after.is_none() {
                        after = snapshot.read.map(|read| read.latest_sequence);
                    }
                    last = Some((state.id, state.state));
                }
                Err(err) if err.is_retryable() => {
                    tracing::debug!(
                        error = err.kind().as_str(),
                        "snapshot read failed; retrying"
                    );
                }
                Err(err) => return Err(err),
            }
            let now = Instant::now();
            if now >= deadline {
                let (execution_id, state) =
                    last.unwrap_or((Some(target.to_string()), stop.execution.state.clone()));
                return Ok(StopOutcome::Unresolved {
                    execution_id,
                    state,
                    timed_out: true,
                });
            }
            polls = polls.saturating_add(1);
            let wait = policy.backoff(polls, None).min(deadline - now);
            tokio::time::sleep(wait).await;
        }
    }

    /// How `target` ended, as the session's durable events after `after` say it: read
    /// until the replay is done (`ready`), the stream fails, or `deadline`.
    async fn outcome_in_events(
        &self,
        session_id: &str,
        target: &str,
        command_id: &str,
        after: Option<u64>,
        deadline: Instant,
    ) -> Option<StopOutcome> {
        let mut events = SessionEventStream::new(
            self.client.clone(),
            session_id.to_string(),
            after.unwrap_or(0),
            false,
        );
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let next = tokio::time::timeout(left, events.next()).await.ok()??;
            let event = match next {
                Ok(SessionEventUpdate::Event(event)) => event,
                Ok(SessionEventUpdate::Ready) | Err(_) => return None,
                Ok(_) => continue,
            };
            if let Some(outcome) = stop_outcome_of(&event, target, command_id) {
                return Some(outcome);
            }
        }
    }

    /// The session's durable events after sequence `after` (0: from the start), then its
    /// live frames (`GET /api/sessions/{session_id}/events?after=N`, SSE). See
    /// [`SessionEventStream`].
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// use futures::StreamExt;
    /// use gatehouse_client::SessionEventUpdate;
    /// let mut events = client.sessions().events("sess_demo_01", 42);
    /// while let Some(update) = events.next().await {
    ///     match update? {
    ///         SessionEventUpdate::Event(event) => println!("{:?} #{:?}", event.event_type, event.sequence),
    ///         SessionEventUpdate::Ready => println!("caught up"),
    ///         _ => {}
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn events(&self, session_id: &str, after: u64) -> SessionEventStream {
        SessionEventStream::new(self.client.clone(), session_id.to_string(), after, true)
    }
}

/// The outcome `event` gives a Stop of `target` (command `command_id`), if it is one.
fn stop_outcome_of(
    event: &SessionDurableEvent,
    target: &str,
    command_id: &str,
) -> Option<StopOutcome> {
    let terminal = matches!(
        event.event_type,
        DurableEventType::ExecutionStopped
            | DurableEventType::ExecutionFailed
            | DurableEventType::ExecutionLost
    );
    if !terminal || event.execution_id != target {
        return None;
    }
    match event.typed_payload().ok()? {
        DurableEventPayload::ExecutionStopped(stopped) => {
            // A stop by another command still stopped the turn; either way it stopped.
            if stopped
                .command_id
                .as_deref()
                .is_some_and(|id| id != command_id)
            {
                tracing::debug!("the turn was stopped by another command");
            }
            Some(StopOutcome::Stopped {
                execution_id: target.to_string(),
                event: Box::new(event.clone()),
            })
        }
        DurableEventPayload::ExecutionFailed(failed) => Some(StopOutcome::Failed {
            execution_id: target.to_string(),
            error: failed.error,
        }),
        DurableEventPayload::ExecutionLost(lost) => Some(StopOutcome::Lost {
            execution_id: target.to_string(),
            reason: lost.reason,
        }),
        _ => None,
    }
}

/// One item of a [`SessionEventStream`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum SessionEventUpdate {
    /// The stream is (re)connected, replaying the durable events after `after`.
    Connected {
        /// The last sequence seen before this connection (0: none).
        after: u64,
    },
    /// A durable event, each sequence once (a replay after a reconnect skips those
    /// already yielded).
    Event(SessionDurableEvent),
    /// The replay is done; live frames follow.
    Ready,
    /// A live frame (not replayed after a reconnect).
    Frame(SessionLiveFrame),
    /// The connection failed or dropped; the stream backs off and reconnects from the
    /// last sequence seen. `attempt` counts the consecutive failures.
    Reconnecting {
        /// Consecutive failures so far (1 for the first).
        attempt: u32,
        /// What went wrong.
        error: Error,
    },
    /// The host closed the stream for good (`relay-close` with `reconnect: false`, e.g.
    /// `authorization_revoked`); the stream ends after it.
    Closed(SessionRelayClose),
}

/// A `Stream` of [`SessionEventUpdate`]s for one session
/// ([`Sessions::events`]): pull-based (nothing is read from the connection until the next
/// item is asked for, so memory stays bounded by one read's events).
///
/// - Replays the durable events after the sequence it started from, then yields
///   [`SessionEventUpdate::Ready`] and the live frames.
/// - On a dropped connection, an idle one (no byte for the client's stream idle timeout),
///   a 5xx or a `relay-close` that asks for it, backs off (at least the server's `retry:`,
///   at most [`MAX_SESSION_EVENTS_RECONNECT_DELAY`]) and reconnects with `after` = the last
///   sequence seen, announcing it with [`SessionEventUpdate::Reconnecting`]. The failures
///   in a row (and the backoff) start over only after a connection that lasted
///   [`WATCH_STABLE_AFTER`](crate::WATCH_STABLE_AFTER).
/// - Yields one `Err` and ends on a failure a retry cannot fix (401, 403, a route the
///   host does not serve, a durable event that does not read).
/// - Dropping it closes the connection.
pub struct SessionEventStream {
    inner: Pin<Box<dyn Stream<Item = Result<SessionEventUpdate>> + Send>>,
}

impl std::fmt::Debug for SessionEventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionEventStream").finish_non_exhaustive()
    }
}

impl Stream for SessionEventStream {
    type Item = Result<SessionEventUpdate>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl SessionEventStream {
    fn new(client: Client, session_id: String, after: u64, reconnect: bool) -> Self {
        Self {
            inner: ReconnectingSse::stream(
                client,
                SessionEvents {
                    session_id,
                    last_sequence: after,
                    reconnect,
                    closed: false,
                },
            ),
        }
    }
}

/// What is specific to the session events: the cursor, and when to stop.
struct SessionEvents {
    session_id: String,
    /// The last sequence yielded (or the one the stream started after).
    last_sequence: u64,
    /// False for a one-shot read: the first failure ends the stream.
    reconnect: bool,
    /// The host closed the stream for good.
    closed: bool,
}

impl SsePolicy for SessionEvents {
    type Item = SessionEventUpdate;
    const OPERATION: Operation = Operation::WatchSessionEvents;
    // As the watch: a stream cut at once is one more failure in a row, not a fresh start.
    const FAILURES_RESET: FailuresReset =
        FailuresReset::AfterLasting(crate::watch::WATCH_STABLE_AFTER);
    const DISCONNECTED_LOG: &'static str = "session events disconnected; reconnecting";
    const CLOSED_DETAIL: &'static str = "the server closed the session events stream";
    const CLOSED_SOURCE: &'static str = "session events stream closed by the server";

    fn request(&self) -> Call {
        let mut call = Call::new(Self::OPERATION, &[&self.session_id]);
        call.query.push(("after", self.last_sequence.to_string()));
        call
    }

    fn reconnect_delay(
        &self,
        retry: RetryPolicy,
        failures: u32,
        retry_hint: Option<Duration>,
    ) -> Duration {
        let mut policy = retry;
        policy.max_backoff = policy
            .max_backoff
            .max(Duration::from_millis(1))
            .min(MAX_SESSION_EVENTS_RECONNECT_DELAY);
        let hint = retry_hint
            .unwrap_or_default()
            .min(MAX_SESSION_EVENTS_RECONNECT_DELAY);
        policy.backoff(failures, None).max(hint)
    }

    fn connected(&mut self, queue: &mut VecDeque<SessionEventUpdate>) {
        queue.push_back(SessionEventUpdate::Connected {
            after: self.last_sequence,
        });
    }

    fn event(
        &mut self,
        client: &Client,
        event: &SseEvent,
        queue: &mut VecDeque<SessionEventUpdate>,
    ) -> Result<()> {
        let transport = client.transport();
        let data = event.data.as_bytes();
        match event.event.as_str() {
            "ready" => queue.push_back(SessionEventUpdate::Ready),
            "relay-close" => {
                let close: SessionRelayClose = transport.decode(Self::OPERATION, 200, data)?;
                if !close.reconnect {
                    self.closed = true;
                    queue.push_back(SessionEventUpdate::Closed(close));
                }
                // With `reconnect: true` the server ends the connection next; the stream
                // reconnects from the last sequence.
            }
            "message" if !event.data.trim().is_empty() => {
                let kind = serde_json::from_slice::<serde_json::Value>(data)
                    .ok()
                    .and_then(|value| value.get("kind")?.as_str().map(str::to_string));
                match kind.as_deref() {
                    Some("event") => {
                        let durable: SessionDurableEvent =
                            transport.decode(Self::OPERATION, 200, data)?;
                        match durable.sequence {
                            // Already yielded before a reconnect: the replay repeats it.
                            Some(sequence) if sequence <= self.last_sequence => {}
                            Some(sequence) => {
                                self.last_sequence = sequence;
                                queue.push_back(SessionEventUpdate::Event(durable));
                            }
                            None => queue.push_back(SessionEventUpdate::Event(durable)),
                        }
                    }
                    Some("frame") => match transport.decode(Self::OPERATION, 200, data) {
                        Ok(frame) => queue.push_back(SessionEventUpdate::Frame(frame)),
                        // Live frames are the runner's; one that does not read is skipped.
                        Err(err) => tracing::debug!(
                            error = err.kind().as_str(),
                            "a live frame was not understood; skipped"
                        ),
                    },
                    _ => tracing::debug!("an events frame of an unknown kind; skipped"),
                }
            }
            other => tracing::debug!(event = other, "an unknown session event; skipped"),
        }
        Ok(())
    }

    fn disconnected(
        &mut self,
        _retry: RetryPolicy,
        attempt: u32,
        error: Error,
        queue: &mut VecDeque<SessionEventUpdate>,
    ) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        if !self.reconnect {
            return Err(error);
        }
        queue.push_back(SessionEventUpdate::Reconnecting { attempt, error });
        Ok(())
    }

    fn is_complete(&self) -> bool {
        self.closed
    }
}
