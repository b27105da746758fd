//! The service tier: resolves a turn's config by the A6 hydration rule, builds the `/run`
//! request with `gatehouse-wire` (so `effectiveParameters` is stamped exactly as the SDK
//! does), hands it to the runner tier, and shapes what the turn leaves behind (the turn
//! record, the gate row with `data.parameters` = the stamped blob, the parked state).
//!
//! A resume fails closed: it runs under the config that raised its gate and nothing
//! more permissive ([`resume_config`]): the parked turn's redacted config, else the
//! row's stamp, else the revision the turn pinned; when none of them is left, the turn
//! ends failed with the reason (on the turn, its execution run, and the row's
//! `resolution.error`) and the approved tool does not run. The parked state keeps the
//! config REDACTED ([`ParkedState::config`]): nothing the redaction strips is at rest.
//!
//! Both callers, `POST /api/invoke` and the resume [`dispatch`](crate::dispatch)er, run a
//! turn the same way: [`begin_turn`], write what [`ExecutedTurn`] holds in one
//! transaction of their own, then [`end_turn`] (watch-stream events, the checkpoint
//! hook's end of turn).

use std::sync::Arc;

use gatehouse_wire::effective::{
    redact_effective_parameters, Redaction, StampOutcome, StampPolicy,
};
use gatehouse_wire::error::GatehouseCode;
use gatehouse_wire::interaction::{
    InteractionData, InteractionRequest, InteractionStatus, LifecycleState, Reference, References,
};
use gatehouse_wire::invoke::{InvokeRequest, TurnStatus};
use gatehouse_wire::run::{
    ChatMessage, Harness, MessageContent, Permissions, RunContext, RunContextReference,
    RunContextRun, RunContextWorkflow, RunRequest, Sandbox,
};
use gatehouse_wire::JsonObject;
use serde_json::Value;

use crate::error::ApiError;
use crate::guard::{GuardedTurn, TurnGuard};
use crate::runner::{
    self, default_script, parse_script, CheckpointHook, GateRequest, HarnessEnd, StartAt, Step,
    TurnContext,
};
use crate::store::{
    new_id, turn_status_text, ClaimedJob, JoinedWrite, NewInteraction, NewTurn, RevisionRecord,
    Store,
};
use crate::AppState;

/// The model of the service's registered default config.
pub const DEFAULT_MODEL: &str = "gatehouse/echo-1";

/// The service's registered default config: used only when a fresh turn sent no inline
/// config and hydration from references came back empty (A6); never for a resume. It is
/// deny-by-default: a turn nobody configured runs no tool.
pub fn default_parameters() -> JsonObject {
    match serde_json::json!({
        "agent": {
            "llm": { "model": DEFAULT_MODEL },
            "runner": { "permissions": { "default": "deny" } }
        }
    }) {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// Where a turn's config came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    /// The caller's inline `data.parameters` (a draft, or a resume's stamp).
    Inline,
    /// The caller's inline `data.revision`.
    InlineRevision,
    /// Hydrated from a pinned `workflow_revision` reference.
    PinnedRevision,
    /// Hydrated from the variant's HEAD at call time.
    VariantHead,
    /// The service's registered default.
    Default,
}

impl ConfigSource {
    /// A short name for logs and the parked state.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Inline => "inline",
            Self::InlineRevision => "inline_revision",
            Self::PinnedRevision => "pinned_revision",
            Self::VariantHead => "variant_head",
            Self::Default => "default",
        }
    }

    /// The source named by [`ConfigSource::as_str`] (unknown names read as inline).
    pub fn from_name(name: &str) -> Self {
        match name {
            "inline_revision" => Self::InlineRevision,
            "pinned_revision" => Self::PinnedRevision,
            "variant_head" => Self::VariantHead,
            "default" => Self::Default,
            _ => Self::Inline,
        }
    }
}

/// A resolved config and the references the turn runs with.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedConfig {
    /// The config.
    pub parameters: JsonObject,
    /// Where it came from.
    pub source: ConfigSource,
    /// The references (as sent, completed from the registry when hydrated). Holds a
    /// `workflow_revision` only when the run used a saved revision (or the caller named one).
    pub references: References,
}

fn non_empty(obj: Option<&JsonObject>) -> Option<&JsonObject> {
    obj.filter(|o| !o.is_empty())
}

