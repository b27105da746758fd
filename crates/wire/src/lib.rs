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
//! | A2/C2 the redaction rule (what a stamp strips) | [`redact`] |
//! | A3 `configFingerprint` | [`fingerprint`] |
//! | A4/A5 session-interaction rows and endpoint bodies, watch events | [`interaction`] |
//! | A6 the resume (invoke) body | [`resume`], [`invoke`] |
//! | B1/B2 execution sessions, interventions, events | [`execution`] |
//! | both upstream error envelopes, Gatehouse error codes | [`error`] |
//! | C5 capability discovery | [`capabilities`] |
//! | readiness (`GET /health/ready`) | [`health`] |
//! | generated JSON Schema registry | [`schema`] |
//! | the server's HTTP API as data: every route (method, path, parameters, bodies, errors) | [`routes`] |
//! | the OpenAPI 3.1 document, generated from [`routes`] and [`schema`] | [`openapi`] |
//! | the files of the committed `schema/` folder (schemas, index, OpenAPI document) | [`schema_dir`] |
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
//! Reading types keep unknown fields in an `extra` map and write them back, so a
//! newer peer's fields survive a round trip; an enum value this version does not know is
//! kept as `Unknown(text)` and written back as read. Optional fields accept both `null`
//! and an absent key. Numbers keep their literal text (serde_json's `arbitrary_precision`,
//! on for the whole workspace): an integer of any size survives a round trip digit for
//! digit.
//!
//! Main entry points:
//!
//! - [`run::RunRequest::new`] and its `with_*` setters build a `/run` request;
//!   [`run::RunRequest::for_session`] (or [`run::RunRequest::with_effective_parameters`])
//!   stamps `effectiveParameters` on a session run and never on a non-session run;
//! - [`effective::stamp_effective_parameters`] redacts and measures a config
//!   ([`redact`] is the rule, [`pyjson::python_json_dumps_len`] the size measure);
//! - [`effective::stamp_python_text`] stamps a JSON text exactly as Agenta's Python does;
//! - [`fingerprint::config_fingerprint`] hashes the config-bearing part of a request as
//!   Agenta's runner does ([`fingerprint::FingerprintVariant`]: PR head or main);
//! - [`resume::build_resume_request`] builds the resume invoke body from an answered row,
//!   and [`resume::should_hydrate_from_references`] is the resolver's rule;
//! - [`schema::all`] lists the JSON Schema of every top-level wire type;
//! - [`from_json_slice`] / [`from_json_value`] decode with errors that name the field path.

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
pub mod openapi;
pub mod pyjson;
pub mod redact;
pub mod resume;
pub mod routes;
pub mod run;
pub mod schema;
pub mod schema_dir;
pub mod webhooks;

pub use json::{from_json_slice, from_json_value, WireDecodeError};

/// A JSON object with its keys in insertion order (serde_json `preserve_order`).
pub type JsonObject = serde_json::Map<String, serde_json::Value>;
