//! `effectiveParameters` stamping (CONTRACT.md A2, C2): the config a turn actually runs
//! under, redacted and size-capped before it goes on the `/run` wire and, from there,
//! onto the durable interaction row a gate writes.
//!
//! [`stamp_effective_parameters`] does both guards and returns either the [`Stamped`]
//! blob or why it was [`NotStamped`]. It never logs (this crate does no I/O): the
//! caller logs the stripped-field labels and the reason, never a value.
//!
//! The rule for what is stripped is [`crate::redact`]'s (Agenta's plus C2, or Agenta's alone
//! under [`Redaction::AgentaCompatible`]); the size is Python's `json.dumps` length,
//! [`crate::pyjson::python_json_dumps_len`].
//!
//! The parameters are taken by value: a config with nothing to strip moves through
//! unchanged, with no copy, and one with credentials is stripped in place (only the
//! entries that lose a key change). A caller that still needs its copy clones it
//! explicitly, where the cost is visible.
//!
//! ```
//! use gatehouse_wire::effective::{stamp_effective_parameters, StampPolicy};
//! let params = serde_json::json!({"agent": {"mcps": [{"name": "notion", "connection": {
//!     "url": "https://mcp.example", "headers": {"authorization": "Bearer sk-live"}}}]}});
//! let stamped = stamp_effective_parameters(params, &StampPolicy::default()).unwrap();
//! assert_eq!(stamped.stripped, vec!["connection.headers".to_string()]);
//! assert!(!serde_json::to_string(&stamped.parameters).unwrap().contains("sk-live"));
//! ```

use serde_json::Value;

use crate::pyjson::{self, PyValue};
use crate::redact::{
    redact_object, redacted_len, redacted_len_measured, RedactedObject, Redaction, Rule,
};
pub use crate::redact::{MeasuredConfig, ReadConfigError};
use crate::JsonObject;

/// The default size cap in bytes (Agenta's seed contract: 64 KiB).
pub const DEFAULT_MAX_STAMPED_BYTES: usize = 64 * 1024;

/// The cap the released Agenta 0.125.1 SDK uses (256 KiB), for a deployment that wants
/// to match it.
pub const AGENTA_RELEASED_MAX_STAMPED_BYTES: usize = 256 * 1024;

/// How to stamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StampPolicy {
    /// The largest stamp in bytes, measured as Python's `json.dumps` output. A blob of
    /// exactly this size is stamped; one byte more and it is dropped whole.
    pub max_bytes: usize,
    /// The redaction rule.
    pub redaction: Redaction,
}

impl Default for StampPolicy {
    /// 65536 bytes, [`Redaction::Gatehouse`].
    fn default() -> Self {
        Self {
            max_bytes: DEFAULT_MAX_STAMPED_BYTES,
            redaction: Redaction::Gatehouse,
        }
    }
}

impl StampPolicy {
    /// The default policy with another cap.
    pub fn with_max_bytes(max_bytes: usize) -> Self {
        Self {
            max_bytes,
            ..Self::default()
        }
    }
}

/// A successful stamp.
#[derive(Debug, Clone, PartialEq)]
pub struct Stamped {
    /// The redacted parameters, to put on the wire as `effectiveParameters`. When nothing
    /// was stripped this is the input object unchanged (key order and `null`s included).
    pub parameters: JsonObject,
    /// Their size as Python's default `json.dumps` renders them, in bytes.
    pub measured_bytes: usize,
    /// Labels of the stripped fields, sorted and deduplicated, e.g. `headers`,
    /// `connection.headers`, `call.authorization`. Never a value.
    pub stripped: Vec<String>,
}

/// Why nothing was stamped (the key is then omitted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum NotStamped {
    /// The parameters are `null` or `{}`: nothing to stamp.
    #[error("the effective config is empty; not stamped")]
    Empty,
    /// The parameters are not a JSON object.
    #[error("the effective config is not a JSON object; not stamped")]
    NotAnObject,
    /// The redacted parameters are over the cap; dropped whole, never truncated (a resume
    /// against this turn falls back to reference hydration).
    #[error(
        "the effective config is {measured_bytes} B, over the {max_bytes} B stamp cap; not stamped"
    )]
    OverCap {
        /// The measured size.
        measured_bytes: usize,
        /// The cap.
        max_bytes: usize,
    },
}