fn revision_reference(revision: &RevisionRecord) -> Reference {
    Reference {
        id: Some(revision.id.clone()),
        slug: Some(revision.slug.clone()),
        version: Some(revision.version.to_string()),
        extra: JsonObject::new(),
    }
}

/// Resolve a turn's config by the A6 hydration rule.
///
/// Hydrate from references iff references were sent and the caller sent neither a
/// non-empty `data.parameters` nor a non-empty `data.revision`
/// (`gatehouse_wire::resume::should_hydrate_from_references`); a pinned
/// `workflow_revision` wins over the variant's HEAD. The registered default fills in only
/// after hydration came back empty (or when there was nothing to hydrate from).
pub async fn resolve_config(
    store: &Store,
    project_id: &str,
    request: &InvokeRequest,
) -> Result<ResolvedConfig, ApiError> {
    let mut references = request.references.clone().unwrap_or_default();
    if gatehouse_wire::resume::should_hydrate_from_references(request) {
        if let Some(revision) = hydrate(store, project_id, &references).await? {
            let pinned = references.workflow_revision.is_some();
            fill_references(store, project_id, &mut references, &revision).await?;
            return Ok(ResolvedConfig {
                parameters: revision.parameters,
                source: if pinned {
                    ConfigSource::PinnedRevision
                } else {
                    ConfigSource::VariantHead
                },
                references,
            });
        }
        tracing::warn!(
            project_id,
            "references resolved to no revision; using the registered default config"
        );
    } else if let Some(parameters) = non_empty(request.data.parameters.as_ref()) {
        return Ok(ResolvedConfig {
            parameters: parameters.clone(),
            source: ConfigSource::Inline,
            references,
        });
    } else if let Some(revision) = non_empty(request.data.revision.as_ref()) {
        // Agenta's inline revision: `{"data": {"parameters": {...}}}` or `{"parameters": ...}`.
        let parameters = revision
            .get("data")
            .and_then(|d| d.get("parameters"))
            .or_else(|| revision.get("parameters"))
            .and_then(Value::as_object)
            .filter(|p| !p.is_empty());
        if let Some(parameters) = parameters {
            return Ok(ResolvedConfig {
                parameters: parameters.clone(),
                source: ConfigSource::InlineRevision,
                references,
            });
        }
    }
    Ok(ResolvedConfig {
        parameters: default_parameters(),
        source: ConfigSource::Default,
        references,
    })
}

/// The revision the references point at: the pinned revision, else the variant's HEAD.
async fn hydrate(
    store: &Store,
    project_id: &str,
    references: &References,
) -> Result<Option<RevisionRecord>, ApiError> {
    if let Some(pinned) = &references.workflow_revision {
        if let Some(id) = pinned.id.as_deref() {
            return Ok(store.get_revision(project_id, id).await?);
        }
        let variant = find_variant(store, project_id, references).await?;
        let version = pinned
            .version
            .as_deref()
            .and_then(|v| v.parse::<i64>().ok());
        return Ok(store
            .find_revision(
                project_id,
                pinned.slug.as_deref(),
                variant.as_ref().map(|v| v.id.as_str()),
                version,
            )
            .await?);
    }
    let Some(variant) = find_variant(store, project_id, references).await? else {
        return Ok(None);
    };
    match variant.head_revision_id.as_deref() {
        Some(head) => Ok(store.get_revision(project_id, head).await?),
        None => Ok(None),
    }
}

async fn find_variant(
    store: &Store,
    project_id: &str,
    references: &References,
) -> Result<Option<crate::store::VariantRecord>, ApiError> {
    let workflow = match &references.workflow {
        Some(r) => {
            store
                .find_workflow(project_id, r.id.as_deref(), r.slug.as_deref())
                .await?
        }
        None => None,
    };
    let workflow_id = workflow.as_ref().map(|w| w.id.as_str());
    match &references.workflow_variant {
        Some(r) => Ok(store
            .find_variant(project_id, r.id.as_deref(), r.slug.as_deref(), workflow_id)
            .await?),
        None if workflow_id.is_some() => Ok(store
            .find_variant(project_id, None, None, workflow_id)
            .await?),
        None => Ok(None),
    }
}

