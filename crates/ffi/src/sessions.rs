//! Agenta's durable session control: the respond's outcome, the durable Stop and how it
//! settled, the session snapshot, and the resume of a continuation whose delivery failed.
//! The session's events are a pull stream ([`crate::streams::SessionEventWatch`]).
//!
//! States cross as the host spells them (`pending_delivery`, `stopping`, ...): a state
//! this library does not know arrives as it was sent, never as an error.

use std::sync::Arc;
use std::time::Duration;

use gatehouse_client::{
    Answer, GateOutcome as ClientGateOutcome, RespondOptions, RespondOutcome as ClientOutcome,
    StopOutcome as ClientStopOutcome, StopRequested as ClientStop,
    TurnApproveReport as ClientTurnReport,
};
use gatehouse_wire::interaction::SessionInteraction;

use crate::client::GatehouseClient;
use crate::error::{GateFailure, GatehouseError, GatehouseErrorKind};
use crate::records::{self, AgentaContract, Interaction};
use crate::runtime;
use crate::streams::SessionEventWatch;

/// What an answer did.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Enum)]
pub enum RespondOutcome {
    /// Recorded; the turn continues as `execution_id` (`pending_delivery`, `running`; or
    /// `recoverable` when its delivery failed: `resume_continuation`), driven by the
    /// command `command_id`.
    Continued {
        /// The answered gate.
        interaction: Interaction,
        /// The continuation command.
        command_id: String,
        /// Its delivery state when answered (`pending`, ...).
        command_state: String,
        /// The execution that continues the turn.
        execution_id: String,
        /// Its state.
        execution_state: String,
    },
    /// The same verdict was already recorded; nothing new was created.
    AlreadyRecorded {
        /// The gate as it stands.
        interaction: Interaction,
        /// The source turn.
        execution_id: String,
        /// Its state (`terminal` once continued).
        execution_state: String,
    },
    /// Recorded; the turn waits for its other gates.
    AwaitingOtherGates {
        /// The answered gate.
        interaction: Interaction,
        /// The source turn.
        execution_id: String,
    },
    /// A legacy host recorded the answer; it says nothing of the continuation.
    Answered {
        /// The gate after the answer.
        interaction: Interaction,
    },
}

impl TryFrom<ClientOutcome> for RespondOutcome {
    type Error = GatehouseError;

    fn try_from(outcome: ClientOutcome) -> Result<Self, GatehouseError> {
        Ok(match outcome {
            ClientOutcome::Continued {
                interaction,
                command,
                execution,
            } => Self::Continued {
                interaction: Interaction::try_from(&interaction)?,
                command_id: command.id,
                command_state: command.state.as_str().to_string(),
                execution_id: execution.id,
                execution_state: execution.state.as_str().to_string(),
            },
            ClientOutcome::AlreadyRecorded {
                interaction,
                execution,
            } => Self::AlreadyRecorded {
                interaction: Interaction::try_from(&interaction)?,
                execution_id: execution.id,
                execution_state: execution.state.as_str().to_string(),
            },
            ClientOutcome::AwaitingOtherGates {
                interaction,
                execution,
            } => Self::AwaitingOtherGates {
                interaction: Interaction::try_from(&interaction)?,
                execution_id: execution.id,
            },
            ClientOutcome::Answered { interaction } => Self::Answered {
                interaction: Interaction::try_from(&interaction)?,
            },
            _ => return Err(GatehouseError::unknown_variant("respond outcome")),
        })
    }
}

/// How one gate of [`GatehouseClient::approve_gates`] went.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Enum)]
// It crosses the FFI serialized, by value, once per gate: a box would save nothing there.
#[allow(clippy::large_enum_variant)]
pub enum GateResult {
    /// Its answer was recorded: what the request that carried it did (every gate of one
    /// turn shares its request's outcome, whose `interaction` is the request's first gate).
    Answered {
        /// The request's outcome.
        outcome: RespondOutcome,
    },
    /// Its answer was not recorded; `failure.kind` says why (`AlreadyAnswered`: settled
    /// elsewhere; `StaleExecution`: the turn moved on, refresh; ...).
    Failed {
        /// The error, as the call would have thrown it.
        failure: GateFailure,
    },
}

/// One gate's line in an [`ApproveGatesReport`].
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct GateReport {
    /// The gate.
    pub interaction_id: String,
    /// Its turn, as its row said (the gates of one turn went in one request).
    pub turn_id: Option<String>,
    /// What came of it.
    pub result: GateResult,
}

