//! One turn of the service tier: [`execute_turn`] takes the config the turn runs under
//! ([`super::config`]), builds the `/run` request with `gatehouse-wire` (so
//! `effectiveParameters` is stamped exactly as the SDK does), runs it on the harness of
//! [`crate::runner`] under the turn's checkpoint hook and guard, and shapes what the turn
//! leaves behind (the turn record, the gate row with `data.parameters` = the stamped
//! blob, the [`ParkedState`]).
//!
//! A resume fails closed: when the config that raised its gate cannot be recovered
//! ([`resume_config`]), or its execution session already ended, the turn ends failed
//! with the reason (on the turn, its execution run, and the row's `resolution.error`)
//! and the approved tool does not run. So does a tool call whose id the tool-run ledger
//! holds for another call ([`TOOL_CALL_CONFLICT_CODE`]).
//!
//! Both callers, `POST /api/invoke` and the resume [`dispatch`](super::dispatch)er, run a
//! turn the same way: [`begin_turn`], write what [`ExecutedTurn`] holds in one
//! transaction of their own, then [`end_turn`] (watch-stream events, the checkpoint
//! hook's end of turn).

use std::sync::Arc;

use gatehouse_wire::effective::{MeasuredConfig, StampOutcome, StampPolicy};
use gatehouse_wire::error::GatehouseCode;
use gatehouse_wire::interaction::{
    InteractionData, InteractionRequest, LifecycleState, Reference, References,
};
use gatehouse_wire::invoke::{InvokeRequest, TurnStatus};
use gatehouse_wire::redact::redact_effective_parameters;
use gatehouse_wire::run::{
    ChatMessage, Harness, RunContext, RunContextReference, RunContextRun, RunContextWorkflow,
    RunRequest, Sandbox,
};
use gatehouse_wire::JsonObject;
use serde_json::Value;

use super::config::{
    config_model, config_permissions, config_script, resolve_config, resume_config, ConfigSource,
    ResolvedConfig,
};
use super::guard::{GuardedTurn, TurnGuard};
use super::parked::{ParkedGate, ParkedState};
use super::store::{turn_status_text, ClaimedJob, NewInteraction, NewTurn};
use crate::db::new_id;
use crate::error::ApiError;
use crate::runner::{
    self, last_user_text, CheckpointHook, GateRequest, HarnessEnd, StartAt, Step, TurnContext,
};
use crate::seams::JoinedWrite;
use crate::AppState;

fn run_context_reference(reference: &Reference) -> RunContextReference {
    RunContextReference {
        id: reference.id.clone(),
        slug: reference.slug.clone(),
        version: reference.version.clone().map(serde_json::Value::String),
        extra: JsonObject::new(),
    }
}

/// `runContext` of a turn: its workflow references, and whether it runs a draft.
pub fn run_context(references: &References, source: &ConfigSource, resumed: bool) -> RunContext {
    let workflow = if references.workflow.is_none()
        && references.workflow_variant.is_none()
        && references.workflow_revision.is_none()
    {
        None
    } else {
        Some(RunContextWorkflow {
            artifact: references.workflow.as_ref().map(run_context_reference),
            variant: references
                .workflow_variant
                .as_ref()
                .map(run_context_reference),
            revision: references
                .workflow_revision
                .as_ref()
                .map(run_context_reference),
            is_draft: Some(serde_json::Value::Bool(
                references.workflow_revision.is_none()
                    && matches!(source, ConfigSource::Inline | ConfigSource::InlineRevision),
            )),
            extra: JsonObject::new(),
        })
    };
    RunContext {
        run: Some(RunContextRun {
            kind: Some(if resumed { "resume" } else { "api" }.to_string()),
            extra: JsonObject::new(),
        }),
        workflow,
        trace: None,
        extra: JsonObject::new(),
    }
}

