//! Agenta's durable session control (v0.121+; `agenta/durable/`, see its PROVENANCE.md):
//! every example body, request and SSE frame of the folder, each one a test.
//!
//! For each, the body is read into its `gatehouse_wire::sessions` type (chosen by the
//! example's route, the file name's prefix, and its status) and written back: the text
//! must be byte for byte the compact serialization of the original. The written JSON must
//! validate against Agenta's schema for that type (the serialization-mode schema where
//! there is one) and against ours (`schema/`). SSE frames are read from their text and
//! written back to the same text.
//!
//! The examples are iterated, never listed: a new example is tested as soon as it is
//! laid out, and one whose route this test does not know fails it. Skipped (one line)
//! when the fixtures are absent outside CI.

// Test code: a broken fixture should fail the test loudly, here and in helpers.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// The test reports on stderr what it checked.
#![allow(clippy::print_stderr)]

use std::path::{Path, PathBuf};

use gatehouse_tests::committed_schema;
use gatehouse_wire::sessions::SessionEventsFrame;
use gatehouse_wire::{from_json_value, schema, WireDecodeError};
use serde_json::Value;

/// The upstream conformance suite.
const SUITE: &str = "Agenta durable session control (tests/agenta_durable.rs)";

/// `agenta/durable/`, or `None` (skip) when it is not laid out.
fn durable_dir() -> Option<PathBuf> {
    gatehouse_fixtures::require_file(
        gatehouse_fixtures::Upstream::Agenta,
        SUITE,
        "durable/PROVENANCE.md",
    )
    .map(|file| file.parent().unwrap().to_path_buf())
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Every `examples/*.json`, sorted, as `(file name, document)`.
fn examples(dir: &Path) -> Vec<(String, Value)> {
    let examples = dir.join("examples");
    let mut names: Vec<String> = std::fs::read_dir(&examples)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".json"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let document = read_json(&examples.join(&name));
            (name, document)
        })
        .collect()
}

/// One route of the examples: the file-name prefix, the type of its request body, of its
/// success body, and of its error bodies.
struct Route {
    prefix: &'static str,
    request: Option<&'static str>,
    success: &'static str,
    error: &'static str,
}

const ROUTES: &[Route] = &[
    Route {
        prefix: "respond.",
        request: Some("SessionInteractionRespondRequest"),
        success: "SessionInteractionContinuationResponse",
        error: "ErrorEnvelope",
    },
    Route {
        prefix: "legacy.respond.",
        request: Some("RespondRequest"),
        success: "InteractionResponse",
        error: "FastApiErrorBody",
    },
    Route {
        prefix: "cancel.",
        request: Some("SessionCancelRequest"),
        success: "SessionCancelResponse",
        error: "CancelError",
    },
    Route {
        prefix: "continuations.resume.",
        request: None,
        success: "SessionContinuationResumeResponse",
        error: "FastApiErrorBody",
    },
    Route {
        prefix: "snapshot.",
        request: None,
        success: "SessionSnapshotResponse",
        error: "FastApiErrorBody",
    },
    Route {
        prefix: "streams.fetch.",
        request: None,
        success: "SessionStreamResponse",
        error: "FastApiErrorBody",
    },
    Route {
        prefix: "inputs.delete.",
        request: None,
        success: "PendingInputResponse",
        error: "DetailWrappedEnvelope",
    },
    Route {
        prefix: "capabilities",
        request: None,
        success: "SessionCapabilities",
        error: "FastApiErrorBody",
    },
];

fn route_of(file: &str) -> &'static Route {
    ROUTES
        .iter()
        .find(|route| file.starts_with(route.prefix))
        .unwrap_or_else(|| panic!("{file}: no route of this test has its prefix; add one"))
}

/// The type of an error body: the envelope wherever it is top-level, FastAPI's own
/// request validation (`detail` a list) on any route, else the route's error form.
fn error_type(route: &Route, body: &Value) -> &'static str {
    if body.get("code").is_some() {
        "ErrorEnvelope"
    } else if body.get("detail").is_some_and(Value::is_array) {
        "FastApiErrorBody"
    } else {
        route.error
    }
}

/// The type of an SSE `data` object, by its `kind` (or relay-close's keys).
fn data_type(data: &Value) -> &'static str {
    match data.get("kind").and_then(Value::as_str) {
        Some("event") => "SessionDurableEvent",
        Some("frame") => "SessionLiveFrame",
        _ if data.get("reconnect").is_some() => "SessionRelayClose",
        other => panic!("an SSE data object of kind {other:?}"),
    }
}