/// Complete the references from the registry once a revision was found.
async fn fill_references(
    store: &Store,
    project_id: &str,
    references: &mut References,
    revision: &RevisionRecord,
) -> Result<(), ApiError> {
    if let Some(workflow) = store
        .find_workflow(project_id, Some(&revision.workflow_id), None)
        .await?
    {
        references.workflow = Some(Reference {
            id: Some(workflow.id),
            slug: Some(workflow.slug),
            version: None,
            extra: JsonObject::new(),
        });
    }
    if let Some(variant) = store
        .find_variant(project_id, Some(&revision.variant_id), None, None)
        .await?
    {
        references.workflow_variant = Some(Reference {
            id: Some(variant.id),
            slug: Some(variant.slug),
            version: None,
            extra: JsonObject::new(),
        });
    }
    references.workflow_revision = Some(revision_reference(revision));
    Ok(())
}

/// `agent.llm.model` of a config.
pub fn config_model(parameters: &JsonObject) -> Option<String> {
    parameters
        .get("agent")?
        .get("llm")?
        .get("model")?
        .as_str()
        .map(str::to_string)
}

/// `agent.runner.permissions` of a config (Agenta's default `allow_reads` when absent).
pub fn config_permissions(parameters: &JsonObject) -> Result<Permissions, String> {
    let Some(value) = parameters
        .get("agent")
        .and_then(|a| a.get("runner"))
        .and_then(|r| r.get("permissions"))
    else {
        return Ok(Permissions::default());
    };
    gatehouse_wire::from_json_value::<Permissions>(value.clone())
        .map_err(|e| format!("agent.runner.permissions.{}: {}", e.path, e.reason))
}

/// The script of a config: `agent.script`, or the default script for `prompt`.
pub fn config_script(parameters: &JsonObject, prompt: Option<&str>) -> Result<Vec<Step>, String> {
    match parameters.get("agent").and_then(|a| a.get("script")) {
        Some(value) => parse_script(value),
        None => Ok(default_script(prompt)),
    }
}

/// The text of the last user message (the default script mentions it).
pub fn last_user_text(messages: &[ChatMessage]) -> Option<String> {
    messages
        .iter()
        .rev()
        .find(|m| m.role == "user")
        .and_then(|m| match m.content.as_ref()? {
            MessageContent::Text(text) => Some(text.clone()),
            MessageContent::Blocks(blocks) => blocks.iter().find_map(|b| b.text.clone()),
        })
}

