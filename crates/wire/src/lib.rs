//! # gatehouse-wire
//!
//! The Gatehouse wire contract as Rust types: serde + schemars, no I/O.
//!
//! Every shape of `CONTRACT.md` lives here under its contract name:
//!
//! | contract | module |
//! |---|---|
//! | A1 `/run` request, result, NDJSON stream records | [`run`] |
//! | A2 `effectiveParameters` stamping | [`effective`] |
//! | A3 `configFingerprint` | [`fingerprint`] |
//! | A4/A5 session-interaction rows and endpoint bodies, watch events | [`interaction`] |
//! | A6 the resume (invoke) body | [`resume`], [`invoke`] |
//! | B1/B2 execution sessions, interventions, events | [`execution`] |
//! | both upstream error envelopes, Gatehouse error codes | [`error`] |
//! | C5 capability discovery | [`capabilities`] |
//! | readiness (`GET /health/ready`) | [`health`] |
//! | generated JSON Schema registry | [`schema`] |
//! | the server's HTTP API: route registry and OpenAPI 3.1 document | [`openapi`] |
//! | numbers as Python and JavaScript write them | [`numbers`] |
//! | Python's `json.loads` / `json.dumps` object model (the Agenta-compatible stamp) | [`pyjson`] |
//!
//! Reading types keep unknown fields in an `extra` map and write them back, so a
//! newer peer's fields survive a round trip; an enum value this version does not know is
//! kept (`Other`). Optional fields accept both `null` and an absent key. Numbers keep
//! their literal text (serde_json's `arbitrary_precision`, on for the whole workspace):
//! an integer of any size survives a round trip digit for digit.
//!
//! Main entry points:
//!
//! - [`run::RunRequest::new`] and its `with_*` setters build a `/run` request;
//!   [`run::RunRequest::for_session`] (or [`run::RunRequest::with_effective_parameters`])
//!   stamps `effectiveParameters` on a session run and never on a non-session run;
//! - [`effective::stamp_effective_parameters`] redacts and measures a config
//!   ([`effective::python_json_dumps_len`] is the size measure);
//! - [`effective::stamp_python_text`] stamps a JSON text exactly as Agenta's Python does;
//! - [`fingerprint::config_fingerprint`] hashes the config-bearing part of a request as
//!   Agenta's runner does ([`fingerprint::FingerprintVariant`]: PR head or main);
//! - [`resume::build_resume_request`] builds the resume invoke body from an answered row,
//!   and [`resume::should_hydrate_from_references`] is the resolver's rule;
//! - [`schema::all`] lists the JSON Schema of every top-level wire type;
//! - [`from_json_slice`] / [`from_json_value`] decode with errors that name the field path.

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
pub mod openapi;
pub mod pyjson;
pub mod resume;
pub mod run;
pub mod schema;

pub use json::{from_json_slice, from_json_value, WireDecodeError};

/// A JSON object with its keys in insertion order (serde_json `preserve_order`).
pub type JsonObject = serde_json::Map<String, serde_json::Value>;