/// Read `document` as the type `name` and write it back as compact text.
fn round_trip(name: &str, document: &Value) -> Result<String, WireDecodeError> {
    use gatehouse_wire::{error, interaction, sessions};
    macro_rules! via {
        ($t:ty) => {
            from_json_value::<$t>(document.clone()).map(|v| serde_json::to_string(&v).unwrap())
        };
    }
    match name {
        "SessionInteractionRespondRequest" => via!(sessions::SessionInteractionRespondRequest),
        "SessionInteractionContinuationResponse" => {
            via!(sessions::SessionInteractionContinuationResponse)
        }
        "SessionContinuationResumeResponse" => via!(sessions::SessionContinuationResumeResponse),
        "ErrorEnvelope" => via!(sessions::ErrorEnvelope),
        "DetailWrappedEnvelope" => via!(sessions::DetailWrappedEnvelope),
        "SessionCancelRequest" => via!(sessions::SessionCancelRequest),
        "SessionCancelResponse" => via!(sessions::SessionCancelResponse),
        "CancelError" => via!(sessions::CancelError),
        "SessionSnapshotResponse" => via!(sessions::SessionSnapshotResponse),
        "SessionStreamResponse" => via!(sessions::SessionStreamResponse),
        "PendingInputResponse" => via!(sessions::PendingInputResponse),
        "SessionDurableEvent" => via!(sessions::SessionDurableEvent),
        "SessionLiveFrame" => via!(sessions::SessionLiveFrame),
        "SessionRelayClose" => via!(sessions::SessionRelayClose),
        "SessionCapabilities" => via!(sessions::SessionCapabilities),
        "InteractionResponse" => via!(interaction::InteractionResponse),
        "RespondRequest" => via!(interaction::RespondRequest),
        "FastApiErrorBody" => via!(error::FastApiErrorBody),
        other => panic!("no reader for {other}"),
    }
}

/// Agenta's schema for our type `name`: its serialization-mode schema, else its
/// hand-written one; `None` when the fixtures have none (FastAPI's own bodies, the
/// relay-close data).
fn upstream_schema(dir: &Path, name: &str) -> Option<(String, Value)> {
    // Agenta's name where ours differs (the legacy respond's `{count, interaction}`).
    let upstream = match name {
        "InteractionResponse" => "SessionInteractionResponse",
        other => other,
    };
    [
        format!("{upstream}.serialization.schema.json"),
        format!("{upstream}.schema.json"),
    ]
    .into_iter()
    .find(|file| dir.join("schemas").join(file).is_file())
    .map(|file| {
        let schema = read_json(&dir.join("schemas").join(&file));
        (file, schema)
    })
}

fn errors_against(schema: &Value, instance: &Value) -> Vec<String> {
    let validator = jsonschema::validator_for(schema).expect("a valid JSON Schema");
    validator
        .iter_errors(instance)
        .map(|e| format!("{e} (at {})", e.instance_path()))
        .collect()
}

#[derive(Default)]
struct Tally {
    bodies: usize,
    byte_identical: usize,
    upstream_valid: usize,
    ours_valid: usize,
    without_upstream_schema: Vec<String>,
    frames: usize,
    frames_identical: usize,
    frames_upstream_valid: usize,
}

/// Read, write back, compare, validate one JSON body; every failure is pushed to `failures`.
fn check_body(
    dir: &Path,
    what: &str,
    name: &str,
    body: &Value,
    tally: &mut Tally,
    failures: &mut Vec<String>,
) {
    tally.bodies += 1;
    let original = serde_json::to_string(body).unwrap();
    let written = match round_trip(name, body) {
        Ok(text) => text,
        Err(err) => {
            failures.push(format!("{what}: {name} does not read it: {err}"));
            return;
        }
    };
    if written == original {
        tally.byte_identical += 1;
    } else {
        failures.push(format!(
            "{what}: {name} writes it back differently:\n  read    {original}\n  written {written}"
        ));
    }
    let written: Value = serde_json::from_str(&written).unwrap();
    match upstream_schema(dir, name) {
        Some((file, schema)) => {
            let errors = errors_against(&schema, &written);
            if errors.is_empty() {
                tally.upstream_valid += 1;
            } else {
                failures.push(format!(
                    "{what}: Agenta's {file} rejects {name}: {errors:?}"
                ));
            }
        }
        None => tally
            .without_upstream_schema
            .push(format!("{what} ({name})")),
    }
    let ours = schema::by_name(name).unwrap_or_else(|| panic!("{name} is not registered"));
    let errors = errors_against(&committed_schema(ours.file_name), &written);
    if errors.is_empty() {
        tally.ours_valid += 1;
    } else {
        failures.push(format!(
            "{what}: our {} rejects it: {errors:?}",
            ours.file_name
        ));
    }
}