fn run_context_reference(reference: &Reference) -> RunContextReference {
    RunContextReference {
        id: reference.id.clone(),
        slug: reference.slug.clone(),
        version: reference.version.clone(),
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
            is_draft: Some(
                references.workflow_revision.is_none()
                    && matches!(source, ConfigSource::Inline | ConfigSource::InlineRevision),
            ),
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
        version: r.version.clone(),
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

/// The durable state of a parked turn: everything a resume needs.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ParkedState {
    /// The whole script of the turn.
    pub script: Vec<Step>,
    /// The gated tool step.
    pub gate: GateRequest,
    /// The gate row's token.
    pub token: String,
    /// The config the turn ran under, REDACTED by the stamp's rule (exact and secret-free,
    /// whatever its size: the stamp cap is for the wire and the row, not for this). A
    /// resume runs under it. Absent only in a state written by an older version.
    #[serde(default)]
    pub config: Option<JsonObject>,
    /// True when `config` is redacted (every state this version writes; an older state's
    /// config is redacted when read, and at startup by [`scrub_parked_configs`]).
    #[serde(default)]
    pub config_redacted: bool,
    /// Where that config came from.
    pub config_source: String,
    /// The model it ran under.
    pub model: Option<String>,
    /// The references it ran with.
    pub references: Option<References>,
    /// The stamped `effectiveParameters` (absent when not stamped).
    pub stamped: Option<JsonObject>,
    /// The execution session the turn ran in: its resume (and every retry of it)
    /// continues there. Absent in a state written by an older version, or without the
    /// execution service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_session_id: Option<String>,
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

/// `parameters` as the server may keep them at rest: redacted by the stamp's rule (the
/// labels of what was stripped are logged, never a value). A workflow revision is stored
/// so: a turn needs nothing the redaction strips (secret references, such as a
/// `credentials` block of vault key names, are kept).
pub fn redact_for_storage(parameters: JsonObject, what: &str) -> JsonObject {
    let (redacted, stripped) =
        redact_effective_parameters(parameters, StampPolicy::default().redaction);
    for label in &stripped {
        tracing::info!(%what, field = %label, "stripped a secret field before storing");
    }
    redacted
}

/// Redact the config of every parked state an older version wrote unredacted (no
/// `config_redacted` marker), in place, so no stripped secret stays at rest. Run once at
/// startup; a failure is logged and retried at the next start (a resume redacts such a
/// config before use anyway). Returns how many states were rewritten.
pub async fn scrub_parked_configs(store: &Store, redaction: Redaction) -> usize {
    let mut rewritten = 0;
    loop {
        let batch = match store.unredacted_parked_states(100).await {
            Ok(batch) => batch,
            Err(err) => {
                tracing::warn!(error = %err, "reading older parked states failed; scrub retried at next start");
                return rewritten;
            }
        };
        if batch.is_empty() {
            return rewritten;
        }
        for (turn_id, mut state) in batch {
            if !state.is_object() {
                // Not a parked state at all (a resume could not read it either): keep only
                // the marker, so nothing unknown stays and the scrub moves on.
                state = serde_json::json!({ "config_redacted": true });
            }
            if let Some(object) = state.as_object_mut() {
                if let Some(Value::Object(config)) = object.remove("config") {
                    let (redacted, stripped) = redact_effective_parameters(config, redaction);
                    if !stripped.is_empty() {
                        tracing::info!(%turn_id, fields = ?stripped, "redacted an older parked state's config");
                    }
                    object.insert("config".to_string(), Value::Object(redacted));
                }
                object.insert("config_redacted".to_string(), Value::Bool(true));
            }
            if let Err(err) = store.replace_parked_state(&turn_id, &state).await {
                tracing::warn!(%turn_id, error = %err, "scrubbing an older parked state failed; retried at next start");
                return rewritten;
            }
            rewritten += 1;
        }
    }
}

/// The code of `resolution.error` on a row whose resume was refused because the config
/// that raised its gate cannot be recovered.
pub const RESUME_REFUSED_CODE: &str = "CONFIG_UNRECOVERABLE";

/// The code of `resolution.error` on a row whose resume was refused because the run's
/// execution session already ended (a run is never resumed outside its session).
pub const SESSION_ENDED_CODE: &str = "EXECUTION_SESSION_ENDED";

/// Why a resume did not run its turn: `resolution.error` on the answered row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedResume {
    /// [`RESUME_REFUSED_CODE`] or [`SESSION_ENDED_CODE`].
    pub code: &'static str,
    /// Why.
    pub reason: String,
}

/// The config a resume runs under: the config that raised the gate, never a more
/// permissive one (fail closed). In order: the parked turn's redacted config; the row's
/// stamp (the resume body's inline `data.parameters`, the same redacted config); the
/// revision the turn pinned (`references.workflow_revision` by id, present only when the
/// turn ran that saved revision). Never the variant's HEAD nor the registered default.
/// `Err` says why none is left; the turn then does not run its tool.
pub async fn resume_config(
    store: &Store,
    project_id: &str,
    parked: &ParkedState,
    invoke: &InvokeRequest,
    redaction: Redaction,
) -> Result<ResolvedConfig, String> {
    let references = invoke
        .references
        .clone()
        .or_else(|| parked.references.clone())
        .unwrap_or_default();
    let source = ConfigSource::from_name(&parked.config_source);
    if let Some(config) = non_empty(parked.config.as_ref()) {
        let parameters = if parked.config_redacted {
            config.clone()
        } else {
            redact_effective_parameters(config.clone(), redaction).0
        };
        return Ok(ResolvedConfig {
            parameters,
            source,
            references,
        });
    }
    if let Some(stamp) = non_empty(invoke.data.parameters.as_ref()) {
        return Ok(ResolvedConfig {
            parameters: stamp.clone(),
            source: ConfigSource::Inline,
            references,
        });
    }
    let pinned = references
        .workflow_revision
        .as_ref()
        .and_then(|r| r.id.as_deref());
    let Some(revision_id) = pinned else {
        return Err(
            "the config this turn was gated under cannot be recovered (the parked turn kept              none, the row has no stamp, and the turn pinned no saved revision); it is not              resumed under another config, and the approved tool did not run"
                .to_string(),
        );
    };
    match store.get_revision(project_id, revision_id).await {
        Ok(Some(revision)) => Ok(ResolvedConfig {
            parameters: redact_effective_parameters(revision.parameters, redaction).0,
            source: ConfigSource::PinnedRevision,
            references,
        }),
        Ok(None) => Err(format!(
            "the config this turn was gated under cannot be recovered (the parked turn kept              none, the row has no stamp, and its pinned revision {revision_id} is gone); it              is not resumed under another config, and the approved tool did not run"
        )),
        Err(err) => Err(format!(
            "the config this turn was gated under could not be read ({err}); the approved              tool did not run"
        )),
    }
}

/// A turn that ran (not yet persisted).
pub struct ExecutedTurn {
    /// The turn record to write.
    pub turn: NewTurn,
    /// The gate it opened (parked turns).
    pub gate: Option<NewInteraction>,
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
    /// ([`resume_config`]), or its execution session already ended.
    pub resume_refused: Option<RefusedResume>,
    /// The hook's share of the turn's commit (the execution session's interventions,
    /// checkpoints and end): write it in the same transaction as the turn.
    pub session_write: Option<Box<dyn JoinedWrite>>,
    /// Set when the turn's guard stopped this attempt ([`TurnGuard::lost_reason`]: a
    /// lease moved on, or a tool run could not be recorded): a resume must not write it,
    /// but retry (an invoke records the failed turn with the reason).
    pub attempt_lost: Option<String>,
}

impl ExecutedTurn {
    /// `resolution.error` for the answered row: `{"code", "message"}` when the resume
    /// was refused, else `None`.
    pub fn resolution_error(&self) -> Option<Value> {
        self.resume_refused
            .as_ref()
            .map(|refused| serde_json::json!({ "code": refused.code, "message": refused.reason }))
    }

    /// The hook's share of the commit, as [`crate::store`] takes it.
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

/// Resolve, build the `/run` request, and run the harness. Writes nothing: the caller
/// persists [`ExecutedTurn`] in one transaction (an invoke, or a resume completion).
pub async fn execute_turn(state: &AppState, input: TurnInput) -> Result<ExecutedTurn, ApiError> {
    let TurnInput {
        project_id,
        actor,
        invoke,
        resume,
        job,
    } = input;
    let session_id = invoke
        .session_id
        .clone()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(new_id);
    let turn_id = new_id();
    let policy = StampPolicy::with_max_bytes(state.config.stamp_max_bytes);
    let (resolved, resume_refused) = match &resume {
        None => (
            resolve_config(&state.store, &project_id, &invoke).await?,
            None,
        ),
        Some(point) => match resume_config(
            &state.store,
            &project_id,
            &point.parked,
            &invoke,
            policy.redaction,
        )
        .await
        {
            Ok(resolved) => (resolved, None),
            Err(reason) => {
                let reason = RefusedResume {
                    code: RESUME_REFUSED_CODE,
                    reason,
                };
                tracing::warn!(
                    %project_id, %session_id, interaction_id = %point.interaction_id,
                    reason = %reason.reason, "resume refused: failing closed"
                );
                let refused = ResolvedConfig {
                    parameters: JsonObject::new(),
                    source: ConfigSource::from_name(&point.parked.config_source),
                    references: invoke.references.clone().unwrap_or_default(),
                };
                (refused, Some(reason))
            }
        },
    };
    let model = config_model(&resolved.parameters);
    let messages = invoke.data.inputs.messages.clone();
    tracing::info!(
        %project_id, %session_id, %turn_id,
        config_source = resolved.source.as_str(),
        model = model.as_deref().unwrap_or("-"),
        resumed = resume.is_some(),
        "turn starting"
    );

    let (request, stamp) = RunRequest::new(
        Harness::PiCore,
        Sandbox::Local,
        model.clone().unwrap_or_default(),
        messages.clone(),
    )
    .for_session(
        session_id.clone(),
        // The stamp consumes its input; the config is still needed below (the harness
        // script, permissions, the interaction row), so the stamp gets its own copy.
        Value::Object(resolved.parameters.clone()),
        &policy,
    );
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
            resume.is_some(),
        ))
        .with_turn_id(turn_id.clone())
        .with_project_id(project_id.clone());
    if model.is_none() {
        request.model = None;
    }
    // The harness's misbehaviour switch for protected-action tests (see runner).
    if resolved
        .parameters
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

    let script_and_start = match &resume {
        Some(point) => Ok((
            point.parked.script.clone(),
            StartAt::Resume(point.parked.gate.clone()),
        )),
        None => config_script(&resolved.parameters, last_user_text(&messages).as_deref())
            .map(|script| (script, StartAt::Fresh)),
    };
    let permissions = config_permissions(&resolved.parameters);

    let ctx = TurnContext {
        project_id: project_id.clone(),
        session_id: session_id.clone(),
        turn_id: turn_id.clone(),
        resumed_from_interaction_id: resume.as_ref().map(|r| r.interaction_id.clone()),
        model: model.clone(),
        actor: actor.clone(),
        parameters: Some(resolved.parameters.clone()),
        references: Some(resolved.references.clone()),
        predecessor_session_id: invoke
            .data
            .extra
            .get("execution")
            .and_then(|e| e.get("predecessorSessionId"))
            .and_then(Value::as_str)
            .map(str::to_string),
        execution_session_id: resume
            .as_ref()
            .and_then(|r| r.parked.execution_session_id.clone()),
    };
    let inner = state.hooks.hook_for(&ctx);
    let mut resume_refused = resume_refused;
    match inner.turn_started().await {
        Ok(()) => {}
        // A run is never resumed outside its session: the resume is refused, the
        // approved tool does not run, the row says why.
        Err(err) if resume.is_some() && err.code == GatehouseCode::SessionNotActive => {
            tracing::warn!(%project_id, %session_id, reason = %err.detail_text(), "resume refused: the run's execution session ended");
            resume_refused.get_or_insert(RefusedResume {
                code: SESSION_ENDED_CODE,
                reason: err.detail_text(),
            });
        }
        Err(err) => return Err(err),
    }
    let guard = TurnGuard::start(
        inner,
        state.store.clone(),
        GuardedTurn {
            project_id: project_id.clone(),
            session_id: session_id.clone(),
            turn_id: turn_id.clone(),
            job,
        },
        state.config.lease,
    );
    let hook: Arc<dyn CheckpointHook> = guard.clone();
    // Tool call ids: a fresh turn's own; every attempt of one resume names its calls
    // after the answered gate, so the tool-run ledger knows them again.
    let call_seed = resume
        .as_ref()
        .map(|r| r.interaction_id.clone())
        .unwrap_or_else(|| turn_id.clone());

    // (what went wrong, why): the turn fails without running a step.
    let outcome = match (&resume_refused, script_and_start, permissions) {
        (Some(refused), _, _) => Err(("resume refused", refused.reason.clone())),
        (None, Ok((script, start)), Ok(permissions)) => {
            request.permissions = Some(permissions);
            let outcome =
                runner::run_harness(&request, &script, &start, &call_seed, hook.as_ref()).await;
            Ok((outcome, script))
        }
        (None, Err(problem), _) | (None, _, Err(problem)) => Err(("invalid config", problem)),
    };

    let (end, output, transcript, script) = match outcome {
        Ok((outcome, script)) => {
            let output = outcome.output();
            (outcome.end, output, outcome.messages, script)
        }
        Err((what, problem)) => {
            let line = format!(
                "[model={}] failed: {what}: {problem}",
                runner::model_label(&request)
            );
            let mut transcript = messages.clone();
            transcript.push(ChatMessage::text("assistant", line.clone()));
            (
                HarnessEnd::Failed { reason: problem },
                line,
                transcript,
                Vec::new(),
            )
        }
    };

    let (status, gate, parked_state) = match &end {
        HarnessEnd::Completed => (TurnStatus::Completed, None, None),
        HarnessEnd::Failed { .. } => (TurnStatus::Failed, None, None),
        HarnessEnd::Parked(gate_request) => {
            let data = InteractionData {
                request: Some(InteractionRequest {
                    tool: Some(gate_request.tool.clone()),
                    args: Some(gate_request.args.clone()),
                    tool_call_id: Some(gate_request.tool_call_id.clone()),
                    extra: JsonObject::new(),
                }),
                references: references_from_run_context(request.run_context.as_ref()),
                selector: None,
                resolution: None,
                // The runner writes the stamped blob verbatim (never reads inside it).
                parameters: request.effective_parameters.clone().map(Some),
                extra: JsonObject::new(),
            };
            let gate = NewInteraction::gate(&project_id, &session_id, &turn_id, data, &actor);
            // The config is kept redacted (the stamp when there is one: the same redaction
            // of the same config): a resume needs nothing the redaction strips.
            let redacted = match &request.effective_parameters {
                Some(stamped) => stamped.clone(),
                None => {
                    redact_effective_parameters(resolved.parameters.clone(), policy.redaction).0
                }
            };
            let parked = ParkedState {
                script: script.clone(),
                gate: gate_request.clone(),
                token: gate.token.clone(),
                config: Some(redacted),
                config_redacted: true,
                config_source: resolved.source.as_str().to_string(),
                model: model.clone(),
                references: references_from_run_context(request.run_context.as_ref()),
                stamped: request.effective_parameters.clone(),
                execution_session_id: hook.execution_session_id(),
            };
            let parked_value = serde_json::to_value(&parked)
                .map_err(|e| ApiError::internal("encoding the parked turn", &e))?;
            (TurnStatus::Parked, Some(gate), Some(parked_value))
        }
    };
    let turn = NewTurn {
        id: turn_id,
        project_id,
        session_id,
        status: turn_status_text(status).to_string(),
        model: model.clone(),
        output: Some(output.clone()),
        resumed_from_interaction_id: resume.as_ref().map(|r| r.interaction_id.clone()),
        messages: transcript,
        parked_state,
    };
    let session_write = hook.durable_end(&end.turn_end());
    let attempt_lost = guard.lost_reason();
    Ok(ExecutedTurn {
        turn,
        gate,
        status,
        model,
        output,
        request,
        hook,
        end,
        resume_refused,
        session_write,
        attempt_lost,
    })
}