/// The outcome of [`GatehouseClient::approve_gates`]: one line per distinct gate, grouped
/// by the request that answered it. One failing gate never hides another's result.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct ApproveGatesReport {
    /// Each gate.
    pub gates: Vec<GateReport>,
    /// True when there was at least one gate and every one was already answered: the
    /// screen can go back to idle at once.
    pub all_already_answered: bool,
}

impl TryFrom<ClientTurnReport> for ApproveGatesReport {
    type Error = GatehouseError;

    fn try_from(report: ClientTurnReport) -> Result<Self, GatehouseError> {
        let gates = report
            .gates
            .into_iter()
            .map(GateReport::try_from)
            .collect::<Result<Vec<_>, _>>()?;
        let all_already_answered = !gates.is_empty()
            && gates.iter().all(|gate| {
                matches!(&gate.result, GateResult::Failed { failure }
                    if failure.kind == GatehouseErrorKind::AlreadyAnswered)
            });
        Ok(Self {
            gates,
            all_already_answered,
        })
    }
}

impl TryFrom<ClientGateOutcome> for GateReport {
    type Error = GatehouseError;

    fn try_from(gate: ClientGateOutcome) -> Result<Self, GatehouseError> {
        Ok(Self {
            result: match gate.result {
                Ok(outcome) => GateResult::Answered {
                    outcome: outcome.try_into()?,
                },
                Err(error) => GateResult::Failed {
                    failure: error.into(),
                },
            },
            interaction_id: gate.id,
            turn_id: gate.turn_id,
        })
    }
}

/// A Stop the host recorded. Recorded is not stopped: `wait_for_stop` says how it settled.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct StopRequested {
    /// The `cancel` command.
    pub command_id: String,
    /// Its delivery state (`pending`; `obsolete` when nothing ran).
    pub command_state: String,
    /// The execution being stopped; none when nothing ran.
    pub execution_id: Option<String>,
    /// Its state (`stopping`; `idle` when nothing ran).
    pub execution_state: String,
    /// The `Idempotency-Key` it was sent under.
    pub idempotency_key: String,
    /// True when a turn is being stopped; false when there was nothing to stop.
    pub is_stopping: bool,
}

impl From<ClientStop> for StopRequested {
    fn from(stop: ClientStop) -> Self {
        Self {
            is_stopping: stop.is_stopping(),
            command_id: stop.command.id,
            command_state: stop.command.state.as_str().to_string(),
            execution_id: stop.execution.id,
            execution_state: stop.execution.state.as_str().to_string(),
            idempotency_key: stop.idempotency_key,
        }
    }
}

impl TryFrom<&StopRequested> for ClientStop {
    type Error = GatehouseError;

    fn try_from(stop: &StopRequested) -> Result<Self, GatehouseError> {
        let invalid = |e: serde_json::Error| GatehouseError::Invalid {
            msg: "the stop record does not read".to_string(),
            details: Some(e.to_string()),
        };
        Ok(Self {
            command: serde_json::from_value(
                serde_json::json!({"id": stop.command_id, "state": stop.command_state}),
            )
            .map_err(invalid)?,
            execution: serde_json::from_value(
                serde_json::json!({"id": stop.execution_id, "state": stop.execution_state}),
            )
            .map_err(invalid)?,
            idempotency_key: stop.idempotency_key.clone(),
        })
    }
}

/// How a Stop settled. Stopped, failed and lost come only from the session's events.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Enum)]
pub enum StopOutcome {
    /// The turn stopped.
    Stopped {
        /// The stopped execution.
        execution_id: String,
    },
    /// Nothing was running (or a newer turn had started: the host's answer does not tell).
    NotRunning,
    /// The turn ended without a stop event while a newer turn runs.
    SupersededByNewerTurn {
        /// The execution that runs now.
        running_execution_id: String,
    },
    /// The turn failed.
    Failed {
        /// The failed execution.
        execution_id: String,
        /// The error's code.
        code: String,
        /// The error's message.
        error_message: String,
    },
    /// The turn was lost (its runner went away).
    Lost {
        /// The lost execution.
        execution_id: String,
        /// Why.
        reason: String,
    },
    /// No outcome could be established; read the session again.
    Unresolved {
        /// The session's execution, as last read.
        execution_id: Option<String>,
        /// Its state, as last read.
        state: String,
        /// True when the timeout ran out while the turn was still live.
        timed_out: bool,
    },
}

impl TryFrom<ClientStopOutcome> for StopOutcome {
    type Error = GatehouseError;

