//! # gatehouse-wire
//!
//! The Gatehouse wire contract as Rust types: serde (+ schemars with the default `schema`
//! feature), no I/O.
//!
//! Every shape of `CONTRACT.md` lives here under its contract name:
//!
//! | contract | module |
//! |---|---|
//! | A1 `/run` request, result, NDJSON stream records | [`run`] |
//! | A2 `effectiveParameters` stamping | [`effective`] |
//! | A2/C2 the redaction rule (what a stamp strips) | [`redact`] |
//! | A3 `configFingerprint` | [`fingerprint`] |
//! | A4/A5 session-interaction rows and endpoint bodies, watch events | [`interaction`] |
//! | A6 the resume (invoke) body | [`resume`], [`invoke`] |
//! | B1/B2 execution sessions, interventions, events | [`execution`] |
//! | both upstream error envelopes, Gatehouse error codes | [`error`] |
//! | C5 capability discovery | [`capabilities`] |
//! | Agenta's durable session control (v0.121+): respond 202, Stop, snapshot, events, error envelope | [`sessions`] |
//! | readiness (`GET /health/ready`) | [`health`] |
//! | generated JSON Schema registry (feature `schema`) | [`schema`] |
//! | the server's HTTP API as data: every route (method, path, parameters, bodies, errors) | [`routes`] |
//! | the OpenAPI 3.1 document, generated from [`routes`] and [`schema`] (feature `schema`) | [`openapi`] |
//! | the files of the committed `schema/` folder (schemas, index, OpenAPI document; feature `schema`) | [`schema_dir`] |
//! | numbers as Python and JavaScript write them | [`numbers`] |
//! | the tolerant readers (Python's `json.loads`, JavaScript's `JSON.parse`) and `json.dumps`: the stamp's size measure, the Agenta-compatible stamp, what the fingerprint reads | [`pyjson`] |
//! | JSON as Agenta's API answers (pydantic-core through FastAPI): how a row is rendered | [`agenta_api_json`] |
//!
//! The stamp's modules depend one way: [`numbers`] <- [`pyjson`] <- [`redact`] <-
//! [`effective`] <- [`run`].
//!
//! The route and schema modules depend one way: [`routes`] and [`schema`] know nothing
//! of the document; [`openapi`] reads both; [`schema_dir`] lists what [`schema`] and
//! [`openapi`] generate.
//!
//! A module split into files says in its own docs what each file holds ([`routes`]: the
//! operation types, one file per family; [`interaction`]: the row, each endpoint's bodies,
//! the watch events; [`pyjson`], [`redact`], [`run`]); every public name stays at the
//! module's path (`routes::RESPOND_TO_INTERACTION`,
//! `interaction::SessionInteraction`). No two modules import each other, test modules
//! included: the workspace test `tests/module_cycles.rs` fails on a circle.
//!
//! Reading types keep unknown fields in an `extra` map and write them back, so a
//! newer peer's fields survive a round trip; an enum value this version does not know is
//! kept as `Unknown(text)` and written back as read. Optional fields accept both `null`
//! and an absent key. Numbers keep their literal text (serde_json's `arbitrary_precision`):
//! an integer of any size survives a round trip digit for digit.
//!
//! ## Features
//!
//! - `schema` (default): `schemars::JsonSchema` on every wire type, and the [`schema`],
//!   [`openapi`] and [`schema_dir`] modules. Without it the crate is the types and their
//!   serde code alone (`default-features = false`): what a client needs.
//!
//! ## Numbers and key order (serde_json features every dependent gets)
//!
//! This crate turns on serde_json's `arbitrary_precision` and `preserve_order`, and Cargo
//! unifies features across a build, so every crate built with this one sees them. They are
//! not optional: the contract's numbers keep their literal text (Python's `int` of any size,
//! `1.0` kept as `1.0`) and objects their key order, because the `effectiveParameters`
//! stamp, its size measure and the config fingerprint are computed from exactly that text.
//! The consequence for your own types: `serde_json::from_str` into a `#[serde(untagged)]`
//! enum, or a struct with a `#[serde(flatten)]` field, fails on a float inside it (a
//! fraction, an exponent, or an integer beyond 64 bits: serde buffers it as serde_json's
//! private arbitrary-precision form, which no `f64` accepts; a 64-bit integer still reads);
//! `serde_json::from_value` of a parsed [`serde_json::Value`] takes the same document. Parse such a document to a `Value` first, or use [`serde_json::Number`] in the
//! variant. The crate's `number_model` tests pin both behaviours.
//!
//! Main entry points:
//!
//! - [`run::RunRequest::new`] and its `with_*` setters build a `/run` request;
//!   [`run::RunRequest::for_session`] (or [`run::RunRequest::with_effective_parameters`])
//!   stamps `effectiveParameters` on a session run and never on a non-session run;
//! - [`effective::stamp_effective_parameters`] redacts and measures a config
//!   ([`redact`] is the rule, [`pyjson::python_json_dumps_len`] the size measure);
//! - [`effective::MeasuredConfig`] reads a config from text with its `json.dumps` measure,
//!   and [`effective::stamp_measured`] stamps it walking only what the redaction touches;
//! - [`effective::stamp_python_text`] stamps a JSON text exactly as Agenta's Python does;
//! - [`fingerprint::config_fingerprint`] hashes the config-bearing part of a request as
//!   Agenta's runner does ([`fingerprint::FingerprintVariant`]: PR head or main);
//! - [`resume::build_resume_request`] builds the resume invoke body from an answered row,
//!   and [`resume::should_hydrate_from_references`] is the resolver's rule;
//! - [`schema::all`] lists the JSON Schema of every top-level wire type;
//! - [`from_json_slice`] / [`from_json_value`] decode with errors that name the field path.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod agenta_api_json;
pub mod batch;
pub mod capabilities;
pub mod effective;
pub mod error;
pub mod execution;
pub mod fingerprint;
pub mod health;
pub mod interaction;
pub mod invoke;
pub mod json;
pub mod numbers;
#[cfg(feature = "schema")]
#[cfg_attr(docsrs, doc(cfg(feature = "schema")))]
pub mod openapi;
pub mod pyjson;
pub mod redact;
pub mod resume;
pub mod routes;
pub mod run;
#[cfg(feature = "schema")]
#[cfg_attr(docsrs, doc(cfg(feature = "schema")))]
pub mod schema;
#[cfg(feature = "schema")]
#[cfg_attr(docsrs, doc(cfg(feature = "schema")))]
pub mod schema_dir;
pub mod sessions;
pub mod webhooks;

