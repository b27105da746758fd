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

/// Pop every credential key from `object` in place, in one pass (the order of the rest
/// is preserved). A key whose value is `null` is popped but not reported (Agenta's rule).
fn strip_credential_keys(
    object: &mut JsonObject,
    prefix: Option<&str>,
    redaction: Redaction,
    stripped: &mut Vec<String>,
) {
    object.retain(|key, value| {
        if !is_credential_key(key, redaction) {
            return true;
        }
        if !value.is_null() {
            stripped.push(match prefix {
                Some(prefix) => format!("{prefix}.{key}"),
                None => key.clone(),
            });
        }
        false
    });
}

/// Strip an entry in place (only an object entry is touched).
fn redact_entry(entry: &mut Value, redaction: Redaction, stripped: &mut Vec<String>) {
    let Value::Object(object) = entry else {
        return;
    };
    strip_credential_keys(object, None, redaction, stripped);
    for nested_key in NESTED_CONNECTION_KEYS {
        if let Some(Value::Object(nested)) = object.get_mut(nested_key) {
            strip_credential_keys(nested, Some(nested_key), redaction, stripped);
        }
    }
}

/// Redact the connection-bearing lists of `container` in place.
fn redact_lists(container: &mut JsonObject, redaction: Redaction, stripped: &mut Vec<String>) {
    for list_key in CONNECTION_BEARING_LISTS {
        if let Some(Value::Array(entries)) = container.get_mut(list_key) {
            for entry in entries.iter_mut() {
                redact_entry(entry, redaction, stripped);
            }
        }
    }
}

/// True when `object` holds a credential key with a non-null value.
fn holds_credential(object: &JsonObject, redaction: Redaction) -> bool {
    object
        .iter()
        .any(|(key, value)| !value.is_null() && is_credential_key(key, redaction))
}

/// True when redacting `container`'s lists would strip something non-null. A read-only
/// pass: only when it says yes is anything mutated, so an input with nothing (or only
/// `null`s) to strip comes back exactly as it went in.
fn lists_need_redaction(container: &JsonObject, redaction: Redaction) -> bool {
    CONNECTION_BEARING_LISTS.iter().any(|list_key| {
        let Some(Value::Array(entries)) = container.get(*list_key) else {
            return false;
        };
        entries.iter().any(|entry| {
            let Value::Object(object) = entry else {
                return false;
            };
            holds_credential(object, redaction)
                || NESTED_CONNECTION_KEYS.iter().any(|nested_key| {
                    matches!(object.get(*nested_key), Some(Value::Object(nested)) if holds_credential(nested, redaction))
                })
        })
    })
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
    let agent_needs = matches!(
        params.get("agent"),
        Some(Value::Object(agent)) if lists_need_redaction(agent, redaction)
    );
    let bare_needs = redaction == Redaction::Gatehouse && lists_need_redaction(&params, redaction);
    if !agent_needs && !bare_needs {
        // Nothing non-null to strip: the input unchanged (`"headers": null` included).
        return (params, Vec::new());
    }
    let mut stripped = Vec::new();
    if let Some(Value::Object(agent)) = params.get_mut("agent") {
        redact_lists(agent, redaction, &mut stripped);
    }
    if redaction == Redaction::Gatehouse {
        redact_lists(&mut params, redaction, &mut stripped);
    }
    stripped.sort();
    stripped.dedup();
    (params, stripped)
}

/// The exact byte length of Python's default `json.dumps(value)` (separators `", "` and
/// `": "`, `ensure_ascii=True`, insertion key order), computed without building the string.
///
/// Strings: `"`, `\`, `\n`, `\r`, `\t`, `\b`, `\f` take 2 bytes; any other character
/// outside `0x20..=0x7E` is `\uXXXX` (6 bytes; 12 for an astral character, written as a
/// surrogate pair). Floats are measured as Python's `repr` writes them (`1e+16`, `1e-05`,
/// `0.0001`, `100.0`); integers as decimal digits. (An integer beyond the 64-bit range
/// is a float to serde_json, so its length follows the float rendering.)
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

fn decimal_digits(mut n: u64) -> usize {
    let mut digits = 1;
    while n >= 10 {
        n /= 10;
        digits += 1;
    }
    digits
}

fn python_number_len(number: &serde_json::Number) -> usize {
    if let Some(u) = number.as_u64() {
        decimal_digits(u)
    } else if let Some(i) = number.as_i64() {
        1 + decimal_digits(i.unsigned_abs())
    } else {
        number.as_f64().map(python_float_repr_len).unwrap_or(0)
    }
}

/// Reads Rust's shortest round-trip `{:e}` rendering (`d[.ddd]e[-]x`) without storing it:
/// counts the significant digits and parses the exponent.
#[derive(Default)]
struct ShortestDigits {
    digits: usize,
    in_exponent: bool,
    exponent_negative: bool,
    exponent: i32,
}

impl std::fmt::Write for ShortestDigits {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        for byte in s.bytes() {
            match byte {
                b'e' | b'E' => self.in_exponent = true,
                b'-' if self.in_exponent => self.exponent_negative = true,
                b'0'..=b'9' if self.in_exponent => {
                    self.exponent = self.exponent * 10 + i32::from(byte - b'0');
                }
                b'0'..=b'9' => self.digits += 1,
                _ => {}
            }
        }
        Ok(())
    }
}

/// Length of Python's `repr(f)` (the shortest round-trip digits; exponent form when the
/// decimal exponent is below -4 or at least 16, with a sign and two or more digits;
/// otherwise fixed form with at least one digit after the point).
fn python_float_repr_len(f: f64) -> usize {
    use std::fmt::Write;
    let sign = usize::from(f.is_sign_negative());
    let mut reader = ShortestDigits::default();
    // Writing into the reader cannot fail.
    let _ = write!(reader, "{:e}", f.abs());
    let n = reader.digits.max(1);
    let exponent = if reader.exponent_negative {
        -reader.exponent
    } else {
        reader.exponent
    };
    // Position of the decimal point relative to the digit string (Python's `decpt`).
    let decpt = exponent + 1;
    let body = if decpt <= -4 || decpt > 16 {
        let mantissa = if n > 1 { n + 1 } else { n };
        let exponent_digits = decimal_digits(u64::from(exponent.unsigned_abs())).max(2);
        mantissa + 2 + exponent_digits
    } else if decpt <= 0 {
        2 + decpt.unsigned_abs() as usize + n
    } else if (decpt as usize) < n {
        n + 1
    } else {
        decpt as usize + 2
    };
    sign + body
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Lengths of Python 3 `repr(float)`, computed with CPython.
    #[test]
    fn float_lengths_match_python_repr() {
        let cases: &[(f64, &str)] = &[
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1.5, "1.5"),
            (100.0, "100.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (0.001, "0.001"),
            (-2.5e-7, "-2.5e-07"),
            (1.2345e100, "1.2345e+100"),
            (123456789.125, "123456789.125"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (1234567890123456.7, "1234567890123456.8"),
            (12345678901234567.0, "1.2345678901234568e+16"),
        ];
        for (value, python) in cases {
            assert_eq!(
                python_float_repr_len(*value),
                python.len(),
                "repr({value:?}) = {python}"
            );
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
