//! The values of Python's `json` object model: what `json.loads` returns, each scalar kept as
//! the text `json.dumps` writes for it. It is JavaScript's `JSON.parse` model too: both keep a
//! lone surrogate, combine a surrogate pair, and keep the last of duplicate keys at the
//! first one's position, so one model serves both readers (`super::parse::Dialect`).
//!
//! The escaped text a scalar is kept in is defined here, both ways ([`push_python_char`],
//! [`code_points`]): the reader and the writer use it, and this module uses neither.

use indexmap::IndexMap;

use crate::numbers::python_literal_text;

/// A dict of Python's `json` model: keys are their `json.dumps` text without the quotes.
pub type PyDict = IndexMap<String, PyValue>;

/// One value of Python's `json` object model, scalars kept as `json.dumps` writes them.
#[derive(Debug, Clone, PartialEq)]
pub enum PyValue {
    /// `None`.
    Null,
    /// `True` / `False`.
    Bool(bool),
    /// An `int` or a `float`, as `json.dumps` writes it (`12`, `1e+16`, `NaN`, `-Infinity`).
    Number(String),
    /// A `str`, as `json.dumps` writes it without the quotes (`a\"b`, `\u00e9`, `\ud800`).
    Str(String),
    /// A `list`.
    List(Vec<PyValue>),
    /// A `dict`.
    Dict(PyDict),
}

impl PyValue {
    /// The value at `key` of a dict (`key` in its escaped form, which for printable ASCII
    /// without `"` or `\` is the key itself); `None` for a missing key or a non-dict.
    pub fn get(&self, key: &str) -> Option<&PyValue> {
        match self {
            Self::Dict(map) => map.get(key),
            _ => None,
        }
    }

    /// A string's escaped text (see [`PyValue::Str`]).
    pub fn as_escaped_str(&self) -> Option<&str> {
        match self {
            Self::Str(text) => Some(text),
            _ => None,
        }
    }

    /// The same value read from a `serde_json::Value` (which never holds a lone surrogate
    /// or a non-finite number, so nothing is lost).
    pub fn from_json(value: &serde_json::Value) -> PyValue {
        use serde_json::Value;
        match value {
            Value::Null => Self::Null,
            Value::Bool(b) => Self::Bool(*b),
            Value::Number(n) => Self::Number(python_literal_text(n.as_str()).into_owned()),
            Value::String(s) => Self::Str(escape(s)),
            Value::Array(items) => Self::List(items.iter().map(Self::from_json).collect()),
            Value::Object(map) => Self::Dict(
                map.iter()
                    .map(|(key, item)| (escape(key), Self::from_json(item)))
                    .collect(),
            ),
        }
    }

    /// This value as a `serde_json::Value`, for the typed wire structs: a lone surrogate
    /// becomes U+FFFD (a Rust string cannot hold it), `Infinity` and `-Infinity` become the
    /// literals `1e999` and `-1e999` (which both Python and JavaScript read as the same
    /// infinities). `NaN` has no JSON literal, and nesting deeper than `max_depth` is
    /// refused (the typed readers recurse per level; this bounds them).
    pub fn to_json_lossy(&self, max_depth: usize) -> Result<serde_json::Value, NotRepresentable> {
        let mut path = Vec::new();
        to_json(self, 0, max_depth, &mut path)
    }

    /// The path (keys and list indexes) of the first string or key holding a lone
    /// surrogate (which [`PyValue::to_json_lossy`] replaces), if any.
    pub fn lone_surrogate_path(&self) -> Option<Vec<String>> {
        let mut path = Vec::new();
        lone_surrogate_at(self, &mut path).then_some(path)
    }
}

/// Why a [`PyValue`] has no `serde_json::Value` form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotRepresentable {
    /// A `NaN` (Python's reading only).
    #[error("NaN at {path} has no JSON form")]
    NaN {
        /// Where (a dotted path).
        path: String,
    },
    /// Deeper than the typed readers take.
    #[error("nesting deeper than {max_depth} levels at {path}")]
    TooDeep {
        /// Where (a dotted path).
        path: String,
        /// The bound.
        max_depth: usize,
    },
}

fn dotted(path: &[String]) -> String {
    if path.is_empty() {
        ".".to_string()
    } else {
        path.join(".")
    }
}

