//! The durable state of a parked turn ([`ParkedState`]): everything its resume needs,
//! the config kept once and REDACTED, so nothing the redaction strips is at rest; and the
//! startup scrub of states an older version wrote unredacted ([`scrub_parked_configs`]).

use gatehouse_wire::interaction::References;
use gatehouse_wire::redact::{redact_effective_parameters, Redaction};
use gatehouse_wire::JsonObject;
use serde_json::Value;

use crate::runner::{GateRequest, Step};
use crate::store::Store;

/// The durable state of a parked turn: everything a resume needs.
///
/// Stored as JSON in the turn's row and read back by a resume, possibly by a newer
/// version: a field added later needs a default. A state written by an older version
/// also has `stamped` (the stamped `effectiveParameters`: a second copy of the config a
/// resume reads from `config`): it is ignored when read (serde skips unknown fields),
/// and no longer written.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ParkedState {
    /// The whole script of the turn.
    pub script: Vec<Step>,
    /// The gated tool step.
    pub gate: GateRequest,
    /// The gate row's token.
    pub token: String,
    /// The config the turn ran under, REDACTED by the stamp's rule (exact and secret-free,
    /// whatever its size: the stamp cap is for the wire and the row, not for this): the
    /// stamp when the turn was stamped. A resume runs under it. Absent only in a state
    /// written by an older version.
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
    /// The execution session the turn ran in: its resume (and every retry of it)
    /// continues there. Absent in a state written by an older version, or without the
    /// execution service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_session_id: Option<String>,
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

#[cfg(test)]
mod tests {
    use gatehouse_wire::invoke::InvokeRequest;
    use serde_json::json;

    use super::*;
    use crate::interactions::config::{resume_config, ConfigSource};

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
        let store = Store::connect("sqlite::memory:").await.unwrap();
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
        store.close().await;
    }
}
