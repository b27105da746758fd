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

// Test code: a broken fixture or server should fail the test loudly, here and in helpers.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// The test reports on stderr what it skipped or measured.
#![allow(clippy::print_stderr)]

use std::path::PathBuf;

use gatehouse_wire::effective::{
    stamp_effective_parameters, stamp_python_text, NotStamped, PythonStampError, StampPolicy,
};
use gatehouse_wire::pyjson::python_json_dumps;
use gatehouse_wire::redact::Redaction;
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
    }) || has_credential_shaped_field(input)
}

/// True when C2's rule for credential-shaped fields can strip something of `value`: a
/// non-null key naming a credential or an `env` block anywhere, an inline `value`, a URL
/// with a secret query parameter (an over-approximation: schemas are not set apart).
fn has_credential_shaped_field(value: &gatehouse_wire::pyjson::PyValue) -> bool {
    use gatehouse_wire::pyjson::PyValue;
    use gatehouse_wire::redact::{is_credential_shaped_key, strip_url_secrets};
    match value {
        PyValue::Dict(map) => map.iter().any(|(key, inner)| {
            let strippable = inner != &PyValue::Null
                && (is_credential_shaped_key(key)
                    || key == "value"
                    || (key.eq_ignore_ascii_case("env")
                        && matches!(inner, PyValue::Dict(_) | PyValue::List(_))));
            strippable || has_credential_shaped_field(inner)
        }),
        PyValue::List(items) => items.iter().any(has_credential_shaped_field),
        PyValue::Str(text) => strip_url_secrets(text).is_some(),
        _ => false,
    }
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
// ---------------------------------------------------------------------------------------
// Fingerprint vectors
// ---------------------------------------------------------------------------------------

use gatehouse_wire::fingerprint::{
    config_fingerprint, config_fingerprint_of, config_fingerprint_variant, FingerprintVariant,
};
use gatehouse_wire::run::RunRequest;

/// Every request hashes as the runner's `configFingerprint` does, at the PR head and on
/// main, from its JSON and through the Rust type.
#[test]
fn every_fingerprint_vector_agrees_with_the_runner() {
    let Some(dir) = recorded("fingerprint vectors") else {
        return;
    };
    let file = read_json(&dir, "fingerprint_vectors.json");
    let vectors = file["vectors"].as_array().expect("vectors");
    assert!(vectors.len() >= 60, "only {} vectors", vectors.len());
    let mut mismatches = Vec::new();
    for vector in vectors {
        let id = vector["id"].as_str().unwrap();
        let request = &vector["request"];
        let head = vector["config_fingerprint"].as_str().unwrap();
        let main = vector["config_fingerprint_main_753af38"].as_str().unwrap();
        if config_fingerprint_of(request, FingerprintVariant::PrHead).as_deref() != Ok(head) {
            mismatches.push(format!("{id}: PR-head hash of the JSON"));
        }
        if config_fingerprint_of(request, FingerprintVariant::Main).as_deref() != Ok(main) {
            mismatches.push(format!("{id}: main hash of the JSON"));
        }
        match gatehouse_wire::from_json_value::<RunRequest>(request.clone()) {
            Ok(typed) => {
                if config_fingerprint(&typed) != head {
                    mismatches.push(format!("{id}: PR-head hash through RunRequest"));
                }
                if config_fingerprint_variant(&typed, FingerprintVariant::Main) != main {
                    mismatches.push(format!("{id}: main hash through RunRequest"));
                }
            }
            Err(err) => mismatches.push(format!("{id}: RunRequest refuses it: {err}")),
        }
    }
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}

/// Every change pair moves the hash exactly when the runner's moves (both variants).
#[test]
fn every_fingerprint_pair_moves_exactly_when_the_runner_does() {
    let Some(dir) = recorded("fingerprint vectors") else {
        return;
    };
    let file = read_json(&dir, "fingerprint_vectors.json");
    let by_id: std::collections::HashMap<&str, &Value> = file["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["id"].as_str().unwrap(), &v["request"]))
        .collect();
    let pairs = file["pairs"].as_array().expect("pairs");
    assert!(pairs.len() >= 10, "only {} pairs", pairs.len());
    for pair in pairs {
        let change = pair["change"].as_str().unwrap();
        let a = by_id[pair["a"].as_str().unwrap()];
        let b = by_id[pair["b"].as_str().unwrap()];
        for (variant, key) in [
            (FingerprintVariant::PrHead, "moves"),
            (FingerprintVariant::Main, "moves_main_753af38"),
        ] {
            let moves = config_fingerprint_of(a, variant) != config_fingerprint_of(b, variant);
            assert_eq!(moves, pair[key] == true, "{change} ({})", variant.as_str());
            let typed = |v: &Value| {
                let request: RunRequest = gatehouse_wire::from_json_value(v.clone())
                    .unwrap_or_else(|e| panic!("{change}: {e}"));
                config_fingerprint_variant(&request, variant)
            };
            assert_eq!(typed(a) != typed(b), moves, "{change} through RunRequest");
        }
    }
}

// ---------------------------------------------------------------------------------------
// /run requests
// ---------------------------------------------------------------------------------------

fn schema_validator(file_name: &str) -> jsonschema::Validator {
    let document = gatehouse_tests::committed_schema(file_name);
    jsonschema::validator_for(&document).unwrap_or_else(|e| panic!("{file_name}: {e}"))
}

fn schema_errors(validator: &jsonschema::Validator, document: &Value) -> Vec<String> {
    validator
        .iter_errors(document)
        .map(|e| format!("{e} (at {})", e.instance_path()))
        .collect()
}

/// Every request `request_to_wire` wrote validates against `schema/`, decodes into
/// `RunRequest` with no contract problem, and re-serializes byte for byte in Agenta's key
/// order.
#[test]
fn every_recorded_request_validates_and_round_trips_in_agenta_key_order() {
    let Some(dir) = recorded("recorded /run requests") else {
        return;
    };
    let validator = schema_validator("run_request.schema.json");
    let lines = std::fs::read_to_string(dir.join("run_requests.ndjson")).unwrap();
    let mut count = 0;
    for line in lines.lines().filter(|l| !l.trim().is_empty()) {
        // The request's own text, exactly as recorded (key order included).
        let record: Value = serde_json::from_str(line).unwrap();
        let id = record["id"].as_str().unwrap();
        let request = &record["request"];
        let errors = schema_errors(&validator, request);
        assert!(errors.is_empty(), "{id}: the schema refuses it: {errors:?}");
        let text = serde_json::to_string(request).unwrap();
        let typed: RunRequest = gatehouse_wire::from_json_slice(text.as_bytes())
            .unwrap_or_else(|e| panic!("{id}: {e}"));
        assert!(typed.problems().is_empty(), "{id}: {:?}", typed.problems());
        assert_eq!(serde_json::to_string(&typed).unwrap(), text, "{id}");
        count += 1;
    }
    assert!(count >= 30, "only {count} requests");
}

// ---------------------------------------------------------------------------------------
// Results and stream records
// ---------------------------------------------------------------------------------------

use gatehouse_wire::run::{RunResult, RunStreamRecord};

/// `result` with the events Agenta's reader drops removed (not an object, or a falsy
/// `type`): what a reader that drops them writes back.
fn without_dropped_events(result: &Value) -> Value {
    let mut result = result.clone();
    if let Some(events) = result.get_mut("events").and_then(Value::as_array_mut) {
        events.retain(|event| {
            event.as_object().is_some_and(|e| match e.get("type") {
                None | Some(Value::Null) | Some(Value::Bool(false)) => false,
                Some(Value::String(s)) => !s.is_empty(),
                Some(Value::Number(n)) => n.as_f64() != Some(0.0),
                Some(Value::Array(a)) => !a.is_empty(),
                Some(Value::Object(o)) => !o.is_empty(),
                Some(_) => true,
            })
        });
    }
    result
}

/// What Agenta's reader made of a result: its verdict (`raised`) or the parsed fields
/// Gatehouse reads too. `output` is compared unless Agenta's known-value redactor changed
/// it (redaction of result text is not this reader's job).
fn check_result_against_agenta(id: &str, ours: &RunResult, agenta: &Value) {
    if agenta.get("raised").is_some() {
        assert!(!ours.ok, "{id}: Agenta raised, Gatehouse reads ok");
        return;
    }
    let parsed = &agenta["parsed"];
    assert!(ours.ok, "{id}: Agenta parsed it, Gatehouse reads a failure");
    let text = |v: &Value| v.as_str().map(str::to_string);
    assert_eq!(ours.stop_reason, text(&parsed["stop_reason"]), "{id}");
    assert_eq!(ours.session_id, text(&parsed["session_id"]), "{id}");
    assert_eq!(ours.model, text(&parsed["model"]), "{id}");
    assert_eq!(ours.trace_id, text(&parsed["trace_id"]), "{id}");
    let redacted = parsed.to_string().contains("[ag:redacted");
    if !redacted {
        assert_eq!(
            ours.output.clone().unwrap_or_default(),
            parsed["output"].as_str().unwrap_or_default(),
            "{id}"
        );
    }
    let types: Vec<String> = ours
        .events
        .iter()
        .flatten()
        .map(|e| e.event_type().to_string())
        .collect();
    let agenta_types: Vec<String> = parsed["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(types, agenta_types, "{id}: events");
    let usage = serde_json::to_value(&ours.usage).unwrap();
    assert_eq!(usage, parsed["usage"], "{id}: usage");
    let messages = ours.messages.as_ref().map_or(0, Vec::len);
    assert_eq!(
        messages,
        parsed["messages"].as_array().unwrap().len(),
        "{id}"
    );
}

/// Every result the tests handed `result_from_wire` decodes, re-serializes equal (less
/// the events Agenta's reader drops), and reads as Agenta read it.
#[test]
fn every_recorded_result_decodes_and_reads_as_agenta_reads_it() {
    let Some(dir) = recorded("recorded /run results") else {
        return;
    };
    let validator = schema_validator("run_result.schema.json");
    let mut count = 0;
    for record in read_ndjson(&dir, "run_results.ndjson") {
        let id = record["id"].as_str().unwrap();
        let result = &record["result"];
        let errors = schema_errors(&validator, result);
        assert!(errors.is_empty(), "{id}: the schema refuses it: {errors:?}");
        let ours: RunResult =
            gatehouse_wire::from_json_value(result.clone()).unwrap_or_else(|e| panic!("{id}: {e}"));
        assert_eq!(
            serde_json::to_value(&ours).unwrap(),
            without_dropped_events(result),
            "{id}"
        );
        check_result_against_agenta(id, &ours, &record["agenta_reads"]);
        count += 1;
    }
    assert!(count >= 20, "only {count} results");
}

/// Every NDJSON record fed to Agenta's `AgentStream` is read or dropped as it was: an
/// event Agenta kept is read with the same type, one it dropped is dropped, a result
/// reads as Agenta read it; what is read re-serializes equal.
#[test]
fn every_recorded_stream_record_is_read_or_dropped_as_agenta_does() {
    let Some(dir) = recorded("recorded stream records") else {
        return;
    };
    let mut kept = 0;
    let mut dropped = 0;
    for record in read_ndjson(&dir, "stream_records.ndjson") {
        let at = format!("{}[{}]", record["stream"], record["index"]);
        let line = serde_json::to_string(&record["record"]).unwrap();
        let agenta = &record["agenta_reads"];
        let ours = RunStreamRecord::from_ndjson_line(&line).unwrap_or_else(|e| panic!("{at}: {e}"));
        match (&ours, record["record"]["kind"].as_str()) {
            (None, _) => {
                assert!(
                    agenta.get("dropped").is_some(),
                    "{at}: Gatehouse dropped what Agenta read: {agenta}"
                );
                dropped += 1;
            }
            (Some(RunStreamRecord::Event { event }), Some("event")) => {
                assert_eq!(
                    Some(event.event_type()),
                    agenta["event_type"].as_str(),
                    "{at}"
                );
                assert_eq!(
                    serde_json::to_value(event).unwrap(),
                    record["record"]["event"],
                    "{at}"
                );
                kept += 1;
            }
            (Some(RunStreamRecord::Result { result }), Some("result")) => {
                check_result_against_agenta(&at, result, agenta);
                assert_eq!(
                    serde_json::to_value(result.as_ref()).unwrap(),
                    without_dropped_events(&record["record"]["result"]),
                    "{at}"
                );
                kept += 1;
            }
            (other, kind) => panic!("{at}: {kind:?} read as {other:?}"),
        }
    }
    assert!(kept >= 100, "only {kept} records read");
    eprintln!("stream records: {kept} read, {dropped} dropped");
}

// ---------------------------------------------------------------------------------------
// Interaction rows
// ---------------------------------------------------------------------------------------

use gatehouse_wire::interaction::{InteractionResponse, InteractionsResponse};

/// Every row Agenta's API rendered validates against `schema/`, decodes, and re-serializes
/// byte for byte (Agenta's key order, its `null`s), also through the writer the server
/// answers rows with (`agenta_api_json`).
#[test]
fn every_recorded_row_validates_and_round_trips_byte_for_byte() {
    let Some(dir) = recorded("recorded interaction rows") else {
        return;
    };
    let one = schema_validator("interaction_response.schema.json");
    let many = schema_validator("interactions_response.schema.json");
    let mut count = 0;
    for record in read_ndjson(&dir, "interaction_rows.ndjson") {
        let id = record["id"].as_str().unwrap();
        let doc = &record["doc"];
        let text = serde_json::to_string(doc).unwrap();
        let again = match record["model"].as_str().unwrap() {
            "SessionInteractionResponse" => {
                let errors = schema_errors(&one, doc);
                assert!(errors.is_empty(), "{id}: {errors:?}");
                let typed: InteractionResponse = gatehouse_wire::from_json_slice(text.as_bytes())
                    .unwrap_or_else(|e| panic!("{id}: {e}"));
                serde_json::to_string(&typed).unwrap()
            }
            "SessionInteractionsResponse" => {
                let errors = schema_errors(&many, doc);
                assert!(errors.is_empty(), "{id}: {errors:?}");
                let typed: InteractionsResponse = gatehouse_wire::from_json_slice(text.as_bytes())
                    .unwrap_or_else(|e| panic!("{id}: {e}"));
                serde_json::to_string(&typed).unwrap()
            }
            other => panic!("{id}: unknown model {other}"),
        };
        assert_eq!(again, text, "{id}");
        // And as the server answers it: Agenta's API rendering (compact, numbers as pydantic
        // spells them) is the recorded body itself.
        let typed: Value = serde_json::from_str(&again).unwrap();
        assert_eq!(
            gatehouse_wire::agenta_api_json::to_agenta_api_json(&typed).unwrap(),
            text,
            "{id}"
        );
        count += 1;
    }
    assert!(count >= 45, "only {count} rows");
}

// ---------------------------------------------------------------------------------------
// Documents the schema refuses
// ---------------------------------------------------------------------------------------

/// The recorded requests that break the contract, and why. They are the fingerprint pairs'
/// hand-made variants (Agenta's SDK never writes them); the type still reads each one (the
/// runner hashes them) while the schema, the exact writer's view, refuses them.
const REFUSED_REQUESTS: [(&str, &str); 6] = [
    (
        "pair-04-b",
        "`permissions.rules: []`: written only when non-empty",
    ),
    ("pair-05-b", "`skills: []`: written only when non-empty"),
    ("pair-06-b", "`mcpServers: []`: written only when non-empty"),
    ("pair-08-b", "`systemPrompt: null`: omitted, never null"),
    ("pair-10-a", "`harnessMode: \"turbo\"`: not a codex mode"),
    (
        "pair-14-b",
        "`runContext.workflow: {}`: an empty part is omitted",
    ),
];

/// Every request of the fingerprint vectors validates against `schema/`, except the listed
/// ones, which are refused for the listed reason; every one is read by `RunRequest`.
#[test]
fn every_fingerprint_request_validates_except_the_listed_contract_breaks() {
    let Some(dir) = recorded("fingerprint vectors against the schema") else {
        return;
    };
    let validator = schema_validator("run_request.schema.json");
    let file = read_json(&dir, "fingerprint_vectors.json");
    let mut refused = Vec::new();
    for vector in file["vectors"].as_array().unwrap() {
        let id = vector["id"].as_str().unwrap();
        let request = &vector["request"];
        gatehouse_wire::from_json_value::<RunRequest>(request.clone())
            .unwrap_or_else(|e| panic!("{id}: the type refuses it: {e}"));
        let errors = schema_errors(&validator, request);
        match REFUSED_REQUESTS.iter().find(|(refused, _)| *refused == id) {
            Some((_, reason)) => {
                assert!(!errors.is_empty(), "{id} must be refused: {reason}");
                refused.push(id.to_string());
            }
            None => assert!(errors.is_empty(), "{id}: {errors:?}"),
        }
    }
    assert_eq!(refused.len(), REFUSED_REQUESTS.len(), "{refused:?}");
}
