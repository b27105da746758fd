//! A config read from JSON text with Python's `json.dumps` length measured as it is read
//! ([`MeasuredConfig`]), so the stamp needs no walk of what the rule leaves whole.
//!
//! While serde_json reads the text into a `Value`, the reader notes for every array and
//! object (in reading order, itself before its children) the `json.dumps` length of its
//! subtree, how many arrays and objects the subtree holds, and whether the subtree is
//! *whole*: no key in it that the rule could strip in any place ([`may_strip_key`]) and no
//! string it could rewrite ([`may_rewrite`]). A whole subtree is written as itself by every
//! redaction, so its redacted length is the noted one. The stamp then walks only the path
//! from the root to what the rule touches ([`redacted_len_measured`]), in the same order as
//! the notes. A text with a duplicate key (serde_json keeps the first key's place and the
//! last value, so the reading order and the object's order part) keeps no notes: its stamp
//! walks the whole object, as [`super::redacted_len`] does.

use std::fmt;

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

use super::rule::{may_rewrite, may_strip_key, Ctx, Rule};
use crate::pyjson::{python_json_dumps_len, python_json_object_len, python_string_len};
use crate::JsonObject;

/// serde_json's name for a number under `arbitrary_precision`: the deserializer hands a
/// number to a visitor as a one-entry map under this key, its value the literal text.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// What the reader noted of one array or object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Note {
    /// Python's `json.dumps` length of the subtree.
    len: usize,
    /// How many notes the subtree spans (itself and every array and object under it).
    span: usize,
    /// Nothing in the subtree can be stripped or rewritten, in any place, by any rule.
    whole: bool,
}

/// A config (a JSON object) read from text with its `json.dumps` measure taken as it was
/// read, for [`crate::effective::stamp_measured`]: the same stamp as
/// [`crate::effective::stamp_borrowed`], without walking the parts the redaction leaves
/// whole. The object is only lent out, never changed, so the notes stay true.
///
/// ```
/// use gatehouse_wire::effective::{stamp_borrowed, stamp_measured, MeasuredConfig, StampPolicy};
/// let text = r#"{"agent": {"llm": {"model": "m", "api_key": "sk-live"}, "tools": [{"name": "t"}]}}"#;
/// let config = MeasuredConfig::from_json(text).unwrap();
/// assert_eq!(config.python_len(), text.len());
/// let view = stamp_measured(&config, &StampPolicy::default()).unwrap();
/// assert_eq!(serde_json::to_string(&view).unwrap(), r#"{"agent":{"llm":{"model":"m"},"tools":[{"name":"t"}]}}"#);
/// let walked = stamp_borrowed(config.object(), &StampPolicy::default()).unwrap();
/// assert_eq!(view.measured_bytes, walked.measured_bytes);
/// ```
#[derive(Clone, PartialEq)]
pub struct MeasuredConfig {
    object: JsonObject,
    /// One note per array and object of `object` (itself first), in reading order; empty
    /// when the text had a duplicate key, or the object was not read from text.
    notes: Vec<Note>,
    /// `json.dumps` length of the whole object, when it was measured while reading.
    python_len: Option<usize>,
}

impl fmt::Debug for MeasuredConfig {
    /// The shape only: a config may hold credentials, and a `Debug` line ends up in logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MeasuredConfig")
            .field("keys", &self.object.len())
            .field("containers", &self.notes.len())
            .field("python_len", &self.python_len)
            .finish()
    }
}

/// Why a text is not a config [`MeasuredConfig`] reads.
#[derive(Debug, thiserror::Error)]
pub enum ReadConfigError {
    /// Not JSON (serde_json's message, with its line and column).
    #[error("the config is not JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// JSON, but not an object.
    #[error("the config is not a JSON object")]
    NotAnObject,
}

impl MeasuredConfig {
    /// Read a config from JSON text (serde_json's reading: the same numbers, key order and
    /// limits as `serde_json::from_str::<Value>`).
    pub fn from_json(text: &str) -> Result<Self, ReadConfigError> {
        Self::read(serde_json::Deserializer::from_str(text))
    }

    /// Read a config from JSON bytes (see [`MeasuredConfig::from_json`]).
    pub fn from_slice(bytes: &[u8]) -> Result<Self, ReadConfigError> {
        Self::read(serde_json::Deserializer::from_slice(bytes))
    }

