//! `effectiveParameters` stamping (CONTRACT.md A2, C2): the config a turn actually runs
//! under, redacted and size-capped before it goes on the `/run` wire and, from there,
//! onto the durable interaction row a gate writes.
//!
//! [`stamp_effective_parameters`] does both guards and returns either the [`Stamped`]
//! blob or why it was [`NotStamped`]. It never logs (this crate does no I/O): the
//! caller logs the stripped-field labels and the reason, never a value.
//!
//! Redaction follows Agenta's `stamp_effective_parameters` exactly, including its quirks,
//! with two deliberate departures (C2) under the default [`Redaction::Gatehouse`]:
//! `headers`/`authorization` keys are matched in any letter case, and a bare template
//! (`mcps`/`tools` at the top level of the parameters) is walked too.
//! [`Redaction::AgentaCompatible`] turns both departures off.
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

use crate::JsonObject;

/// The default size cap in bytes (Agenta's seed contract: 64 KiB).
pub const DEFAULT_MAX_STAMPED_BYTES: usize = 64 * 1024;

/// The cap the released Agenta 0.125.1 SDK uses (256 KiB), for a deployment that wants
/// to match it.
pub const AGENTA_RELEASED_MAX_STAMPED_BYTES: usize = 256 * 1024;

/// Which redaction rule to apply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Redaction {
    /// Agenta's rule plus the two C2 departures: credential keys match in any letter
    /// case, and top-level `mcps`/`tools` (a bare template) are walked as well.
    #[default]
    Gatehouse,
    /// Agenta's rule exactly (case-sensitive keys, only `agent.mcps`/`agent.tools`).
    /// For parity tests; it lets `Authorization` and bare-template headers through.
    AgentaCompatible,
}

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
/// - redaction per [`Redaction`] (see the module docs);
/// - the size is [`python_json_dumps_len`] of the redacted object; over
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
        let mut stripped = Vec::new();
        redact_in_place::<Value>(
            &mut object,
            rule,
            Ctx::ROOT,
            &mut String::new(),
            &mut stripped,
        );
        stripped.sort();
        stripped.dedup();
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
            redact_in_place::<Value>(
                &mut object,
                self.rule,
                Ctx::ROOT,
                &mut String::new(),
                &mut Vec::new(),
            );
        }
        object
    }

    /// The sorted labels of what the redaction strips (for the log; no value), as
    /// [`Stamped::stripped`].
    pub fn stripped(&self) -> Vec<String> {
        if !self.changed {
            return Vec::new();
        }
        let mut object = self.params.clone();
        let mut stripped = Vec::new();
        redact_in_place::<Value>(
            &mut object,
            self.rule,
            Ctx::ROOT,
            &mut String::new(),
            &mut stripped,
        );
        stripped.sort();
        stripped.dedup();
        stripped
    }
}

impl serde::Serialize for StampedView<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if !self.changed {
            return self.params.serialize(serializer);
        }
        RedactedObject {
            map: self.params,
            rule: self.rule,
            ctx: Ctx::ROOT,
        }
        .serialize(serializer)
    }
}

/// An object written as the rule redacts it (for [`StampedView`]'s `Serialize`).
struct RedactedObject<'a> {
    map: &'a JsonObject,
    rule: Rule,
    ctx: Ctx,
}

struct RedactedValue<'a> {
    value: &'a Value,
    rule: Rule,
    ctx: Ctx,
}

impl serde::Serialize for RedactedObject<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.map {
            if self.rule.strips(self.ctx, key, value).is_some() {
                continue;
            }
            let ctx = self.rule.child(self.ctx, key, value);
            map.serialize_entry(
                key,
                &RedactedValue {
                    value,
                    rule: self.rule,
                    ctx,
                },
            )?;
        }
        map.end()
    }
}

impl serde::Serialize for RedactedValue<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        match self.value {
            Value::Object(map) => RedactedObject {
                map,
                rule: self.rule,
                ctx: self.ctx,
            }
            .serialize(serializer),
            Value::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    let ctx = self.rule.element(self.ctx, item);
                    seq.serialize_element(&RedactedValue {
                        value: item,
                        rule: self.rule,
                        ctx,
                    })?;
                }
                seq.end()
            }
            Value::String(text) => match self.rule.rewrite(self.ctx, text) {
                Some(rewritten) => serializer.serialize_str(&rewritten),
                None => serializer.serialize_str(text),
            },
            other => other.serialize(serializer),
        }
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
    if params.is_empty() {
        return Err(NotStamped::Empty);
    }
    let rule = Rule::for_params::<Value>(params, policy.redaction);
    let mut changed = false;
    let measured_bytes = redacted_object_len(params, rule, Ctx::ROOT, &mut changed);
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

/// True when nothing under a node at `ctx` can be stripped or rewritten: its length is
/// the plain [`python_json_dumps_len`].
fn inert(rule: Rule, ctx: Ctx) -> bool {
    ctx.place == Place::Other && (ctx.in_schema || rule.redaction == Redaction::AgentaCompatible)
}

