//! A turn's config. A fresh turn resolves it by the A6 hydration rule
//! ([`resolve_config`]): the caller's inline config, else the revision its references
//! name, else the registered default. A resume fails closed: it runs under the config
//! that raised its gate and nothing more permissive ([`resume_config`]). Also here: what
//! a turn reads from a config (model, permissions, script), and the redaction a config
//! gets before it is kept at rest ([`redact_for_storage`]).

use gatehouse_wire::effective::{MeasuredConfig, StampPolicy};
use gatehouse_wire::interaction::{Reference, References};
use gatehouse_wire::invoke::InvokeRequest;
use gatehouse_wire::redact::{redact_effective_parameters, Redaction};
use gatehouse_wire::run::Permissions;
use gatehouse_wire::JsonObject;
use serde_json::Value;

use super::parked::ParkedState;
use super::store::InteractionStore;
use super::store::{RevisionRecord, VariantRecord};
use crate::db::StoreError;
use crate::error::ApiError;
use crate::runner::{default_script, parse_script, Step};

/// Why a turn has no usable config. Its text is the turn's failure reason, and a refused
/// resume's `resolution.error.message` on the answered row.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A resume finds no config it may run under: the parked turn kept none, the row has
    /// no stamp, and the turn pinned no saved revision ([`resume_config`]).
    // The runs of spaces are in the text rows and turns already carry; kept byte for byte.
    #[error("the config this turn was gated under cannot be recovered (the parked turn kept              none, the row has no stamp, and the turn pinned no saved revision); it is not              resumed under another config, and the approved tool did not run")]
    NothingToRecover,
    /// A resume's only config is the revision the turn pinned, and it is gone.
    #[error("the config this turn was gated under cannot be recovered (the parked turn kept              none, the row has no stamp, and its pinned revision {revision_id} is gone); it              is not resumed under another config, and the approved tool did not run")]
    PinnedRevisionGone {
        /// The pinned revision's id.
        revision_id: String,
    },
    /// A resume's only config is the revision the turn pinned, and reading it failed.
    #[error("the config this turn was gated under could not be read ({0}); the approved              tool did not run")]
    PinnedRevisionUnreadable(StoreError),
    /// `agent.runner.permissions` does not read as permissions.
    #[error("agent.runner.permissions.{path}: {reason}")]
    Permissions {
        /// Where inside the permissions.
        path: String,
        /// What is wrong there.
        reason: String,
    },
    /// `agent.script` does not read as a script (the script parser's words).
    #[error("{0}")]
    Script(String),
}

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
    /// The config (measured while read when it came from stored text; see
    /// [`ResolvedConfig::parameters`]).
    pub config: MeasuredConfig,
    /// Where it came from.
    pub source: ConfigSource,
    /// The references (as sent, completed from the registry when hydrated). Holds a
    /// `workflow_revision` only when the run used a saved revision (or the caller named one).
    pub references: References,
}

impl ResolvedConfig {
    /// The config's parameters.
    pub fn parameters(&self) -> &JsonObject {
        self.config.object()
    }
}

fn non_empty(obj: Option<&JsonObject>) -> Option<&JsonObject> {
    obj.filter(|o| !o.is_empty())
}