/// The references a gate row records, read back from the run context (A4): `workflow`,
/// `workflow_variant`, and `workflow_revision` only when the run had one.
pub fn references_from_run_context(context: Option<&RunContext>) -> Option<References> {
    let workflow = context?.workflow.as_ref()?;
    let to_ref = |r: &RunContextReference| Reference {
        id: r.id.clone(),
        slug: r.slug.clone(),
        // The server writes a string; another value is kept as its JSON text.
        version: r.version.as_ref().map(|v| match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        }),
        extra: JsonObject::new(),
    };
    let references = References {
        workflow: workflow.artifact.as_ref().map(to_ref),
        workflow_variant: workflow.variant.as_ref().map(to_ref),
        workflow_revision: workflow.revision.as_ref().map(to_ref),
        extra: JsonObject::new(),
    };
    (!references.is_empty()).then_some(references)
}

/// A turn to run.
#[derive(Debug, Clone)]
pub struct TurnInput {
    /// The project.
    pub project_id: String,
    /// Who asked (an actor, or `dispatcher`).
    pub actor: String,
    /// The invoke body (for a resume: built by the resume builder).
    pub invoke: InvokeRequest,
    /// Set for a resume: where to continue.
    pub resume: Option<ResumePoint>,
    /// The resume job this turn runs under (its lease fences the turn's tool runs and is
    /// renewed by the turn's heartbeat).
    pub job: Option<ClaimedJob>,
    /// The turn's id when it was named before it ran (a durable continuation's, as its
    /// respond answered it); `None`: a fresh one.
    pub turn_id: Option<String>,
}

/// Where a resume continues.
#[derive(Debug, Clone)]
pub struct ResumePoint {
    /// The answered interaction.
    pub interaction_id: String,
    /// The parked turn's id.
    pub parked_turn_id: String,
    /// The parked turn's state.
    pub parked: ParkedState,
}

/// The code of `resolution.error` on a row whose resume was refused because the config
/// that raised its gate cannot be recovered.
pub const RESUME_REFUSED_CODE: &str = "CONFIG_UNRECOVERABLE";

/// The code of `resolution.error` on a row whose resume was refused because the run's
/// execution session already ended (a run is never resumed outside its session).
pub const SESSION_ENDED_CODE: &str = "EXECUTION_SESSION_ENDED";

/// The code of `resolution.error` on a row whose resume did not run a tool call because
/// the tool-run ledger holds the call's id for another call (another tool or other
/// arguments): the call does not run and the turn fails, never reported as run.
pub const TOOL_CALL_CONFLICT_CODE: &str = "TOOL_CALL_CONFLICT";

/// Why a resume did not run its turn (or a tool call of it): `resolution.error` on the
/// answered row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedResume {
    /// [`RESUME_REFUSED_CODE`], [`SESSION_ENDED_CODE`] or [`TOOL_CALL_CONFLICT_CODE`].
    pub code: &'static str,
    /// Why.
    pub reason: String,
}

/// A turn that ran (not yet persisted).
pub struct ExecutedTurn {
    /// The turn record to write.
    pub turn: NewTurn,
    /// The gates it opened (a parked turn: one, or one per asking call of a `parallel`
    /// step), written in the turn's transaction.
    pub gates: Vec<NewInteraction>,
    /// How it ended.
    pub status: TurnStatus,
    /// The model it ran under.
    pub model: Option<String>,
    /// Its output text.
    pub output: String,
    /// The `/run` request the runner tier ran.
    pub request: RunRequest,
    /// The turn's checkpoint hook (its guard: told when the turn ended; dropping it
    /// stops the turn's heartbeat).
    pub hook: Arc<dyn CheckpointHook>,
    /// How the harness ended.
    pub end: HarnessEnd,
    /// Set when a resume was refused: its config cannot be recovered
    /// ([`resume_config`]), or its execution session already ended; or when a tool call
    /// did not run because the tool-run ledger holds its id for another call.
    pub resume_refused: Option<RefusedResume>,
    /// The hook's share of the turn's commit (the execution session's interventions,
    /// checkpoints and end): write it in the same transaction as the turn.
    pub session_write: Option<Box<dyn JoinedWrite>>,
    /// Set when the turn's guard stopped this attempt ([`TurnGuard::lost_reason`]: a
    /// lease moved on, or a tool run could not be recorded): a resume must not write it,
    /// but retry (an invoke records the failed turn with the reason).
    pub attempt_lost: Option<String>,
    /// The attempt's id on the turn's run row, when [`begin_turn`] wrote one.
    pub run_attempt: Option<String>,
}