/// [`python_json_dumps_len`] of `map` as the rule redacts it; `changed` is set when the
/// rule strips or rewrites anything.
fn redacted_object_len(map: &JsonObject, rule: Rule, ctx: Ctx, changed: &mut bool) -> usize {
    let mut total = 2;
    let mut kept = 0;
    for (key, value) in map {
        if rule.strips(ctx, key, value).is_some() {
            *changed = true;
            continue;
        }
        let value_len = match value {
            // A scalar's context is its object's, as far as the rule goes.
            Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => redacted_len(
                value,
                rule,
                Ctx {
                    place: Place::Other,
                    ..ctx
                },
                changed,
            ),
            _ => redacted_len(value, rule, rule.child(ctx, key, value), changed),
        };
        total += python_string_len(key) + 2 + value_len;
        kept += 1;
    }
    if kept > 1 {
        total += 2 * (kept - 1);
    }
    total
}

fn redacted_len(value: &Value, rule: Rule, ctx: Ctx, changed: &mut bool) -> usize {
    if inert(rule, ctx) {
        return python_json_dumps_len(value);
    }
    match value {
        Value::Object(map) => redacted_object_len(map, rule, ctx, changed),
        Value::Array(items) if !items.is_empty() => {
            let inner: usize = items
                .iter()
                .map(|item| redacted_len(item, rule, rule.element(ctx, item), changed))
                .sum();
            2 + inner + 2 * (items.len() - 1)
        }
        Value::String(text) => match rule.rewrite(ctx, text) {
            Some(rewritten) => {
                *changed = true;
                python_string_len(&rewritten)
            }
            None => python_string_len(text),
        },
        other => python_json_dumps_len(other),
    }
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
    NotJson(#[from] crate::pyjson::PyJsonError),
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
/// use gatehouse_wire::effective::{stamp_python_text, Redaction, StampPolicy};
/// let policy = StampPolicy { max_bytes: 55, redaction: Redaction::AgentaCompatible };
/// let stamped = stamp_python_text(r#"{"agent": {"llm": {"seed": 12345678901234567890123}}}"#, &policy).unwrap();
/// assert_eq!(stamped.text, r#"{"agent": {"llm": {"seed": 12345678901234567890123}}}"#);
/// assert_eq!(stamped.measured_bytes, 53);
/// ```
pub fn stamp_python_text(
    text: &str,
    policy: &StampPolicy,
) -> Result<StampedText, PythonStampError> {
    use crate::pyjson::PyValue;
    let mut object = match crate::pyjson::loads(text)? {
        PyValue::Null => return Err(NotStamped::Empty.into()),
        PyValue::Dict(map) if map.is_empty() => return Err(NotStamped::Empty.into()),
        PyValue::Dict(map) => map,
        _ => return Err(NotStamped::NotAnObject.into()),
    };
    let stripped = redact_object::<PyValue>(&mut object, policy.redaction);
    let text = crate::pyjson::dumps(&PyValue::Dict(object));
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

/// The connection-bearing lists of a config; the rest is inert authored text and JSON
/// Schema (a tool's input schema may name a property `headers`).
const CONNECTION_BEARING_LISTS: [&str; 2] = ["mcps", "tools"];
/// Nested objects of an entry that may hold credentials.
const NESTED_CONNECTION_KEYS: [&str; 2] = ["connection", "call"];

fn is_credential_key(key: &str, redaction: Redaction) -> bool {
    match redaction {
        Redaction::AgentaCompatible => key == "headers" || key == "authorization",
        Redaction::Gatehouse => {
            key.eq_ignore_ascii_case("headers") || key.eq_ignore_ascii_case("authorization")
        }
    }
}

/// The little redaction needs of a JSON tree: objects with string keys, arrays, `null`.
/// Implemented by `serde_json::Value` (the library's stamp) and by
/// [`crate::pyjson::PyValue`] (Python's `json.loads` object model, for the exact Agenta
/// comparison), so both redact by the one rule below.
pub(crate) trait Tree: Sized {
    /// The object type.
    type Object;
    fn as_object(&self) -> Option<&Self::Object>;
    fn as_object_mut(&mut self) -> Option<&mut Self::Object>;
    fn as_array(&self) -> Option<&[Self]>;
    fn as_array_mut(&mut self) -> Option<&mut [Self]>;
    fn is_null(&self) -> bool;
    fn get<'a>(object: &'a Self::Object, key: &str) -> Option<&'a Self>;
    /// True when some entry passes `test`.
    fn any_entry(object: &Self::Object, test: impl FnMut(&str, &Self) -> bool) -> bool;
    /// Keep the entries `keep` says yes to, in order.
    fn retain(object: &mut Self::Object, keep: impl FnMut(&str, &Self) -> bool);
    /// Visit every entry, mutably.
    fn for_each_mut(object: &mut Self::Object, visit: impl FnMut(&str, &mut Self));
    /// The text of a string (for a Python-model string: its `json.dumps` escaped form,
    /// whose ASCII is itself).
    fn as_text(&self) -> Option<&str>;
    /// Replace a string's text (same form as [`Tree::as_text`]).
    fn set_text(&mut self, text: String);
}

impl Tree for Value {
    type Object = JsonObject;
    fn as_object(&self) -> Option<&JsonObject> {
        Value::as_object(self)
    }
    fn as_object_mut(&mut self) -> Option<&mut JsonObject> {
        Value::as_object_mut(self)
    }
    fn as_array(&self) -> Option<&[Value]> {
        Value::as_array(self).map(Vec::as_slice)
    }
    fn as_array_mut(&mut self) -> Option<&mut [Value]> {
        Value::as_array_mut(self).map(Vec::as_mut_slice)
    }
    fn is_null(&self) -> bool {
        Value::is_null(self)
    }
    fn get<'a>(object: &'a JsonObject, key: &str) -> Option<&'a Value> {
        // A config's objects are small: comparing keys beats hashing one (SipHash).
        if object.len() <= 16 {
            object
                .iter()
                .find(|(k, _)| k.as_str() == key)
                .map(|(_, v)| v)
        } else {
            object.get(key)
        }
    }
    fn any_entry(object: &JsonObject, mut test: impl FnMut(&str, &Value) -> bool) -> bool {
        object.iter().any(|(key, value)| test(key, value))
    }
    fn retain(object: &mut JsonObject, mut keep: impl FnMut(&str, &Value) -> bool) {
        object.retain(|key, value| keep(key, value));
    }
    fn for_each_mut(object: &mut JsonObject, mut visit: impl FnMut(&str, &mut Value)) {
        for (key, value) in object.iter_mut() {
            visit(key, value);
        }
    }
    fn as_text(&self) -> Option<&str> {
        Value::as_str(self)
    }
    fn set_text(&mut self, text: String) {
        *self = Value::String(text);
    }
}

