//! The durable state of a parked turn ([`ParkedState`]): everything its resume needs,
//! the config kept once and REDACTED, so nothing the redaction strips is at rest; and the
//! startup scrub of states an older version wrote unredacted ([`scrub_parked_configs`]).

use gatehouse_wire::interaction::References;
use gatehouse_wire::redact::{redact_effective_parameters, Redaction};
use gatehouse_wire::JsonObject;
use serde_json::Value;

use super::store::InteractionStore;
use crate::runner::{GateRequest, Step};

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
    /// The gated tool step (of a turn parked on several gates: the first of them).
    pub gate: GateRequest,
    /// The gate row's token (of a turn parked on several gates: the first's).
    pub token: String,
    /// Every gate of a turn parked on several (the asking calls of one `parallel` step,
    /// in its order, `gate` first), each with its row's token; empty for a turn parked
    /// on one gate, as in every state an older version wrote (read it through
    /// [`ParkedState::parked_gates`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gates: Vec<ParkedGate>,
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

/// One gate of a parked turn: the gated call and its row's token.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ParkedGate {
    /// The gated call.
    pub gate: GateRequest,
    /// Its row's token (the row is found by the turn's session and this token).
    pub token: String,
}

impl ParkedState {
    /// Every gate the turn waits on, in order: `gates`, or the one `gate` of a turn
    /// parked on one (and of every state an older version wrote).
    pub fn parked_gates(&self) -> Vec<ParkedGate> {
        if self.gates.is_empty() {
            vec![ParkedGate {
                gate: self.gate.clone(),
                token: self.token.clone(),
            }]
        } else {
            self.gates.clone()
        }
    }

    /// True when the turn waits on several gates (it continues once all are answered).
    pub fn has_several_gates(&self) -> bool {
        self.gates.len() > 1
    }
}

/// Redact the config of every parked state an older version wrote unredacted (no
/// `config_redacted` marker), in place, so no stripped secret stays at rest. Run once at
/// startup; a failure is logged and retried at the next start (a resume redacts such a
/// config before use anyway). Returns how many states were rewritten.
pub async fn scrub_parked_configs(store: &InteractionStore, redaction: Redaction) -> usize {
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
    use super::*;

    fn gate(id: &str) -> GateRequest {
        GateRequest {
            step_index: 1,
            tool: "Bash".into(),
            args: serde_json::json!({}),
            tool_call_id: id.into(),
        }
    }

    /// A state written with one gate (by this version or an older one) reads as one gate,
    /// and this version writes a one-gate state as before (no `gates` key).
    #[test]
    fn a_single_gate_state_reads_and_writes_as_before() {
        let older = serde_json::json!({
            "script": [], "gate": gate("toolu_1"), "token": "tok",
            "config_source": "inline", "model": null, "references": null
        });
        let state: ParkedState = serde_json::from_value(older).unwrap();
        assert!(!state.has_several_gates());
        assert_eq!(
            state.parked_gates(),
            [ParkedGate {
                gate: gate("toolu_1"),
                token: "tok".into()
            }]
        );
        let written = serde_json::to_value(&state).unwrap();
        assert!(written.get("gates").is_none(), "{written}");

        let several = ParkedState {
            gates: vec![
                ParkedGate {
                    gate: gate("toolu_1"),
                    token: "tok".into(),
                },
                ParkedGate {
                    gate: gate("toolu_2"),
                    token: "tok-2".into(),
                },
            ],
            ..state
        };
        let read: ParkedState =
            serde_json::from_value(serde_json::to_value(&several).unwrap()).unwrap();
        assert!(read.has_several_gates());
        assert_eq!(read.parked_gates().len(), 2);
        assert_eq!(read.parked_gates()[1].token, "tok-2");
    }
}