impl ExecutedTurn {
    /// `resolution.error` for the answered row: `{"code", "message"}` when the resume
    /// was refused, else `None`.
    pub fn resolution_error(&self) -> Option<Value> {
        self.resume_refused
            .as_ref()
            .map(|refused| serde_json::json!({ "code": refused.code, "message": refused.reason }))
    }

    /// The hook's share of the commit, as the store takes it.
    pub fn joined_write(&self) -> Option<&dyn JoinedWrite> {
        self.session_write.as_deref()
    }
}

impl std::fmt::Debug for ExecutedTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecutedTurn")
            .field("turn_id", &self.turn.id)
            .field("status", &self.status)
            .field("model", &self.model)
            .finish()
    }
}

/// Run one turn, in five steps (each a method of the private `TurnRun`): `config` (the
/// config it runs under), `run_request` (the stamped `/run` request), `start_hook` (the
/// checkpoint hook opens the run's execution session, the guard holds the turn's
/// leases), `run_script` (the harness, or a failure without running a step), then
/// `park` when it stopped at a gate. Writes nothing: the caller persists
/// [`ExecutedTurn`] in one transaction (an invoke, or a resume completion).
pub async fn execute_turn(state: &AppState, input: TurnInput) -> Result<ExecutedTurn, ApiError> {
    execute_attempt(state, input, None).await
}

/// [`execute_turn`] as attempt `run_attempt` of the turn's run row (written by
/// [`begin_turn`]): its heartbeat renews the row, and its harness honours a Stop.
async fn execute_attempt(
    state: &AppState,
    input: TurnInput,
    run_attempt: Option<String>,
) -> Result<ExecutedTurn, ApiError> {
    let mut run = TurnRun::new(state, input);
    run.run_attempt = run_attempt;
    let (resolved, config_refused) = run.config().await?;
    let model = config_model(resolved.parameters());
    tracing::info!(
        project_id = %run.project_id, session_id = %run.session_id, turn_id = %run.turn_id,
        config_source = resolved.source.as_str(),
        model = model.as_deref().unwrap_or("-"),
        resumed = run.resume.is_some(),
        "turn starting"
    );
    let mut request = run.run_request(&resolved, model.as_deref());

    let (guard, session_refused) = run.start_hook(&resolved, model.clone()).await?;
    // The config's refusal, when there is one, is the reason the row gives.
    let resume_refused = config_refused.or(session_refused);

    let ran = run
        .run_script(
            &mut request,
            &resolved,
            resume_refused.as_ref(),
            guard.as_ref(),
        )
        .await;
    let resume_refused = resume_refused.or_else(|| {
        guard.ledger_conflict().map(|reason| RefusedResume {
            code: TOOL_CALL_CONFLICT_CODE,
            reason,
        })
    });
    let hook: Arc<dyn CheckpointHook> = guard.clone();
    let (status, gates, parked_state) = match &ran.end {
        HarnessEnd::Completed => (TurnStatus::Completed, Vec::new(), None),
        // A stopped turn is recorded failed (the wire's turn statuses have no other word
        // for it); the Stop's command says `stopped`, with this record as its evidence.
        HarnessEnd::Failed { .. } | HarnessEnd::Stopped { .. } => {
            (TurnStatus::Failed, Vec::new(), None)
        }
        HarnessEnd::Parked(gate_requests) => {
            let (gates, parked) = run.park(
                gate_requests,
                &ran.script,
                &request,
                &resolved,
                model.clone(),
                hook.execution_session_id(),
            )?;
            (TurnStatus::Parked, gates, Some(parked))
        }
    };
    let turn = NewTurn {
        id: run.turn_id.clone(),
        project_id: run.project_id.clone(),
        session_id: run.session_id.clone(),
        status: turn_status_text(status).to_string(),
        model: model.clone(),
        output: Some(ran.output.clone()),
        resumed_from_interaction_id: run.resumed_from(),
        messages: ran.transcript,
        parked_state,
        stopped_by: match &ran.end {
            HarnessEnd::Stopped { command_id, .. } => Some(command_id.clone()),
            _ => None,
        },
    };
    let session_write = hook.durable_end(&ran.end.turn_end());
    let attempt_lost = guard.lost_reason();
    Ok(ExecutedTurn {
        turn,
        gates,
        status,
        model,
        output: ran.output,
        request,
        hook,
        end: ran.end,
        resume_refused,
        session_write,
        attempt_lost,
        run_attempt: run.run_attempt.clone(),
    })
}

