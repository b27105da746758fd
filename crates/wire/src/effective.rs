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
    let (parameters, stripped) = redact_effective_parameters(object, policy.redaction);
    let measured_bytes = python_json_object_len(&parameters);
    if measured_bytes > policy.max_bytes {
        return Err(NotStamped::OverCap {
            measured_bytes,
            max_bytes: policy.max_bytes,
        });
    }
    Ok(Stamped {
        parameters,
        measured_bytes,
        stripped,
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
    fn get_mut<'a>(object: &'a mut Self::Object, key: &str) -> Option<&'a mut Self>;
    /// True when some entry passes `test`.
    fn any_entry(object: &Self::Object, test: impl FnMut(&str, &Self) -> bool) -> bool;
    /// Keep the entries `keep` says yes to, in order.
    fn retain(object: &mut Self::Object, keep: impl FnMut(&str, &Self) -> bool);
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
        object.get(key)
    }
    fn get_mut<'a>(object: &'a mut JsonObject, key: &str) -> Option<&'a mut Value> {
        object.get_mut(key)
    }
    fn any_entry(object: &JsonObject, mut test: impl FnMut(&str, &Value) -> bool) -> bool {
        object.iter().any(|(key, value)| test(key, value))
    }
    fn retain(object: &mut JsonObject, mut keep: impl FnMut(&str, &Value) -> bool) {
        object.retain(|key, value| keep(key, value));
    }
}

/// Pop every credential key from `object` in place, in one pass (the order of the rest
/// is preserved). A key whose value is `null` is popped but not reported (Agenta's rule).
fn strip_credential_keys<T: Tree>(
    object: &mut T::Object,
    prefix: Option<&str>,
    redaction: Redaction,
    stripped: &mut Vec<String>,
) {
    T::retain(object, |key, value| {
        if !is_credential_key(key, redaction) {
            return true;
        }
        if !value.is_null() {
            stripped.push(match prefix {
                Some(prefix) => format!("{prefix}.{key}"),
                None => key.to_string(),
            });
        }
        false
    });
}

/// Strip an entry in place (only an object entry is touched).
fn redact_entry<T: Tree>(entry: &mut T, redaction: Redaction, stripped: &mut Vec<String>) {
    let Some(object) = entry.as_object_mut() else {
        return;
    };
    strip_credential_keys::<T>(object, None, redaction, stripped);
    for nested_key in NESTED_CONNECTION_KEYS {
        if let Some(nested) = T::get_mut(object, nested_key).and_then(T::as_object_mut) {
            strip_credential_keys::<T>(nested, Some(nested_key), redaction, stripped);
        }
    }
}

/// Redact the connection-bearing lists of `container` in place.
fn redact_lists<T: Tree>(
    container: &mut T::Object,
    redaction: Redaction,
    stripped: &mut Vec<String>,
) {
    for list_key in CONNECTION_BEARING_LISTS {
        if let Some(entries) = T::get_mut(container, list_key).and_then(T::as_array_mut) {
            for entry in entries.iter_mut() {
                redact_entry(entry, redaction, stripped);
            }
        }
    }
}

/// True when `object` holds a credential key with a non-null value.
fn holds_credential<T: Tree>(object: &T::Object, redaction: Redaction) -> bool {
    T::any_entry(object, |key, value| {
        !value.is_null() && is_credential_key(key, redaction)
    })
}

/// True when redacting `container`'s lists would strip something non-null. A read-only
/// pass: only when it says yes is anything mutated, so an input with nothing (or only
/// `null`s) to strip comes back exactly as it went in.
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

/// Redact the top-level object `params` in place; returns the sorted, deduplicated labels
/// of what was stripped (see [`redact_effective_parameters`]).
pub(crate) fn redact_object<T: Tree>(params: &mut T::Object, redaction: Redaction) -> Vec<String> {
    let agent_needs = T::get(params, "agent")
        .and_then(T::as_object)
        .is_some_and(|agent| lists_need_redaction::<T>(agent, redaction));
    let bare_needs =
        redaction == Redaction::Gatehouse && lists_need_redaction::<T>(params, redaction);
    if !agent_needs && !bare_needs {
        // Nothing non-null to strip: the input unchanged (`"headers": null` included).
        return Vec::new();
    }
    let mut stripped = Vec::new();
    if let Some(agent) = T::get_mut(params, "agent").and_then(T::as_object_mut) {
        redact_lists::<T>(agent, redaction, &mut stripped);
    }
    if redaction == Redaction::Gatehouse {
        redact_lists::<T>(params, redaction, &mut stripped);
    }
    stripped.sort();
    stripped.dedup();
    stripped
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

/// Length of Python's `json.dumps(s)` (quotes included), one table lookup per byte.
fn python_string_len(s: &str) -> usize {
    2 + s
        .bytes()
        .map(|b| usize::from(PYTHON_ESCAPED_LEN[usize::from(b)]))
        .sum::<usize>()
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
            for offset in 0..17 {
                let s = format!("{}{c}{}", "a".repeat(offset), "b".repeat(17 - offset));
                assert_eq!(
                    python_string_len(&s),
                    python_string_len_by_char(&s),
                    "{s:?}"
                );
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
