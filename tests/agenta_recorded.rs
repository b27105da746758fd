//! Agenta's recorded corpus (`agenta/recorded/`, see its PROVENANCE.md): documents that
//! Agenta's own code produced or consumed, each one a test, both directions.
//!
//! - `stamp_vectors.json`: Agenta's `stamp_effective_parameters` at caps 65536 and 262144;
//! - `fingerprint_vectors.json`: the runner's `configFingerprint` (PR head and main);
//! - `run_requests.ndjson`: `/run` requests from `request_to_wire`;
//! - `run_results.ndjson` and `stream_records.ndjson`: what Agenta's readers accept;
//! - `interaction_rows.ndjson`: rows rendered by Agenta's API models.
//!
//! Every suite finds the corpus through `gatehouse_fixtures` and is skipped (one line) when
//! it is absent outside CI.

use std::path::PathBuf;

use gatehouse_wire::effective::{
    python_json_dumps, stamp_effective_parameters, stamp_python_text, NotStamped, PythonStampError,
    Redaction, StampPolicy,
};
use serde_json::Value;

/// The recorded corpus folder, or `None` (skip) when Agenta's fixtures are not laid out.
fn recorded(suite: &str) -> Option<PathBuf> {
    gatehouse_fixtures::require(gatehouse_fixtures::Upstream::Agenta, suite)
        .map(|dir| dir.join("recorded"))
}

fn read_json(dir: &std::path::Path, name: &str) -> Value {
    let text = std::fs::read_to_string(dir.join(name))
        .unwrap_or_else(|e| panic!("cannot read {name}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name} is not JSON: {e}"))
}

/// The lines of an NDJSON file, parsed.
#[allow(dead_code)] // used by the suites below as they land
fn read_ndjson(dir: &std::path::Path, name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join(name))
        .unwrap_or_else(|e| panic!("cannot read {name}: {e}"));
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{name}: {e}")))
        .collect()
}

// ---------------------------------------------------------------------------------------
// Stamp vectors
// ---------------------------------------------------------------------------------------

struct StampVector {
    name: String,
    cap: usize,
    input_text: String,
    result: String,
    output_text: Option<String>,
    measured_size: Option<usize>,
    stripped: Vec<String>,
}