/// A reference to a registry entity by id and slug (and version, for a revision).
fn reference(id: String, slug: String, version: Option<String>) -> Reference {
    Reference {
        id: Some(id),
        slug: Some(slug),
        version,
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
    store: &InteractionStore,
    project_id: &str,
    request: &InvokeRequest,
) -> Result<ResolvedConfig, ApiError> {
    let mut references = request.references.clone().unwrap_or_default();
    if gatehouse_wire::resume::should_hydrate_from_references(request) {
        if let Some(revision) = hydrate(store, project_id, &references).await? {
            let pinned = references.workflow_revision.is_some();
            fill_references(store, project_id, &mut references, &revision).await?;
            return Ok(ResolvedConfig {
                config: revision.parameters,
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
            config: MeasuredConfig::from_object(parameters.clone()),
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
                config: MeasuredConfig::from_object(parameters.clone()),
                source: ConfigSource::InlineRevision,
                references,
            });
        }
    }
    Ok(ResolvedConfig {
        config: MeasuredConfig::from_object(default_parameters()),
        source: ConfigSource::Default,
        references,
    })
}

/// The revision the references point at: the pinned revision, else the variant's HEAD.
async fn hydrate(
    store: &InteractionStore,
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
    store: &InteractionStore,
    project_id: &str,
    references: &References,
) -> Result<Option<VariantRecord>, ApiError> {
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
    store: &InteractionStore,
    project_id: &str,
    references: &mut References,
    revision: &RevisionRecord,
) -> Result<(), ApiError> {
    if let Some(workflow) = store
        .find_workflow(project_id, Some(&revision.workflow_id), None)
        .await?
    {
        references.workflow = Some(reference(workflow.id, workflow.slug, None));
    }
    if let Some(variant) = store
        .find_variant(project_id, Some(&revision.variant_id), None, None)
        .await?
    {
        references.workflow_variant = Some(reference(variant.id, variant.slug, None));
    }
    references.workflow_revision = Some(reference(
        revision.id.clone(),
        revision.slug.clone(),
        Some(revision.version.to_string()),
    ));
    Ok(())
}

/// The config a resume runs under: the config that raised the gate, never a more
/// permissive one (fail closed). In order: the parked turn's redacted config; the row's
/// stamp (the resume body's inline `data.parameters`, the same redacted config); the
/// revision the turn pinned (`references.workflow_revision` by id, present only when the
/// turn ran that saved revision). Never the variant's HEAD nor the registered default.
/// `Err` says why none is left; the turn then does not run its tool.
pub async fn resume_config(
    store: &InteractionStore,
    project_id: &str,
    parked: &ParkedState,
    invoke: &InvokeRequest,
    redaction: Redaction,
) -> Result<ResolvedConfig, ConfigError> {
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
            config: MeasuredConfig::from_object(parameters),
            source,
            references,
        });
    }
    if let Some(stamp) = non_empty(invoke.data.parameters.as_ref()) {
        return Ok(ResolvedConfig {
            config: MeasuredConfig::from_object(stamp.clone()),
            source: ConfigSource::Inline,
            references,
        });
    }
    let pinned = references
        .workflow_revision
        .as_ref()
        .and_then(|r| r.id.as_deref());
    let Some(revision_id) = pinned else {
        return Err(ConfigError::NothingToRecover);
    };
    match store.get_revision(project_id, revision_id).await {
        Ok(Some(revision)) => Ok(ResolvedConfig {
            config: MeasuredConfig::from_object(
                redact_effective_parameters(revision.parameters.into_object(), redaction).0,
            ),
            source: ConfigSource::PinnedRevision,
            references,
        }),
        Ok(None) => Err(ConfigError::PinnedRevisionGone {
            revision_id: revision_id.to_string(),
        }),
        Err(err) => Err(ConfigError::PinnedRevisionUnreadable(err)),
    }
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
pub fn config_permissions(parameters: &JsonObject) -> Result<Permissions, ConfigError> {
    let Some(value) = parameters
        .get("agent")
        .and_then(|a| a.get("runner"))
        .and_then(|r| r.get("permissions"))
    else {
        return Ok(Permissions::default());
    };
    gatehouse_wire::from_json_value::<Permissions>(value.clone()).map_err(|e| {
        ConfigError::Permissions {
            path: e.path,
            reason: e.reason,
        }
    })
}