    fn try_from(outcome: ClientStopOutcome) -> Result<Self, GatehouseError> {
        Ok(match outcome {
            ClientStopOutcome::Stopped { execution_id, .. } => Self::Stopped { execution_id },
            ClientStopOutcome::NotRunning => Self::NotRunning,
            ClientStopOutcome::SupersededByNewerTurn {
                running_execution_id,
            } => Self::SupersededByNewerTurn {
                running_execution_id,
            },
            ClientStopOutcome::Failed {
                execution_id,
                error,
            } => Self::Failed {
                execution_id,
                code: error.code,
                error_message: error.message,
            },
            ClientStopOutcome::Lost {
                execution_id,
                reason,
            } => Self::Lost {
                execution_id,
                reason,
            },
            ClientStopOutcome::Unresolved {
                execution_id,
                state,
                timed_out,
            } => Self::Unresolved {
                execution_id,
                state: state.as_str().to_string(),
                timed_out,
            },
            _ => return Err(GatehouseError::unknown_variant("stop outcome")),
        })
    }
}

/// A session's state in one read.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct SessionSnapshot {
    /// The session's execution (running, stopping, or the last one).
    pub execution_id: Option<String>,
    /// Its state: `idle`, `running`, `stopping` (a turn parked on gates reads `idle`).
    pub execution_state: String,
    /// The pending gates.
    pub pending_interactions: Vec<Interaction>,
    /// The last sequence of the session's durable events, when the host says it: open
    /// the events after it to follow what comes next.
    pub latest_sequence: Option<i64>,
    /// Whether the event history is complete, when the host says it.
    pub history_complete: Option<bool>,
    /// The host speaks the durable contract.
    pub durable_approvals: bool,
}

#[uniffi::export(async_runtime = "tokio")]
impl GatehouseClient {
    /// The form of Agenta's contract this client knows the host to speak (no network):
    /// pinned in the config, or learned from its capabilities; none while unknown.
    pub fn agenta_contract(&self) -> Result<Option<AgentaContract>, GatehouseError> {
        runtime::guard("agenta_contract", || {
            self.inner
                .agenta_contract()
                .map(AgentaContract::try_from)
                .transpose()
        })
    }