fn stamp_vectors(dir: &std::path::Path) -> Vec<StampVector> {
    let file = read_json(dir, "stamp_vectors.json");
    file["vectors"]
        .as_array()
        .expect("vectors")
        .iter()
        .map(|v| StampVector {
            name: v["name"].as_str().unwrap().to_string(),
            cap: v["cap"].as_u64().unwrap() as usize,
            input_text: v["input_text"].as_str().unwrap().to_string(),
            result: v["result"].as_str().unwrap().to_string(),
            output_text: v["output_text"].as_str().map(str::to_string),
            measured_size: v["measured_size"].as_u64().map(|n| n as usize),
            stripped: v["stripped"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect(),
        })
        .collect()
}

/// Check one outcome against the vector; returns a description of the mismatch, if any.
fn stamp_mismatch(
    vector: &StampVector,
    outcome: &Result<(String, usize, Vec<String>), PythonStampError>,
) -> Option<String> {
    let mut expected_stripped = vector.stripped.clone();
    expected_stripped.sort();
    expected_stripped.dedup();
    match (vector.result.as_str(), outcome) {
        ("stamped", Ok((text, measured, stripped))) => {
            let want = vector.output_text.as_deref().unwrap_or_default();
            if text != want {
                return Some(format!("text {text:?}, Agenta {want:?}"));
            }
            if Some(*measured) != vector.measured_size {
                return Some(format!(
                    "measured {measured}, Agenta {:?}",
                    vector.measured_size
                ));
            }
            (stripped != &expected_stripped)
                .then(|| format!("stripped {stripped:?}, Agenta {expected_stripped:?}"))
        }
        (
            "dropped",
            Err(PythonStampError::NotStamped(NotStamped::OverCap {
                measured_bytes,
                max_bytes,
            })),
        ) => {
            (Some(*measured_bytes) != vector.measured_size || *max_bytes != vector.cap).then(|| {
                format!(
                    "over cap at {measured_bytes}/{max_bytes}, Agenta {:?}/{}",
                    vector.measured_size, vector.cap
                )
            })
        }
        (
            "dropped",
            Err(PythonStampError::NotStamped(NotStamped::Empty | NotStamped::NotAnObject)),
        ) => vector
            .measured_size
            .map(|m| format!("dropped as empty, Agenta measured {m}")),
        (result, other) => Some(format!("Agenta {result}, Gatehouse {other:?}")),
    }
}

fn python_stamp(
    vector: &StampVector,
    redaction: Redaction,
) -> Result<(String, usize, Vec<String>), PythonStampError> {
    let policy = StampPolicy {
        max_bytes: vector.cap,
        redaction,
    };
    stamp_python_text(&vector.input_text, &policy).map(|s| (s.text, s.measured_bytes, s.stripped))
}

/// Agenta-compatible mode gives Agenta's output text, measured size and stripped labels on
/// every vector, at both caps.
#[test]
fn every_stamp_vector_agrees_in_agenta_compatible_mode() {
    let Some(dir) = recorded("stamp vectors") else {
        return;
    };
    let vectors = stamp_vectors(&dir);
    assert!(vectors.len() >= 190, "only {} vectors", vectors.len());
    let caps: std::collections::BTreeSet<usize> = vectors.iter().map(|v| v.cap).collect();
    assert_eq!(caps.into_iter().collect::<Vec<_>>(), [65536, 262144]);
    let mismatches: Vec<String> = vectors
        .iter()
        .filter_map(|v| {
            stamp_mismatch(v, &python_stamp(v, Redaction::AgentaCompatible))
                .map(|m| format!("{} (cap {}): {m}", v.name, v.cap))
        })
        .collect();
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}

/// Credential keys (any letter case) inside the connection-bearing entries of a config:
/// `agent.mcps`/`agent.tools` entries and their `connection`/`call` objects, and the same
/// lists at the top level (a bare template). `keep` says which `(key, value, in_agent)`
/// count.
fn credential_keys(
    input: &gatehouse_wire::pyjson::PyValue,
    keep: &dyn Fn(&str, &gatehouse_wire::pyjson::PyValue, bool) -> bool,
) -> bool {
    use gatehouse_wire::pyjson::{PyDict, PyValue};
    let credential = |key: &str| {
        key.eq_ignore_ascii_case("headers") || key.eq_ignore_ascii_case("authorization")
    };
    let here = |map: &PyDict, in_agent: bool| {
        map.iter()
            .any(|(k, v)| credential(k) && keep(k, v, in_agent))
    };
    let entry_has = |entry: &PyValue, in_agent: bool| {
        let PyValue::Dict(map) = entry else {
            return false;
        };
        here(map, in_agent)
            || ["connection", "call"]
                .iter()
                .any(|nested| match map.get(*nested) {
                    Some(PyValue::Dict(inner)) => here(inner, in_agent),
                    _ => false,
                })
    };
    let lists_have = |container: &PyDict, in_agent: bool| {
        ["mcps", "tools"]
            .iter()
            .any(|list| match container.get(*list) {
                Some(PyValue::List(entries)) => entries.iter().any(|e| entry_has(e, in_agent)),
                _ => false,
            })
    };
    let PyValue::Dict(top) = input else {
        return false;
    };
    let agent = matches!(top.get("agent"), Some(PyValue::Dict(agent)) if lists_have(agent, true));
    agent || lists_have(top, false)
}

/// True when a C2 departure can change the stamp of `input`: a credential key in another
/// letter case in an `agent.mcps`/`agent.tools` entry, or any credential key in a bare
/// template's top-level `mcps`/`tools` (null ones included: they are popped once something
/// else is stripped).
fn has_c2_trigger(input: &gatehouse_wire::pyjson::PyValue) -> bool {
    credential_keys(input, &|key, _, in_agent| {
        !in_agent || !(key == "headers" || key == "authorization")
    })
}

/// True when a credential key (any letter case) with a non-null value is left in a
/// connection-bearing entry, at the agent level or in a bare template.
fn leaks_a_credential(output: &gatehouse_wire::pyjson::PyValue) -> bool {
    use gatehouse_wire::pyjson::PyValue;
    credential_keys(output, &|_, value, _| value != &PyValue::Null)
}

/// The default (Gatehouse) mode differs from Agenta only where a C2 departure applies:
/// everywhere else it gives Agenta's text and size; where one applies, it strips at least
/// what Agenta strips and leaves no credential-keyed value in a connection-bearing entry.
#[test]
fn every_stamp_vector_agrees_in_default_mode_except_the_c2_departures() {
    let Some(dir) = recorded("stamp vectors") else {
        return;
    };
    let mut departures = 0;
    for vector in stamp_vectors(&dir) {
        let gatehouse = python_stamp(&vector, Redaction::Gatehouse);
        let Ok(input) = gatehouse_wire::pyjson::loads(&vector.input_text) else {
            panic!("{}: Python reads this input", vector.name);
        };
        if !has_c2_trigger(&input) {
            assert_eq!(
                stamp_mismatch(&vector, &gatehouse),
                None,
                "{} (cap {}): differs without a C2 departure",
                vector.name,
                vector.cap
            );
            continue;
        }
        departures += 1;
        let agenta = python_stamp(&vector, Redaction::AgentaCompatible);
        match (&gatehouse, &agenta) {
            (Ok((text, measured, stripped)), Ok((_, agenta_measured, agenta_stripped))) => {
                assert_eq!(*measured, text.len(), "{}", vector.name);
                assert!(measured <= agenta_measured, "{}", vector.name);
                assert!(
                    agenta_stripped.iter().all(|s| stripped.contains(s)),
                    "{}: {stripped:?} vs {agenta_stripped:?}",
                    vector.name
                );
                let again = gatehouse_wire::pyjson::loads(text).unwrap();
                assert!(!leaks_a_credential(&again), "{}: {text}", vector.name);
            }
            (Err(PythonStampError::NotStamped(NotStamped::OverCap { .. })), _) => {}
            (Ok(_), Err(PythonStampError::NotStamped(NotStamped::OverCap { .. }))) => {}
            other => panic!("{}: {other:?}", vector.name),
        }
    }
    assert!(departures > 0, "no vector exercises a C2 departure");
}

/// The library's stamp over `serde_json::Value` (what the SDK builder and the server use)
/// agrees on every vector serde_json can read (it refuses NaN, Infinity and lone
/// surrogates, which only Python's reader lets through).
#[test]
fn the_value_stamp_agrees_on_every_vector_serde_json_reads() {
    let Some(dir) = recorded("stamp vectors") else {
        return;
    };
    let mut checked = 0;
    for vector in stamp_vectors(&dir) {
        let Ok(input) = serde_json::from_str::<Value>(&vector.input_text) else {
            continue;
        };
        let policy = StampPolicy {
            max_bytes: vector.cap,
            redaction: Redaction::AgentaCompatible,
        };
        let outcome = stamp_effective_parameters(input, &policy)
            .map(|s| {
                let text = python_json_dumps(&Value::Object(s.parameters));
                assert_eq!(text.len(), s.measured_bytes, "{}", vector.name);
                (text, s.measured_bytes, s.stripped)
            })
            .map_err(PythonStampError::from);
        if let Some(mismatch) = stamp_mismatch(&vector, &outcome) {
            panic!("{} (cap {}): {mismatch}", vector.name, vector.cap);
        }
        checked += 1;
    }
    assert!(checked >= 180, "only {checked} vectors read by serde_json");
}