/// What [`crate::run::RunRequest::with_effective_parameters`] did, for the caller to log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StampOutcome {
    /// `effectiveParameters` was set.
    Stamped {
        /// Its measured size in bytes.
        measured_bytes: usize,
        /// Labels of the stripped fields (see [`Stamped::stripped`]).
        stripped: Vec<String>,
    },
    /// Not set, for this reason.
    NotStamped(NotStamped),
    /// Not set: the request is not a session run, which never carries the key.
    NoSession,
}

impl StampOutcome {
    /// True when the key was set.
    pub fn is_stamped(&self) -> bool {
        matches!(self, Self::Stamped { .. })
    }
}

/// Stamp `params` under `policy` (A2, C2): redact, measure, cap.
///
/// `params` is consumed: when nothing is stripped, [`Stamped::parameters`] is the very
/// object passed in (moved, not copied); otherwise that object with the credential keys
/// removed in place. A rejected input is dropped.
///
/// - `null` or `{}` -> [`NotStamped::Empty`]; any other non-object -> [`NotStamped::NotAnObject`];
/// - redaction per [`Redaction`] (see [`crate::redact`]);
/// - the size is [`pyjson::python_json_dumps_len`] of the redacted object; over
///   `policy.max_bytes` -> [`NotStamped::OverCap`]; at or under -> [`Stamped`].
pub fn stamp_effective_parameters(
    params: Value,
    policy: &StampPolicy,
) -> Result<Stamped, NotStamped> {
    let object = match params {
        Value::Null => return Err(NotStamped::Empty),
        Value::Object(map) if map.is_empty() => return Err(NotStamped::Empty),
        Value::Object(map) => map,
        _ => return Err(NotStamped::NotAnObject),
    };
    let view = stamp_borrowed(&object, policy)?;
    let (measured_bytes, rule, changed) = (view.measured_bytes, view.rule, view.changed);
    let (parameters, stripped) = if changed {
        let mut object = object;
        let stripped = rule.redact::<Value>(&mut object);
        (object, stripped)
    } else {
        (object, Vec::new())
    };
    Ok(Stamped {
        parameters,
        measured_bytes,
        stripped,
    })
}

/// A stamp that borrows its input ([`stamp_borrowed`]): the caller's config as the
/// redaction sees it, measured, never copied. It serializes as the redacted object
/// (what goes on the wire), and turns into an owned one only when asked.
#[derive(Debug, Clone, Copy)]
pub struct StampedView<'a> {
    params: &'a JsonObject,
    rule: Rule,
    changed: bool,
    /// Python's `json.dumps` byte length of the redacted object (at most the cap).
    pub measured_bytes: usize,
}

impl<'a> StampedView<'a> {
    /// True when the redaction strips or rewrites something of the input (else the
    /// stamp is the input itself).
    pub fn is_redacted(&self) -> bool {
        self.changed
    }

    /// The input this stamp views.
    pub fn input(&self) -> &'a JsonObject {
        self.params
    }

    /// The stamped object, owned: a copy of the input, redacted.
    pub fn to_object(&self) -> JsonObject {
        let mut object = self.params.clone();
        if self.changed {
            self.rule.redact::<Value>(&mut object);
        }
        object
    }

    /// The stamp, owned: a copy of the input, redacted, with its size and the labels of
    /// what was stripped (one copy, one redaction).
    pub fn to_stamped(&self) -> Stamped {
        let mut parameters = self.params.clone();
        let stripped = if self.changed {
            self.rule.redact::<Value>(&mut parameters)
        } else {
            Vec::new()
        };
        Stamped {
            parameters,
            measured_bytes: self.measured_bytes,
            stripped,
        }
    }

    /// The sorted labels of what the redaction strips (for the log; no value), as
    /// [`Stamped::stripped`].
    pub fn stripped(&self) -> Vec<String> {
        if !self.changed {
            return Vec::new();
        }
        let mut object = self.params.clone();
        self.rule.redact::<Value>(&mut object)
    }
}