/// `value` (inside `depth` containers) as a `serde_json::Value`.
fn to_json(
    value: &PyValue,
    depth: usize,
    max_depth: usize,
    path: &mut Vec<String>,
) -> Result<serde_json::Value, NotRepresentable> {
    use serde_json::Value;
    let descend = |path: &[String]| {
        if depth >= max_depth {
            Err(NotRepresentable::TooDeep {
                path: dotted(path),
                max_depth,
            })
        } else {
            Ok(depth + 1)
        }
    };
    Ok(match value {
        PyValue::Null => Value::Null,
        PyValue::Bool(b) => Value::Bool(*b),
        PyValue::Number(text) => {
            let literal = match text.as_str() {
                "NaN" => return Err(NotRepresentable::NaN { path: dotted(path) }),
                "Infinity" => "1e999",
                "-Infinity" => "-1e999",
                other => other,
            };
            // Every other text is Python's spelling of a finite number, a JSON literal.
            literal
                .parse::<serde_json::Number>()
                .map(Value::Number)
                .unwrap_or(Value::Null)
        }
        PyValue::Str(text) => Value::String(unescape_lossy(text)),
        PyValue::List(items) => {
            let inner = descend(path)?;
            let mut out = Vec::with_capacity(items.len());
            for (index, item) in items.iter().enumerate() {
                path.push(index.to_string());
                out.push(to_json(item, inner, max_depth, path)?);
                path.pop();
            }
            Value::Array(out)
        }
        PyValue::Dict(map) => {
            let inner = descend(path)?;
            let mut out = crate::JsonObject::new();
            for (key, item) in map {
                let key = unescape_lossy(key);
                path.push(key.clone());
                let item = to_json(item, inner, max_depth, path)?;
                path.pop();
                out.insert(key, item);
            }
            Value::Object(out)
        }
    })
}

/// `s` in the escaped form of [`PyValue::Str`].
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        push_python_char(u32::from(c), &mut out);
    }
    out
}

/// One character (or one lone surrogate code unit) as `json.dumps` escapes it (also how
/// `loads` keeps a string, as its escaped text).
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

/// The code points of an escaped text (see [`PyValue::Str`]): a surrogate pair's two
/// escapes are one astral character; a lone surrogate is its own code (0xD800..=0xDFFF).
pub(crate) fn code_points(text: &str) -> impl Iterator<Item = u32> + '_ {
    let bytes = text.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        let &b = bytes.get(at)?;
        if b != b'\\' {
            at += 1;
            return Some(u32::from(b));
        }
        let code = match bytes.get(at + 1) {
            Some(b'"') => 0x22,
            Some(b'\\') => 0x5C,
            Some(b'n') => 0x0A,
            Some(b'r') => 0x0D,
            Some(b't') => 0x09,
            Some(b'b') => 0x08,
            Some(b'f') => 0x0C,
            Some(b'u') => {
                let unit = hex4(bytes, at + 2);
                at += 6;
                if (0xD800..0xDC00).contains(&unit)
                    && bytes.get(at) == Some(&b'\\')
                    && bytes.get(at + 1) == Some(&b'u')
                {
                    let low = hex4(bytes, at + 2);
                    if (0xDC00..0xE000).contains(&low) {
                        at += 6;
                        return Some(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00));
                    }
                }
                return Some(unit);
            }
            // The escaped form has no other escape.
            _ => u32::from(b'\\'),
        };
        at += 2;
        Some(code)
    })
}

fn hex4(bytes: &[u8], at: usize) -> u32 {
    bytes
        .get(at..at + 4)
        .and_then(|digits| std::str::from_utf8(digits).ok())
        .and_then(|digits| u32::from_str_radix(digits, 16).ok())
        .unwrap_or(0xFFFD)
}

/// True when `value` holds a lone surrogate; `path` is then where.
fn lone_surrogate_at(value: &PyValue, path: &mut Vec<String>) -> bool {
    match value {
        PyValue::Str(text) => text_has_lone_surrogate(text),
        PyValue::List(items) => items.iter().enumerate().any(|(index, item)| {
            path.push(index.to_string());
            let found = lone_surrogate_at(item, path);
            if !found {
                path.pop();
            }
            found
        }),
        PyValue::Dict(map) => map.iter().any(|(key, item)| {
            path.push(unescape_lossy(key));
            let found = text_has_lone_surrogate(key) || lone_surrogate_at(item, path);
            if !found {
                path.pop();
            }
            found
        }),
        _ => false,
    }
}

fn text_has_lone_surrogate(text: &str) -> bool {
    text.contains("\\ud") && code_points(text).any(|c| (0xD800..0xE000).contains(&c))
}

/// An escaped text as a Rust string, a lone surrogate as U+FFFD.
pub(crate) fn unescape_lossy(text: &str) -> String {
    if !text.contains('\\') {
        return text.to_string();
    }
    code_points(text)
        .map(|code| char::from_u32(code).unwrap_or('\u{FFFD}'))
        .collect()
}
