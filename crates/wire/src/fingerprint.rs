//! `configFingerprint` (CONTRACT.md A3): the hash that decides warm resume vs cold replay,
//! exactly as Agenta's runner computes it (`session-identity.ts`, `configFingerprint` and
//! `canonicalJson`, with `resolveCodexMode` from `codex-mode.ts`).
//!
//! The fingerprint is the lowercase hex SHA-256 of [`canonical_json`] of a shape built from
//! the request as JavaScript reads it ([`fingerprint_shape`]). The shape is built from the
//! request's JSON, field by field, with JavaScript's rules: `x ?? null` (absent and `null`
//! alike become `null`, while `[]` stays `[]`), truthiness for the optional objects, and
//! numbers as doubles (so `1` and `1.0` hash the same). Its keys:
//!
//! | key | from |
//! |---|---|
//! | `harness`, `sandbox`, `model` | the same keys, `?? null` |
//! | `harnessMode` | on codex: `harnessMode` when it is `agent`, `read-only` or `agent-full-access`, else `agent-full-access` (the codex default); on other harnesses `null` |
//! | `connection`, `modelCapabilities`, `agentsMd`, `systemPrompt`, `appendSystemPrompt`, `skills`, `customTools`, `permissions`, `sandboxPermission`, `harnessFiles` | the same keys, verbatim, `?? null` |
//! | `modelConnection` | `{provider, deployment, endpoint ?? null, credentialMode, environment ?? null, credentials: [{binding, usage}]}` (credential values and every other key left out), or `null` |
//! | `mcpServers` | each server verbatim, its `connection.credentials` cut to `[{binding, usage}]`, or `null` |
//! | `toolCallbackEndpoint` | `toolCallback.endpoint ?? null` (never its authorization) |
//! | `workflowRevision` | PR head only: `{id ?? null, version ?? null}` of `runContext.workflow.revision`, or `null` |
//! | `isDraft` | PR head only: `runContext.workflow.is_draft ?? null` |
//!
//! Not hashed: `messages`, `turnId`, `context`, `telemetry`, `sessionId`, `projectId`,
//! `tools`, the rest of `runContext`, unknown top-level keys, and `effectiveParameters`.
//!
//! Two variants ([`FingerprintVariant`]): the PR #5689 head (3561f72e86), the default, and
//! Agenta main (753af3838e), which dropped `workflowRevision` and `isDraft` from the shape.
//!
//! ```
//! use gatehouse_wire::fingerprint::config_fingerprint;
//! use gatehouse_wire::run::{Harness, RunRequest, Sandbox};
//! let a = RunRequest::new(Harness::PiCore, Sandbox::Local, "m1", vec![]);
//! let b = RunRequest::new(Harness::PiCore, Sandbox::Local, "m2", vec![]);
//! assert_eq!(config_fingerprint(&a).len(), 64);
//! assert_ne!(config_fingerprint(&a), config_fingerprint(&b));
//! ```

use std::cmp::Ordering;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::pyjson::{code_points, push_python_char, PyDict, PyValue};
use crate::run::RunRequest;

/// Which version of Agenta's `configFingerprint` to compute.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FingerprintVariant {
    /// Agenta PR #5689 at head 3561f72e86: hashes the workflow revision and the draft flag.
    #[default]
    PrHead,
    /// Agenta main at 753af3838e: the revision id, its version and the draft flag are turn
    /// metadata there, not part of the hash.
    Main,
}

impl FingerprintVariant {
    /// The name the command line uses: `pr-head` or `main`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PrHead => "pr-head",
            Self::Main => "main",
        }
    }
}

/// Why Agenta's runner cannot hash a request: its `configFingerprint` throws a `TypeError`
/// reading it (`null.connection`, `.map` of something not a list), so the runner fails the
/// turn and matches no warm session. The reason names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Agenta's runner cannot hash this request: its configFingerprint throws a TypeError ({0})")]
pub struct NotHashable(&'static str);

impl NotHashable {
    /// Which field makes the runner throw.
    pub fn reason(&self) -> &'static str {
        self.0
    }
}

