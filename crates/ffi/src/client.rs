//! `GatehouseClient`: the object a phone app holds.

use std::sync::Arc;
use std::time::Duration;

use gatehouse_client::{Answer, Client};
use gatehouse_wire::invoke as winv;
use gatehouse_wire::run::RulePermission;

use crate::error::GatehouseError;
use crate::json::JsonText;
use crate::records::{self, Capabilities, Interaction};
use crate::runtime;
use crate::streams::SessionWatch;
use crate::watch::{self, WatchHandle, WatchListener};

/// Which kind of host the base URL is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, uniffi::Enum)]
pub enum Upstream {
    /// Gatehouse's own server: everything under `/api` (the default).
    Gatehouse,
    /// AgentPlat's Rooms API: execution sessions at the root, the tenant in
    /// `X-Agentplat-Tenant-Id`, the requester as `requestedByParticipantId`, no
    /// `project_id`; no interactions.
    Agentplat,
    /// Agenta's API: the interactions endpoints (`Authorization: ApiKey <key>`); no
    /// execution sessions.
    Agenta,
}

impl From<Upstream> for gatehouse_client::Upstream {
    fn from(upstream: Upstream) -> Self {
        match upstream {
            Upstream::Gatehouse => Self::Gatehouse,
            Upstream::Agentplat => Self::AgentPlat,
            Upstream::Agenta => Self::Agenta,
        }
    }
}

/// How to reach a Gatehouse-compatible control plane.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct ClientConfig {
    /// Base URL of the control plane, e.g. `https://gatehouse.example.com` (a path
    /// prefix is kept).
    pub base_url: String,
    /// API key, sent as `Authorization: Bearer <key>` (`ApiKey <key>` to Agenta).
    #[uniffi(default = None)]
    pub api_key: Option<String>,
    /// Project id sent as `?project_id=` on every Gatehouse and Agenta call.
    #[uniffi(default = None)]
    pub project_id: Option<String>,
    /// Per-call timeout (Kotlin `java.time.Duration`, Swift `TimeInterval` seconds,
    /// Python `datetime.timedelta`); the client's default when absent.
    #[uniffi(default = None)]
    pub timeout: Option<Duration>,
    /// Which kind of host `base_url` is (Gatehouse when absent).
    #[uniffi(default = None)]
    pub upstream: Option<Upstream>,
    /// The tenant, sent as `X-Agentplat-Tenant-Id` (AgentPlat's default authentication
    /// requires it).
    #[uniffi(default = None)]
    pub tenant: Option<String>,
    /// Who requests interventions, sent as `requestedByParticipantId` (read by an
    /// AgentPlat host whose authentication names no actor).
    #[uniffi(default = None)]
    pub participant_id: Option<String>,
    /// Pin the form of Agenta's session contract the host speaks (default: learned from
    /// its capabilities).
    #[uniffi(default = None)]
    pub agenta_contract: Option<crate::records::AgentaContract>,
}

/// One approve-all target that failed for a reason other than "already answered".
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct ApproveAllFailure {
    /// The interaction that could not be answered.
    pub interaction_id: String,
    /// What kind of failure.
    pub kind: crate::error::GatehouseErrorKind,
    /// The error's sentence.
    pub msg: String,
    /// The error's detail.
    pub details: Option<String>,
    /// True when answering it again later may succeed.
    pub retryable: bool,
}

/// The per-target outcome of [`GatehouseClient::approve_all`]. One failing target never
/// hides another's result.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct ApproveAllReport {
    /// Interactions this call answered, as they are after the answer.
    pub answered: Vec<Interaction>,
    /// Ids that were no longer pending: settled elsewhere, not a failure.
    pub already_answered: Vec<String>,
    /// Ids whose answer failed otherwise, each with its error.
    pub failed: Vec<ApproveAllFailure>,
    /// True when there was at least one target and every one was already answered:
    /// the screen can go back to idle at once.
    pub all_already_answered: bool,
}

impl ApproveAllReport {
    fn from_client(report: gatehouse_client::ApproveAllReport) -> Result<Self, GatehouseError> {
        let all_already_answered = report.all_already_answered();
        Ok(Self {
            answered: records::interactions(&report.answered)?,
            already_answered: report.already_answered,
            failed: report
                .failed
                .into_iter()
                .map(|(interaction_id, error)| {
                    let error = GatehouseError::from(error);
                    ApproveAllFailure {
                        interaction_id,
                        kind: error.kind(),
                        msg: error.msg().to_string(),
                        details: error.details().map(str::to_string),
                        retryable: error.retryable(),
                    }
                })
                .collect(),
            all_already_answered,
        })
    }
}

