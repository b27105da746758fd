//! The execution service's checkpoint hooks: every service-tier turn opens (or, for a
//! resume, re-attaches to) its execution session, records each checkpoint it reaches,
//! and at each one acts as the intervention dispatcher: claim under a lease with a
//! dispatch token, apply, resolve with the token. The session is reconciled when the
//! turn ends (a parked turn only pauses it).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::future::BoxFuture;
use gatehouse_wire::error::messages;
use gatehouse_wire::execution::{
    Checkpoint, ExecutionRef, ExecutionSessionStatus, DEFAULT_LEASE_MS, MAX_LEASE_MS, MIN_LEASE_MS,
};
use gatehouse_wire::interaction::References;
use gatehouse_wire::JsonObject;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::rules::{ExecError, Resolution};
use super::store::{ExecutionStore, OpenSession};
use crate::error::ApiError;
use crate::runner::{
    CheckpointDecision, CheckpointHook, HookProvider, NoopHooks, TurnContext, TurnEnd,
};
use crate::store::Store;

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
    store: Store,
    lease: Duration,
}

impl ExecutionHookProvider {
    /// Hooks over `store`, claiming with `lease` unless a config says otherwise.
    pub fn new(store: Store, lease: Duration) -> Self {
        Self {
            exec: ExecutionStore::new(store.clone()),
            store,
            lease,
        }
    }

    /// Hooks with the contract's default lease (30 s).
    pub fn with_default_lease(store: Store) -> Self {
        Self::new(store, Duration::from_millis(DEFAULT_LEASE_MS))
    }
}