pub use json::{from_json_slice, from_json_value, WireDecodeError};

/// A JSON object with its keys in insertion order (serde_json `preserve_order`).
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// What serde_json's `arbitrary_precision` and `preserve_order` (on for every crate built
/// with this one) do to a consumer's own types, as README.md and the crate docs say.
#[cfg(test)]
mod number_model {
    use serde::Deserialize;

    /// A consumer's untagged enum with a float.
    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(untagged)]
    enum FloatOrText {
        Float(f64),
        Text(String),
    }

    /// The same with an integer.
    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(untagged)]
    enum IntOrText {
        Int(i64),
        Text(String),
    }

    /// A flattened struct holding a float.
    #[derive(Debug, PartialEq, Deserialize)]
    struct Outer {
        name: String,
        #[serde(flatten)]
        inner: Inner,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Inner {
        weight: f64,
    }

    #[test]
    fn from_text_an_untagged_or_flattened_float_is_refused() {
        let float = serde_json::from_str::<FloatOrText>("1.5").unwrap_err();
        assert!(
            float.to_string().contains("did not match any variant"),
            "{float}"
        );
        assert!(serde_json::from_str::<Outer>(r#"{"name": "n", "weight": 0.5}"#).is_err());
        // An integer that fits 64 bits is read as one, and strings are untouched.
        assert_eq!(
            serde_json::from_str::<IntOrText>("7").unwrap(),
            IntOrText::Int(7)
        );
        assert_eq!(
            serde_json::from_str::<FloatOrText>(r#""a""#).unwrap(),
            FloatOrText::Text("a".to_string())
        );
    }

    #[test]
    fn from_a_value_the_same_types_take_the_number() {
        let value = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap();
        assert_eq!(
            serde_json::from_value::<FloatOrText>(value("1.5")).unwrap(),
            FloatOrText::Float(1.5)
        );
        assert_eq!(
            serde_json::from_value::<IntOrText>(value("7")).unwrap(),
            IntOrText::Int(7)
        );
        assert_eq!(
            serde_json::from_value::<Outer>(value(r#"{"name": "n", "weight": 0.5}"#)).unwrap(),
            Outer {
                name: "n".to_string(),
                inner: Inner { weight: 0.5 }
            }
        );
    }

    #[test]
    fn numbers_keep_their_text_and_objects_their_order() {
        let text = r#"{"z":1.0,"a":123456789012345678901234567890,"m":0.10,"b":-0}"#;
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&value).unwrap(), text);
        // A plain serde_json::Number: no float rounding, no loss above u64.
        assert_eq!(
            value["a"].as_number().unwrap().as_str(),
            "123456789012345678901234567890"
        );
    }
}

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