/// A turn under way: what every step of [`execute_turn`] reads.
struct TurnRun<'a> {
    state: &'a AppState,
    project_id: String,
    session_id: String,
    turn_id: String,
    actor: String,
    invoke: InvokeRequest,
    resume: Option<ResumePoint>,
    job: Option<ClaimedJob>,
    policy: StampPolicy,
    run_attempt: Option<String>,
}

/// What running a turn's script came to.
struct ScriptRun {
    end: HarnessEnd,
    output: String,
    /// The transcript after the turn.
    transcript: Vec<ChatMessage>,
    /// The script that ran (empty when none did).
    script: Vec<Step>,
}

impl<'a> TurnRun<'a> {
    /// A new turn of `input` (a fresh id; the invoke's session, else a new one).
    fn new(state: &'a AppState, input: TurnInput) -> Self {
        let TurnInput {
            project_id,
            actor,
            invoke,
            resume,
            job,
            turn_id,
        } = input;
        let session_id = invoke
            .session_id
            .clone()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(new_id);
        Self {
            state,
            project_id,
            session_id,
            turn_id: turn_id.unwrap_or_else(new_id),
            actor,
            invoke,
            resume,
            job,
            policy: StampPolicy::with_max_bytes(state.config.stamp_max_bytes),
            run_attempt: None,
        }
    }

    /// The interaction a resume continues from.
    fn resumed_from(&self) -> Option<String> {
        self.resume.as_ref().map(|r| r.interaction_id.clone())
    }

    /// The conversation the turn starts from.
    fn messages(&self) -> &[ChatMessage] {
        &self.invoke.data.inputs.messages
    }

    /// Step 1: the config the turn runs under. A fresh turn resolves it by A6
    /// ([`resolve_config`]); a resume takes the config that raised its gate
    /// ([`resume_config`]), and when none is left it is refused: it runs with an empty
    /// config and no step, and the row says why.
    async fn config(&self) -> Result<(ResolvedConfig, Option<RefusedResume>), ApiError> {
        let store = &self.state.interactions;
        let Some(point) = &self.resume else {
            let resolved = resolve_config(store, &self.project_id, &self.invoke).await?;
            return Ok((resolved, None));
        };
        let recovered = resume_config(
            store,
            &self.project_id,
            &point.parked,
            &self.invoke,
            self.policy.redaction,
        )
        .await;
        match recovered {
            Ok(resolved) => Ok((resolved, None)),
            Err(reason) => {
                tracing::warn!(
                    project_id = %self.project_id, session_id = %self.session_id,
                    interaction_id = %point.interaction_id,
                    reason = %reason, "resume refused: failing closed"
                );
                let refused = ResolvedConfig {
                    config: MeasuredConfig::from_object(JsonObject::new()),
                    source: ConfigSource::from_name(&point.parked.config_source),
                    references: self.invoke.references.clone().unwrap_or_default(),
                };
                let reason = RefusedResume {
                    code: RESUME_REFUSED_CODE,
                    reason: reason.to_string(),
                };
                Ok((refused, Some(reason)))
            }
        }
    }

