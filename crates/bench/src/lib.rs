//! # gatehouse-bench
//!
//! The benchmarks behind `BENCHMARKS.md`, run side by side by `cargo xtask bench`:
//!
//! - `benches/micro.rs` (criterion): `stamp_effective_parameters` on the 178-byte golden
//!   blob and on a 64 KiB config; each `/run` golden parsed and re-serialized typed
//!   ([`gatehouse_wire::run::RunRequest`]) vs untyped (`serde_json::Value`).
//! - the `gatehouse-bench` binary:
//!   - `prepare-stamp --dir D`: writes the stamp inputs shared with Agenta's Python
//!     implementation ([`inputs`]) and Gatehouse's outputs on them ([`stamp_outputs`]);
//!   - `live --out FILE`: the benchmarks that need a server ([`live`]): one respond
//!     through the client vs a bare POST, approve-all vs one by one, contention, the FFI
//!     (Rust side, and the Python binding through `bench/python/ffi_respond.py`), and the
//!     physical floor (an empty loopback handler, one SQLite WAL commit).
//!
//! Nothing here asserts a time: targets are judged in the report, not in tests.

pub mod inputs;
pub mod live;
pub mod stats;

use serde_json::{json, Value};

use gatehouse_wire::effective::{stamp_effective_parameters, NotStamped, StampPolicy};
use gatehouse_wire::redact::Redaction;

use crate::inputs::NamedInput;

/// Why a benchmark could not run or produced an impossible result.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A file could not be read or written.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// JSON could not be parsed or written.
    #[error("{what}: {source}")]
    Json {
        /// What was being done.
        what: String,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
    /// An input is not what the benchmark needs.
    #[error("invalid input: {0}")]
    Invalid(String),
    /// The server under test could not start.
    #[error("the test server did not start: {0}")]
    Server(String),
    /// A request failed where the benchmark needs it to succeed.
    #[error("{what} failed: {reason}")]
    Request {
        /// Which request.
        what: String,
        /// The error, as text.
        reason: String,
    },
    /// The outcome broke an invariant (e.g. not exactly one winner per gate).
    #[error("invariant broken: {0}")]
    Invariant(String),
    /// The Python side failed.
    #[error("python: {0}")]
    Python(String),
    /// The Kotlin side failed.
    #[error("kotlin: {0}")]
    Kotlin(String),
    /// The Swift binding driver failed.
    #[error("swift driver: {0}")]
    Swift(String),
}

/// The stamp policy the parity check uses: Gatehouse's default redaction with the
/// 65536-byte cap (Agenta's module is set to the same cap).
pub fn parity_policy() -> StampPolicy {
    StampPolicy {
        max_bytes: 65536,
        redaction: Redaction::Gatehouse,
    }
}

/// Gatehouse's stamp of one input as the JSON the Python side compares with:
/// `{"name", "emitted", "stamped"?, "measured_bytes"?, "reason"?, "stripped",
/// "agenta_compatible_agrees"}`. `measured_bytes` is present for a stamp and for an
/// over-cap drop. `agenta_compatible_agrees` is true when [`Redaction::AgentaCompatible`]
/// gives the same result, i.e. the input is outside the C2 departures.
pub fn stamp_output(input: &NamedInput) -> Value {
    let policy = parity_policy();
    // Each stamp consumes its input; the shared input is stamped twice, so each gets a copy.
    let result = stamp_effective_parameters(input.input.clone(), &policy);
    let compatible = stamp_effective_parameters(
        input.input.clone(),
        &StampPolicy {
            redaction: Redaction::AgentaCompatible,
            ..policy
        },
    );
    let agrees = result == compatible;
    match result {
        Ok(stamped) => json!({
            "name": input.name,
            "emitted": true,
            "stamped": Value::Object(stamped.parameters),
            "measured_bytes": stamped.measured_bytes,
            "stripped": stamped.stripped,
            "agenta_compatible_agrees": agrees,
        }),
        Err(reason) => {
            let (label, measured) = match reason {
                NotStamped::Empty => ("empty", None),
                NotStamped::NotAnObject => ("not_an_object", None),
                NotStamped::OverCap { measured_bytes, .. } => ("over_cap", Some(measured_bytes)),
            };
            let mut out = json!({
                "name": input.name,
                "emitted": false,
                "reason": label,
                "stripped": [],
                "agenta_compatible_agrees": agrees,
            });
            if let (Some(measured), Some(object)) = (measured, out.as_object_mut()) {
                object.insert("measured_bytes".into(), json!(measured));
            }
            out
        }
    }
}

/// [`stamp_output`] for every input, in order.
pub fn stamp_outputs(inputs: &[NamedInput]) -> Value {
    Value::Array(inputs.iter().map(stamp_output).collect())
}