/// True when `object` holds a credential key with a non-null value.
fn holds_credential<T: Tree>(object: &T::Object, redaction: Redaction) -> bool {
    T::any_entry(object, |key, value| {
        !value.is_null() && is_credential_key(key, redaction)
    })
}

/// True when redacting `container`'s lists would strip something non-null. A read-only
/// pass: only when it says yes does Agenta's part of the rule strip anything, so an input
/// with nothing (or only `null`s) to strip keeps its `"headers": null`, as Agenta's does.
fn lists_need_redaction<T: Tree>(container: &T::Object, redaction: Redaction) -> bool {
    CONNECTION_BEARING_LISTS.iter().any(|list_key| {
        let Some(entries) = T::get(container, list_key).and_then(T::as_array) else {
            return false;
        };
        entries.iter().any(|entry| {
            let Some(object) = entry.as_object() else {
                return false;
            };
            holds_credential::<T>(object, redaction)
                || NESTED_CONNECTION_KEYS.iter().any(|nested_key| {
                    T::get(object, nested_key)
                        .and_then(T::as_object)
                        .is_some_and(|nested| holds_credential::<T>(nested, redaction))
                })
        })
    })
}

/// Where in a config a node is, as the redaction rule sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// The parameters object.
    Root,
    /// `agent`.
    Agent,
    /// A connection-bearing list: `agent.mcps`/`agent.tools` (or, walking a bare
    /// template, the top-level ones).
    List,
    /// An entry of such a list.
    Entry,
    /// An entry's `connection` or `call`.
    Nested(&'static str),
    /// Anywhere else.
    Other,
}

/// A node's context: its place, and whether it is inside a `credentials` block or a JSON
/// Schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ctx {
    place: Place,
    in_credentials: bool,
    in_schema: bool,
}

impl Ctx {
    const ROOT: Ctx = Ctx {
        place: Place::Root,
        in_credentials: false,
        in_schema: false,
    };
}

/// The one redaction rule (A2 + C2), decided per node: the mutating redaction and the
/// borrowing stamp ([`stamp_borrowed`]) both walk a config with it, so they cannot
/// disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rule {
    redaction: Redaction,
    /// Agenta's part strips anything only when something non-null is there to strip.
    agenta_applies: bool,
}

impl Rule {
    fn for_params<T: Tree>(params: &T::Object, redaction: Redaction) -> Self {
        let agent_needs = T::get(params, "agent")
            .and_then(T::as_object)
            .is_some_and(|agent| lists_need_redaction::<T>(agent, redaction));
        let bare_needs =
            redaction == Redaction::Gatehouse && lists_need_redaction::<T>(params, redaction);
        Self {
            redaction,
            agenta_applies: agent_needs || bare_needs,
        }
    }

    /// Whether `key` (with `value`) goes from an object at `ctx`, and under which label.
    fn strips<T: Tree>(&self, ctx: Ctx, key: &str, value: &T) -> Option<Label> {
        // Agenta's part: the credential keys of a list entry and of its connection/call
        // (popped even when null, once anything non-null is stripped; not reported then).
        if self.agenta_applies && is_credential_key(key, self.redaction) {
            match ctx.place {
                Place::Entry => return Some(Label::Agenta(None, !value.is_null())),
                Place::Nested(nested) => {
                    return Some(Label::Agenta(Some(nested), !value.is_null()))
                }
                _ => {}
            }
        }
        // C2, by rule: credential-shaped fields anywhere (Gatehouse's default only).
        if self.redaction != Redaction::Gatehouse || ctx.in_schema || value.is_null() {
            return None;
        }
        let strip = if ctx.in_credentials {
            key == "value"
        } else {
            is_credential_shaped_key(key)
                || (key.eq_ignore_ascii_case("env")
                    && (value.as_object().is_some() || value.as_array().is_some()))
        };
        strip.then_some(Label::Path)
    }

