//! Execution sessions and interventions: "requested" is never reported as "applied"
//! without the server's persisted `intervention_applied` event.

use std::sync::Arc;
use std::time::Duration;

use gatehouse_client::{
    InterventionOutcome as ClientOutcome, InterventionRequest, InterventionState as ClientState,
};

use crate::client::GatehouseClient;
use crate::error::GatehouseError;
use crate::records::{Checkpoint, ExecutionEvent, ExecutionSession, ExecutionSessionStatus};
use crate::runtime;
use crate::streams::ExecutionEventWatch;

/// Where an intervention stands, as far as the server's persisted state shows.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Enum)]
pub enum InterventionState {
    /// Requested, nothing more: NOT evidence that anything stopped or changed.
    Requested,
    /// A dispatcher claimed it and is applying it.
    Dispatching {
        /// Claims so far.
        attempts: i32,
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
    /// A status this library does not know (a newer server's): not known to be applied.
    Unknown {
        /// The status as the server spelled it.
        status: String,
    },
}

impl TryFrom<ClientState> for InterventionState {
    type Error = GatehouseError;

    /// Fails (as an internal error) on a state newer than this crate: never guess one.
    fn try_from(state: ClientState) -> Result<Self, GatehouseError> {
        Ok(match state {
            ClientState::Requested => Self::Requested,
            ClientState::Dispatching { attempts } => Self::Dispatching {
                attempts: crate::records::to_i32(attempts),
            },
            ClientState::Applied { evidence } => Self::Applied {
                evidence: (&evidence).into(),
            },
            ClientState::Rejected { reason } => Self::Rejected { reason },
            ClientState::Unknown { status } => Self::Unknown { status },
            _ => return Err(GatehouseError::unknown_variant("intervention state")),
        })
    }
}

/// How waiting for an intervention ended. Only `Applied` is a success, and it always
/// carries the server's persisted evidence.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Enum)]
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
    /// The run ended while the intervention was still unresolved.
    UnresolvedAtTerminal {
        /// The session's terminal status.
        status: ExecutionSessionStatus,
    },
    /// Neither happened within the timeout (the run may still reach the checkpoint).
    TimedOut,
}

impl TryFrom<ClientOutcome> for InterventionOutcome {
    type Error = GatehouseError;

    /// Fails (as an internal error) on an outcome newer than this crate: never guess one.
    fn try_from(outcome: ClientOutcome) -> Result<Self, GatehouseError> {
        Ok(match outcome {
            ClientOutcome::Applied { evidence } => Self::Applied {
                evidence: (&evidence).into(),
            },
            ClientOutcome::Rejected { reason } => Self::Rejected { reason },
            ClientOutcome::UnresolvedAtTerminal { status } => Self::UnresolvedAtTerminal {
                status: (&status).into(),
            },
            ClientOutcome::TimedOut => Self::TimedOut,
            _ => return Err(GatehouseError::unknown_variant("intervention outcome")),
        })
    }
}

/// The answer to [`GatehouseClient::request_intervention`]: the request was recorded.
/// Keep `operation_id` to wait for it (or to replay the request after a crash).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct RequestedIntervention {
    /// The room.
    pub room_id: String,
    /// The execution session.
    pub session_id: String,
    /// The idempotency id (generated when the caller gave none).
    pub operation_id: String,
    /// `Requested` for a new request (a replay of an older one may show progress).
    pub state: InterventionState,
    /// The session as the request's answer showed it.
    pub session: ExecutionSession,
}

#[uniffi::export(async_runtime = "tokio")]
impl GatehouseClient {
    /// One execution session (the run it binds, its interventions and events). Throws
    /// `CapabilityUnavailable` on a host without the execution service.
    pub async fn get_execution_session(
        &self,
        room_id: String,
        session_id: String,
    ) -> Result<ExecutionSession, GatehouseError> {
        let client = self.inner.clone();
        runtime::run("get_execution_session", async move {
            let session = client
                .execution()
                .get_session(&room_id, &session_id)
                .await?;
            Ok(ExecutionSession::from(&session))
        })
        .await
    }

    /// Ask the running agent to stop (`instruction` = `stop`) or to take an instruction
    /// into its next step, at `checkpoint`. `expected_revision` is the session revision
    /// you last saw (a stale one throws `RevisionConflict`). The answer means
    /// "requested", nothing more: call `wait_for_intervention` to learn whether it was
    /// applied. `operation_id` makes a retry replay instead of duplicating; the client
    /// generates one when absent. `requested_by_participant_id` names who asks on an
    /// AgentPlat host that does not authenticate the actor (default: the config's
    /// `participant_id`). Throws `AcceptedUnreadable` when the host accepted the
    /// request but its answer could not be read: it WAS requested.
    #[uniffi::method(default(operation_id = None, requested_by_participant_id = None))]
    // Foreign callers pass these by name, the last two defaulted: a flat list reads best.
    #[allow(clippy::too_many_arguments)]
    pub async fn request_intervention(
        &self,
        room_id: String,
        session_id: String,
        expected_revision: i64,
        instruction: String,
        checkpoint: Checkpoint,
        operation_id: Option<String>,
        requested_by_participant_id: Option<String>,
    ) -> Result<RequestedIntervention, GatehouseError> {
        let client = self.inner.clone();
        runtime::run("request_intervention", async move {
            let expected_revision =
                u64::try_from(expected_revision).map_err(|_| GatehouseError::Invalid {
                    msg: format!(
                        "expected_revision must not be negative (got {expected_revision})"
                    ),
                    details: None,
                })?;
            let mut request =
                InterventionRequest::new(expected_revision, instruction, checkpoint.into());
            if let Some(operation_id) = operation_id {
                request = request.operation_id(operation_id);
            }
            if let Some(participant) = requested_by_participant_id {
                request = request.requested_by(participant);
            }
            let handle = client
                .execution()
                .request_intervention(&room_id, &session_id, request)
                .await?;
            Ok(RequestedIntervention {
                room_id,
                session_id,
                operation_id: handle.operation_id().to_string(),
                state: handle.state().try_into()?,
                session: handle.session().into(),
            })
        })
        .await
    }

    /// Wait up to `timeout` for an intervention to be applied (with the server's
    /// persisted evidence), rejected, or left unresolved by the end of the run.
    pub async fn wait_for_intervention(
        &self,
        room_id: String,
        session_id: String,
        operation_id: String,
        timeout: Duration,
    ) -> Result<InterventionOutcome, GatehouseError> {
        let client = self.inner.clone();
        runtime::run("wait_for_intervention", async move {
            let handle = client
                .execution()
                .intervention(&room_id, &session_id, &operation_id)
                .await?;
            let outcome = handle.wait_applied(timeout).await?;
            outcome.try_into()
        })
        .await
    }

    /// An execution session's events as a pull stream (see [`ExecutionEventWatch`]): from
    /// the first event, or after sequence `after`; it ends once the session is
    /// reconciled. The Swift, Kotlin and Python async sequences wrap it.
    #[uniffi::method(default(after = None))]
    pub fn open_execution_events(
        &self,
        room_id: String,
        session_id: String,
        after: Option<i64>,
    ) -> Result<Arc<ExecutionEventWatch>, GatehouseError> {
        runtime::guard("open_execution_events", || {
            let after = after
                .map(|after| {
                    u64::try_from(after).map_err(|_| GatehouseError::Invalid {
                        msg: format!("after must not be negative (got {after})"),
                        details: None,
                    })
                })
                .transpose()?;
            Ok(Arc::new(ExecutionEventWatch::open(
                &self.inner,
                &room_id,
                &session_id,
                after,
            )))
        })
    }
}