/// Run one turn of `session_id` as the session's watch stream shows it:
/// `lifecycle: running`, then [`execute_turn`]. A turn that cannot run is announced
/// `lifecycle: ended` at once; a turn that ran is written by the caller (an invoke, or a
/// resume completion) and then ended with [`end_turn`].
pub async fn begin_turn(
    state: &AppState,
    session_id: &str,
    input: TurnInput,
) -> Result<ExecutedTurn, ApiError> {
    let project_id = input.project_id.clone();
    state
        .events
        .lifecycle(&project_id, session_id, LifecycleState::Running);
    let executed = execute_turn(state, input).await;
    if executed.is_err() {
        state
            .events
            .lifecycle(&project_id, session_id, LifecycleState::Ended);
    }
    executed
}

/// What writing an executed turn came to, for [`end_turn`].
#[derive(Debug, Clone, Copy)]
pub enum TurnWrite<'a> {
    /// The turn is recorded; these interactions changed status in the same write.
    Written(&'a [(&'a str, InteractionStatus)]),
    /// Nothing was written: the store failed, or another worker owns the resume.
    NotWritten,
}

/// End a turn [`begin_turn`] ran, after the caller tried to write it (with
/// [`ExecutedTurn::joined_write`] in the same transaction). A written turn announces its
/// interaction changes and `records-changed`, then `lifecycle: ended`, and tells its
/// checkpoint hook how it ended; an unwritten one gives up its hold on its execution
/// session (nothing of it is recorded, so nothing of it is applied) and announces
/// `lifecycle: ended`.
pub async fn end_turn(
    state: &AppState,
    session_id: &str,
    executed: &ExecutedTurn,
    write: TurnWrite<'_>,
) {
    let project_id = &executed.turn.project_id;
    let TurnWrite::Written(changed) = write else {
        // Nothing of the turn is recorded: give its session back at once (the
        // reconciler takes it over), and announce the end.
        executed.hook.abandon().await;
        state
            .events
            .lifecycle(project_id, session_id, LifecycleState::Ended);
        return;
    };
    for (interaction_id, status) in changed {
        state
            .events
            .interaction(project_id, session_id, interaction_id, status.clone());
    }
    state.events.records_changed(project_id, session_id);
    state
        .events
        .lifecycle(project_id, session_id, LifecycleState::Ended);
    executed.hook.turn_ended(&executed.end.turn_end()).await;
}
