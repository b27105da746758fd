//! The execution service's checkpoint hooks: every service-tier turn opens (or, for a
//! resume, re-attaches to) its execution session, records each checkpoint it reaches,
//! and at each one acts as the intervention dispatcher: claim under a lease with a
//! dispatch token, apply, resolve with the token. The session is reconciled when the
//! turn ends (a parked turn only pauses it).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::future::BoxFuture;
use gatehouse_wire::error::{messages, GatehouseCode};
use gatehouse_wire::execution::{
    Checkpoint, ExecutionRef, ExecutionSessionStatus, DEFAULT_LEASE_MS, MAX_LEASE_MS, MIN_LEASE_MS,
};
use gatehouse_wire::interaction::References;
use gatehouse_wire::JsonObject;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::rules::ExecError;
use super::store::{ExecutionStore, OpenSession, RunHold, SessionEnd, TurnSessionWrite};
use crate::error::ApiError;
use crate::runner::{
    CheckpointDecision, CheckpointHook, HookProvider, NoopHooks, TurnContext, TurnEnd,
};
use crate::seams::JoinedWrite;

/// The instruction that halts a run at its checkpoint (compared trimmed, any case).
pub const STOP_INSTRUCTION: &str = "stop";

/// The runtime profile recorded when the config names none.
pub const DEFAULT_RUNTIME_PROFILE: &str = "gatehouse-deterministic-harness";

/// `sha256:<hex>` of the canonical JSON of a config (keys sorted, no whitespace).
pub fn config_digest(parameters: &JsonObject) -> String {
    let canonical = gatehouse_wire::fingerprint::canonical_json(&Value::Object(parameters.clone()));
    format!(
        "sha256:{}",
        hex::encode(Sha256::digest(canonical.as_bytes()))
    )
}

/// The prefix of a draft's agent revision id.
pub const DRAFT_PREFIX: &str = "draft:";

/// `draft:<hex>` for a config digest `sha256:<hex>`.
pub fn draft_revision_id(digest: &str) -> String {
    format!("{DRAFT_PREFIX}{}", digest.trim_start_matches("sha256:"))
}

fn agent_str<'a>(parameters: &'a JsonObject, path: &[&str]) -> Option<&'a str> {
    let mut value = parameters.get("agent")?;
    for key in path {
        value = value.get(key)?;
    }
    value.as_str().filter(|s| !s.trim().is_empty())
}

