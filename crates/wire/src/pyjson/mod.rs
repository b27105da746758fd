//! Python's `json` module, reproduced for the places where Gatehouse must match Agenta's
//! Python byte for byte: the size of a stamp (CONTRACT.md A2: [`python_json_dumps_len`])
//! and the Agenta-compatible stamp ([`crate::effective::stamp_python_text`],
//! `gatehouse wire stamp`).
//!
//! Two models of a value, one writer:
//!
//! - a `serde_json::Value`, what the library stamps: [`python_json_dumps`] writes it as
//!   `json.dumps` (default arguments) does, and [`python_json_dumps_len`] measures that text
//!   without writing it;
//! - a [`PyValue`], what `json.loads` makes of a text ([`loads`]), written back by
//!   [`dumps`].
//!
//! `json.loads` accepts more than JSON, and Agenta's stamp receives whatever it returns:
//! `NaN`, `Infinity` and `-Infinity`; integers of any size (up to CPython's 4300-digit
//! conversion limit); a lone surrogate escape such as `"\ud800"`; and duplicate keys (the
//! last value wins, at the first key's position, as in a `dict`). A Rust `String` cannot hold
//! a lone surrogate and serde_json refuses the rest, so a [`PyValue`] keeps every scalar as
//! the exact text `json.dumps` writes for it: strings and keys escaped (`ensure_ascii`,
//! without the quotes), numbers as Python writes the parsed `int` or `float`. Two keys are the
//! same Python string exactly when their escaped texts are equal, so a plain ordered map
//! gives `dict` semantics.
//!
//! ```
//! use gatehouse_wire::pyjson::{dumps, loads};
//! let value = loads(r#"{"a": 1E+16, "b": -0, "a": NaN, "s": "\ud800é"}"#).unwrap();
//! assert_eq!(dumps(&value), r#"{"a": NaN, "b": 0, "s": "\ud800\u00e9"}"#);
//! ```
//!
//! The same model is what JavaScript's `JSON.parse` makes of a text (a lone surrogate kept,
//! the last of duplicate keys at the first one's position), so [`parse_js`] reads a `/run`
//! body as Agenta's runner does, with the standard JSON numbers only ([`Dialect`]); the
//! runner's `configFingerprint` is computed on that value
//! ([`crate::fingerprint::config_fingerprint_of_text`]). The typed wire structs read the
//! same value through [`PyValue::to_json_lossy`] (a lone surrogate becomes U+FFFD there).
//!
//! Inside, importing one way (`value` <- `parse`, `value` <- `write`): `value` (the
//! [`PyValue`] model and its escaped text: a character escaped as `json.dumps` escapes it,
//! and read back), `parse` (`json.loads` and `JSON.parse`, an iterative reader that keeps
//! what it reads in that escaped text), `write` (`json.dumps` of either model, and the
//! length measure); numbers are spelled by [`crate::numbers`].

mod parse;
mod value;
mod write;

pub use parse::{
    loads, parse_js, read, Dialect, PyJsonError, JS_MAX_DEPTH, MAX_DEPTH, MAX_INT_DIGITS,
};
pub(crate) use value::{code_points, push_python_char};
pub use value::{NotRepresentable, PyDict, PyValue};
pub use write::{dumps, python_json_dumps, python_json_dumps_len};
pub(crate) use write::{python_json_object_len, python_string_len};