/// The script of a config: `agent.script`, or the default script for `prompt`.
pub fn config_script(
    parameters: &JsonObject,
    prompt: Option<&str>,
) -> Result<Vec<Step>, ConfigError> {
    match parameters.get("agent").and_then(|a| a.get("script")) {
        Some(value) => parse_script(value).map_err(ConfigError::Script),
        None => Ok(default_script(prompt)),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts rows, turns and logs carry, exactly as the version before
    /// [`ConfigError`] wrote them.
    #[test]
    fn config_errors_read_as_the_texts_already_written() {
        let revision_id = "rev-1";
        let err = StoreError::Unavailable("pool timed out".to_string());
        let written_before = [
            (
                ConfigError::NothingToRecover.to_string(),
                "the config this turn was gated under cannot be recovered (the parked turn kept              none, the row has no stamp, and the turn pinned no saved revision); it is not              resumed under another config, and the approved tool did not run".to_string(),
            ),
            (
                ConfigError::PinnedRevisionGone {
                    revision_id: revision_id.to_string(),
                }
                .to_string(),
                format!("the config this turn was gated under cannot be recovered (the parked turn kept              none, the row has no stamp, and its pinned revision {revision_id} is gone); it              is not resumed under another config, and the approved tool did not run"),
            ),
            (
                ConfigError::PinnedRevisionUnreadable(StoreError::Unavailable(
                    "pool timed out".to_string(),
                ))
                .to_string(),
                format!("the config this turn was gated under could not be read ({err}); the approved              tool did not run"),
            ),
        ];
        for (now, before) in written_before {
            assert_eq!(now, before);
        }
    }

    #[test]
    fn invalid_permissions_and_scripts_name_what_is_wrong_as_before() {
        let config = |agent: Value| match serde_json::json!({ "agent": agent }) {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        };
        let permissions = config(serde_json::json!({"runner": {"permissions": {"default": 7}}}));
        let err = config_permissions(&permissions).unwrap_err();
        let ConfigError::Permissions { path, reason } = &err else {
            panic!("{err:?}");
        };
        assert_eq!(
            err.to_string(),
            format!("agent.runner.permissions.{path}: {reason}")
        );
        let script = config(serde_json::json!({"script": 7}));
        assert_eq!(
            config_script(&script, None).unwrap_err().to_string(),
            "agent.script must be a list of steps"
        );
    }

    /// A parked turn written by the version that stored its stamp twice (`config` and
    /// `stamped`) still reads, and resumes under the same config.
    mod old_parked_state {
        use gatehouse_wire::invoke::InvokeRequest;
        use serde_json::{json, Value};

        use super::super::{resume_config, ConfigSource};
        use crate::interactions::parked::ParkedState;

        /// A parked state as the previous version wrote it: the stamped config twice, as
        /// `config` and as `stamped`.
        fn written_by_the_previous_version() -> Value {
            let stamp = json!({
                "agent": {
                    "llm": {"model": "m-stamped"},
                    "runner": {"permissions": {"default": "ask"}}
                }
            });
            json!({
                "script": [
                    {"Say": {"text": "working"}},
                    {"Tool": {"tool": "Bash", "args": {"command": "rm -rf /tmp/x"}}}
                ],
                "gate": {
                    "step_index": 1,
                    "tool": "Bash",
                    "args": {"command": "rm -rf /tmp/x"},
                    "tool_call_id": "call-1"
                },
                "token": "tok-1",
                "config": stamp,
                "config_redacted": true,
                "config_source": "inline",
                "model": "m-stamped",
                "references": null,
                "stamped": stamp,
                "execution_session_id": "exec-1"
            })
        }

        #[tokio::test]
        async fn a_state_with_the_config_twice_reads_and_resumes_under_the_same_config() {
            let old = written_by_the_previous_version();
            let read: ParkedState = serde_json::from_value(old.clone()).unwrap();
            assert_eq!(read.config.as_ref(), old["config"].as_object());
            assert_eq!(read.execution_session_id.as_deref(), Some("exec-1"));

            // Written again, it keeps the config once, and reads back the same.
            let rewritten = serde_json::to_value(&read).unwrap();
            assert!(rewritten.get("stamped").is_none(), "{rewritten}");
            let mut expected = old.clone();
            if let Some(object) = expected.as_object_mut() {
                object.remove("stamped");
            }
            assert_eq!(rewritten, expected);
            let reread: ParkedState = serde_json::from_value(rewritten).unwrap();
            assert_eq!(reread, read);

            // The resume runs under the parked config: no stamp in the invoke, nothing else
            // to fall back on (without the parked config this is refused).
            let db = crate::Database::connect("sqlite::memory:").await.unwrap();
            let store = crate::Stores::new(db, Vec::new()).interactions;
            let invoke = InvokeRequest::default();
            let redaction = gatehouse_wire::effective::StampPolicy::default().redaction;
            let resolved = resume_config(&store, "p", &read, &invoke, redaction)
                .await
                .unwrap();
            assert_eq!(Some(resolved.parameters()), old["stamped"].as_object());
            assert_eq!(resolved.source, ConfigSource::Inline);
            let resolved_again = resume_config(&store, "p", &reread, &invoke, redaction)
                .await
                .unwrap();
            assert_eq!(resolved_again, resolved);
            store.db().close().await;
        }
    }
}