    /// Read one document, nothing after it but whitespace.
    fn read<'de, R: serde_json::de::Read<'de>>(
        mut reader: serde_json::Deserializer<R>,
    ) -> Result<Self, ReadConfigError> {
        let mut notes = Vec::new();
        let mut duplicate = false;
        let read = NodeSeed {
            notes: &mut notes,
            duplicate: &mut duplicate,
        }
        .deserialize(&mut reader)?;
        reader.end()?;
        let Value::Object(object) = read.value else {
            return Err(ReadConfigError::NotAnObject);
        };
        let mut python_len = Some(read.len);
        if duplicate {
            notes = Vec::new();
            python_len = None;
        }
        Ok(Self {
            object,
            notes,
            python_len,
        })
    }

    /// A config already in memory (built, or read as part of a larger document): nothing
    /// was measured, so its stamp walks the whole object, as
    /// [`crate::effective::stamp_borrowed`] does.
    pub fn from_object(object: JsonObject) -> Self {
        Self {
            object,
            notes: Vec::new(),
            python_len: None,
        }
    }

    /// The config.
    pub fn object(&self) -> &JsonObject {
        &self.object
    }

    /// The config, owned (the measure is dropped).
    pub fn into_object(self) -> JsonObject {
        self.object
    }

    /// Python's `json.dumps` length of the whole config, unredacted (measured now when it
    /// was not while reading).
    pub fn python_len(&self) -> usize {
        self.python_len
            .unwrap_or_else(|| python_json_object_len(&self.object))
    }

    /// True when the stamp can use the notes taken while reading (the config was read
    /// from text, which had no duplicate key).
    pub fn is_indexed(&self) -> bool {
        !self.notes.is_empty()
    }
}

/// A value as read, with its measure.
struct Read {
    value: Value,
    len: usize,
    whole: bool,
}

impl Read {
    fn scalar(value: Value) -> Self {
        let len = python_json_dumps_len(&value);
        Self {
            value,
            len,
            whole: true,
        }
    }

    fn text(text: String) -> Self {
        Self {
            len: python_string_len(&text),
            whole: !may_rewrite(&text),
            value: Value::String(text),
        }
    }
}

/// Reads one value and notes its arrays and objects.
struct NodeSeed<'a> {
    notes: &'a mut Vec<Note>,
    duplicate: &'a mut bool,
}

impl NodeSeed<'_> {
    fn child(&mut self) -> NodeSeed<'_> {
        NodeSeed {
            notes: self.notes,
            duplicate: self.duplicate,
        }
    }

    /// Reserve the note of a container that starts here; [`NodeSeed::close`] fills it.
    fn open(&mut self) -> usize {
        self.notes.push(Note {
            len: 0,
            span: 0,
            whole: true,
        });
        self.notes.len() - 1
    }

    fn close(&mut self, at: usize, len: usize, whole: bool) {
        let span = self.notes.len() - at;
        if let Some(note) = self.notes.get_mut(at) {
            *note = Note { len, span, whole };
        }
    }
}

impl<'de> DeserializeSeed<'de> for NodeSeed<'_> {
    type Value = Read;

    fn deserialize<D: serde::Deserializer<'de>>(self, reader: D) -> Result<Read, D::Error> {
        reader.deserialize_any(self)
    }
}

/// A key, owned (what a `Map` keeps).
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = String;

    fn deserialize<D: serde::Deserializer<'de>>(self, reader: D) -> Result<String, D::Error> {
        reader.deserialize_str(self)
    }
}

impl Visitor<'_> for KeySeed {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<String, E> {
        Ok(key.to_owned())
    }

    fn visit_string<E: serde::de::Error>(self, key: String) -> Result<String, E> {
        Ok(key)
    }
}