    /// Step 2: the `/run` request, its `effectiveParameters` stamped from the resolved
    /// config exactly as the SDK stamps it (A2), with the run context and the ids.
    fn run_request(&self, resolved: &ResolvedConfig, model: Option<&str>) -> RunRequest {
        let turn_id = &self.turn_id;
        let (request, stamp) = RunRequest::new(
            Harness::PiCore,
            Sandbox::Local,
            model.unwrap_or_default().to_string(),
            self.messages().to_vec(),
        )
        // The config is only read (the harness script, permissions and the interaction
        // row need it after); the stamp on the request is a redacted copy.
        .for_session_measured(self.session_id.clone(), &resolved.config, &self.policy);
        match &stamp {
            StampOutcome::Stamped {
                measured_bytes,
                stripped,
            } => {
                for label in stripped {
                    tracing::info!(%turn_id, field = %label, "stripped a secret field before stamping");
                }
                tracing::debug!(%turn_id, measured_bytes, "effectiveParameters stamped");
            }
            other => tracing::warn!(%turn_id, outcome = ?other, "effectiveParameters not stamped"),
        }
        let mut request = request
            .with_run_context(run_context(
                &resolved.references,
                &resolved.source,
                self.resume.is_some(),
            ))
            .with_turn_id(turn_id.clone())
            .with_project_id(self.project_id.clone());
        if model.is_none() {
            request.model = None;
        }
        // The harness's misbehaviour switch for protected-action tests (see runner).
        if resolved
            .parameters()
            .get("agent")
            .and_then(|a| a.get("runner"))
            .and_then(|r| r.get("skip_pre_action"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
        {
            request
                .extra
                .insert(runner::SKIP_PRE_ACTION_KEY.to_string(), Value::Bool(true));
        }
        request
    }

    /// Which turn the checkpoint hooks serve.
    fn turn_context(&self, resolved: &ResolvedConfig, model: Option<String>) -> TurnContext {
        TurnContext {
            project_id: self.project_id.clone(),
            session_id: self.session_id.clone(),
            turn_id: self.turn_id.clone(),
            resumed_from_interaction_id: self.resumed_from(),
            model,
            actor: self.actor.clone(),
            parameters: Some(resolved.parameters().clone()),
            references: Some(resolved.references.clone()),
            predecessor_session_id: self
                .invoke
                .data
                .extra
                .get("execution")
                .and_then(|e| e.get("predecessorSessionId"))
                .and_then(Value::as_str)
                .map(str::to_string),
            execution_session_id: self
                .resume
                .as_ref()
                .and_then(|r| r.parked.execution_session_id.clone()),
        }
    }

    /// Step 3: the turn's checkpoint hook, started: it opens (or re-attaches to) the
    /// run's execution session, and the guard around it starts renewing the turn's
    /// leases. A run is never resumed outside its session: a resume whose session
    /// already ended is refused (the second value), the approved tool does not run, the
    /// row says why.
    async fn start_hook(
        &self,
        resolved: &ResolvedConfig,
        model: Option<String>,
    ) -> Result<(Arc<TurnGuard>, Option<RefusedResume>), ApiError> {
        let inner = self
            .state
            .hooks
            .hook_for(&self.turn_context(resolved, model));
        let refused = match inner.turn_started().await {
            Ok(()) => None,
            Err(err) if self.resume.is_some() && err.code == GatehouseCode::SessionNotActive => {
                tracing::warn!(project_id = %self.project_id, session_id = %self.session_id, reason = %err.detail_text(), "resume refused: the run's execution session ended");
                Some(RefusedResume {
                    code: SESSION_ENDED_CODE,
                    reason: err.detail_text(),
                })
            }
            Err(err) => return Err(err),
        };
        let guard = TurnGuard::start(
            inner,
            self.state.interactions.clone(),
            GuardedTurn {
                project_id: self.project_id.clone(),
                session_id: self.session_id.clone(),
                turn_id: self.turn_id.clone(),
                job: self.job.clone(),
                run_attempt: self.run_attempt.clone(),
            },
            self.state.config.lease,
        );
        Ok((guard, refused))
    }

    /// Step 4: run the script on the harness (a fresh turn's from its config, a resume's
    /// from its parked step), or fail the turn without running a step when the resume
    /// was refused or the config is invalid.
    async fn run_script(
        &self,
        request: &mut RunRequest,
        resolved: &ResolvedConfig,
        refused: Option<&RefusedResume>,
        hook: &dyn CheckpointHook,
    ) -> ScriptRun {
        let script_and_start = match &self.resume {
            Some(point) if point.parked.has_several_gates() => Ok((
                point.parked.script.clone(),
                StartAt::ResumeParallel(
                    point
                        .parked
                        .parked_gates()
                        .into_iter()
                        .map(|parked| parked.gate)
                        .collect(),
                ),
            )),
            Some(point) => Ok((
                point.parked.script.clone(),
                StartAt::Resume(point.parked.gate.clone()),
            )),
            None => config_script(
                resolved.parameters(),
                last_user_text(self.messages()).as_deref(),
            )
            .map(|script| (script, StartAt::Fresh)),
        };
        let permissions = config_permissions(resolved.parameters());
        // Tool call ids: a fresh turn's own; every attempt of one resume names its calls
        // after the answered gate, so the tool-run ledger knows them again.
        let call_seed = self.resumed_from().unwrap_or_else(|| self.turn_id.clone());
        // (what went wrong, why): the turn fails without running a step.
        let (what, problem) = match (refused, script_and_start, permissions) {
            (Some(refused), _, _) => ("resume refused", refused.reason.clone()),
            (None, Ok((script, start)), Ok(permissions)) => {
                request.permissions = Some(permissions);
                let outcome = runner::run_harness(request, &script, &start, &call_seed, hook).await;
                let output = outcome.output();
                return ScriptRun {
                    end: outcome.end,
                    output,
                    transcript: outcome.messages,
                    script,
                };
            }
            (None, Err(problem), _) | (None, _, Err(problem)) => {
                ("invalid config", problem.to_string())
            }
        };
        let line = format!(
            "[model={}] failed: {what}: {problem}",
            runner::model_label(request)
        );
        let mut transcript = self.messages().to_vec();
        transcript.push(ChatMessage::text("assistant", line.clone()));
        ScriptRun {
            end: HarnessEnd::Failed { reason: problem },
            output: line,
            transcript,
            script: Vec::new(),
        }
    }

    /// Step 5, for a turn that stopped at its gates: the gate rows it opens (A4, with
    /// the stamped blob as `data.parameters`; one per gated call, all naming the turn)
    /// and the state its resume continues from, as JSON (its config redacted: a resume
    /// needs nothing the redaction strips).
    fn park(
        &self,
        gate_requests: &[GateRequest],
        script: &[Step],
        request: &RunRequest,
        resolved: &ResolvedConfig,
        model: Option<String>,
        execution_session_id: Option<String>,
    ) -> Result<(Vec<NewInteraction>, Value), ApiError> {
        let references = references_from_run_context(request.run_context.as_ref());
        let gates: Vec<NewInteraction> = gate_requests
            .iter()
            .map(|gate_request| {
                let data = InteractionData {
                    request: Some(InteractionRequest {
                        tool: Some(gate_request.tool.clone()),
                        args: Some(gate_request.args.clone()),
                        tool_call_id: Some(gate_request.tool_call_id.clone()),
                        extra: JsonObject::new(),
                    }),
                    references: references.clone(),
                    selector: None,
                    resolution: None,
                    // The runner writes the stamped blob verbatim (never reads inside it).
                    parameters: request.effective_parameters.clone().map(Some),
                    extra: JsonObject::new(),
                };
                NewInteraction::gate(
                    &self.project_id,
                    &self.session_id,
                    &self.turn_id,
                    data,
                    &self.actor,
                )
            })
            .collect();
        let (Some(first), Some(gate)) = (gate_requests.first(), gates.first()) else {
            return Err(ApiError::internal("parking the turn", &"it has no gate"));
        };
        // The stamp when there is one: the same redaction of the same config.
        let redacted = match &request.effective_parameters {
            Some(stamped) => stamped.clone(),
            None => {
                redact_effective_parameters(resolved.parameters().clone(), self.policy.redaction).0
            }
        };
        // Several gates: every one of them, with its row's token (one: none, as before).
        let parked_gates = if gates.len() > 1 {
            gate_requests
                .iter()
                .zip(&gates)
                .map(|(gate, row)| ParkedGate {
                    gate: gate.clone(),
                    token: row.token.clone(),
                })
                .collect()
        } else {
            Vec::new()
        };
        let parked = ParkedState {
            script: script.to_vec(),
            gate: first.clone(),
            token: gate.token.clone(),
            gates: parked_gates,
            config: Some(redacted),
            config_redacted: true,
            config_source: resolved.source.as_str().to_string(),
            model,
            references,
            execution_session_id,
        };
        let parked = serde_json::to_value(&parked)
            .map_err(|e| ApiError::internal("encoding the parked turn", &e))?;
        Ok((gates, parked))
    }
}

/// Run one turn of `session_id` as the session's watch stream shows it:
/// `lifecycle: running`, then [`execute_turn`]. A turn that cannot run is announced
/// `lifecycle: ended` at once; a turn that ran is written by the caller (an invoke, or a
/// resume completion) and then ended with [`end_turn`].
pub async fn begin_turn(
    state: &AppState,
    session_id: &str,
    mut input: TurnInput,
) -> Result<ExecutedTurn, ApiError> {
    let project_id = input.project_id.clone();
    let turn_id = input.turn_id.get_or_insert_with(new_id).clone();
    // The turn's run row first (a Stop and the snapshot find it running): a turn that
    // cannot say it runs does not run.
    let attempt = new_id();
    let lease_ms = i64::try_from(state.config.lease.as_millis()).unwrap_or(i64::MAX);
    state
        .interactions
        .start_run(&project_id, session_id, &turn_id, &attempt, lease_ms)
        .await?;
    state
        .announce
        .turn_lifecycle(&project_id, session_id, LifecycleState::Running);
    let executed = execute_attempt(state, input, Some(attempt.clone())).await;
    if executed.is_err() {
        forget_run(state, &project_id, &turn_id, &attempt).await;
        state
            .announce
            .turn_lifecycle(&project_id, session_id, LifecycleState::Ended);
    }
    executed
}

/// Best effort: the run row of an attempt whose turn was not recorded goes (see
/// `InteractionStore::forget_run`); left behind, it expires with its lease.
async fn forget_run(state: &AppState, project_id: &str, turn_id: &str, attempt: &str) {
    if let Err(err) = state
        .interactions
        .forget_run(project_id, turn_id, attempt)
        .await
    {
        tracing::warn!(error = %err, %turn_id, "removing an unrecorded turn's run row failed; it expires with its lease");
    }
}

/// What writing an executed turn came to, for [`end_turn`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnWrite {
    /// The turn is recorded (its store announced what the write changed: its gates, the
    /// session's records).
    Written,
    /// Nothing was written: the store failed, or another worker owns the resume.
    NotWritten,
}

/// End a turn [`begin_turn`] ran, after the caller tried to write it (with
/// [`ExecutedTurn::joined_write`] in the same transaction; the write announced its own
/// changes). A written turn announces `lifecycle: ended` and tells its checkpoint hook how
/// it ended; an unwritten one gives up its hold on its execution session (nothing of it is
/// recorded, so nothing of it is applied) and announces `lifecycle: ended`.
pub async fn end_turn(
    state: &AppState,
    session_id: &str,
    executed: &ExecutedTurn,
    write: TurnWrite,
) {
    let project_id = &executed.turn.project_id;
    if write == TurnWrite::NotWritten {
        // Nothing of the turn is recorded: give its session back at once (the
        // reconciler takes it over), and announce the end.
        executed.hook.abandon().await;
        if let Some(attempt) = &executed.run_attempt {
            forget_run(state, project_id, &executed.turn.id, attempt).await;
        }
        state
            .announce
            .turn_lifecycle(project_id, session_id, LifecycleState::Ended);
        return;
    }
    state
        .announce
        .turn_lifecycle(project_id, session_id, LifecycleState::Ended);
    executed.hook.turn_ended(&executed.end.turn_end()).await;
}