    /// The context of the value under `key` of an object at `ctx`.
    fn child<T: Tree>(&self, ctx: Ctx, key: &str, value: &T) -> Ctx {
        let list = CONNECTION_BEARING_LISTS.contains(&key) && value.as_array().is_some();
        let place = match ctx.place {
            Place::Root if key == "agent" && value.as_object().is_some() => Place::Agent,
            Place::Root if list && self.redaction == Redaction::Gatehouse => Place::List,
            Place::Agent if list => Place::List,
            Place::Entry if value.as_object().is_some() => NESTED_CONNECTION_KEYS
                .iter()
                .find(|nested| **nested == key)
                .map(|nested| Place::Nested(nested))
                .unwrap_or(Place::Other),
            _ => Place::Other,
        };
        Ctx {
            place,
            in_credentials: ctx.in_credentials || key.eq_ignore_ascii_case("credentials"),
            in_schema: ctx.in_schema
                || SCHEMA_KEYS.contains(&key)
                || (key == "parameters" && value.as_object().is_some_and(looks_like_schema::<T>)),
        }
    }

    /// The context of an element of an array at `ctx`.
    fn element<T: Tree>(&self, ctx: Ctx, value: &T) -> Ctx {
        Ctx {
            place: if ctx.place == Place::List && value.as_object().is_some() {
                Place::Entry
            } else {
                Place::Other
            },
            ..ctx
        }
    }

    /// The text a string at `ctx` is written as, when the rule changes it (a URL's
    /// secrets).
    fn rewrite(&self, ctx: Ctx, text: &str) -> Option<String> {
        if self.redaction != Redaction::Gatehouse || ctx.in_schema {
            return None;
        }
        strip_url_secrets(text)
    }
}

/// How a stripped field is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Label {
    /// Agenta's way: `headers`, `connection.headers`, ...; reported only when the value
    /// was not null.
    Agenta(Option<&'static str>, bool),
    /// The field's dotted path.
    Path,
}

/// Redact the top-level object `params` in place; returns the sorted, deduplicated labels
/// of what was stripped (see [`redact_effective_parameters`]).
pub(crate) fn redact_object<T: Tree>(params: &mut T::Object, redaction: Redaction) -> Vec<String> {
    let rule = Rule::for_params::<T>(params, redaction);
    let mut stripped = Vec::new();
    redact_in_place::<T>(params, rule, Ctx::ROOT, &mut String::new(), &mut stripped);
    stripped.sort();
    stripped.dedup();
    stripped
}

fn redact_in_place<T: Tree>(
    object: &mut T::Object,
    rule: Rule,
    ctx: Ctx,
    path: &mut String,
    stripped: &mut Vec<String>,
) {
    T::retain(object, |key, value| match rule.strips(ctx, key, value) {
        None => true,
        Some(Label::Agenta(nested, reported)) => {
            if reported {
                stripped.push(match nested {
                    Some(nested) => format!("{nested}.{key}"),
                    None => key.to_string(),
                });
            }
            false
        }
        Some(Label::Path) => {
            stripped.push(if path.is_empty() {
                key.to_string()
            } else {
                format!("{path}.{key}")
            });
            false
        }
    });
    T::for_each_mut(object, |key, value| {
        let start = path.len();
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
        let child = rule.child(ctx, key, &*value);
        redact_value_in_place(value, rule, child, path, stripped);
        path.truncate(start);
    });
}

fn redact_value_in_place<T: Tree>(
    value: &mut T,
    rule: Rule,
    ctx: Ctx,
    path: &mut String,
    stripped: &mut Vec<String>,
) {
    if let Some(object) = value.as_object_mut() {
        redact_in_place::<T>(object, rule, ctx, path, stripped);
    } else if let Some(items) = value.as_array_mut() {
        for item in items.iter_mut() {
            let element = rule.element(ctx, &*item);
            redact_value_in_place(item, rule, element, path, stripped);
        }
    } else if let Some(rewritten) = value.as_text().and_then(|text| rule.rewrite(ctx, text)) {
        stripped.push(format!("{path}?query"));
        value.set_text(rewritten);
    }
}