/// One SSE frame's text: read, written back to the same text, valid for Agenta's frame
/// schema; its data, when it has one, checked as a body.
fn check_frame(dir: &Path, what: &str, raw: &str, tally: &mut Tally, failures: &mut Vec<String>) {
    tally.frames += 1;
    let frame = match SessionEventsFrame::parse(raw) {
        Ok(frame) => frame,
        Err(err) => {
            failures.push(format!("{what}: the frame does not read: {err}"));
            return;
        }
    };
    if matches!(frame, SessionEventsFrame::Unknown(_)) {
        failures.push(format!("{what}: a frame this version should know: {raw:?}"));
    }
    match frame.to_sse() {
        Ok(text) if text == raw => tally.frames_identical += 1,
        Ok(text) => failures.push(format!(
            "{what}: written back differently:\n  read    {raw:?}\n  written {text:?}"
        )),
        Err(err) => failures.push(format!("{what}: cannot be written: {err}")),
    }
    if let Some((file, schema)) = upstream_schema(dir, "EventsFrame") {
        let errors = errors_against(&schema, &Value::String(raw.to_string()));
        if errors.is_empty() {
            tally.frames_upstream_valid += 1;
        } else {
            failures.push(format!("{what}: Agenta's {file} rejects it: {errors:?}"));
        }
    }
    let data = raw
        .lines()
        .find_map(|line| line.strip_prefix("data: "))
        .map(|text| serde_json::from_str::<Value>(text).unwrap());
    if let Some(data) = data.filter(|d| d.as_object().is_some_and(|m| !m.is_empty())) {
        check_body(
            dir,
            &format!("{what} data"),
            data_type(&data),
            &data,
            tally,
            failures,
        );
    }
}

// upstream conformance: Agenta durable session control
#[test]
fn every_durable_example_reads_writes_back_byte_for_byte_and_validates() {
    let Some(dir) = durable_dir() else {
        return;
    };
    let mut tally = Tally::default();
    let mut failures = Vec::new();
    let examples = examples(&dir);
    assert!(!examples.is_empty(), "no examples in {}", dir.display());
    for (file, example) in &examples {
        if file.starts_with("events.") {
            let response = &example["response"];
            if let Some(data) = response.get("sse_data") {
                check_body(&dir, file, data_type(data), data, &mut tally, &mut failures);
            }
            if let Some(raw) = response.get("raw").and_then(Value::as_str) {
                check_frame(&dir, file, raw, &mut tally, &mut failures);
            }
            for (index, frame) in response["frames"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
            {
                let what = format!("{file} frame {index}");
                check_frame(
                    &dir,
                    &what,
                    frame["raw"].as_str().unwrap(),
                    &mut tally,
                    &mut failures,
                );
                if let Some(data) = frame.get("data") {
                    check_body(
                        &dir,
                        &what,
                        data_type(data),
                        data,
                        &mut tally,
                        &mut failures,
                    );
                }
            }
            continue;
        }
        let route = route_of(file);
        if let Some(body) = example.get("request").and_then(|r| r.get("body")) {
            let name = route
                .request
                .unwrap_or_else(|| panic!("{file}: a request body on a route without one"));
            check_body(
                &dir,
                &format!("{file} request"),
                name,
                body,
                &mut tally,
                &mut failures,
            );
        }
        if let Some(body) = example.get("response").and_then(|r| r.get("body")) {
            let status = example["response"]["status"].as_u64().unwrap();
            let name = if status < 400 {
                route.success
            } else {
                error_type(route, body)
            };
            check_body(
                &dir,
                &format!("{file} response"),
                name,
                body,
                &mut tally,
                &mut failures,
            );
        }
    }
    eprintln!(
        "agenta durable: {} examples; {} bodies, {} written back byte for byte, {} valid for Agenta's schema, {} for ours; {} SSE frames, {} written back byte for byte, {} valid for Agenta's frame schema; without an Agenta schema: {:?}",
        examples.len(),
        tally.bodies,
        tally.byte_identical,
        tally.upstream_valid,
        tally.ours_valid,
        tally.frames,
        tally.frames_identical,
        tally.frames_upstream_valid,
        tally.without_upstream_schema,
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(tally.byte_identical, tally.bodies);
    assert_eq!(tally.frames_identical, tally.frames);
}