    /// Answer a gate and say what the answer did (every host). On a durable host always
    /// under an `Idempotency-Key` (this one, or a fresh one), expecting the turn
    /// `expected_execution_id` (the gate's `turn_id`: the answer never lands on a turn the
    /// person did not see); `session_id` lets the client read the host's contract.
    #[uniffi::method(default(
        message = None,
        tool_call_id = None,
        idempotency_key = None,
        expected_execution_id = None,
        session_id = None
    ))]
    // Foreign callers pass these by name, all but two defaulted: a flat list reads best.
    #[allow(clippy::too_many_arguments)]
    pub async fn respond_with_outcome(
        &self,
        id: String,
        approved: bool,
        message: Option<String>,
        tool_call_id: Option<String>,
        idempotency_key: Option<String>,
        expected_execution_id: Option<String>,
        session_id: Option<String>,
    ) -> Result<RespondOutcome, GatehouseError> {
        let client = self.inner.clone();
        runtime::run("respond_with_outcome", async move {
            let mut answer = Answer::approval(approved);
            if let Some(message) = message {
                answer = answer.message(message);
            }
            if let Some(tool_call_id) = tool_call_id {
                answer = answer.tool_call_id(tool_call_id);
            }
            let mut options = RespondOptions::new();
            options.idempotency_key = idempotency_key;
            options.expected_execution_id = expected_execution_id;
            options.session_id = session_id;
            client
                .interactions()
                .respond_outcome(&id, &answer, &options)
                .await?
                .try_into()
        })
        .await
    }

    /// Answer the gate the app displayed (a record from `list_pending_interactions` or
    /// `get_interaction`), bound to it: the answer carries the digest of that record (its
    /// id, revision, tool, arguments and call id, computed here as `gate_digest` does),
    /// so a host that checks it (capability `AnswerDigest`) records it only while the
    /// gate is still what was shown, else throws `StaleGate` with nothing recorded. Its
    /// turn is expected and its session read, as `respond_with_outcome` with them. On a
    /// host without the capability (Agenta, an older Gatehouse) the answer is sent
    /// without the digest and is not bound.
    #[uniffi::method(default(message = None, idempotency_key = None))]
    pub async fn respond_to_gate(
        &self,
        gate: Interaction,
        approved: bool,
        message: Option<String>,
        idempotency_key: Option<String>,
    ) -> Result<RespondOutcome, GatehouseError> {
        let client = self.inner.clone();
        runtime::run("respond_to_gate", async move {
            let row = SessionInteraction::try_from(&gate)?;
            let mut answer = Answer::approval(approved);
            if let Some(message) = message {
                answer = answer.message(message);
            }
            let mut options = RespondOptions::for_gate(&row);
            options.idempotency_key = idempotency_key;
            client
                .interactions()
                .respond_outcome(&gate.id, &answer, &options)
                .await?
                .try_into()
        })
        .await
    }

    /// Answer many gates the app listed (`list_pending_interactions`) with one verdict,
    /// grouped by turn: on a host that speaks Agenta's durable contract, one respond with
    /// every gate of a turn (at most 100 a request), expecting that turn, so the turn
    /// continues once with every answer; a gate without a turn alone. On any other host
    /// as `approve_all` (the batch, or one respond per gate), each answered gate
    /// `RespondOutcome::Answered`. Never throws for a gate: each one's result is in the
    /// report. Duplicate gates are answered once.
    #[uniffi::method(default(message = None))]
    pub async fn approve_gates(
        &self,
        gates: Vec<Interaction>,
        approved: bool,
        message: Option<String>,
    ) -> Result<ApproveGatesReport, GatehouseError> {
        let client = self.inner.clone();
        runtime::run("approve_gates", async move {
            let rows = gates
                .iter()
                .map(SessionInteraction::try_from)
                .collect::<Result<Vec<_>, _>>()?;
            let mut answer = Answer::approval(approved);
            if let Some(message) = message {
                answer = answer.message(message);
            }
            client
                .interactions()
                .approve_gates(&rows, &answer)
                .await
                .try_into()
        })
        .await
    }

    /// Stop the session's running turn: a recorded command, not yet applied. With
    /// `expected_execution_id`, refused (`StaleExecution`) when another turn runs now.
    #[uniffi::method(default(expected_execution_id = None, idempotency_key = None))]
    pub async fn stop_session(
        &self,
        session_id: String,
        expected_execution_id: Option<String>,
        idempotency_key: Option<String>,
    ) -> Result<StopRequested, GatehouseError> {
        let client = self.inner.clone();
        runtime::run("stop_session", async move {
            let sessions = client.sessions();
            let expected = expected_execution_id.as_deref();
            let stop = match idempotency_key {
                Some(key) => {
                    sessions
                        .stop_with_idempotency_key(&session_id, expected, &key)
                        .await?
                }
                None => sessions.stop(&session_id, expected).await?,
            };
            Ok(stop.into())
        })
        .await
    }

    /// Follow a recorded Stop until it settles, at most `timeout`.
    pub async fn wait_for_stop(
        &self,
        session_id: String,
        stop: StopRequested,
        timeout: Duration,
    ) -> Result<StopOutcome, GatehouseError> {
        let client = self.inner.clone();
        runtime::run("wait_for_stop", async move {
            let stop = ClientStop::try_from(&stop)?;
            client
                .sessions()
                .wait_for_stop(&session_id, &stop, timeout)
                .await?
                .try_into()
        })
        .await
    }

    /// A session's snapshot.
    pub async fn session_snapshot(
        &self,
        session_id: String,
    ) -> Result<SessionSnapshot, GatehouseError> {
        let client = self.inner.clone();
        runtime::run("session_snapshot", async move {
            let snapshot = client.sessions().snapshot(&session_id).await?;
            Ok(SessionSnapshot {
                execution_id: snapshot.execution_state.id.clone(),
                execution_state: snapshot.execution_state.state.as_str().to_string(),
                pending_interactions: records::interactions(&snapshot.pending.interactions)?,
                latest_sequence: snapshot
                    .read
                    .as_ref()
                    .map(|read| records::to_i64(read.latest_sequence)),
                history_complete: snapshot.read.as_ref().map(|read| read.history_complete),
                durable_approvals: snapshot.capabilities.durable_approvals,
            })
        })
        .await
    }

    /// Deliver again a continuation whose delivery failed; false when there was none.
    pub async fn resume_continuation(&self, session_id: String) -> Result<bool, GatehouseError> {
        let client = self.inner.clone();
        runtime::run("resume_continuation", async move {
            Ok(client.sessions().resume_continuation(&session_id).await?)
        })
        .await
    }

    /// A session's durable events after sequence `after` (0: all), then its live frames:
    /// a pull stream that resumes after the last sequence seen when the connection drops.
    #[uniffi::method(default(after = 0))]
    pub fn open_session_events(
        &self,
        session_id: String,
        after: i64,
    ) -> Result<Arc<SessionEventWatch>, GatehouseError> {
        runtime::guard("open_session_events", || {
            let after = u64::try_from(after).map_err(|_| GatehouseError::Invalid {
                msg: format!("after must not be negative (got {after})"),
                details: None,
            })?;
            Ok(Arc::new(SessionEventWatch::open(
                &self.inner,
                &session_id,
                after,
            )))
        })
    }
}