/// C2, by rule (Gatehouse's default redaction, beyond Agenta's): a key that names a
/// credential, anywhere in the config. Compared on its letters and digits, lowercased
/// (`api_key`, `apiKey`, `X-Api-Key` are one name): `headers`, `authorization`,
/// `cookie`, `password`/`passwd`, or a name ending in `token`, `secret`, `password`,
/// `apikey`, `privatekey` (the tokenizer's special tokens, `eos_token` and the like, are
/// not credentials).
///
/// ```
/// use gatehouse_wire::effective::is_credential_shaped_key;
/// for key in ["api_key", "apiKey", "X-Api-Key", "NOTION_TOKEN", "client_secret", "Authorization"] {
///     assert!(is_credential_shaped_key(key), "{key}");
/// }
/// for key in ["max_tokens", "eos_token", "model", "tokenizer", "description"] {
///     assert!(!is_credential_shaped_key(key), "{key}");
/// }
/// ```
pub fn is_credential_shaped_key(key: &str) -> bool {
    // Only a name's last 13 letters and digits can decide (the longest name compared is
    // `authorization`): gather them backwards, lowercased, and stop.
    const LONGEST: usize = 13;
    // Every name compared ends in one of these five letters and digits: most keys stop
    // here, after a look at their last five bytes.
    const fn pack(tail: &[u8; 5]) -> u64 {
        (tail[0] as u64) << 32
            | (tail[1] as u64) << 24
            | (tail[2] as u64) << 16
            | (tail[3] as u64) << 8
            | tail[4] as u64
    }
    const TAILS: [u64; 9] = [
        pack(b"token"),
        pack(b"ecret"),
        pack(b"sword"),
        pack(b"asswd"),
        pack(b"pikey"),
        pack(b"tekey"),
        pack(b"aders"),
        pack(b"ation"),
        pack(b"ookie"),
    ];
    let bytes = key.as_bytes();
    // Cheapest first: a credential name's last two letters are one of eight pairs.
    if let [.., a, b] = bytes {
        if b.is_ascii_alphanumeric() && a.is_ascii_alphanumeric() {
            let pair = [a | 0x20, b | 0x20];
            if !matches!(
                &pair,
                b"en" | b"et" | b"rd" | b"wd" | b"ey" | b"rs" | b"on" | b"ie"
            ) {
                return false;
            }
        }
    }
    let tail = match bytes.len().checked_sub(5).map(|at| &bytes[at..]) {
        // The common case: the last five bytes are letters and digits (lowercased by
        // setting 0x20, which digits already have).
        Some(tail) if tail.iter().all(u8::is_ascii_alphanumeric) => tail
            .iter()
            .fold(0u64, |word, byte| (word << 8) | u64::from(byte | 0x20)),
        _ => {
            let mut word = 0u64;
            let mut seen = 0;
            for byte in bytes
                .iter()
                .rev()
                .filter(|b| b.is_ascii_alphanumeric())
                .take(5)
            {
                word |= u64::from(byte | 0x20) << (8 * seen);
                seen += 1;
            }
            if seen < 5 {
                return false;
            }
            word
        }
    };
    if !TAILS.contains(&tail) {
        return false;
    }
    let mut tail = [0u8; LONGEST];
    let mut len = 0;
    let mut longer = false;
    for byte in key.bytes().rev().filter(u8::is_ascii_alphanumeric) {
        if len == LONGEST {
            longer = true;
            break;
        }
        tail[LONGEST - 1 - len] = byte.to_ascii_lowercase();
        len += 1;
    }
    let name = &tail[LONGEST - len..];
    const EXACT: [&[u8]; 5] = [
        b"headers",
        b"authorization",
        b"cookie",
        b"password",
        b"passwd",
    ];
    const SUFFIXES: [&[u8]; 5] = [b"token", b"secret", b"password", b"apikey", b"privatekey"];
    const SPECIAL_TOKENS: [&[u8]; 8] = [
        b"eostoken",
        b"bostoken",
        b"padtoken",
        b"unktoken",
        b"septoken",
        b"clstoken",
        b"masktoken",
        b"stoptoken",
    ];
    (!longer && EXACT.contains(&name))
        || (SUFFIXES.iter().any(|suffix| name.ends_with(suffix))
            && (longer || !SPECIAL_TOKENS.contains(&name)))
}

/// Keys whose value is a JSON Schema (a tool's parameters): never touched, so a schema
/// property named `headers` or `token` stays a parameter name. (A `parameters` value that
/// reads as a schema is one too: [`looks_like_schema`].)
const SCHEMA_KEYS: [&str; 7] = [
    "inputSchema",
    "input_schema",
    "outputSchema",
    "output_schema",
    "jsonSchema",
    "json_schema",
    "schema",
];

/// True when `object` reads as a JSON Schema (`$schema`, or an object type with
/// `properties`): an OpenAI-style tool's `parameters`.
fn looks_like_schema<T: Tree>(object: &T::Object) -> bool {
    T::get(object, "$schema").is_some()
        || (T::get(object, "properties").is_some_and(|p| p.as_object().is_some())
            && T::get(object, "type").and_then(T::as_text) == Some("object"))
}

/// Query parameters of a URL that carry a secret: a credential-shaped name (see
/// [`is_credential_shaped_key`]), or one of the short names signed URLs use.
fn is_secret_query_name(name: &str) -> bool {
    is_credential_shaped_key(name)
        || [
            "key",
            "sig",
            "signature",
            "auth",
            "access_key",
            "x-amz-signature",
        ]
        .iter()
        .any(|short| name.eq_ignore_ascii_case(short))
}