impl serde::Serialize for StampedView<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if !self.changed {
            return self.params.serialize(serializer);
        }
        RedactedObject::new(self.params, self.rule).serialize(serializer)
    }
}

/// Stamp `params` without taking it (A2, C2): the same redaction, measure and cap as
/// [`stamp_effective_parameters`], but the input is only read: nothing is copied, freed
/// or changed. The [`StampedView`] serializes as the redacted object, so a `/run` body is
/// written straight from the caller's config ([`crate::run::RunRequest::to_json_with_stamp`]).
///
/// ```
/// use gatehouse_wire::effective::{stamp_borrowed, StampPolicy};
/// let params = serde_json::json!({"agent": {"llm": {"model": "m", "api_key": "sk-live"}}});
/// let view = stamp_borrowed(params.as_object().unwrap(), &StampPolicy::default()).unwrap();
/// assert_eq!(serde_json::to_string(&view).unwrap(), r#"{"agent":{"llm":{"model":"m"}}}"#);
/// assert_eq!(view.measured_bytes, 34); // {"agent": {"llm": {"model": "m"}}}
/// assert_eq!(view.stripped(), vec!["agent.llm.api_key".to_string()]);
/// ```
pub fn stamp_borrowed<'a>(
    params: &'a JsonObject,
    policy: &StampPolicy,
) -> Result<StampedView<'a>, NotStamped> {
    stamp_view(params, policy, |rule| redacted_len(params, rule))
}

/// The stamp of `params` under `policy`, its redacted length and whether the rule changes
/// anything given by `measure` (a walk of the whole config, or the notes taken while it
/// was read).
fn stamp_view<'a>(
    params: &'a JsonObject,
    policy: &StampPolicy,
    measure: impl FnOnce(Rule) -> (usize, bool),
) -> Result<StampedView<'a>, NotStamped> {
    if params.is_empty() {
        return Err(NotStamped::Empty);
    }
    let rule = Rule::for_params::<Value>(params, policy.redaction);
    let (measured_bytes, changed) = measure(rule);
    if measured_bytes > policy.max_bytes {
        return Err(NotStamped::OverCap {
            measured_bytes,
            max_bytes: policy.max_bytes,
        });
    }
    Ok(StampedView {
        params,
        rule,
        changed,
        measured_bytes,
    })
}

/// Stamp a config read by [`MeasuredConfig`]: exactly [`stamp_borrowed`] of
/// [`MeasuredConfig::object`] (the same view, size and outcome), but the `json.dumps`
/// length of every part the redaction leaves whole was taken while the text was read, so
/// only the path to what the rule strips or rewrites is walked. A caller that receives a
/// config as text (a request body, a stored revision) reads it this way and stamps it
/// without a second pass over it.
///
/// ```
/// use gatehouse_wire::effective::{stamp_measured, MeasuredConfig, StampPolicy};
/// let config = MeasuredConfig::from_json(r#"{"agent": {"mcps": [{"name": "notion",
///     "connection": {"url": "https://mcp.example", "headers": {"authorization": "Bearer sk"}}}]}}"#).unwrap();
/// let view = stamp_measured(&config, &StampPolicy::default()).unwrap();
/// assert_eq!(view.stripped(), vec!["connection.headers".to_string()]);
/// assert_eq!(view.measured_bytes, 87); // {"agent": {"mcps": [{"name": "notion", "connection": {"url": "https://mcp.example"}}]}}
/// ```
pub fn stamp_measured<'a>(
    config: &'a MeasuredConfig,
    policy: &StampPolicy,
) -> Result<StampedView<'a>, NotStamped> {
    stamp_view(config.object(), policy, |rule| {
        redacted_len_measured(config, rule)
    })
}