/// What an invoked turn's permissions decide for its tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, uniffi::Enum)]
pub enum ToolPermission {
    /// Gate the call on a person's answer (the turn parks at a gate).
    Ask,
    /// Run the call without asking.
    Allow,
    /// Refuse the call.
    Deny,
}

/// How an invoked turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, uniffi::Enum)]
pub enum TurnStatus {
    /// Stopped at an approval gate: `interaction_ids` are the gates to answer.
    Parked,
    /// Finished.
    Completed,
    /// Failed.
    Failed,
}

/// The answer to [`GatehouseClient::invoke_tool`]: the turn and the gates it opened.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct InvokeOutcome {
    /// How the turn ended.
    pub status: TurnStatus,
    /// The agent session (the server names it when none was given).
    pub session_id: String,
    /// The turn.
    pub turn_id: String,
    /// The gates the turn opened (pending interactions), the ids `respond_to_interaction`
    /// takes.
    pub interaction_ids: Vec<String>,
    /// The turn's output text, when it finished.
    pub output: Option<String>,
}

impl From<winv::InvokeResponse> for InvokeOutcome {
    fn from(response: winv::InvokeResponse) -> Self {
        Self {
            status: match response.status {
                winv::TurnStatus::Parked => TurnStatus::Parked,
                winv::TurnStatus::Completed => TurnStatus::Completed,
                winv::TurnStatus::Failed => TurnStatus::Failed,
            },
            session_id: response.session_id,
            turn_id: response.turn_id,
            interaction_ids: response.interaction_ids,
            output: response.output,
        }
    }
}

/// A client for one control plane and project. Cheap to share between threads; every
/// network call is async and throws [`GatehouseError`].
#[derive(Debug, uniffi::Object)]
pub struct GatehouseClient {
    pub(crate) inner: Client,
}

/// Build the underlying client from a config (no network).
fn build_client(config: &ClientConfig) -> Result<Client, GatehouseError> {
    let mut builder = Client::builder(config.base_url.clone());
    if let Some(upstream) = config.upstream {
        builder = builder.upstream(upstream.into());
    }
    if let Some(tenant) = &config.tenant {
        builder = builder.tenant(tenant.clone());
    }
    if let Some(participant) = &config.participant_id {
        builder = builder.participant_id(participant.clone());
    }
    if let Some(contract) = config.agenta_contract {
        builder = builder.agenta_contract(contract.into());
    }
    if let Some(key) = &config.api_key {
        builder = builder.api_key(key.clone());
    }
    if let Some(project_id) = &config.project_id {
        builder = builder.project_id(project_id.clone());
    }
    if let Some(timeout) = config.timeout {
        if timeout.is_zero() {
            return Err(GatehouseError::Invalid {
                msg: "timeout must be greater than zero".to_string(),
                details: None,
            });
        }
        builder = builder.timeout(timeout);
    }
    Ok(builder.build()?)
}

#[uniffi::export(async_runtime = "tokio")]
impl GatehouseClient {
    /// Build a client. Nothing is sent until the first call; a malformed base URL or
    /// API key fails here with [`GatehouseError::Config`].
    #[uniffi::constructor]
    pub fn new(config: ClientConfig) -> Result<Arc<Self>, GatehouseError> {
        runtime::guard("build_client", || {
            let handle = runtime::handle()?;
            let _entered = handle.enter();
            Ok(Arc::new(Self {
                inner: build_client(&config)?,
            }))
        })
    }

    /// The base URL this client talks to.
    pub fn base_url(&self) -> Result<String, GatehouseError> {
        runtime::guard("base_url", || Ok(self.inner.base_url().to_string()))
    }

    /// Every pending interaction of the project (all pages), or of one session.
    #[uniffi::method(default(session_id = None))]
    pub async fn list_pending_interactions(
        &self,
        session_id: Option<String>,
    ) -> Result<Vec<Interaction>, GatehouseError> {
        let client = self.inner.clone();
        runtime::run("list_pending_interactions", async move {
            let rows = client
                .interactions()
                .list_pending(session_id.as_deref())
                .await?;
            records::interactions(&rows)
        })
        .await
    }

    /// One interaction by id.
    pub async fn get_interaction(&self, id: String) -> Result<Interaction, GatehouseError> {
        let client = self.inner.clone();
        runtime::run("get_interaction", async move {
            let row = client.interactions().get(&id).await?;
            Interaction::try_from(&row)
        })
        .await
    }