/// `text` without its secret-looking query parameters (and without a password in its
/// user-info), when it is an http(s)/ws(s) URL holding any; `None` when nothing changes.
///
/// ```
/// use gatehouse_wire::effective::strip_url_secrets;
/// assert_eq!(
///     strip_url_secrets("https://mcp.example/sse?token=sk-1&region=eu").as_deref(),
///     Some("https://mcp.example/sse?region=eu")
/// );
/// assert_eq!(strip_url_secrets("https://mcp.example/sse?region=eu"), None);
/// assert_eq!(strip_url_secrets("not a url ?token=x"), None);
/// ```
pub fn strip_url_secrets(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    if !matches!(bytes.first(), Some(b'h' | b'H' | b'w' | b'W')) {
        return None;
    }
    let has_scheme = |scheme: &str| {
        bytes.len() > scheme.len() && bytes[..scheme.len()].eq_ignore_ascii_case(scheme.as_bytes())
    };
    if !(has_scheme("http://")
        || has_scheme("https://")
        || has_scheme("ws://")
        || has_scheme("wss://"))
        || !bytes.iter().any(|b| *b == b'?' || *b == b'@')
    {
        return None;
    }
    let scheme_end = text.find("://")? + 3;
    let (before_fragment, fragment) = match text.find('#') {
        Some(at) => (&text[..at], &text[at..]),
        None => (text, ""),
    };
    let (base, query) = match before_fragment.find('?') {
        Some(at) => (&before_fragment[..at], Some(&before_fragment[at + 1..])),
        None => (before_fragment, None),
    };
    let mut changed = false;
    // user:password@host -> user@host
    let authority_end = base[scheme_end..]
        .find('/')
        .map(|i| scheme_end + i)
        .unwrap_or(base.len());
    let authority = &base[scheme_end..authority_end];
    let base = match authority.rfind('@') {
        Some(at) if authority[..at].contains(':') => {
            changed = true;
            let user = &authority[..at];
            let user = &user[..user.find(':').unwrap_or(user.len())];
            format!(
                "{}{user}@{}{}",
                &base[..scheme_end],
                &authority[at + 1..],
                &base[authority_end..]
            )
        }
        _ => base.to_string(),
    };
    let query = query.map(|query| {
        let kept: Vec<&str> = query
            .split('&')
            .filter(|pair| {
                let name = pair.split('=').next().unwrap_or("");
                let secret = !name.is_empty() && is_secret_query_name(name);
                changed |= secret;
                !secret
            })
            .collect();
        kept.join("&")
    });
    if !changed {
        return None;
    }
    let mut out = base;
    if let Some(query) = query.filter(|q| !q.is_empty()) {
        out.push('?');
        out.push_str(&query);
    }
    out.push_str(fragment);
    Some(out)
}

/// Redact `params` (no size check): returns the redacted object and the sorted,
/// deduplicated labels of the stripped fields.
///
/// `params` is consumed and redacted in place: when nothing non-null is to be stripped it
/// is returned as is (moved, no copy); otherwise only the list entries (and their nested
/// `connection`/`call` objects) that hold a credential key change.
///
/// Agenta's quirks are kept: only object entries of `agent.mcps`/`agent.tools` are
/// touched; `headers`/`authorization` are popped from the entry and from its nested
/// `connection`/`call` objects (other keys keep their positions); a key whose value is
/// `null` is popped but not counted, and when nothing non-null was stripped the INPUT is
/// returned unchanged (so `"headers": null` survives then). `credentials` (vault key
/// names) always survives.
pub fn redact_effective_parameters(
    mut params: JsonObject,
    redaction: Redaction,
) -> (JsonObject, Vec<String>) {
    let stripped = redact_object::<Value>(&mut params, redaction);
    (params, stripped)
}

/// The exact byte length of Python's default `json.dumps(value)` (separators `", "` and
/// `": "`, `ensure_ascii=True`, insertion key order), computed without building the string.
///
/// Strings: `"`, `\`, `\n`, `\r`, `\t`, `\b`, `\f` take 2 bytes; any other character
/// outside `0x20..=0x7E` is `\uXXXX` (6 bytes; 12 for an astral character, written as a
/// surrogate pair). Numbers are measured as Python reads their literal: an integer literal
/// of any size as its digits (`-0` as `0`), any other as `repr` of the float (`1e+16`,
/// `1e-05`, `0.0001`, `100.0`). It is always `python_json_dumps(value).len()`.
///
/// ```
/// use gatehouse_wire::effective::python_json_dumps_len;
/// let v = serde_json::json!({"a": [1, 2.5, 1e16, null], "é": "x\n"});
/// // {"a": [1, 2.5, 1e+16, null], "\u00e9": "x\n"}
/// assert_eq!(python_json_dumps_len(&v), 45);
/// ```
pub fn python_json_dumps_len(value: &Value) -> usize {
    match value {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(number) => python_number_len(number),
        Value::String(s) => python_string_len(s),
        Value::Array(items) => {
            if items.is_empty() {
                2
            } else {
                2 + items.iter().map(python_json_dumps_len).sum::<usize>() + 2 * (items.len() - 1)
            }
        }
        Value::Object(map) => python_json_object_len(map),
    }
}

fn python_json_object_len(map: &JsonObject) -> usize {
    if map.is_empty() {
        return 2;
    }
    let items: usize = map
        .iter()
        .map(|(key, value)| python_string_len(key) + 2 + python_json_dumps_len(value))
        .sum();
    2 + items + 2 * (map.len() - 1)
}