impl HookProvider for ExecutionHookProvider {
    fn hook_for(&self, ctx: &TurnContext) -> Arc<dyn CheckpointHook> {
        let Some(parameters) = ctx.parameters.as_ref() else {
            return Arc::new(NoopHooks);
        };
        Arc::new(ExecutionHook {
            exec: self.exec.clone(),
            store: self.store.clone(),
            open: binding_for(ctx, parameters, ctx.references.as_ref()),
            lease: config_lease(parameters, self.lease),
            protected: config_protected(parameters),
            resumed_from: ctx.resumed_from_interaction_id.clone(),
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
    pre_action_steps: HashSet<usize>,
    /// `(operation id, checkpoint, step)` of the stop that halted the run.
    halted_by: Option<(String, Checkpoint, usize)>,
    protected_violation: bool,
    /// Apply attempts still to fail (the adapter-failure switch).
    failing_applies: u64,
}

/// One turn's hook: the turn's side of its execution session.
#[derive(Debug)]
pub struct ExecutionHook {
    exec: ExecutionStore,
    store: Store,
    open: OpenSession,
    lease: Duration,
    protected: bool,
    resumed_from: Option<String>,
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

    async fn start(&self) -> Result<(), ApiError> {
        if let Some(interaction_id) = &self.resumed_from {
            if let Some(session) = self.session_of_parked_turn(interaction_id).await? {
                if !session.status.is_terminal() {
                    let session = self
                        .exec
                        .set_running_state(
                            &session.session_id,
                            ExecutionSessionStatus::Active,
                            Some(&self.turn_id),
                        )
                        .await
                        .map_err(to_api)?;
                    let mut state = self.state();
                    state.session_id = Some(session.session_id);
                    state.room_id = Some(session.room_id);
                    return Ok(());
                }
            }
        }
        let open = self.exact_revision().await?;
        let session = self.exec.open(&open).await.map_err(to_api)?;
        let mut state = self.state();
        state.session_id = Some(session.session_id);
        state.room_id = Some(session.room_id);
        Ok(())
    }

    /// The binding with an exact agent revision: a `workflow_revision` id counts only
    /// when the registry has that revision AND the turn runs exactly its config (same
    /// digest); otherwise the run is bound to its draft digest.
    async fn exact_revision(&self) -> Result<OpenSession, ApiError> {
        let mut open = self.open.clone();
        if open.agent_revision_id.starts_with(DRAFT_PREFIX) {
            return Ok(open);
        }
        let stored = self
            .store
            .get_revision(&open.tenant_id, &open.agent_revision_id)
            .await
            .map_err(ApiError::from)?;
        let exact = stored
            .as_ref()
            .is_some_and(|r| config_digest(&r.parameters) == open.agent_revision_digest);
        if !exact {
            open.agent_revision_id = draft_revision_id(&open.agent_revision_digest);
        }
        Ok(open)
    }

    async fn session_of_parked_turn(
        &self,
        interaction_id: &str,
    ) -> Result<Option<gatehouse_wire::execution::ExecutionSession>, ApiError> {
        let row = self
            .store
            .get_interaction_any(interaction_id)
            .await
            .map_err(ApiError::from)?;
        let Some(parked_turn) = row.and_then(|r| r.turn_id) else {
            return Ok(None);
        };
        self.exec.find_by_turn(&parked_turn).await.map_err(to_api)
    }

    /// Reach `checkpoint` at `step`: record it, then claim, apply and resolve every
    /// intervention waiting for it. A `stop` halts here; other instructions are
    /// injected into the next step. A resolve that fails leaves the claim's lease to
    /// expire (durable retry) and the instruction is NOT applied.
    async fn reach(&self, checkpoint: Checkpoint, step: usize) -> CheckpointDecision {
        let Some(session_id) = self.session_id() else {
            return CheckpointDecision::Continue;
        };
        if let Err(err) = self
            .exec
            .checkpoint_reached(&session_id, checkpoint.clone())
            .await
        {
            tracing::warn!(%session_id, error = %err, "recording checkpoint progress failed");
        }
        let mut injected: Vec<String> = Vec::new();
        loop {
            let claim = match self
                .exec
                .claim(&session_id, checkpoint.clone(), self.lease)
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
            let resolved = self
                .exec
                .resolve(
                    &session_id,
                    &claim.operation_id,
                    &claim.dispatch_token,
                    &Resolution::Applied { details },
                )
                .await;
            if let Err(err) = resolved {
                tracing::warn!(
                    %session_id, operation_id = %claim.operation_id, error = %err,
                    "resolving an intervention failed; its lease will expire and it is retried"
                );
                continue;
            }
            tracing::info!(%session_id, operation_id = %claim.operation_id, checkpoint = checkpoint.as_str(), step, stop, "intervention applied");
            if stop {
                self.state().halted_by =
                    Some((claim.operation_id.clone(), checkpoint.clone(), step));
                return CheckpointDecision::Halt {
                    reason: format!("stopped by intervention {}", claim.operation_id),
                };
            }
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

    async fn end(&self, end: &TurnEnd) {
        let Some(session_id) = self.session_id() else {
            return;
        };
        let (halted_by, violation) = {
            let state = self.state();
            (state.halted_by.clone(), state.protected_violation)
        };
        let result = match end {
            TurnEnd::Parked => self
                .exec
                .set_running_state(&session_id, ExecutionSessionStatus::Paused, None)
                .await
                .map(|_| ()),
            TurnEnd::Completed => self
                .exec
                .reconcile(&session_id, ExecutionSessionStatus::Completed, None, None)
                .await
                .map(|_| ()),
            TurnEnd::Failed { reason } => {
                if let Some((operation_id, checkpoint, step)) = halted_by {
                    let why = format!(
                        "stopped by intervention {operation_id} at {} (step {step})",
                        checkpoint.as_str()
                    );
                    let details = serde_json::json!({ "stoppedBy": operation_id, "step": step });
                    self.exec
                        .reconcile(
                            &session_id,
                            ExecutionSessionStatus::Canceled,
                            Some(&why),
                            Some(details),
                        )
                        .await
                        .map(|_| ())
                } else if violation {
                    let details = serde_json::json!({ "code": "ADAPTER_ERROR" });
                    self.exec
                        .reconcile(
                            &session_id,
                            ExecutionSessionStatus::Failed,
                            Some(messages::PROTECTED_WITHOUT_PRE_ACTION),
                            Some(details),
                        )
                        .await
                        .map(|_| ())
                } else {
                    self.exec
                        .reconcile(
                            &session_id,
                            ExecutionSessionStatus::Failed,
                            Some(reason),
                            None,
                        )
                        .await
                        .map(|_| ())
                }
            }
        };
        if let Err(err) = result {
            tracing::warn!(%session_id, error = %err, "recording the end of the run failed");
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

    fn turn_ended<'a>(&'a self, end: &'a TurnEnd) -> BoxFuture<'a, ()> {
        Box::pin(self.end(end))
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
}