impl<'de> Visitor<'de> for NodeSeed<'_> {
    type Value = Read;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, value: bool) -> Result<Read, E> {
        Ok(Read::scalar(Value::Bool(value)))
    }

    fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<Read, E> {
        Ok(Read::scalar(Value::from(value)))
    }

    fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<Read, E> {
        Ok(Read::scalar(Value::from(value)))
    }

    fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<Read, E> {
        Number::from_f64(value)
            .map(|number| Read::scalar(Value::Number(number)))
            .ok_or_else(|| E::custom("a number JSON cannot hold"))
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Read, E> {
        Ok(Read::text(text.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, text: String) -> Result<Read, E> {
        Ok(Read::text(text))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Read, E> {
        Ok(Read::scalar(Value::Null))
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Read, E> {
        Ok(Read::scalar(Value::Null))
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, reader: D) -> Result<Read, D::Error> {
        self.deserialize(reader)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Read, A::Error> {
        let at = self.open();
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        let (mut len, mut whole) = (2, true);
        while let Some(item) = seq.next_element_seed(self.child())? {
            len += item.len;
            whole &= item.whole;
            items.push(item.value);
        }
        if items.len() > 1 {
            len += 2 * (items.len() - 1);
        }
        self.close(at, len, whole);
        Ok(Read {
            value: Value::Array(items),
            len,
            whole,
        })
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Read, A::Error> {
        let Some(first) = map.next_key_seed(KeySeed)? else {
            let at = self.open();
            self.close(at, 2, true);
            return Ok(Read {
                value: Value::Object(JsonObject::new()),
                len: 2,
                whole: true,
            });
        };
        if first == NUMBER_TOKEN {
            let text: String = map.next_value()?;
            let number = text
                .parse::<Number>()
                .map_err(|_| serde::de::Error::custom("an invalid number"))?;
            return Ok(Read::scalar(Value::Number(number)));
        }
        let at = self.open();
        let mut object = JsonObject::new();
        let (mut len, mut whole) = (2, true);
        let mut key = Some(first);
        while let Some(name) = key {
            let item = map.next_value_seed(self.child())?;
            len += python_string_len(&name) + 2 + item.len;
            whole &= item.whole && !may_strip_key(&name);
            if object.insert(name, item.value).is_some() {
                // The object keeps the first key's place and the last value: the reading
                // order no longer matches the object's, and the measure double-counts.
                *self.duplicate = true;
            }
            key = map.next_key_seed(KeySeed)?;
        }
        if object.len() > 1 {
            len += 2 * (object.len() - 1);
        }
        self.close(at, len, whole);
        Ok(Read {
            value: Value::Object(object),
            len,
            whole,
        })
    }
}

/// [`super::redacted_len`] of a measured config: the same length and `changed`, walking
/// only what is not whole. Falls back to the full walk when the config keeps no notes.
pub(crate) fn redacted_len_measured(config: &MeasuredConfig, rule: Rule) -> (usize, bool) {
    if config.notes.is_empty() {
        return super::redacted_len(&config.object, rule);
    }
    let mut walk = Walk {
        notes: &config.notes,
        next: 0,
        rule,
        changed: false,
    };
    let len = walk.object(&config.object, Ctx::ROOT);
    (len, walk.changed)
}

/// The walk over a measured config: `next` is the note of the next array or object in
/// reading order.
struct Walk<'a> {
    notes: &'a [Note],
    next: usize,
    rule: Rule,
    changed: bool,
}

impl Walk<'_> {
    /// The note of the container about to be visited, taken.
    fn take(&mut self) -> Note {
        // A note is always there: the notes were taken from this very object, which
        // nobody can change. Should that ever fail, measure as if nothing were whole.
        let note = self.notes.get(self.next).copied().unwrap_or(Note {
            len: 0,
            span: 0,
            whole: false,
        });
        self.next += 1;
        note
    }

    /// A container's length from its note (taken), skipping the notes under it;
    /// `measure` measures the subtree itself when the note is not one the reader wrote
    /// (see `take`).
    fn measured(&mut self, note: Note, measure: impl FnOnce() -> usize) -> usize {
        self.next += note.span.saturating_sub(1);
        if note.span == 0 {
            return measure();
        }
        note.len
    }

    /// Skip a container's subtree (it is stripped, or measured from its note).
    fn skip(&mut self, value: &Value) {
        if matches!(value, Value::Object(_) | Value::Array(_)) {
            let span = self.notes.get(self.next).map_or(1, |note| note.span);
            self.next += span.max(1);
        }
    }

    fn value(&mut self, value: &Value, ctx: Ctx) -> usize {
        match value {
            Value::Object(map) => self.object(map, ctx),
            Value::Array(items) => {
                let note = self.take();
                if note.whole || self.rule.is_inert(ctx) {
                    return self.measured(note, || python_json_dumps_len(value));
                }
                let inner: usize = items
                    .iter()
                    .map(|item| self.value(item, self.rule.element(ctx, item)))
                    .sum();
                2 + inner + 2 * items.len().saturating_sub(1)
            }
            Value::String(text) => match self.rule.rewrite(ctx, text) {
                Some(rewritten) => {
                    self.changed = true;
                    python_string_len(&rewritten)
                }
                None => python_string_len(text),
            },
            other => python_json_dumps_len(other),
        }
    }

    fn object(&mut self, map: &JsonObject, ctx: Ctx) -> usize {
        let note = self.take();
        if note.whole || self.rule.is_inert(ctx) {
            return self.measured(note, || python_json_object_len(map));
        }
        let mut total = 2;
        let mut kept = 0;
        for (key, value) in map {
            if self.rule.strips(ctx, key, value).is_some() {
                self.changed = true;
                self.skip(value);
                continue;
            }
            let ctx = match value {
                Value::Object(_) | Value::Array(_) => self.rule.child(ctx, key, value),
                _ => ctx.of_scalar(),
            };
            total += python_string_len(key) + 2 + self.value(value, ctx);
            kept += 1;
        }
        if kept > 1 {
            total += 2 * (kept - 1);
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effective::{stamp_borrowed, stamp_measured, StampPolicy};
    use crate::redact::Redaction;

    /// A tiny deterministic generator (the same configs on every run).
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((self.0 >> 33) as usize) % n.max(1)
        }
    }

    /// Keys the rule cares about (and some it does not), mixed with plain ones.
    const KEYS: [&str; 24] = [
        "agent",
        "mcps",
        "tools",
        "connection",
        "call",
        "headers",
        "Authorization",
        "authorization",
        "credentials",
        "value",
        "env",
        "api_key",
        "X-Api-Key",
        "max_tokens",
        "inputSchema",
        "parameters",
        "properties",
        "type",
        "name",
        "url",
        "description",
        "token",
        "schema",
        "é",
    ];
    const TEXTS: [&str; 10] = [
        "plain",
        "https://mcp.example/sse?token=sk-1&region=eu",
        "https://user:pw@host.example/x",
        "https://mcp.example/sse?region=eu",
        "object",
        "café → \u{1F600}",
        "quote \" back\\ \n\t\u{1}\u{7f}",
        "",
        "Bearer sk-live",
        "wss://h.example/?api_key=k",
    ];
    const NUMBERS: [&str; 9] = [
        "0",
        "-0",
        "1.0",
        "1e16",
        "1E-7",
        "0.00001",
        "123456789012345678901234567890",
        "-2.5",
        "1.5e300",
    ];

    fn text(rng: &mut Lcg, depth: usize, out: &mut String) {
        match if depth > 4 {
            rng.below(4)
        } else {
            rng.below(7)
        } {
            0 => out.push_str(&serde_json::to_string(TEXTS[rng.below(TEXTS.len())]).unwrap()),
            1 => out.push_str(NUMBERS[rng.below(NUMBERS.len())]),
            2 => out.push_str(["null", "true", "false"][rng.below(3)]),
            3 => out.push_str("{}"),
            4 | 5 => {
                out.push('{');
                for i in 0..rng.below(5) {
                    if i > 0 {
                        out.push(',');
                    }
                    // A few duplicate keys come with the small key set.
                    out.push_str(&serde_json::to_string(KEYS[rng.below(KEYS.len())]).unwrap());
                    out.push(':');
                    text(rng, depth + 1, out);
                }
                out.push('}');
            }
            _ => {
                out.push('[');
                for i in 0..rng.below(4) {
                    if i > 0 {
                        out.push(',');
                    }
                    text(rng, depth + 1, out);
                }
                out.push(']');
            }
        }
    }

    /// A config shaped like the real ones: `agent` with lists of entries, at random.
    fn config(rng: &mut Lcg) -> String {
        let mut out = String::from("{\"agent\": {\"mcps\": [");
        for i in 0..rng.below(3) {
            if i > 0 {
                out.push(',');
            }
            text(rng, 2, &mut out);
        }
        out.push_str("], \"tools\": [");
        for i in 0..rng.below(3) {
            if i > 0 {
                out.push(',');
            }
            text(rng, 2, &mut out);
        }
        out.push_str("], \"x\": ");
        text(rng, 1, &mut out);
        out.push_str("}, \"tools\": ");
        text(rng, 1, &mut out);
        out.push('}');
        out
    }

    fn assert_same_stamp(text: &str) {
        let config = MeasuredConfig::from_json(text).unwrap();
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(config.object(), value.as_object().unwrap(), "{text}");
        assert_eq!(config.python_len(), python_json_dumps_len(&value), "{text}");
        for redaction in [Redaction::Gatehouse, Redaction::AgentaCompatible] {
            for max_bytes in [usize::MAX, config.python_len() / 2] {
                let policy = StampPolicy {
                    max_bytes,
                    redaction,
                };
                let measured = stamp_measured(&config, &policy);
                let walked = stamp_borrowed(config.object(), &policy);
                match (measured, walked) {
                    (Ok(measured), Ok(walked)) => {
                        assert_eq!(measured.measured_bytes, walked.measured_bytes, "{text}");
                        assert_eq!(measured.is_redacted(), walked.is_redacted(), "{text}");
                        assert_eq!(
                            serde_json::to_string(&measured).unwrap(),
                            serde_json::to_string(&walked).unwrap()
                        );
                        assert_eq!(measured.stripped(), walked.stripped());
                    }
                    (Err(measured), Err(walked)) => assert_eq!(measured, walked, "{text}"),
                    (measured, walked) => panic!("{text}: {measured:?} vs {walked:?}"),
                }
            }
        }
    }

    #[test]
    fn the_measured_stamp_is_the_walked_stamp_on_generated_configs() {
        let mut rng = Lcg(24);
        let (mut indexed, mut redacted) = (0, 0);
        for _ in 0..3000 {
            let text = config(&mut rng);
            assert_same_stamp(&text);
            let config = MeasuredConfig::from_json(&text).unwrap();
            if config.is_indexed() {
                indexed += 1;
                let view = stamp_measured(&config, &StampPolicy::default());
                redacted += usize::from(view.is_ok_and(|view| view.is_redacted()));
            }
        }
        // Most have no duplicate key, so the notes are what is tested, and many of those
        // have something stripped or rewritten (the walk goes down to it).
        assert!(
            indexed > 2000 && redacted > 500,
            "{indexed} indexed, {redacted} redacted"
        );
    }

    #[test]
    fn the_measured_stamp_is_the_walked_stamp_on_chosen_configs() {
        for text in [
            r#"{"agent": {"mcps": [{"name": "n", "headers": null, "connection": {"headers": null}}]}}"#,
            r#"{"agent": {"mcps": [{"name": "n", "connection": {"headers": {"a": "b"}, "url": "https://h/?token=1"}}], "tools": [{"inputSchema": {"properties": {"headers": {"type": "object"}}}}]}}"#,
            r#"{"agent": {"tools": [{"credentials": {"value": "K", "binding": {"name": "N"}}, "env": {"A": "B"}, "env2": []}]}}"#,
            r#"{"mcps": [{"headers": {"x": 1}}], "tools": [{"call": {"Authorization": "b"}}]}"#,
            r#"{"agent": {"llm": {"api_key": "k", "api_key": null}}, "agent": {"tools": [{"headers": [1]}]}}"#,
            r#"{"a": [[], {}, [[{}]], {"b": {"c": []}}], "parameters": {"type": "object", "properties": {"token": {}}}}"#,
            r#"{"n": [1.0, 1e16, -0, 1E400, 0.1e-6, 123456789012345678901234567890]}"#,
            r#"{"é": "\ud83d\ude00", "k": "\u0000\u001f\"\\/"}"#,
        ] {
            assert_same_stamp(text);
        }
    }

    #[test]
    fn a_duplicate_key_keeps_no_notes_and_is_measured_whole() {
        let config =
            MeasuredConfig::from_json(r#"{"a": {"x": [1, 2]}, "b": 1, "a": "two"}"#).unwrap();
        assert!(!config.is_indexed());
        assert_eq!(config.python_len(), r#"{"a": "two", "b": 1}"#.len());
        let config = MeasuredConfig::from_slice(br#"{"a": {"x": [1, 2]}}"#).unwrap();
        assert!(config.is_indexed());
        assert_eq!(config.notes.len(), 3);
        let built = MeasuredConfig::from_object(config.object().clone());
        assert!(!built.is_indexed());
        assert_eq!(built.python_len(), config.python_len());
        let policy = StampPolicy::default();
        assert_eq!(
            stamp_measured(&built, &policy).map(|v| v.measured_bytes),
            stamp_measured(&config, &policy).map(|v| v.measured_bytes)
        );
    }

    #[test]
    fn what_is_not_a_config_is_a_typed_error_and_debug_shows_no_value() {
        for text in ["[1]", "\"s\"", "null", "7"] {
            assert!(
                matches!(
                    MeasuredConfig::from_json(text),
                    Err(ReadConfigError::NotAnObject)
                ),
                "{text}"
            );
        }
        for text in ["", "{", "{\"a\": }", "{} x", "{\"a\": NaN}", "<html>"] {
            assert!(
                matches!(
                    MeasuredConfig::from_json(text),
                    Err(ReadConfigError::Json(_))
                ),
                "{text}"
            );
        }
        let deep = format!("{}1{}", "{\"a\":[".repeat(100), "]}".repeat(100));
        assert!(
            MeasuredConfig::from_json(&deep).is_err(),
            "serde_json's depth limit holds"
        );
        let config = MeasuredConfig::from_json(r#"{"api_key": "sk-live-secret"}"#).unwrap();
        assert!(!format!("{config:?}").contains("sk-live"));
    }
}