/// Bytes that `json.dumps` (with `ensure_ascii=True`) writes for each byte of a UTF-8
/// string. A `&str` is valid UTF-8, so a character's whole cost can sit on its lead byte:
/// printable ASCII is 1 (`"` and `\\` are 2), `\n \r \t \b \f` are 2, the other control
/// characters and DEL are `\u00XX` (6); a 2- or 3-byte sequence is one BMP character,
/// `\uXXXX` (6); a 4-byte sequence is an astral character, a surrogate pair (12); a
/// continuation byte adds nothing. (0xC0, 0xC1 and 0xF5..=0xFF never occur in a `&str`.)
const PYTHON_ESCAPED_LEN: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut byte = 0;
    while byte < 256 {
        table[byte] = match byte as u8 {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0C => 2,
            0x20..=0x7E => 1,
            0x00..=0x1F | 0x7F => 6,
            0x80..=0xBF => 0,
            0xC0..=0xEF => 6,
            0xF0..=0xFF => 12,
        };
        byte += 1;
    }
    table
};

/// Length of Python's `json.dumps(s)` (quotes included). Almost every string is plain
/// printable ASCII, written as itself: a short string (under 16 bytes) is checked by
/// two overlapping word loads, a longer one by a branch-free fold the compiler
/// vectorizes, and only a string that is not plain falls back to one table lookup per
/// byte.
fn python_string_len(s: &str) -> usize {
    let bytes = s.as_bytes();
    let n = bytes.len();
    let plain = if n >= 16 {
        // Written without an early exit so the compiler checks 16 or 32 bytes per step.
        bytes
            .iter()
            .fold(0u8, |bad, &b| bad | u8::from(!is_plain(b)))
            == 0
    } else if n >= 8 {
        // Two overlapping eight-byte loads cover 8 to 15 bytes.
        not_plain_bits(load_u64(&bytes[..8])) | not_plain_bits(load_u64(&bytes[n - 8..])) == 0
    } else if n >= 4 {
        // Two overlapping four-byte loads cover 4 to 7 bytes.
        let low = u64::from(load_u32(&bytes[..4]));
        let high = u64::from(load_u32(&bytes[n - 4..]));
        not_plain_bits(low | high << 32) == 0
    } else {
        // 0 to 3 bytes: the first, middle and last, padded with a plain byte (`a`).
        let mut word = u64::from_le_bytes([b'a'; 8]);
        if n > 0 {
            word = (word << 24)
                | u64::from(bytes[0])
                | u64::from(bytes[n / 2]) << 8
                | u64::from(bytes[n - 1]) << 16;
        }
        not_plain_bits(word) == 0
    };
    if plain {
        n + 2
    } else {
        2 + escaped_len(bytes)
    }
}

/// Printable ASCII other than `"` and `\\`: written by `json.dumps` as itself.
fn is_plain(b: u8) -> bool {
    (0x20..0x7F).contains(&b) && b != b'"' && b != b'\\'
}

fn load_u64(bytes: &[u8]) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&bytes[..8]);
    u64::from_le_bytes(word)
}

fn load_u32(bytes: &[u8]) -> u32 {
    let mut word = [0; 4];
    word.copy_from_slice(&bytes[..4]);
    u32::from_le_bytes(word)
}

/// Zero when all eight bytes of `word` are printable ASCII other than `"` and `\`
/// (none at or above 0x80, none below 0x20, none 0x7F); otherwise some high bits are
/// set (a borrow may flag a plain neighbour too, which only costs the slow path).
fn not_plain_bits(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let zero_bytes = |w: u64| w.wrapping_sub(ONES) & !w;
    (word
        | word.wrapping_sub(0x20 * ONES)
        | zero_bytes(word ^ (0x7F * ONES))
        | zero_bytes(word ^ (u64::from(b'"') * ONES))
        | zero_bytes(word ^ (u64::from(b'\\') * ONES)))
        & HIGHS
}

/// The escaped length of `bytes`, byte by byte ([`PYTHON_ESCAPED_LEN`]).
fn escaped_len(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .map(|b| usize::from(PYTHON_ESCAPED_LEN[usize::from(*b)]))
        .sum()
}

/// Python's `json.dumps(value)` with its defaults (separators `", "` and `": "`,
/// `ensure_ascii=True`, insertion key order): the exact text Agenta measures. Numbers are
/// written as Python reads their literal (see [`crate::numbers::python_number_text`]: big
/// integers digit for digit, `-0` as `0`, floats as `repr`).
///
/// ```
/// use gatehouse_wire::effective::python_json_dumps;
/// let v: serde_json::Value = serde_json::from_str(r#"{"a": [1, 1E+16, -0, null], "é": "x\n"}"#).unwrap();
/// assert_eq!(python_json_dumps(&v), r#"{"a": [1, 1e+16, 0, null], "\u00e9": "x\n"}"#);
/// ```
pub fn python_json_dumps(value: &Value) -> String {
    let mut out = String::with_capacity(python_json_dumps_len(value));
    write_python(value, &mut out);
    out
}

fn write_python(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(number) => out.push_str(&crate::numbers::python_number_text(number)),
        Value::String(s) => write_python_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                write_python(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (index, (key, item)) in map.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                write_python_string(key, out);
                out.push_str(": ");
                write_python(item, out);
            }
            out.push('}');
        }
    }
}