/// A successful stamp of a JSON text under Python's reading of it
/// ([`stamp_python_text`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StampedText {
    /// Python's `json.dumps` of the redacted parameters: the exact text Agenta measures and
    /// would put on the wire.
    pub text: String,
    /// Its length in bytes (`text.len()`).
    pub measured_bytes: usize,
    /// Labels of the stripped fields (see [`Stamped::stripped`]).
    pub stripped: Vec<String>,
}

/// Why [`stamp_python_text`] stamped nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PythonStampError {
    /// Python's `json.loads` refuses the text, so Agenta's function never receives it.
    #[error("not JSON as Python's json.loads reads it: {0}")]
    NotJson(#[from] pyjson::PyJsonError),
    /// The parameters were read but are not stamped.
    #[error(transparent)]
    NotStamped(#[from] NotStamped),
}

/// Stamp the parameters a JSON `text` holds exactly as Agenta's Python does: `json.loads`
/// the text ([`crate::pyjson`]: `NaN`/`Infinity`, integers of any size, lone surrogates and
/// duplicate keys read as Python reads them), redact under `policy.redaction`, and measure
/// `json.dumps` of the result against `policy.max_bytes`. Under
/// [`Redaction::AgentaCompatible`] the text and size are those of Agenta's
/// `stamp_effective_parameters` (0.125.1 and main share its body; only the cap differs).
///
/// ```
/// use gatehouse_wire::effective::{stamp_python_text, StampPolicy};
/// use gatehouse_wire::redact::Redaction;
/// let policy = StampPolicy { max_bytes: 55, redaction: Redaction::AgentaCompatible };
/// let stamped = stamp_python_text(r#"{"agent": {"llm": {"seed": 12345678901234567890123}}}"#, &policy).unwrap();
/// assert_eq!(stamped.text, r#"{"agent": {"llm": {"seed": 12345678901234567890123}}}"#);
/// assert_eq!(stamped.measured_bytes, 53);
/// ```
pub fn stamp_python_text(
    text: &str,
    policy: &StampPolicy,
) -> Result<StampedText, PythonStampError> {
    let mut object = match pyjson::loads(text)? {
        PyValue::Null => return Err(NotStamped::Empty.into()),
        PyValue::Dict(map) if map.is_empty() => return Err(NotStamped::Empty.into()),
        PyValue::Dict(map) => map,
        _ => return Err(NotStamped::NotAnObject.into()),
    };
    let stripped = redact_object::<PyValue>(&mut object, policy.redaction);
    let text = pyjson::dumps(&PyValue::Dict(object));
    let measured_bytes = text.len();
    if measured_bytes > policy.max_bytes {
        return Err(NotStamped::OverCap {
            measured_bytes,
            max_bytes: policy.max_bytes,
        }
        .into());
    }
    Ok(StampedText {
        text,
        measured_bytes,
        stripped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pyjson::python_json_dumps_len;
    use crate::redact::redact_effective_parameters;
    use serde_json::json;

    /// C2's rule for credential-shaped fields, case by case, through both stamps.
    #[test]
    fn credential_shaped_fields_are_stripped_by_rule_and_references_and_schemas_stay() {
        let config = json!({"agent": {
            "llm": {"model": "m", "api_key": "K1", "max_tokens": 10, "eos_token": "</s>"},
            "mcps": [{
                "name": "notion",
                "env": {"NOTION_TOKEN": "K2"},
                "connection": {
                    "url": "https://mcp.example/sse?token=K3&region=eu",
                    "transport": {"headers": {"Authorization": "Bearer K4"}},
                    "credentials": {"type": "header_secret_refs", "headers": {"authorization": "NOTION_TOKEN"}}
                }
            }],
            "tools": [{
                "name": "search",
                "credentials": {"value": "K5", "binding": {"kind": "env", "name": "SEARCH_KEY"}},
                "inputSchema": {"type": "object", "properties": {"headers": {"type": "object"}, "token": {"type": "string"}}},
                "parameters": {"type": "object", "properties": {"api_key": {"type": "string"}}}
            }],
            "skills": [{"name": "s", "headers": {"X-Api-Key": "K6"}, "password": null}],
            "modelConnection": {"credentials": [{"binding": {"kind": "env", "name": "OPENAI"}, "value": "K7", "usage": "api_key"}]}
        }});
        let (redacted, stripped) =
            redact_effective_parameters(config.as_object().unwrap().clone(), Redaction::Gatehouse);
        let text = serde_json::to_string(&redacted).unwrap();
        for secret in ["K1", "K2", "K3", "K4", "K5", "K6", "K7"] {
            assert!(
                !text.contains(&format!("\"{secret}"))
                    && !text.contains(&format!("={secret}"))
                    && !text.contains(&format!(" {secret}")),
                "{secret} leaked: {text}"
            );
        }
        let agent = &redacted["agent"];
        assert_eq!(agent["llm"]["max_tokens"], 10);
        assert_eq!(agent["llm"]["eos_token"], "</s>");
        assert_eq!(
            agent["mcps"][0]["connection"]["url"],
            "https://mcp.example/sse?region=eu"
        );
        assert_eq!(
            agent["mcps"][0]["connection"]["credentials"]["headers"]["authorization"],
            "NOTION_TOKEN",
            "a vault reference stays"
        );
        assert_eq!(
            agent["tools"][0]["credentials"]["binding"]["name"],
            "SEARCH_KEY"
        );
        assert!(agent["tools"][0]["inputSchema"]["properties"]["headers"].is_object());
        assert!(agent["tools"][0]["inputSchema"]["properties"]["token"].is_object());
        assert!(agent["tools"][0]["parameters"]["properties"]["api_key"].is_object());
        assert!(
            agent["skills"][0].get("password").is_some(),
            "null is not a secret"
        );
        assert!(
            stripped.contains(&"agent.llm.api_key".to_string()),
            "{stripped:?}"
        );
        assert!(
            stripped.contains(&"agent.mcps.env".to_string()),
            "{stripped:?}"
        );
        // Agenta's rule alone strips none of these.
        let (agenta, _) = redact_effective_parameters(
            config.as_object().unwrap().clone(),
            Redaction::AgentaCompatible,
        );
        assert_eq!(Value::Object(agenta), config);
        // The borrowing stamp writes and measures exactly the owned one.
        let view = stamp_borrowed(config.as_object().unwrap(), &StampPolicy::default()).unwrap();
        assert_eq!(
            serde_json::to_value(view).unwrap(),
            Value::Object(redacted.clone())
        );
        assert_eq!(
            view.measured_bytes,
            python_json_dumps_len(&Value::Object(redacted.clone()))
        );
        assert_eq!(view.stripped(), stripped);
    }

    #[test]
    fn nothing_to_strip_moves_the_object_through_unchanged() {
        let params = json!({"agent": {"mcps": [{"name": "a", "headers": null, "connection": {"headers": null}}]}, "z": 1});
        let before = params.clone();
        let stamped = stamp_effective_parameters(params, &StampPolicy::default()).unwrap();
        assert!(stamped.stripped.is_empty());
        assert_eq!(Value::Object(stamped.parameters), before);
    }

    #[test]
    fn removing_keeps_the_order_of_the_rest() {
        let params = json!({"agent": {"tools": [{"a": 1, "headers": {"x": "y"}, "b": 2, "call": {"m": 1, "authorization": "s", "n": 2}, "c": 3}]}});
        let stamped = stamp_effective_parameters(params, &StampPolicy::default()).unwrap();
        let text = serde_json::to_string(&stamped.parameters).unwrap();
        assert_eq!(
            text,
            r#"{"agent":{"tools":[{"a":1,"b":2,"call":{"m":1,"n":2},"c":3}]}}"#
        );
        assert_eq!(stamped.stripped, vec!["call.authorization", "headers"]);
    }
}