/// Why [`config_fingerprint_of_text`] gives no fingerprint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FingerprintTextError {
    /// `JSON.parse` refuses the text.
    #[error("not JSON as the runner's JSON.parse reads it: {0}")]
    NotJson(#[from] crate::pyjson::PyJsonError),
    /// The runner reads it but cannot hash it.
    #[error(transparent)]
    NotHashable(#[from] NotHashable),
}

/// The PR-head fingerprint of `request`: lowercase hex SHA-256 of
/// `canonical_json(&fingerprint_material(request))`.
pub fn config_fingerprint(request: &RunRequest) -> String {
    config_fingerprint_variant(request, FingerprintVariant::PrHead)
}

/// The fingerprint of `request` under `variant`.
pub fn config_fingerprint_variant(request: &RunRequest, variant: FingerprintVariant) -> String {
    // A typed request's `mcpServers` and credential lists are lists of objects, on which
    // `configFingerprint` never throws.
    config_fingerprint_of(&request_json(request), variant).unwrap_or_default()
}

/// The top-level keys [`fingerprint_shape`] reads.
const SHAPE_KEYS: [&str; 18] = [
    "harness",
    "sandbox",
    "model",
    "harnessMode",
    "connection",
    "modelConnection",
    "modelCapabilities",
    "agentsMd",
    "systemPrompt",
    "appendSystemPrompt",
    "skills",
    "customTools",
    "mcpServers",
    "toolCallback",
    "permissions",
    "sandboxPermission",
    "harnessFiles",
    "runContext",
];

/// The fingerprint of a `/run` request given as JSON (what the runner receives), or why the
/// runner cannot hash it.
pub fn config_fingerprint_of(
    request: &Value,
    variant: FingerprintVariant,
) -> Result<String, NotHashable> {
    // Only the keys the shape reads are converted (never the transcript in `messages`).
    let request = match request {
        Value::Object(map) => PyValue::Dict(
            SHAPE_KEYS
                .iter()
                .filter_map(|key| {
                    map.get(*key)
                        .map(|value| (key.to_string(), PyValue::from_json(value)))
                })
                .collect(),
        ),
        other => PyValue::from_json(other),
    };
    config_fingerprint_of_value(&request, variant)
}

/// The fingerprint of a `/run` request as the runner's `JSON.parse` reads it
/// ([`crate::pyjson::parse_js`]: lone surrogates kept, the last of duplicate keys, any
/// value where the runner reads any, valid `/run` request or not), or why the runner cannot
/// hash it.
pub fn config_fingerprint_of_value(
    request: &PyValue,
    variant: FingerprintVariant,
) -> Result<String, NotHashable> {
    let canonical = canonical_json_of(&fingerprint_shape(request, variant)?);
    Ok(hex::encode(Sha256::digest(canonical.as_bytes())))
}

/// The fingerprint of a `/run` request's text, read as the runner reads it
/// ([`crate::pyjson::parse_js`]); the reader's error when `JSON.parse` would refuse it.
///
/// ```
/// use gatehouse_wire::fingerprint::{config_fingerprint_of_text, FingerprintVariant};
/// // A duplicate key (the last wins) and a lone surrogate, as JSON.parse reads them.
/// let a = config_fingerprint_of_text(r#"{"model": "x", "model": "m", "systemPrompt": "\ud800"}"#, FingerprintVariant::PrHead).unwrap();
/// let b = config_fingerprint_of_text(r#"{"model": "m", "systemPrompt": "\ud800"}"#, FingerprintVariant::PrHead).unwrap();
/// assert_eq!(a, b);
/// ```
pub fn config_fingerprint_of_text(
    text: &str,
    variant: FingerprintVariant,
) -> Result<String, FingerprintTextError> {
    Ok(config_fingerprint_of_value(&read_run_body(text)?, variant)?)
}

/// A `/run` body's text as the runner reads it, `raw.trim() ? JSON.parse(raw) : {}`: a
/// blank body is `{}`, anything else [`crate::pyjson::parse_js`].
pub fn read_run_body(text: &str) -> Result<PyValue, crate::pyjson::PyJsonError> {
    if text.trim_matches(is_js_blank).is_empty() {
        return Ok(PyValue::Dict(PyDict::new()));
    }
    crate::pyjson::parse_js(text)
}

/// What JavaScript's `String.prototype.trim` removes: its whitespace and line terminators.
fn is_js_blank(c: char) -> bool {
    matches!(
        c,
        '\u{9}' | '\u{a}' | '\u{b}' | '\u{c}' | '\u{d}' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

fn request_json(request: &RunRequest) -> Value {
    // The wire types serialize to JSON without failure (string keys only).
    serde_json::to_value(request).unwrap_or(Value::Null)
}

/// The PR-head shape of `request` (before canonicalization); see the module docs.
pub fn fingerprint_material(request: &RunRequest) -> PyValue {
    // A typed request never makes the runner throw (see `config_fingerprint_variant`).
    fingerprint_shape(
        &PyValue::from_json(&request_json(request)),
        FingerprintVariant::PrHead,
    )
    .unwrap_or(PyValue::Null)
}

/// `value.key` as JavaScript reads it: `None` is `undefined` (not an object, or no key).
/// Every key looked up here is plain ASCII, its own escaped form.
fn prop<'a>(value: Option<&'a PyValue>, key: &str) -> Option<&'a PyValue> {
    value.and_then(|v| v.get(key))
}

/// `value ?? null`.
fn or_null(value: Option<&PyValue>) -> PyValue {
    value.cloned().unwrap_or(PyValue::Null)
}

/// JavaScript truthiness of a JSON value (`undefined` is `None`).
fn truthy(value: Option<&PyValue>) -> bool {
    match value {
        None | Some(PyValue::Null) | Some(PyValue::Bool(false)) => false,
        Some(PyValue::Number(n)) => {
            let f = crate::numbers::literal_to_f64(n);
            f != 0.0 && !f.is_nan()
        }
        Some(PyValue::Str(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

/// Insert `key` unless its value is `undefined` (canonicalJson drops those).
fn put(shape: &mut PyDict, key: &str, value: Option<&PyValue>) {
    if let Some(value) = value {
        shape.insert(key.to_string(), value.clone());
    }
}

/// `credentials.map(c => ({binding: c.binding, usage: c.usage}))` of a list (a missing
/// field is left out, as `undefined` is); JavaScript throws on a `null` credential.
fn credential_shapes(
    credentials: &[PyValue],
    null_credential: &'static str,
) -> Result<PyValue, NotHashable> {
    credentials
        .iter()
        .map(|credential| {
            if matches!(credential, PyValue::Null) {
                return Err(NotHashable(null_credential));
            }
            let mut shape = PyDict::new();
            put(&mut shape, "binding", prop(Some(credential), "binding"));
            put(&mut shape, "usage", prop(Some(credential), "usage"));
            Ok(PyValue::Dict(shape))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(PyValue::List)
}

/// `{...value}` as JavaScript spreads a JSON value: an object's own entries; a string's
/// UTF-16 code units and an array's elements, under their indexes; nothing else (a number,
/// a boolean, `null`, `undefined`).
fn spread(value: Option<&PyValue>) -> PyDict {
    match value {
        Some(PyValue::Dict(map)) => map.clone(),
        Some(PyValue::List(items)) => items
            .iter()
            .enumerate()
            .map(|(index, item)| (index.to_string(), item.clone()))
            .collect(),
        Some(PyValue::Str(escaped)) => utf16_units(escaped)
            .enumerate()
            .map(|(index, unit)| {
                let mut text = String::new();
                push_python_char(unit, &mut text);
                (index.to_string(), PyValue::Str(text))
            })
            .collect(),
        _ => PyDict::new(),
    }
}

fn model_connection_shape(connection: Option<&PyValue>) -> Result<PyValue, NotHashable> {
    if !truthy(connection) {
        return Ok(PyValue::Null);
    }
    let mut shape = PyDict::new();
    put(&mut shape, "provider", prop(connection, "provider"));
    put(&mut shape, "deployment", prop(connection, "deployment"));
    shape.insert("endpoint".into(), or_null(prop(connection, "endpoint")));
    put(
        &mut shape,
        "credentialMode",
        prop(connection, "credentialMode"),
    );
    shape.insert(
        "environment".into(),
        or_null(prop(connection, "environment")),
    );
    // `(credentials ?? []).map(...)`.
    let credentials = match prop(connection, "credentials") {
        None | Some(PyValue::Null) => PyValue::List(Vec::new()),
        Some(PyValue::List(items)) => {
            credential_shapes(items, "a `modelConnection.credentials` entry is null")?
        }
        Some(_) => return Err(NotHashable("`modelConnection.credentials` is not a list")),
    };
    shape.insert("credentials".into(), credentials);
    Ok(PyValue::Dict(shape))
}

/// `{...server, connection: {...server.connection, credentials: <binding + usage>}}`.
fn mcp_server_shape(server: &PyValue) -> Result<PyValue, NotHashable> {
    if matches!(server, PyValue::Null) {
        return Err(NotHashable("an `mcpServers` entry is null"));
    }
    let mut shape = spread(Some(server));
    let connection = prop(Some(server), "connection");
    let mut connection_shape = spread(connection);
    match prop(connection, "credentials") {
        Some(PyValue::List(items)) => {
            let credentials = credential_shapes(
                items,
                "an `mcpServers[].connection.credentials` entry is null",
            )?;
            connection_shape.insert("credentials".into(), credentials);
        }
        // `credentials?.map(...)` is `undefined` for a missing or null list: dropped.
        None | Some(PyValue::Null) => {
            connection_shape.shift_remove("credentials");
        }
        Some(_) => {
            return Err(NotHashable(
                "an `mcpServers[].connection.credentials` is not a list",
            ))
        }
    }
    shape.insert("connection".into(), PyValue::Dict(connection_shape));
    Ok(PyValue::Dict(shape))
}

/// `resolveCodexMode`: a known mode as given, anything else the codex default.
fn codex_mode(requested: Option<&PyValue>) -> PyValue {
    const MODES: [&str; 3] = ["agent", "read-only", "agent-full-access"];
    match requested.and_then(PyValue::as_escaped_str) {
        Some(mode) if MODES.contains(&mode) => PyValue::Str(mode.to_string()),
        _ => PyValue::Str("agent-full-access".to_string()),
    }
}

/// The shape `configFingerprint` hashes, built from the request as the runner's
/// `JSON.parse` reads it (see the module docs), or why the runner throws reading it.
pub fn fingerprint_shape(
    request: &PyValue,
    variant: FingerprintVariant,
) -> Result<PyValue, NotHashable> {
    if matches!(request, PyValue::Null) {
        return Err(NotHashable("the request is null"));
    }
    let request = Some(request);
    let field = |key: &str| or_null(prop(request, key));
    let mut shape = PyDict::new();
    shape.insert("harness".into(), field("harness"));
    shape.insert("sandbox".into(), field("sandbox"));
    shape.insert("model".into(), field("model"));
    let is_codex = prop(request, "harness").and_then(PyValue::as_escaped_str) == Some("codex");
    shape.insert(
        "harnessMode".into(),
        if is_codex {
            codex_mode(prop(request, "harnessMode"))
        } else {
            PyValue::Null
        },
    );
    shape.insert("connection".into(), field("connection"));
    shape.insert(
        "modelConnection".into(),
        model_connection_shape(prop(request, "modelConnection"))?,
    );
    for key in [
        "modelCapabilities",
        "agentsMd",
        "systemPrompt",
        "appendSystemPrompt",
        "skills",
        "customTools",
    ] {
        shape.insert(key.into(), field(key));
    }
    // `mcpServers?.map(...) ?? null`: `.map` of anything but a list throws.
    let servers = match prop(request, "mcpServers") {
        Some(PyValue::List(servers)) => PyValue::List(
            servers
                .iter()
                .map(mcp_server_shape)
                .collect::<Result<Vec<_>, _>>()?,
        ),
        None | Some(PyValue::Null) => PyValue::Null,
        Some(_) => return Err(NotHashable("`mcpServers` is not a list")),
    };
    shape.insert("mcpServers".into(), servers);
    shape.insert(
        "toolCallbackEndpoint".into(),
        or_null(prop(prop(request, "toolCallback"), "endpoint")),
    );
    for key in ["permissions", "sandboxPermission", "harnessFiles"] {
        shape.insert(key.into(), field(key));
    }
    if variant == FingerprintVariant::PrHead {
        let workflow = prop(prop(request, "runContext"), "workflow");
        let revision = prop(workflow, "revision");
        let pinned = if truthy(revision) {
            let mut pinned = PyDict::new();
            pinned.insert("id".into(), or_null(prop(revision, "id")));
            pinned.insert("version".into(), or_null(prop(revision, "version")));
            PyValue::Dict(pinned)
        } else {
            PyValue::Null
        };
        shape.insert("workflowRevision".into(), pinned);
        shape.insert("isDraft".into(), or_null(prop(workflow, "is_draft")));
    }
    Ok(PyValue::Dict(shape))
}

/// JavaScript's `a < b` on two keys in escaped form: UTF-16 code unit order (an astral
/// character sorts before U+E000..U+FFFF, unlike UTF-8 byte order; a lone surrogate is its
/// own code unit).
fn js_key_order(a: &str, b: &str) -> Ordering {
    if !a.contains('\\') && !b.contains('\\') {
        // Printable ASCII, each character its own code unit.
        return a.cmp(b);
    }
    utf16_units(a).cmp(utf16_units(b))
}

fn utf16_units(escaped: &str) -> impl Iterator<Item = u32> + '_ {
    code_points(escaped).flat_map(|code| {
        if code >= 0x10000 {
            let v = code - 0x10000;
            [Some(0xD800 + (v >> 10)), Some(0xDC00 + (v & 0x3FF))]
        } else {
            [Some(code), None]
        }
        .into_iter()
        .flatten()
    })
}

/// The runner's `canonicalJson`: object keys sorted (JavaScript string order) at every
/// depth, no whitespace, every value written as `JSON.stringify` writes it (numbers as
/// doubles: `1.0` is `1`, `-0` is `0`, a big integer is rounded to a double).
///
/// ```
/// let v: serde_json::Value = serde_json::from_str(r#"{"b": 1.0, "a": {"d": [true], "c": null}}"#).unwrap();
/// assert_eq!(gatehouse_wire::fingerprint::canonical_json(&v), r#"{"a":{"c":null,"d":[true]},"b":1}"#);
/// ```
pub fn canonical_json(value: &Value) -> String {
    canonical_json_of(&PyValue::from_json(value))
}

/// [`canonical_json`] of a value as `JSON.parse` reads it: a lone surrogate is written as
/// `JSON.stringify` writes it, `\ud800`.
pub fn canonical_json_of(value: &PyValue) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

/// `JSON.stringify` of a string given in escaped form: `"` and `\`, the short escapes,
/// `\u00xx` (lowercase) for the other control characters and `\udxxx` for a lone surrogate,
/// every other character as itself.
fn write_js_string(escaped: &str, out: &mut String) {
    use std::fmt::Write;
    out.push('"');
    if !escaped.contains('\\') {
        // Printable ASCII: JSON.stringify writes it as is.
        out.push_str(escaped);
    } else {
        for code in code_points(escaped) {
            match code {
                0x22 => out.push_str("\\\""),
                0x5C => out.push_str("\\\\"),
                0x08 => out.push_str("\\b"),
                0x0C => out.push_str("\\f"),
                0x0A => out.push_str("\\n"),
                0x0D => out.push_str("\\r"),
                0x09 => out.push_str("\\t"),
                _ => match char::from_u32(code) {
                    Some(c) if code >= 0x20 => out.push(c),
                    // A control character or a lone surrogate. Writing into a String cannot fail.
                    _ => {
                        let _ = write!(out, "\\u{code:04x}");
                    }
                },
            }
        }
    }
    out.push('"');
}

fn write_canonical(value: &PyValue, out: &mut String) {
    match value {
        PyValue::Null => out.push_str("null"),
        PyValue::Bool(true) => out.push_str("true"),
        PyValue::Bool(false) => out.push_str("false"),
        PyValue::Number(n) => out.push_str(&crate::numbers::js_literal_text(n)),
        PyValue::Str(s) => write_js_string(s, out),
        PyValue::List(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        PyValue::Dict(map) => {
            let mut entries: Vec<(&String, &PyValue)> = map.iter().collect();
            entries.sort_by(|(a, _), (b, _)| js_key_order(a, b));
            out.push('{');
            for (index, (key, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_js_string(key, out);
                out.push(':');
                write_canonical(item, out);
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn base() -> Value {
        json!({
            "harness": "codex", "sandbox": "local", "sessionId": "s", "agentsMd": null,
            "model": "gpt-5", "messages": [{"role": "user", "content": "hi"}],
            "context": null, "telemetry": null, "tools": [], "customTools": [
                {"name": "t", "inputSchema": {"type": "object", "maximum": 1}}
            ],
            "toolCallback": {"endpoint": "https://cb", "authorization": "secret-1"},
            "permissions": {"default": "allow_reads"},
            "modelConnection": {"provider": "openai", "deployment": "direct", "credentialMode": "env",
                "credentials": [{"binding": {"kind": "environment", "name": "K"}, "value": "sk-1", "usage": "opaque_http"}]},
            "runContext": {"workflow": {"revision": {"id": "r1", "version": "1"}}}
        })
    }

    fn moves(change: impl Fn(&mut Value), variant: FingerprintVariant) -> bool {
        let mut changed = base();
        change(&mut changed);
        config_fingerprint_of(&base(), variant) != config_fingerprint_of(&changed, variant)
    }

    /// The runner's rules (`session-identity.ts`): `?? null` keeps `[]` apart from absent
    /// but not `null`; codex's mode is resolved to its default; numbers are doubles; key
    /// order, per-turn fields and credential values are not hashed; main drops the revision.
    #[test]
    fn the_hash_moves_exactly_where_the_runners_does() {
        let head = FingerprintVariant::PrHead;
        assert!(moves(|r| r["skills"] = json!([]), head));
        assert!(moves(|r| r["mcpServers"] = json!([]), head));
        assert!(moves(|r| r["permissions"]["rules"] = json!([]), head));
        assert!(!moves(|r| r["systemPrompt"] = Value::Null, head));
        assert!(!moves(
            |r| r["harnessMode"] = json!("agent-full-access"),
            head
        ));
        assert!(!moves(|r| r["harnessMode"] = json!("turbo"), head));
        assert!(moves(|r| r["harnessMode"] = json!("read-only"), head));
        assert!(!moves(
            |r| r["customTools"][0]["inputSchema"]["maximum"] = json!(1.0),
            head
        ));
        assert!(!moves(|r| r["messages"] = json!([]), head));
        assert!(!moves(
            |r| r["toolCallback"]["authorization"] = json!("secret-2"),
            head
        ));
        assert!(moves(
            |r| r["toolCallback"]["endpoint"] = json!("https://other"),
            head
        ));
        assert!(!moves(
            |r| r["modelConnection"]["credentials"][0]["value"] = json!("sk-2"),
            head
        ));
        assert!(!moves(
            |r| r["modelConnection"]["subscription"] = json!({"id": "x"}),
            head
        ));
        assert!(!moves(
            |r| r["effectiveParameters"] = json!({"agent": {}}),
            head
        ));
        assert!(moves(
            |r| r["runContext"]["workflow"]["revision"]["id"] = json!("r2"),
            head
        ));
        assert!(moves(
            |r| r["runContext"]["workflow"]["is_draft"] = json!(false),
            head
        ));
        let main = FingerprintVariant::Main;
        assert!(!moves(
            |r| r["runContext"]["workflow"]["revision"]["id"] = json!("r2"),
            main
        ));
        assert!(!moves(
            |r| r["runContext"]["workflow"]["is_draft"] = json!(true),
            main
        ));
        assert!(moves(|r| r["model"] = json!("gpt-6"), main));
        // Another harness ignores harnessMode altogether.
        let mut pi = base();
        pi["harness"] = json!("pi_core");
        let mut pi_mode = pi.clone();
        pi_mode["harnessMode"] = json!("read-only");
        assert_eq!(
            config_fingerprint_of(&pi, head),
            config_fingerprint_of(&pi_mode, head)
        );
    }

    #[test]
    fn canonical_json_sorts_keys_as_javascript_compares_strings() {
        // U+1F600 is a surrogate pair in UTF-16, so it sorts before U+E000 (not after).
        let v = json!({"\u{e000}": 1, "\u{1F600}": 2, "b": 3, "a": [-0.0, 1e21]});
        assert_eq!(
            canonical_json(&v),
            "{\"a\":[0,1e+21],\"b\":3,\"\u{1F600}\":2,\"\u{e000}\":1}"
        );
    }

    fn shape_of(text: &str) -> Result<String, NotHashable> {
        let value = crate::pyjson::parse_js(text).unwrap();
        fingerprint_shape(&value, FingerprintVariant::Main).map(|shape| canonical_json_of(&shape))
    }

    /// `{...server}` and `{...server.connection}` spread a string into its UTF-16 code
    /// units and an array into its elements, under their indexes, as JavaScript does.
    #[test]
    fn mcp_servers_are_spread_as_javascript_spreads_them() {
        let shape =
            shape_of(r#"{"mcpServers": ["a\ud83d\ude00", [1], 7, {"connection": "xy", "n": 1}]}"#)
                .unwrap();
        assert!(
            shape.contains(
                r#""mcpServers":[{"0":"a","1":"\ud83d","2":"\ude00","connection":{}},{"0":1,"connection":{}},{"connection":{}},{"connection":{"0":"x","1":"y"},"n":1}]"#
            ),
            "{shape}"
        );
        // A null credentials list is dropped from the connection, a list is cut to
        // binding and usage.
        let shape = shape_of(
            r#"{"mcpServers": [{"connection": {"credentials": null, "u": 1}}, {"connection": {"credentials": [{"binding": "b", "value": "secret", "usage": "u"}]}}]}"#,
        )
        .unwrap();
        assert!(
            shape.contains(r#"[{"connection":{"u":1}},{"connection":{"credentials":[{"binding":"b","usage":"u"}]}}]"#),
            "{shape}"
        );
        assert!(!shape.contains("secret"));
    }

    /// Where the runner's `configFingerprint` throws a `TypeError`, there is no hash.
    #[test]
    fn what_makes_the_runner_throw_gives_no_hash() {
        for (text, reason) in [
            ("null", "the request is null"),
            (r#"{"mcpServers": 5}"#, "`mcpServers` is not a list"),
            (r#"{"mcpServers": false}"#, "`mcpServers` is not a list"),
            (r#"{"mcpServers": [null]}"#, "an `mcpServers` entry is null"),
            (
                r#"{"mcpServers": [{"connection": {"credentials": "s"}}]}"#,
                "an `mcpServers[].connection.credentials` is not a list",
            ),
            (
                r#"{"mcpServers": [{"connection": {"credentials": [null]}}]}"#,
                "an `mcpServers[].connection.credentials` entry is null",
            ),
            (
                r#"{"modelConnection": {"credentials": {}}}"#,
                "`modelConnection.credentials` is not a list",
            ),
            (
                r#"{"modelConnection": {"credentials": [null]}}"#,
                "a `modelConnection.credentials` entry is null",
            ),
        ] {
            assert_eq!(shape_of(text).unwrap_err().reason(), reason, "{text}");
            assert!(matches!(
                config_fingerprint_of_text(text, FingerprintVariant::PrHead),
                Err(FingerprintTextError::NotHashable(_))
            ));
        }
        // What reads as `undefined` or an empty list does not throw.
        for text in [
            r#"{"mcpServers": null}"#,
            r#"{"modelConnection": "x"}"#,
            r#"{"modelConnection": {"credentials": null}}"#,
            "[1]",
            "\"text\"",
            "7",
        ] {
            assert!(shape_of(text).is_ok(), "{text}");
        }
        // A blank body is `{}` to the runner; an empty one is not JSON to JSON.parse, but
        // the runner never parses it.
        let empty = config_fingerprint_of_text("{}", FingerprintVariant::PrHead).unwrap();
        for blank in ["", " \n\t", "\u{feff}\u{2028}"] {
            assert_eq!(
                config_fingerprint_of_text(blank, FingerprintVariant::PrHead),
                Ok(empty.clone())
            );
        }
    }
}