/// `json.dumps(s)` for a string (`ensure_ascii=True`): quotes, the two-character escapes,
/// `\uXXXX` (lowercase hex) for every other character outside `0x20..=0x7E`, a surrogate
/// pair for an astral character.
pub(crate) fn write_python_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        push_python_char(u32::from(c), out);
    }
    out.push('"');
}

/// One character (or one lone surrogate code unit) as `json.dumps` escapes it.
pub(crate) fn push_python_char(code: u32, out: &mut String) {
    use std::fmt::Write;
    match code {
        0x22 => out.push_str("\\\""),
        0x5C => out.push_str("\\\\"),
        0x0A => out.push_str("\\n"),
        0x0D => out.push_str("\\r"),
        0x09 => out.push_str("\\t"),
        0x08 => out.push_str("\\b"),
        0x0C => out.push_str("\\f"),
        0x20..=0x7E => out.push(char::from(code as u8)),
        0x10000.. => {
            let v = code - 0x10000;
            let high = 0xD800 + (v >> 10);
            let low = 0xDC00 + (v & 0x3FF);
            // Writing into a String cannot fail.
            let _ = write!(out, "\\u{high:04x}\\u{low:04x}");
        }
        _ => {
            let _ = write!(out, "\\u{code:04x}");
        }
    }
}

fn python_number_len(number: &serde_json::Number) -> usize {
    crate::numbers::python_number_len(number)
}

#[cfg(test)]
mod tests {
    use super::*;
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
        assert_eq!(view.measured_bytes, python_json_object_len(&redacted));
        assert_eq!(view.stripped(), stripped);
    }

    #[test]
    fn a_url_loses_only_its_secrets() {
        for (url, expected) in [
            ("https://h/p?sig=1&x=2#frag", Some("https://h/p?x=2#frag")),
            ("https://user:pw@h/p", Some("https://user@h/p")),
            ("https://h/p?api_key=1", Some("https://h/p")),
            ("HTTPS://h/p?X-Amz-Signature=1&a=b", Some("HTTPS://h/p?a=b")),
            ("https://h/p?page=2", None),
            ("ftp://h/p?token=1", None),
            ("https://h/p", None),
        ] {
            assert_eq!(strip_url_secrets(url).as_deref(), expected, "{url}");
        }
    }

    #[test]
    fn string_escapes_match_python() {
        // json.dumps("a\"\\\n\u0001\u007f\u00e9\u20ac\U0001F600") == '"a\\"\\\\\\n\\u0001\\u007f\\u00e9\\u20ac\\ud83d\\ude00"'
        let s = "a\"\\\n\u{1}\u{7f}\u{e9}\u{20ac}\u{1F600}";
        assert_eq!(python_string_len(s), 2 + 1 + 2 + 2 + 2 + 6 + 6 + 6 + 6 + 12);
    }

    /// The character-by-character definition the byte table must agree with.
    fn python_string_len_by_char(s: &str) -> usize {
        2 + s
            .chars()
            .map(|c| match c {
                '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
                ' '..='~' => 1,
                c if (c as u32) > 0xFFFF => 12,
                _ => 6,
            })
            .sum::<usize>()
    }

    #[test]
    fn byte_table_agrees_with_the_char_definition() {
        // Every ASCII byte, and characters at the UTF-8 length boundaries, alone and
        // between plain ASCII at several offsets.
        let mut samples: Vec<char> = (0u8..=0x7F).map(char::from).collect();
        samples.extend([
            '\u{80}',
            '\u{7FF}',
            '\u{800}',
            '\u{E9}',
            '\u{20AC}',
            '\u{D7FF}',
            '\u{E000}',
            '\u{FFFF}',
            '\u{10000}',
            '\u{1F600}',
            '\u{10FFFF}',
        ]);
        for c in samples {
            assert_eq!(
                python_string_len(&c.to_string()),
                python_string_len_by_char(&c.to_string()),
                "{c:?} alone"
            );
            // Every total length the short-string paths cover (0-3, 4-7, 8-15 bytes)
            // and the long path, with the character at every position.
            for plain_around in 0..18 {
                for offset in 0..=plain_around {
                    let s = format!(
                        "{}{c}{}",
                        "a".repeat(offset),
                        "b".repeat(plain_around - offset)
                    );
                    assert_eq!(
                        python_string_len(&s),
                        python_string_len_by_char(&s),
                        "{s:?}"
                    );
                }
            }
        }
        let long = "The quick brown fox jumps over the lazy dog. ".repeat(20);
        assert_eq!(python_string_len(&long), long.len() + 2);
        assert_eq!(python_string_len(""), 2);
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
    fn containers_use_python_separators() {
        assert_eq!(python_json_dumps_len(&json!({})), 2);
        assert_eq!(python_json_dumps_len(&json!([])), 2);
        // '{"a": 1, "b": [true, false, null]}'
        assert_eq!(
            python_json_dumps_len(&json!({"a": 1, "b": [true, false, null]})),
            34
        );
        assert_eq!(python_json_dumps_len(&json!(-12)), 3);
        assert_eq!(python_json_dumps_len(&json!(u64::MAX)), 20);
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