/// True when the config marks the task protected (`agent.protected: true`).
pub fn config_protected(parameters: &JsonObject) -> bool {
    parameters
        .get("agent")
        .and_then(|a| a.get("protected"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The binding of a fresh turn, derived from its context (see the module docs of
/// [`crate::execution`] for the rules).
pub fn binding_for(
    ctx: &TurnContext,
    parameters: &JsonObject,
    references: Option<&References>,
) -> OpenSession {
    let digest = config_digest(parameters);
    let revision_id = references
        .and_then(|r| r.workflow_revision.as_ref())
        .and_then(|r| r.id.clone())
        .filter(|id| !id.trim().is_empty())
        .unwrap_or_else(|| draft_revision_id(&digest));
    let participant = agent_str(parameters, &["execution", "participant_id"])
        .map(str::to_string)
        .or_else(|| {
            references
                .and_then(|r| r.workflow.as_ref())
                .and_then(|w| w.slug.clone())
        })
        .unwrap_or_else(|| "agent".to_string());
    OpenSession {
        tenant_id: ctx.project_id.clone(),
        room_id: agent_str(parameters, &["execution", "room_id"])
            .map(str::to_string)
            .unwrap_or_else(|| format!("room-{}", ctx.session_id)),
        run_id: ctx.turn_id.clone(),
        task_id: ctx.session_id.clone(),
        participant_id: participant,
        agent_revision_id: revision_id,
        agent_revision_digest: digest,
        predecessor_session_id: ctx.predecessor_session_id.clone(),
        runtime_profile: Some(
            agent_str(parameters, &["execution", "runtime_profile"])
                .unwrap_or(DEFAULT_RUNTIME_PROFILE)
                .to_string(),
        ),
        authority_revision: agent_str(parameters, &["execution", "authority_revision"])
            .map(str::to_string),
        role_revision: agent_str(parameters, &["execution", "role_revision"]).map(str::to_string),
        protected: config_protected(parameters),
        turn_id: Some(ctx.turn_id.clone()),
    }
}

/// The lease a config asks for (`agent.execution.lease_ms`), clamped to 1 ms .. 300 s;
/// else `default`.
fn config_lease(parameters: &JsonObject, default: Duration) -> Duration {
    parameters
        .get("agent")
        .and_then(|a| a.get("execution"))
        .and_then(|e| e.get("lease_ms"))
        .and_then(Value::as_u64)
        .map(|ms| Duration::from_millis(ms.clamp(MIN_LEASE_MS, MAX_LEASE_MS)))
        .unwrap_or(default)
}

/// How many apply attempts the runtime adapter fails on purpose
/// (`agent.execution.fail_apply_attempts`, for tests of the durable retry; default 0).
fn config_failing_applies(parameters: &JsonObject) -> u64 {
    parameters
        .get("agent")
        .and_then(|a| a.get("execution"))
        .and_then(|e| e.get("fail_apply_attempts"))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// Hands every service-tier turn an [`ExecutionHook`]; turns without a resolved config
/// (the stateless `/run` endpoint) get [`NoopHooks`].
#[derive(Debug, Clone)]
pub struct ExecutionHookProvider {
    exec: ExecutionStore,
    lease: Duration,
    run_lease: Duration,
}

impl ExecutionHookProvider {
    /// Hooks over `exec`, claiming interventions with `lease` unless a config says
    /// otherwise, holding each running session for `run_lease` between heartbeats.
    pub fn new(exec: ExecutionStore, lease: Duration, run_lease: Duration) -> Self {
        Self {
            exec,
            lease,
            run_lease,
        }
    }

    /// Hooks with the contract's default claim lease (30 s), holding running sessions
    /// for `run_lease`.
    pub fn with_default_lease(exec: ExecutionStore, run_lease: Duration) -> Self {
        Self::new(exec, Duration::from_millis(DEFAULT_LEASE_MS), run_lease)
    }
}

impl HookProvider for ExecutionHookProvider {
    fn hook_for(&self, ctx: &TurnContext) -> Arc<dyn CheckpointHook> {
        let Some(parameters) = ctx.parameters.as_ref() else {
            return Arc::new(NoopHooks);
        };
        Arc::new(ExecutionHook {
            exec: self.exec.clone(),
            open: binding_for(ctx, parameters, ctx.references.as_ref()),
            lease: config_lease(parameters, self.lease),
            run_lease: self.run_lease,
            protected: config_protected(parameters),
            resumed_from: ctx.resumed_from_interaction_id.clone(),
            resume_session_id: ctx.execution_session_id.clone(),
            turn_id: ctx.turn_id.clone(),
            state: Mutex::new(HookState {
                failing_applies: config_failing_applies(parameters),
                ..HookState::default()
            }),
        })
    }
}

#[derive(Debug, Default)]
struct HookState {
    session_id: Option<String>,
    room_id: Option<String>,
    /// This attempt's hold on the session.
    run_token: Option<String>,
    pre_action_steps: HashSet<usize>,
    /// `(operation id, checkpoint, step)` of the stop that halted the run.
    halted_by: Option<(String, Checkpoint, usize)>,
    protected_violation: bool,
    /// Apply attempts still to fail (the adapter-failure switch).
    failing_applies: u64,
    /// Checkpoints reached, written with the turn.
    progress: Vec<Checkpoint>,
    /// `(operation id, dispatch token, evidence)` of what this attempt applied, written
    /// (resolved) with the turn: applied means in effect.
    applied: Vec<(String, String, Value)>,
}

/// One turn's hook: the turn's side of its execution session.
#[derive(Debug)]
pub struct ExecutionHook {
    exec: ExecutionStore,
    open: OpenSession,
    lease: Duration,
    run_lease: Duration,
    protected: bool,
    resumed_from: Option<String>,
    resume_session_id: Option<String>,
    turn_id: String,
    state: Mutex<HookState>,
}

impl ExecutionHook {
    fn state(&self) -> MutexGuard<'_, HookState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn session_id(&self) -> Option<String> {
        self.state().session_id.clone()
    }

    fn held(&self) -> Option<(String, String)> {
        let state = self.state();
        Some((state.session_id.clone()?, state.run_token.clone()?))
    }

    async fn start(&self) -> Result<(), ApiError> {
        let hold = RunHold::new(self.run_lease, self.resumed_from.clone());
        if let Some(interaction_id) = &self.resumed_from {
            let session_id = match &self.resume_session_id {
                Some(id) => Some(id.clone()),
                None => self
                    .session_of_parked_turn(interaction_id)
                    .await?
                    .map(|s| s.session_id),
            };
            if let Some(session_id) = session_id {
                // A resume continues its run in the run's session, or not at all.
                let session = self.exec.attach(&session_id, &hold).await.map_err(to_api)?;
                self.remember(session.session_id, session.room_id, hold);
                return Ok(());
            }
        }
        let open = self.exact_revision().await?;
        let session = self.exec.open(&open, &hold).await.map_err(to_api)?;
        self.remember(session.session_id, session.room_id, hold);
        Ok(())
    }

    fn remember(&self, session_id: String, room_id: String, hold: RunHold) {
        let mut state = self.state();
        state.session_id = Some(session_id);
        state.room_id = Some(room_id);
        state.run_token = hold.token;
    }

    /// The binding with an exact agent revision (B1): a run that names a saved
    /// `workflow_revision` must run exactly that revision's config, of its own
    /// participant; otherwise the session is refused, never silently bound as a draft.
    /// A run that names none is bound to its draft digest.
    async fn exact_revision(&self) -> Result<OpenSession, ApiError> {
        let open = self.open.clone();
        if open.agent_revision_id.starts_with(DRAFT_PREFIX) {
            return Ok(open);
        }
        let stored = self
            .exec
            .interactions()
            .agent_revision(&open.tenant_id, &open.agent_revision_id)
            .await
            .map_err(ApiError::from)?;
        let Some(revision) = stored else {
            return Err(ApiError::new(
                GatehouseCode::NotFound,
                format!(
                    "{} (agentRevisionId {:?})",
                    messages::AGENT_REVISION_NOT_FOUND,
                    open.agent_revision_id
                ),
            ));
        };
        if config_digest(revision.parameters.object()) != open.agent_revision_digest {
            return Err(ApiError::new(
                GatehouseCode::BindingConflict,
                format!(
                    "The run's config is not agent revision {:?}: its digest differs (a run from an edited config names no workflow_revision)",
                    open.agent_revision_id
                ),
            ));
        }
        if revision
            .workflow_slug
            .is_some_and(|slug| slug != open.participant_id)
        {
            return Err(ApiError::new(
                GatehouseCode::BindingConflict,
                messages::AGENT_REVISION_OTHER_PARTICIPANT,
            ));
        }
        Ok(open)
    }

    async fn session_of_parked_turn(
        &self,
        interaction_id: &str,
    ) -> Result<Option<gatehouse_wire::execution::ExecutionSession>, ApiError> {
        let parked_turn = self
            .exec
            .interactions()
            .turn_of_gate(interaction_id)
            .await
            .map_err(ApiError::from)?;
        let Some(parked_turn) = parked_turn else {
            return Ok(None);
        };
        self.exec.find_by_turn(&parked_turn).await.map_err(to_api)
    }

    /// Reach `checkpoint` at `step`: claim and apply every intervention waiting for it.
    /// A `stop` halts here; other instructions are injected into the next step. What is
    /// applied is resolved with the turn's commit ([`TurnSessionWrite`]), so it is
    /// durable together with the step it changed; a claim whose application failed
    /// leaves its lease to expire (durable retry).
    async fn reach(&self, checkpoint: Checkpoint, step: usize) -> CheckpointDecision {
        let Some((session_id, run_token)) = self.held() else {
            return CheckpointDecision::Continue;
        };
        self.state().progress.push(checkpoint.clone());
        let mut injected: Vec<String> = Vec::new();
        loop {
            let skip: Vec<String> = self
                .state()
                .applied
                .iter()
                .map(|(op, _, _)| op.clone())
                .collect();
            let claim = match self
                .exec
                .claim_for_run(
                    &session_id,
                    &run_token,
                    checkpoint.clone(),
                    self.lease,
                    &skip,
                )
                .await
            {
                Ok(Some(claim)) => claim,
                Ok(None) => break,
                Err(err) => {
                    tracing::warn!(%session_id, error = %err, "claiming interventions failed");
                    break;
                }
            };
            let adapter_failed = {
                let mut state = self.state();
                let fail = state.failing_applies > 0;
                state.failing_applies = state.failing_applies.saturating_sub(1);
                fail
            };
            if adapter_failed {
                // The adapter call failed: nothing is applied or resolved; the claim's
                // lease expires and a later claim retries it (durable retry).
                tracing::warn!(
                    %session_id, operation_id = %claim.operation_id, attempts = claim.attempts,
                    "applying the intervention failed; its lease will expire and it is retried"
                );
                continue;
            }
            let stop = claim
                .instruction
                .trim()
                .eq_ignore_ascii_case(STOP_INSTRUCTION);
            let details = serde_json::json!({
                "effect": if stop { "halted" } else { "injected" },
                "step": step,
                "attempts": claim.attempts,
                "turnId": self.turn_id,
                "instruction": claim.instruction,
            });
            tracing::info!(%session_id, operation_id = %claim.operation_id, checkpoint = checkpoint.as_str(), step, stop, "intervention applied (recorded with the turn)");
            let mut state = self.state();
            state.applied.push((
                claim.operation_id.clone(),
                claim.dispatch_token.clone(),
                details,
            ));
            if stop {
                state.halted_by = Some((claim.operation_id.clone(), checkpoint.clone(), step));
                return CheckpointDecision::Halt {
                    reason: format!("stopped by intervention {}", claim.operation_id),
                };
            }
            drop(state);
            injected.push(claim.instruction);
        }
        if injected.is_empty() {
            CheckpointDecision::Continue
        } else {
            CheckpointDecision::Inject {
                text: injected.join("; "),
            }
        }
    }

    /// How the session ends (or pauses) after `end`.
    fn session_end(&self, end: &TurnEnd) -> SessionEnd {
        let state = self.state();
        match end {
            TurnEnd::Parked => SessionEnd::Pause {
                parked_turn_id: self.turn_id.clone(),
            },
            TurnEnd::Completed => SessionEnd::Reconcile {
                status: ExecutionSessionStatus::Completed,
                reason: None,
                details: None,
            },
            TurnEnd::Failed { reason } => {
                if let Some((operation_id, checkpoint, step)) = &state.halted_by {
                    SessionEnd::Reconcile {
                        status: ExecutionSessionStatus::Canceled,
                        reason: Some(format!(
                            "stopped by intervention {operation_id} at {} (step {step})",
                            checkpoint.as_str()
                        )),
                        details: Some(
                            serde_json::json!({ "stoppedBy": operation_id, "step": step }),
                        ),
                    }
                } else if state.protected_violation {
                    SessionEnd::Reconcile {
                        status: ExecutionSessionStatus::Failed,
                        reason: Some(messages::PROTECTED_WITHOUT_PRE_ACTION.to_string()),
                        details: Some(serde_json::json!({ "code": "ADAPTER_ERROR" })),
                    }
                } else {
                    SessionEnd::Reconcile {
                        status: ExecutionSessionStatus::Failed,
                        reason: Some(reason.clone()),
                        details: None,
                    }
                }
            }
        }
    }
}

fn to_api(err: ExecError) -> ApiError {
    ApiError::new(err.code, err.message)
}

impl CheckpointHook for ExecutionHook {
    fn turn_started(&self) -> BoxFuture<'_, Result<(), ApiError>> {
        Box::pin(self.start())
    }

    fn pre_step(&self, step_index: usize) -> BoxFuture<'_, CheckpointDecision> {
        Box::pin(self.reach(Checkpoint::PreStep, step_index))
    }

    fn post_output<'a>(
        &'a self,
        step_index: usize,
        _output: &'a str,
    ) -> BoxFuture<'a, CheckpointDecision> {
        Box::pin(self.reach(Checkpoint::PostOutput, step_index))
    }

    fn pre_action<'a>(
        &'a self,
        step_index: usize,
        _tool: &'a str,
        _args: &'a Value,
    ) -> BoxFuture<'a, CheckpointDecision> {
        self.state().pre_action_steps.insert(step_index);
        Box::pin(self.reach(Checkpoint::PreAction, step_index))
    }

    fn action_completed<'a>(
        &'a self,
        step_index: usize,
        tool: &'a str,
    ) -> BoxFuture<'a, CheckpointDecision> {
        let decision = {
            let mut state = self.state();
            if self.protected && !state.pre_action_steps.contains(&step_index) {
                state.protected_violation = true;
                tracing::warn!(
                    step_index,
                    tool,
                    "protected work completed without pre_action"
                );
                CheckpointDecision::Halt {
                    reason: messages::PROTECTED_WITHOUT_PRE_ACTION.to_string(),
                }
            } else {
                CheckpointDecision::Continue
            }
        };
        Box::pin(async move { decision })
    }

    fn execution(&self) -> BoxFuture<'_, Option<ExecutionRef>> {
        Box::pin(async move {
            let session_id = self.session_id()?;
            match self.exec.get_by_id(&session_id).await {
                Ok(Some(session)) => Some(ExecutionRef {
                    room_id: session.room_id,
                    session_id: session.session_id,
                    revision: session.revision,
                }),
                Ok(None) => None,
                Err(err) => {
                    tracing::warn!(%session_id, error = %err, "reading the execution session failed");
                    None
                }
            }
        })
    }

    fn execution_session_id(&self) -> Option<String> {
        self.session_id()
    }

    fn run_fence(&self) -> Option<(String, String)> {
        self.held()
    }

    fn renew_run(&self, lease: Duration) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            let Some((session_id, run_token)) = self.held() else {
                return true;
            };
            match self.exec.renew_run(&session_id, &run_token, lease).await {
                Ok(renewed) => renewed,
                Err(err) => {
                    // Unknown: keep running; the fence decides at the next write.
                    tracing::warn!(%session_id, error = %err, "renewing the run's hold failed");
                    true
                }
            }
        })
    }

    fn durable_end(&self, end: &TurnEnd) -> Option<Box<dyn JoinedWrite>> {
        let (session_id, run_token) = self.held()?;
        let session_end = self.session_end(end);
        let state = self.state();
        Some(Box::new(TurnSessionWrite {
            session_id,
            run_token,
            progress: state.progress.clone(),
            applied: state.applied.clone(),
            end: session_end,
        }))
    }

    fn abandon(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let Some((session_id, run_token)) = self.held() else {
                return;
            };
            if let Err(err) = self.exec.abandon_run(&session_id, &run_token).await {
                tracing::warn!(%session_id, error = %err, "releasing the run's hold failed; it expires with its lease");
            }
        })
    }
}