    /// Answer an approval gate: approve or deny, with an optional message for the agent
    /// and the tool call being answered. Throws `AlreadyAnswered` when another device
    /// answered first (benign: refresh). Safe to retry after a transport error: the
    /// client carries an idempotency key and never reports its own landed answer as
    /// already answered. Pass your own `idempotency_key` (e.g. one you saved with the
    /// user's tap) to make a retry after an app restart safe too: the same key replays
    /// the answer that landed instead of reporting it as already answered.
    #[uniffi::method(default(message = None, tool_call_id = None, idempotency_key = None))]
    pub async fn respond_to_interaction(
        &self,
        id: String,
        approved: bool,
        message: Option<String>,
        tool_call_id: Option<String>,
        idempotency_key: Option<String>,
    ) -> Result<Interaction, GatehouseError> {
        let client = self.inner.clone();
        runtime::run("respond_to_interaction", async move {
            let mut answer = Answer::approval(approved);
            if let Some(message) = message {
                answer = answer.message(message);
            }
            if let Some(tool_call_id) = tool_call_id {
                answer = answer.tool_call_id(tool_call_id);
            }
            let interactions = client.interactions();
            let row = match idempotency_key {
                Some(key) => {
                    interactions
                        .respond_with_idempotency_key(&id, &answer, &key)
                        .await?
                }
                None => interactions.respond(&id, &answer).await?,
            };
            Interaction::try_from(&row)
        })
        .await
    }

    /// Answer many gates at once (in parallel, under a bound) with the same verdict.
    /// Never throws for a single target: each one's outcome is in the report.
    pub async fn approve_all(
        &self,
        ids: Vec<String>,
        approved: bool,
    ) -> Result<ApproveAllReport, GatehouseError> {
        let client = self.inner.clone();
        runtime::run("approve_all", async move {
            let report = client
                .interactions()
                .approve_all(&ids, &Answer::approval(approved))
                .await;
            ApproveAllReport::from_client(report)
        })
        .await
    }

    /// Open a gate yourself: run a turn of the reference server's deterministic agent
    /// that is asked `prompt` and calls `tool` with `args` (JSON text; `{}` when absent)
    /// under `permission` (`Ask` when absent: the turn parks at a gate, whose id is in
    /// the outcome's `interaction_ids`). In `session_id`, or a new session the server
    /// names. For tests, examples and quick starts; a host without the service tier
    /// (Agenta, AgentPlat) throws `CapabilityUnavailable`. Never retried (an invoke is
    /// not idempotent).
    #[uniffi::method(default(args = None, permission = None, session_id = None))]
    pub async fn invoke_tool(
        &self,
        prompt: String,
        tool: String,
        args: Option<JsonText>,
        permission: Option<ToolPermission>,
        session_id: Option<String>,
    ) -> Result<InvokeOutcome, GatehouseError> {
        let client = self.inner.clone();
        runtime::run("invoke_tool", async move {
            let mut turn = winv::ToolTurn::new(prompt, tool);
            if let Some(args) = args {
                turn = turn.args(args.to_value()?);
            }
            if let Some(permission) = permission {
                turn = turn.permission(match permission {
                    ToolPermission::Ask => RulePermission::Ask,
                    ToolPermission::Allow => RulePermission::Allow,
                    ToolPermission::Deny => RulePermission::Deny,
                });
            }
            if let Some(session_id) = session_id {
                turn = turn.session(session_id);
            }
            let response = client.service().invoke_tool(&turn).await?;
            Ok(InvokeOutcome::from(response))
        })
        .await
    }

    /// What the host serves (read once, then cached by the client).
    pub async fn capabilities(&self) -> Result<Capabilities, GatehouseError> {
        let client = self.inner.clone();
        runtime::run("capabilities", async move {
            let response = client.capabilities().get().await?;
            Ok(Capabilities::from(&response))
        })
        .await
    }

    /// Watch a session's gates: `listener` hears every (re)connect (revalidate then),
    /// every event, every reconnect attempt, and the end of the stream. The returned
    /// handle's `cancel()` (or dropping/closing it) stops the watch.
    pub fn watch_session(
        &self,
        session_id: String,
        listener: Arc<dyn WatchListener>,
    ) -> Result<Arc<WatchHandle>, GatehouseError> {
        runtime::guard("watch_session", || {
            watch::start(&self.inner, session_id, listener)
        })
    }

    /// A session's gates as a pull stream (see [`SessionWatch`]): the base of Swift's
    /// `sessionUpdates` `AsyncThrowingStream`, Kotlin's `sessionUpdates` `Flow` and
    /// Python's `session_updates` async iterator. Nothing connects until the first
    /// `next()`.
    pub fn open_session_watch(
        &self,
        session_id: String,
    ) -> Result<Arc<SessionWatch>, GatehouseError> {
        runtime::guard("open_session_watch", || {
            Ok(Arc::new(SessionWatch::open(&self.inner, &session_id)))
        })
    }
}
