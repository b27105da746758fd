//! The wire contract, end to end: documents x our JSON Schema (the committed `schema/`
//! files) x our Rust types.
//!
//! Two kinds of tests live here. The project's own, over the documents committed under
//! `tests/data/` (written from CONTRACT.md's facts; they need nothing outside this
//! repository). And the upstream conformance suites over Agenta's fixtures, marked
//! `// upstream conformance: <suite>`, which find the fixtures through
//! `gatehouse_fixtures` and are skipped, with one line, when they are absent (required
//! under `CI=true`).

// Test code: a broken fixture or server should fail the test loudly, here and in helpers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use gatehouse_tests::{
    agenta_fixture, agenta_fixture_text, committed_schema, documents_in, sample, schema_dir,
};
use gatehouse_wire::effective::{
    stamp_effective_parameters, NotStamped, StampOutcome, StampPolicy,
};
use gatehouse_wire::fingerprint::config_fingerprint;
use gatehouse_wire::interaction::{ApprovalAnswer, SessionInteraction};
use gatehouse_wire::pyjson::python_json_dumps_len;
use gatehouse_wire::redact::Redaction;
use gatehouse_wire::resume::{build_resume_request, should_hydrate_from_references};
use gatehouse_wire::run::{
    ChatMessage, HarnessMode, RunRequest, RunResult, RunStreamRecord, ToolCallback,
};
use gatehouse_wire::{from_json_slice, from_json_value, schema, WireDecodeError};
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap()
}

fn validator(name: &str) -> jsonschema::Validator {
    let entry = schema::by_name(name).unwrap_or_else(|| panic!("{name} is not registered"));
    let document = committed_schema(entry.file_name);
    jsonschema::validator_for(&document)
        .unwrap_or_else(|e| panic!("{} is not a valid JSON Schema: {e}", entry.file_name))
}

fn schema_errors(name: &str, document: &Value) -> Vec<String> {
    validator(name)
        .iter_errors(document)
        .map(|e| format!("{e} (at {})", e.instance_path()))
        .collect()
}

/// Decode `document` as the registered type `name` and serialize it back.
fn decode(name: &str, document: &Value) -> Result<Value, WireDecodeError> {
    use gatehouse_wire::{capabilities, error, execution, interaction, invoke, run, sessions};
    macro_rules! via {
        ($t:ty) => {
            from_json_value::<$t>(document.clone()).map(|v| serde_json::to_value(&v).unwrap())
        };
    }
    match name {
        "RunRequest" => via!(run::RunRequest),
        "RunResult" => via!(run::RunResult),
        "RunStreamRecord" => via!(run::RunStreamRecord),
        "SessionInteraction" => via!(interaction::SessionInteraction),
        "InteractionResponse" => via!(interaction::InteractionResponse),
        "InteractionsResponse" => via!(interaction::InteractionsResponse),
        "InteractionQueryRequest" => via!(interaction::InteractionQueryRequest),
        "RespondRequest" => via!(interaction::RespondRequest),
        "ApprovalAnswer" => via!(interaction::ApprovalAnswer),
        "CreateInteractionRequest" => via!(interaction::CreateInteractionRequest),
        "TransitionRequest" => via!(interaction::TransitionRequest),
        "CancelStaleRequest" => via!(interaction::CancelStaleRequest),
        "CancelStaleResponse" => via!(interaction::CancelStaleResponse),
        "WatchEvent" => via!(interaction::WatchEvent),
        "ExecutionSession" => via!(execution::ExecutionSession),
        "ExecutionSessionResponse" => via!(execution::DataEnvelope<execution::ExecutionSession>),
        "Intervention" => via!(execution::Intervention),
        "ExecutionEvent" => via!(execution::ExecutionEvent),
        "ExecutionEventsResponse" => via!(execution::DataEnvelope<Vec<execution::ExecutionEvent>>),
        "RequestInterventionBody" => via!(execution::RequestInterventionBody),
        "StreamEnvelope" => via!(execution::StreamEnvelope),
        "BatchRespondRequest" => via!(gatehouse_wire::batch::BatchRespondRequest),
        "BatchRespondResponse" => via!(gatehouse_wire::batch::BatchRespondResponse),
        "ChangeAuthorityBody" => via!(execution::ChangeAuthorityBody),
        "FastApiErrorBody" => via!(error::FastApiErrorBody),
        "AgentPlatErrorEnvelope" => via!(error::AgentPlatErrorEnvelope),
        "InvokeRequest" => via!(invoke::InvokeRequest),
        "InvokeResponse" => via!(invoke::InvokeResponse),
        "TurnsResponse" => via!(invoke::TurnsResponse),
        "CommitRevisionRequest" => via!(invoke::CommitRevisionRequest),
        "CommitRevisionResponse" => via!(invoke::CommitRevisionResponse),
        "CapabilitiesResponse" => via!(capabilities::CapabilitiesResponse),
        "ReadinessResponse" => via!(gatehouse_wire::health::ReadinessResponse),
        "WebhookDeliveriesResponse" => via!(gatehouse_wire::webhooks::WebhookDeliveriesResponse),
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
        "SessionCommand" => via!(sessions::SessionCommand),
        "SessionSnapshotResponse" => via!(sessions::SessionSnapshotResponse),
        "SessionStreamResponse" => via!(sessions::SessionStreamResponse),
        "PendingInputResponse" => via!(sessions::PendingInputResponse),
        "SessionDurableEvent" => via!(sessions::SessionDurableEvent),
        "SessionLiveFrame" => via!(sessions::SessionLiveFrame),
        "SessionRelayClose" => via!(sessions::SessionRelayClose),
        "SessionCapabilities" => via!(sessions::SessionCapabilities),
        other => panic!("no decoder for {other}: add it here and a sample below"),
    }
}

/// The CONTRACT.md A4 example row, verbatim (`tests/data/samples`).
fn a4_row() -> Value {
    sample("SessionInteraction.contract.json")
}

/// Our own session run: 26 of A1's 32 keys in emission order (all but the six that came
/// with 0.125.1: `platformInstructions`, `sandboxCredentials`, `gatewayPolicy`,
/// `turnContext`, `detached`, `controlCommandId`), codex (the only harness that carries
/// `harnessMode`), with a stamp.
fn session_run() -> Value {
    sample("RunRequest.session_run_all_keys.json")
}

/// Our own ad-hoc (non-session) run: only the always-emitted keys.
fn adhoc_run() -> Value {
    sample("RunRequest.adhoc_minimal.json")
}

/// Every own sample, `(type name, document)`: one or more per registered type.
fn samples() -> Vec<(String, Value)> {
    documents_in("samples")
        .into_iter()
        .map(|(name, _, document)| (name, document))
        .collect()
}

fn assert_valid_and_round_trips(name: &str, document: &Value) {
    let errors = schema_errors(name, document);
    assert!(
        errors.is_empty(),
        "{name}: schema rejects a valid document: {errors:?}"
    );
    let again = decode(name, document).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(
        compact(&again),
        compact(document),
        "{name}: round trip changed the document"
    );
}

// ---------------------------------------------------------------------------------------
// Goldens
// ---------------------------------------------------------------------------------------

const RUN_REQUEST_GOLDENS: [&str; 4] = [
    "run_request.pi_core.json",
    "run_request.claude.json",
    "run_request.codex.json",
    "run_request.attachment.json",
];

/// The upstream conformance suite of Agenta's `/run` goldens.
const GOLDENS: &str = "Agenta /run goldens (tests/contract.rs)";

// upstream conformance: Agenta /run goldens
#[test]
fn run_request_goldens_parse_validate_and_round_trip_in_key_order() {
    for file in RUN_REQUEST_GOLDENS {
        let Some(text) = agenta_fixture_text(GOLDENS, file) else {
            return;
        };
        let golden: Value = serde_json::from_str(&text).unwrap();
        let errors = schema_errors("RunRequest", &golden);
        assert!(errors.is_empty(), "{file}: {errors:?}");
        let request: RunRequest =
            from_json_slice(text.as_bytes()).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(
            request.problems().is_empty(),
            "{file}: {:?}",
            request.problems()
        );
        // Same value AND same key order at every depth (preserve_order).
        assert_eq!(
            serde_json::to_string(&request).unwrap(),
            compact(&golden),
            "{file}"
        );
        assert_eq!(
            serde_json::to_string_pretty(&request).unwrap(),
            serde_json::to_string_pretty(&golden).unwrap()
        );
    }
}

// upstream conformance: Agenta /run goldens
#[test]
fn run_result_goldens_parse_validate_and_round_trip() {
    let (Some(error), Some(ok)) = (
        agenta_fixture(GOLDENS, "run_result.error.json"),
        agenta_fixture(GOLDENS, "run_result.ok.json"),
    ) else {
        return;
    };
    assert_valid_and_round_trips("RunResult", &error);

    let errors = schema_errors("RunResult", &ok);
    assert!(
        errors.is_empty(),
        "the schema accepts the typeless event: {errors:?}"
    );
    let parsed: RunResult = from_json_value(ok.clone()).unwrap();
    // Decoding the file's bytes gives the same result as decoding its parsed value.
    for file in ["run_result.ok.json", "run_result.error.json"] {
        let text = agenta_fixture_text(GOLDENS, file).unwrap();
        let from_bytes: RunResult =
            from_json_slice(text.as_bytes()).unwrap_or_else(|e| panic!("{file}: {e}"));
        let from_value: RunResult = from_json_value(serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(from_bytes, from_value, "{file}");
    }
    let mut expected = ok;
    expected["events"]
        .as_array_mut()
        .unwrap()
        .retain(|e| e.get("type").is_some());
    assert_eq!(serde_json::to_string(&parsed).unwrap(), compact(&expected));
}

#[test]
fn a_run_result_drops_its_typeless_event() {
    let mut ok = sample("RunResult.ok.json");
    ok["events"]
        .as_array_mut()
        .unwrap()
        .push(json!({"text": "an event without a type"}));
    ok["events"][1]["cost"] = json!(0.001);
    assert!(
        schema_errors("RunResult", &ok).is_empty(),
        "accepted on the wire"
    );
    let parsed: RunResult = from_json_value(ok).unwrap();
    let events = parsed.events.unwrap();
    let types: Vec<&str> = events.iter().map(|e| e.event_type()).collect();
    assert_eq!(types, ["message", "usage", "done"], "dropped on parse");
    assert_eq!(events[1].get("cost"), Some(&json!(0.001)));

    // A truthy `type` that is not a string is read as Agenta's `str()` reads it; the
    // schema (what a runner should write) refuses it.
    let mut odd = sample("RunResult.ok.json");
    odd["events"][0]["type"] = json!(7);
    assert!(!schema_errors("RunResult", &odd).is_empty());
    let parsed: RunResult = from_json_value(odd).unwrap();
    assert_eq!(parsed.events.unwrap()[0].event_type(), "7");
    // A falsy one is dropped, as Agenta drops it.
    let count = sample("RunResult.ok.json")["events"]
        .as_array()
        .unwrap()
        .len();
    for falsy in [json!(0), json!(false), json!(""), json!([]), json!({})] {
        let mut doc = sample("RunResult.ok.json");
        doc["events"][0]["type"] = falsy.clone();
        let parsed: RunResult = from_json_value(doc).unwrap();
        assert_eq!(parsed.events.unwrap().len(), count - 1, "type {falsy}");
    }
}

#[test]
fn ndjson_stream_records_round_trip_and_typeless_events_are_skipped() {
    let ok = sample("RunResult.ok.json");
    let result: RunResult = from_json_value(ok).unwrap();
    let lines = [
        r#"{"kind":"event","event":{"type":"message","text":"Hello!"}}"#.to_string(),
        format!(
            r#"{{"kind":"result","result":{}}}"#,
            serde_json::to_string(&result).unwrap()
        ),
    ];
    for line in &lines {
        let record = RunStreamRecord::from_ndjson_line(line).unwrap().unwrap();
        assert_eq!(&record.to_ndjson_line(), line);
        let value: Value = serde_json::from_str(line).unwrap();
        assert!(schema_errors("RunStreamRecord", &value).is_empty());
    }
    assert_eq!(
        RunStreamRecord::from_ndjson_line(r#"{"kind":"event","event":{"text":"no type"}}"#)
            .unwrap(),
        None
    );
    assert_eq!(RunStreamRecord::from_ndjson_line("   ").unwrap(), None);
    // Agenta's `AgentStream` ignores a record of another kind, or of none.
    for ignored in [
        r#"{"kind":"nope"}"#,
        r#"{"event":{"type":"message"}}"#,
        r#"{"kind":"event","event":"x"}"#,
    ] {
        assert_eq!(
            RunStreamRecord::from_ndjson_line(ignored).unwrap(),
            None,
            "{ignored}"
        );
    }
    // A result record without a result is a failed run (`result or {}`).
    let failed = RunStreamRecord::from_ndjson_line(r#"{"kind":"result"}"#).unwrap();
    assert!(matches!(failed, Some(RunStreamRecord::Result { result }) if !result.ok));
    let err = RunStreamRecord::from_ndjson_line("[1]").unwrap_err();
    assert_eq!(err.path, ".", "{err}");
}

// ---------------------------------------------------------------------------------------
// Every registered type: a valid sample, and negatives
// ---------------------------------------------------------------------------------------

#[test]
fn every_registered_schema_accepts_its_samples_and_the_type_round_trips_them() {
    let samples = samples();
    let mut names: Vec<&str> = schema::all().iter().map(|e| e.name).collect();
    let mut sampled: Vec<&str> = samples.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    sampled.sort_unstable();
    sampled.dedup();
    assert_eq!(
        names, sampled,
        "every registered type needs a sample in tests/data/samples (and no sample names an unregistered type)"
    );
    for (name, document) in &samples {
        assert_valid_and_round_trips(name, document);
    }
}

/// The documents of `tests/data/invalid/` break the contract: each schema rejects its
/// own, and so does its type (the Python and TypeScript tests check the schema side too).
#[test]
fn every_invalid_document_is_rejected_by_the_schema_and_the_type() {
    let invalid = documents_in("invalid");
    assert!(
        invalid.len() >= 5,
        "only {} invalid documents",
        invalid.len()
    );
    for (name, file, document) in invalid {
        assert!(
            schema::by_name(&name).is_some(),
            "{file}: {name} is not a registered type"
        );
        assert!(
            !schema_errors(&name, &document).is_empty(),
            "{file}: the schema accepts it"
        );
        assert!(
            decode(&name, &document).is_err(),
            "{file}: the type accepts it"
        );
    }
}

fn wrong_type_for(value: &Value) -> Value {
    match value {
        Value::String(_) => json!(12345),
        Value::Number(_) => json!("not a number"),
        Value::Bool(_) => json!("not a bool"),
        Value::Object(_) => json!(12345),
        Value::Array(_) => json!("not an array"),
        Value::Null => json!(12345),
    }
}

/// For every top-level key of every sample: a wrong-typed value, and (for the schema's
/// required keys) a missing key. The schema and the type must agree; a document the type
/// rejects names the field (path or reason).
#[test]
fn schemas_and_types_reject_the_same_wrong_types_and_missing_required_fields() {
    let mut rejections = 0;
    for (name, sample) in samples() {
        let name = name.as_str();
        let entry = schema::by_name(name).unwrap();
        let required: Vec<String> = entry.schema["required"]
            .as_array()
            .map(|r| {
                r.iter()
                    .filter_map(|k| k.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let Value::Object(map) = &sample else {
            unreachable!()
        };
        let mut name_rejections = 0;
        for (key, value) in map {
            let mut wrong = sample.clone();
            wrong[key.as_str()] = wrong_type_for(value);
            let schema_rejects = !schema_errors(name, &wrong).is_empty();
            let type_result = decode(name, &wrong);
            assert_eq!(
                schema_rejects,
                type_result.is_err(),
                "{name}.{key} = {}: schema rejects: {schema_rejects}, type: {type_result:?}",
                wrong[key.as_str()]
            );
            if let Err(err) = type_result {
                name_rejections += 1;
                assert!(
                    err.path.starts_with(key.as_str()) || err.reason.contains(key.as_str()),
                    "{name}.{key}: the error does not name the field: {err}"
                );
            }
        }
        for key in &required {
            let mut missing = sample.clone();
            missing.as_object_mut().unwrap().shift_remove(key);
            assert!(
                !schema_errors(name, &missing).is_empty(),
                "{name}: schema accepts a document without required `{key}`"
            );
            let err = decode(name, &missing)
                .expect_err(&format!("{name}: type accepts a document without `{key}`"));
            assert!(
                err.reason.contains(key.as_str()) || err.path.contains(key.as_str()),
                "{name}: missing `{key}` not named: {err}"
            );
            name_rejections += 1;
        }
        assert!(name_rejections > 0, "{name}: no negative case was rejected");
        rejections += name_rejections;
    }
    assert!(rejections > 100, "only {rejections} rejections");
}

fn assert_both_reject(name: &str, document: &Value, path: &str) -> WireDecodeError {
    assert!(
        !schema_errors(name, document).is_empty(),
        "{name}: schema accepts {document}"
    );
    let err = decode(name, document).expect_err("the type accepts it");
    assert_eq!(err.path, path, "{err}");
    err
}

fn assert_schema_rejects_and_type_keeps(name: &str, document: &Value) {
    assert!(
        !schema_errors(name, document).is_empty(),
        "{name}: schema accepts {document}"
    );
    let again = decode(name, document).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(&again, document, "{name}: not kept as read");
}

#[test]
fn nested_negatives_name_the_field_path() {
    let golden = session_run();

    let mut doc = golden.clone();
    doc["customTools"][0]["call"]["method"] = json!("TRACE");
    assert_schema_rejects_and_type_keeps("RunRequest", &doc);
    doc["customTools"][0]["call"]["method"] = json!(5);
    assert_both_reject("RunRequest", &doc, "customTools[0].call.method");

    let mut doc = golden.clone();
    doc["customTools"][1]["call"] = json!({"method": "GET", "path": "/x"});
    let err = assert_both_reject("RunRequest", &doc, "customTools[1]");
    assert!(err.reason.contains("`call` and `callRef`"), "{err}");

    let mut doc = golden.clone();
    doc["effectiveParameters"] = json!({});
    let err = assert_both_reject("RunRequest", &doc, "effectiveParameters");
    assert!(err.reason.contains("non-empty"), "{err}");

    let mut doc = golden.clone();
    doc["permissions"]["default"] = json!("maybe");
    assert_schema_rejects_and_type_keeps("RunRequest", &doc);
    doc["permissions"]["default"] = json!(["allow"]);
    assert_both_reject("RunRequest", &doc, "permissions.default");

    let mut doc = golden.clone();
    doc["context"]["propagation"]
        .as_object_mut()
        .unwrap()
        .shift_remove("baggage");
    let err = assert_both_reject("RunRequest", &doc, "context.propagation");
    assert!(err.reason.contains("baggage"), "{err}");

    let mut doc = golden.clone();
    doc["modelConnection"]["credentials"][0]["binding"]["kind"] = json!("file");
    assert_schema_rejects_and_type_keeps("RunRequest", &doc);
    doc["modelConnection"]["credentials"][0]["binding"]["kind"] = json!(null);
    assert_both_reject(
        "RunRequest",
        &doc,
        "modelConnection.credentials[0].binding.kind",
    );

    let mut doc = golden.clone();
    doc["runContext"]["trace"]["span_id"] = json!(7);
    assert_both_reject("RunRequest", &doc, "runContext.trace.span_id");

    let mut doc = golden.clone();
    doc["harness"] = json!("gpt");
    assert_schema_rejects_and_type_keeps("RunRequest", &doc);
    doc["harness"] = json!(5);
    assert_both_reject("RunRequest", &doc, "harness");

    let mut doc = golden;
    doc.as_object_mut().unwrap().shift_remove("messages");
    let err = assert_both_reject("RunRequest", &doc, ".");
    assert!(err.reason.contains("messages"), "{err}");

    let mut row = a4_row();
    row["data"]["parameters"] = json!("not an object");
    assert_both_reject("SessionInteraction", &row, "data.parameters");

    let mut row = a4_row();
    row["kind"] = json!("telepathy");
    assert_schema_rejects_and_type_keeps("SessionInteraction", &row);
    row["kind"] = json!(3);
    assert_both_reject("SessionInteraction", &row, "kind");
}

#[test]
fn null_is_refused_by_the_schema_and_read_as_absent_by_the_type() {
    for key in [
        "systemPrompt",
        "appendSystemPrompt",
        "mcpServers",
        "skills",
        "harnessFiles",
        "connection",
        "runContext",
        "harnessMode",
        "turnId",
        "projectId",
        "effectiveParameters",
    ] {
        let mut doc = session_run();
        doc[key] = Value::Null;
        assert!(!schema_errors("RunRequest", &doc).is_empty(), "{key}: null");
        let parsed: RunRequest = from_json_value(doc.clone()).unwrap();
        doc.as_object_mut().unwrap().shift_remove(key);
        assert_eq!(
            serde_json::to_string(&parsed).unwrap(),
            compact(&doc),
            "{key}: a null reads as absent"
        );
    }
    let mut doc = session_run();
    doc["permissions"]["rules"] = Value::Null;
    assert!(!schema_errors("RunRequest", &doc).is_empty());
    // Empty where Agenta writes only non-empty: refused by the schema, kept by the type
    // (`[]` and absent hash differently in the fingerprint).
    for (key, empty) in [
        ("mcpServers", json!([])),
        ("skills", json!([])),
        ("harnessFiles", json!([])),
        ("runContext", json!({})),
    ] {
        let mut doc = session_run();
        doc[key] = empty;
        assert!(
            !schema_errors("RunRequest", &doc).is_empty(),
            "{key}: empty"
        );
        let parsed: RunRequest = from_json_value(doc.clone()).unwrap();
        assert!(!parsed.problems().is_empty(), "{key}: empty");
        assert_eq!(serde_json::to_value(&parsed).unwrap(), doc, "{key}: kept");
    }
}

#[test]
fn unknown_keys_survive_a_round_trip_at_every_level() {
    let mut doc = session_run();
    doc["futureTopLevel"] = json!({"x": 1});
    doc["customTools"][0]["call"]["futureCallKey"] = json!(true);
    doc["runContext"]["workflow"]["revision"]["future"] = json!("f");
    doc["messages"][0]["name"] = json!("alice");
    assert_valid_and_round_trips("RunRequest", &doc);

    let mut row = a4_row();
    row["data"]["future"] = json!([1, 2]);
    row["future_row_key"] = json!(null);
    assert_valid_and_round_trips("SessionInteraction", &row);
}

// ---------------------------------------------------------------------------------------
// effectiveParameters stamping
// ---------------------------------------------------------------------------------------

/// The two cases where Gatehouse departs from Agenta on purpose (C2).
const C2_DEPARTURES: [&str; 2] = [
    "key_match_is_case_sensitive_Authorization_survives",
    "bare_template_top_level_mcps_not_redacted",
];

fn check_vector(case: &Value, policy: &StampPolicy) {
    let name = case["name"].as_str().unwrap();
    let result = stamp_effective_parameters(case["input"].clone(), policy);
    if case["emitted"] == json!(true) {
        let stamped = result.unwrap_or_else(|e| panic!("{name}: {e}"));
        let expected = &case["stamped"];
        assert_eq!(
            compact(&Value::Object(stamped.parameters.clone())),
            compact(expected),
            "{name}"
        );
        assert_eq!(
            Some(stamped.measured_bytes as u64),
            case["measured_bytes"].as_u64(),
            "{name}"
        );
        assert_eq!(
            python_json_dumps_len(expected) as u64,
            case["measured_bytes"].as_u64().unwrap()
        );
    } else {
        let reason = result.expect_err(name);
        let expected = if case["input"].is_array() {
            NotStamped::NotAnObject
        } else {
            NotStamped::Empty
        };
        assert_eq!(reason, expected, "{name}");
    }
}

/// The upstream conformance suite of Agenta's stamp vectors.
const STAMP_VECTORS: &str = "Agenta stamp vectors (tests/contract.rs)";
const STAMP_VECTORS_FILE: &str = "effective_config.stamp.vectors.derived.json";

// upstream conformance: Agenta stamp vectors
#[test]
fn every_stamp_vector_passes_except_the_two_c2_departures() {
    let Some(vectors) = agenta_fixture(STAMP_VECTORS, STAMP_VECTORS_FILE) else {
        return;
    };
    assert_eq!(vectors["cap_boundary"]["passes"]["measured_bytes"], 65536);
    assert_eq!(vectors["cap_boundary"]["dropped"]["measured_bytes"], 65537);
    let cases = vectors["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 11);
    let mut checked = 0;
    for case in cases {
        if C2_DEPARTURES.contains(&case["name"].as_str().unwrap()) {
            continue;
        }
        check_vector(case, &StampPolicy::default());
        checked += 1;
    }
    assert_eq!(checked, 9);
}

// upstream conformance: Agenta stamp vectors
#[test]
fn every_stamp_vector_passes_in_agenta_compatible_mode() {
    let Some(vectors) = agenta_fixture(STAMP_VECTORS, STAMP_VECTORS_FILE) else {
        return;
    };
    let policy = StampPolicy {
        redaction: Redaction::AgentaCompatible,
        ..StampPolicy::default()
    };
    for case in vectors["cases"].as_array().unwrap() {
        check_vector(case, &policy);
    }
}

#[test]
fn c2_authorization_is_stripped_in_any_letter_case() {
    // Agenta keeps a capitalised `Authorization` (its key match is case-sensitive).
    let input = json!({"agent": {"tools": [{"name": "t", "Authorization": "x"}]}});
    let stamped = stamp_effective_parameters(input, &StampPolicy::default()).unwrap();
    assert_eq!(
        compact(&Value::Object(stamped.parameters.clone())),
        r#"{"agent":{"tools":[{"name":"t"}]}}"#
    );
    assert_eq!(stamped.stripped, ["Authorization"]);
    assert_eq!(stamped.measured_bytes, 37);

    let params = json!({"agent": {"mcps": [{"name": "n", "HEADERS": {"a": "b"},
        "connection": {"url": "u", "Headers": {"x": "secret-1"}, "AuThOrIzAtIoN": "secret-2",
                       "credentials": {"type": "header_secret_refs", "headers": {"authorization": "VAULT_KEY"}}}}]}});
    let stamped = stamp_effective_parameters(params, &StampPolicy::default()).unwrap();
    let text = compact(&Value::Object(stamped.parameters.clone()));
    assert!(!text.contains("secret-"), "{text}");
    assert!(
        text.contains("VAULT_KEY"),
        "credentials (vault key names) survive: {text}"
    );
    assert_eq!(
        stamped.stripped,
        ["HEADERS", "connection.AuThOrIzAtIoN", "connection.Headers"]
    );
    assert!(stamped
        .stripped
        .iter()
        .all(|label| !label.contains("secret")));
}

#[test]
fn c2_a_bare_template_is_walked_too() {
    // Agenta walks only `agent.mcps` / `agent.tools`, not a bare template's.
    let input = json!({"mcps": [{"connection": {"headers": {"authorization": "x"}}}]});
    let stamped = stamp_effective_parameters(input, &StampPolicy::default()).unwrap();
    assert_eq!(
        compact(&Value::Object(stamped.parameters.clone())),
        r#"{"mcps":[{"connection":{}}]}"#
    );
    assert_eq!(stamped.stripped, ["connection.headers"]);
    assert_eq!(
        stamped.measured_bytes,
        python_json_dumps_len(&json!({"mcps": [{"connection": {}}]}))
    );

    let tools = json!({"tools": [{"name": "t", "call": {"method": "GET", "path": "/p", "authorization": "k"}}]});
    let stamped = stamp_effective_parameters(tools, &StampPolicy::default()).unwrap();
    assert_eq!(stamped.stripped, ["call.authorization"]);
}

#[test]
fn null_credential_keys_are_popped_only_when_something_else_is_stripped() {
    // Nothing non-null stripped: the original object, `"headers": null` included.
    let only_null = json!({"agent": {"mcps": [{"name": "n", "headers": null}]}});
    let stamped = stamp_effective_parameters(only_null.clone(), &StampPolicy::default()).unwrap();
    assert_eq!(
        compact(&Value::Object(stamped.parameters)),
        compact(&only_null)
    );
    // Something stripped elsewhere: the null key goes too, but is not counted.
    let mixed = json!({"agent": {"mcps": [{"name": "n", "headers": null}, {"name": "m", "authorization": "s"}]}});
    let stamped = stamp_effective_parameters(mixed, &StampPolicy::default()).unwrap();
    assert_eq!(
        compact(&Value::Object(stamped.parameters)),
        r#"{"agent":{"mcps":[{"name":"n"},{"name":"m"}]}}"#
    );
    assert_eq!(stamped.stripped, ["authorization"]);
}

fn instructions_of(len: usize) -> Value {
    json!({"agent": {"instructions": "x".repeat(len)}})
}

#[test]
fn the_cap_boundary_is_65536_stamped_and_65537_dropped_whole() {
    let policy = StampPolicy::default();
    assert_eq!(policy.max_bytes, 65536);

    let at_cap = stamp_effective_parameters(instructions_of(65505), &policy).unwrap();
    assert_eq!(at_cap.measured_bytes, 65536);

    let over = stamp_effective_parameters(instructions_of(65506), &policy).unwrap_err();
    assert_eq!(
        over,
        NotStamped::OverCap {
            measured_bytes: 65537,
            max_bytes: 65536
        }
    );
    assert_eq!(
        over.to_string(),
        "the effective config is 65537 B, over the 65536 B stamp cap; not stamped"
    );

    // The cap is a setting (the released Agenta SDK uses 256 KiB).
    let big = StampPolicy::with_max_bytes(262_144);
    assert!(stamp_effective_parameters(instructions_of(65506), &big).is_ok());
}

#[test]
fn the_size_is_measured_after_redaction_with_python_escaping() {
    // Stripping a big header brings the blob under the cap.
    let params = json!({"agent": {"instructions": "x".repeat(65000),
        "mcps": [{"name": "n", "connection": {"headers": {"authorization": "y".repeat(1000)}}}]}});
    let stamped = stamp_effective_parameters(params, &StampPolicy::default()).unwrap();
    assert!(stamped.measured_bytes < 65536);
    // Non-ASCII counts as \uXXXX (6 bytes), astral characters as a surrogate pair (12).
    let unicode = json!({"agent": {"instructions": "é😀"}});
    let stamped = stamp_effective_parameters(unicode, &StampPolicy::default()).unwrap();
    // {"agent": {"instructions": "\u00e9\ud83d\ude00"}}
    assert_eq!(stamped.measured_bytes, 49);
}

// ---------------------------------------------------------------------------------------
// The request builder
// ---------------------------------------------------------------------------------------

#[test]
fn the_builder_stamps_a_session_run_and_never_a_non_session_run() {
    // A session run: re-stamping its blob reproduces the document byte for byte.
    let golden = session_run();
    let params = golden["effectiveParameters"].clone();
    let mut request: RunRequest = from_json_value(golden.clone()).unwrap();
    request.effective_parameters = None;
    let (request, outcome) =
        request.with_effective_parameters(params.clone(), &StampPolicy::default());
    assert_eq!(
        outcome,
        StampOutcome::Stamped {
            measured_bytes: python_json_dumps_len(&params),
            stripped: vec![]
        }
    );
    assert_eq!(serde_json::to_string(&request).unwrap(), compact(&golden));

    // Built WITH parameters but no session: no key, byte-identical to the document.
    let golden = adhoc_run();
    let request: RunRequest = from_json_value(golden.clone()).unwrap();
    let (request, outcome) =
        request.with_effective_parameters(params.clone(), &StampPolicy::default());
    assert_eq!(outcome, StampOutcome::NoSession);
    assert_eq!(serde_json::to_string(&request).unwrap(), compact(&golden));

    // An empty session id is not a session.
    let (request, outcome) = request.for_session("", params.clone(), &StampPolicy::default());
    assert_eq!(outcome, StampOutcome::NoSession);
    assert!(request.effective_parameters.is_none());

    // Over the cap: the key is absent, not null, not {}.
    let (request, outcome) =
        request.for_session("s1", instructions_of(70_000), &StampPolicy::default());
    assert!(matches!(
        outcome,
        StampOutcome::NotStamped(NotStamped::OverCap { .. })
    ));
    assert!(!serde_json::to_string(&request)
        .unwrap()
        .contains("effectiveParameters"));

    // Clearing the session removes a stamp.
    let (request, _) = request.for_session("s1", params, &StampPolicy::default());
    assert!(request.effective_parameters.is_some());
    let request = request.with_session_id(None);
    assert!(request.effective_parameters.is_none());
    assert!(request.problems().is_empty());
}

#[test]
fn problems_reports_contract_violations() {
    let mut request: RunRequest = from_json_value(adhoc_run()).unwrap();
    request = request.with_harness_mode(HarnessMode::ReadOnly);
    request.effective_parameters = Some(serde_json::Map::new());
    let problems: Vec<String> = request.problems().iter().map(ToString::to_string).collect();
    assert_eq!(
        problems,
        [
            "`harnessMode` is only for the codex harness",
            "`effectiveParameters` is only for a session run (non-empty `sessionId`)",
            "`effectiveParameters` must be omitted rather than empty",
        ]
    );
}

// ---------------------------------------------------------------------------------------
// configFingerprint
// ---------------------------------------------------------------------------------------

/// Our session run on the pi_core harness (so `harnessMode` is not hashed).
fn pi_core_session_run() -> RunRequest {
    let mut request: RunRequest = from_json_value(session_run()).unwrap();
    request.harness = gatehouse_wire::run::Harness::PiCore;
    request.harness_mode = None;
    request
}

#[test]
fn the_fingerprint_ignores_effective_parameters_and_tracks_the_model() {
    let with = pi_core_session_run();
    let mut without = with.clone();
    without.effective_parameters = None;
    let fingerprint = config_fingerprint(&with);
    assert_eq!(fingerprint.len(), 64);
    assert!(fingerprint
        .chars()
        .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    assert_eq!(
        fingerprint,
        config_fingerprint(&without),
        "effectiveParameters is not hashed"
    );

    let mut other_model = with;
    other_model.model = Some("openai-codex/gpt-5.6".into());
    assert_ne!(
        fingerprint,
        config_fingerprint(&other_model),
        "model is hashed"
    );
}

#[test]
fn the_fingerprint_excludes_per_turn_fields_and_secrets() {
    let base = pi_core_session_run();
    let fingerprint = config_fingerprint(&base);
    let same = |mutate: &dyn Fn(&mut RunRequest), what: &str| {
        let mut changed = base.clone();
        mutate(&mut changed);
        assert_eq!(
            fingerprint,
            config_fingerprint(&changed),
            "{what} must not be hashed"
        );
    };
    same(
        &|r| r.messages.push(ChatMessage::text("user", "again")),
        "messages",
    );
    same(&|r| r.session_id = Some("other".into()), "sessionId");
    same(&|r| r.turn_id = Some("t-9".into()), "turnId");
    same(&|r| r.project_id = Some("p".into()), "projectId");
    same(&|r| r.context = None, "context");
    same(&|r| r.telemetry = None, "telemetry");
    same(&|r| r.tools = Some(Vec::new()), "tools");
    same(
        &|r| {
            r.tool_callback = Some(Some(ToolCallback::new(
                "https://gatehouse.example.invalid/tools/call",
                Some("other".into()),
            )))
        },
        "toolCallback.authorization",
    );
    same(
        &|r| r.model_connection.as_mut().unwrap().credentials[0].value = "rotated".into(),
        "credential values",
    );
    same(
        &|r| r.harness_mode = Some(HarnessMode::ReadOnly),
        "harnessMode off codex",
    );
    same(
        &|r| r.run_context.as_mut().unwrap().trace = None,
        "runContext.trace",
    );
    same(
        &|r| r.run_context.as_mut().unwrap().run = None,
        "runContext.run",
    );
    same(
        &|r| {
            r.run_context
                .as_mut()
                .unwrap()
                .workflow
                .as_mut()
                .unwrap()
                .variant = None
        },
        "runContext variant",
    );
    same(
        &|r| {
            r.run_context
                .as_mut()
                .unwrap()
                .workflow
                .as_mut()
                .unwrap()
                .revision
                .as_mut()
                .unwrap()
                .slug = Some("s".into())
        },
        "revision slug",
    );

    let differs = |mutate: &dyn Fn(&mut RunRequest), what: &str| {
        let mut changed = base.clone();
        mutate(&mut changed);
        assert_ne!(
            fingerprint,
            config_fingerprint(&changed),
            "{what} must be hashed"
        );
    };
    differs(&|r| r.agents_md = Some("other".into()), "agentsMd");
    differs(&|r| r.system_prompt = None, "systemPrompt");
    differs(
        &|r| {
            r.custom_tools.as_mut().unwrap().pop();
        },
        "customTools",
    );
    differs(
        &|r| {
            r.tool_callback = Some(Some(ToolCallback::new(
                "https://other",
                Some("Bearer callback-test-token".into()),
            )))
        },
        "toolCallback.endpoint",
    );
    differs(
        &|r| {
            r.model_connection.as_mut().unwrap().credentials[0]
                .binding
                .name = "OTHER".into()
        },
        "credential binding",
    );
    differs(
        &|r| {
            r.run_context
                .as_mut()
                .unwrap()
                .workflow
                .as_mut()
                .unwrap()
                .revision
                .as_mut()
                .unwrap()
                .version = Some("4".into())
        },
        "revision version",
    );
    differs(
        &|r| {
            r.run_context
                .as_mut()
                .unwrap()
                .workflow
                .as_mut()
                .unwrap()
                .is_draft = Some(true.into())
        },
        "isDraft",
    );
    differs(
        &|r| r.permissions.as_mut().unwrap().default = gatehouse_wire::run::PermissionMode::Deny,
        "permissions",
    );

    let codex: RunRequest = from_json_value(session_run()).unwrap();
    let mut codex_mode = codex.clone();
    codex_mode.harness_mode = Some(HarnessMode::AgentFullAccess);
    assert_ne!(
        config_fingerprint(&codex),
        config_fingerprint(&codex_mode),
        "harnessMode on codex"
    );
}

// ---------------------------------------------------------------------------------------
// Interaction rows, the OpenAPI extract, the resume
// ---------------------------------------------------------------------------------------

#[test]
fn the_a4_interaction_row_round_trips_in_key_order() {
    let row = a4_row();
    assert_valid_and_round_trips("SessionInteraction", &row);
    let parsed: SessionInteraction = from_json_value(row).unwrap();
    assert_eq!(
        parsed.stamped_parameters().unwrap()["agent"]["llm"]["model"],
        "anthropic/claude-sonnet-4-5"
    );
}

/// Make an instance of an OpenAPI component schema: every property set (`nulls: false`),
/// or every nullable property `null` (`nulls: true`).
fn instance_of(schema: &Value, components: &Value, nulls: bool) -> Value {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference.rsplit('/').next().unwrap();
        return instance_of(&components[name], components, nulls);
    }
    if let Some(options) = schema.get("anyOf").and_then(Value::as_array) {
        let nullable = options.iter().any(|o| o["type"] == "null");
        if nulls && nullable {
            return Value::Null;
        }
        let first = options.iter().find(|o| o["type"] != "null").unwrap();
        return instance_of(first, components, nulls);
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values[0].clone();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => match schema.get("format").and_then(Value::as_str) {
            Some("uuid") => json!("019fac94-5b91-71d2-9d4b-5486013e6e9b"),
            Some("date-time") => json!("2026-07-29T06:34:12.345678Z"),
            _ => json!("text"),
        },
        Some("integer") => json!(1),
        Some("number") => json!(0.5),
        Some("boolean") => json!(true),
        Some("array") => json!([instance_of(&schema["items"], components, nulls)]),
        Some("object") => {
            let mut out = serde_json::Map::new();
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (key, property) in properties {
                    out.insert(key.clone(), instance_of(property, components, nulls));
                }
            } else if let Some(additional) =
                schema.get("additionalProperties").filter(|a| a.is_object())
            {
                out.insert(
                    "workflow".into(),
                    instance_of(additional, components, nulls),
                );
            } else {
                out.insert("key".into(), json!("value"));
            }
            Value::Object(out)
        }
        _ => json!({"any": "value"}),
    }
}

// upstream conformance: Agenta interactions OpenAPI extract
#[test]
fn rows_generated_from_the_openapi_extract_parse_and_validate() {
    let Some(openapi) = agenta_fixture(
        "Agenta interactions OpenAPI extract (tests/contract.rs)",
        "openapi.sessions-interactions.extract.json",
    ) else {
        return;
    };
    let components = &openapi["schemas"];
    let pairs = [
        ("SessionInteraction", "SessionInteraction"),
        ("SessionInteractionResponse", "InteractionResponse"),
        ("SessionInteractionsResponse", "InteractionsResponse"),
        (
            "SessionInteractionCreateRequest",
            "CreateInteractionRequest",
        ),
        ("SessionInteractionQueryRequest", "InteractionQueryRequest"),
        ("SessionInteractionCancelStaleRequest", "CancelStaleRequest"),
    ];
    for (upstream, ours) in pairs {
        for nulls in [false, true] {
            let document = instance_of(&components[upstream], components, nulls);
            let errors = schema_errors(ours, &document);
            assert!(
                errors.is_empty(),
                "{upstream} (nulls: {nulls}) vs our {ours}: {errors:?}\n{document}"
            );
            decode(ours, &document)
                .unwrap_or_else(|e| panic!("{upstream} (nulls: {nulls}): {e}\n{document}"));
        }
    }
    // The full row keeps every field, in the upstream's order, through our type.
    let row = instance_of(&components["SessionInteraction"], components, false);
    let again = decode("SessionInteraction", &row).unwrap();
    assert_eq!(again["data"]["parameters"], row["data"]["parameters"]);
    for key in row.as_object().unwrap().keys() {
        assert!(again.get(key).is_some(), "{key} dropped");
    }
}

#[test]
fn the_resume_body_carries_the_stamp_inline_or_is_references_only() {
    let row: SessionInteraction = from_json_value(a4_row()).unwrap();
    let answer = ApprovalAnswer {
        approved: true,
        tool_call_id: None,
        message: Some("thanks".into()),
    };
    let history = vec![
        ChatMessage::text("user", "run echo"),
        ChatMessage::text("assistant", "Running."),
    ];
    let body = build_resume_request(&row, &answer, history.clone(), None);
    let value = serde_json::to_value(&body).unwrap();
    assert!(schema_errors("InvokeRequest", &value).is_empty());
    assert_eq!(value["data"]["parameters"], a4_row()["data"]["parameters"]);
    assert_eq!(value["references"], a4_row()["data"]["references"]);
    assert_eq!(value["session_id"], "48268312-aa0b-4c61-9d55-0e4c1a2f7a10");
    let messages = value["data"]["inputs"]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(
        compact(&messages[1]["content"][1]),
        r#"{"type":"tool_result","toolCallId":"toolu_01","output":{"approved":true,"interactionToken":"61707b08-0c1e-4d7e-8a0f-2b8a4a0b9c11"}}"#
    );
    assert_eq!(messages[2], json!({"role": "user", "content": "thanks"}));
    assert!(!should_hydrate_from_references(&body));

    let mut legacy = a4_row();
    legacy["data"]
        .as_object_mut()
        .unwrap()
        .shift_remove("parameters");
    let legacy: SessionInteraction = from_json_value(legacy).unwrap();
    let body = build_resume_request(&legacy, &answer, history, None);
    let value = serde_json::to_value(&body).unwrap();
    assert!(
        value["data"].get("parameters").is_none(),
        "a legacy row gives no `parameters` key"
    );
    assert!(should_hydrate_from_references(&body));
}

// ---------------------------------------------------------------------------------------
// The committed schema files
// ---------------------------------------------------------------------------------------

#[test]
fn committed_schema_files_are_fresh() {
    let dir = schema_dir();
    let mut stale = Vec::new();
    let expected = gatehouse_wire::schema_dir::files();
    for (name, contents) in &expected {
        match std::fs::read_to_string(dir.join(name)) {
            Ok(existing) if &existing == contents => {}
            Ok(_) => stale.push(format!("{name} differs")),
            Err(_) => stale.push(format!("{name} is missing")),
        }
    }
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".json") && !expected.iter().any(|(n, _)| n == &name) {
            stale.push(format!("{name} is not generated by any type"));
        }
    }
    assert!(
        stale.is_empty(),
        "schema/ is stale; run `cargo xtask schema`: {stale:?}"
    );
}

#[test]
fn every_schema_is_draft_2020_12_with_id_title_and_description() {
    let index = committed_schema("index.json");
    for entry in schema::all() {
        let document = committed_schema(entry.file_name);
        assert_eq!(
            document["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
        assert!(document["$id"].as_str().unwrap().ends_with(entry.file_name));
        assert_eq!(document["title"], entry.name);
        assert!(!document["description"].as_str().unwrap().is_empty());
        assert_eq!(index[entry.name]["file"], entry.file_name);
        assert_eq!(index[entry.name]["description"], entry.description);
        jsonschema::meta::validate(&document)
            .unwrap_or_else(|e| panic!("{} is not a valid 2020-12 schema: {e}", entry.file_name));
    }
}

#[test]
fn the_run_request_schema_describes_effective_parameters() {
    let document = committed_schema("run_request.schema.json");
    let property = &document["properties"]["effectiveParameters"];
    assert_eq!(property["minProperties"], 1);
    let description = property["description"].as_str().unwrap();
    assert!(
        description.contains("session run") && description.contains("never `null`, never `{}`")
    );
    let required: Vec<&str> = document["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(!required.contains(&"effectiveParameters"));
    assert_eq!(
        required,
        [
            "harness",
            "sandbox",
            "sessionId",
            "agentsMd",
            "model",
            "messages",
            "context",
            "telemetry",
        ]
    );
    // The tool keys are required on every harness but mock (a conditional).
    let conditions = document["allOf"].to_string();
    assert!(conditions
        .contains(r#""else":{"required":["tools","customTools","toolCallback","permissions"]}"#));
    // Every key Agenta's SDK writes (0.125.1 and main: 32), in emission order.
    let keys: Vec<&String> = document["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 32);
    assert_eq!(keys.first().unwrap().as_str(), "harness");
    assert_eq!(keys.last().unwrap().as_str(), "effectiveParameters");
}

/// Our session run on the pi-core harness (which carries no `harnessMode`).
fn pi_core_session_run_document() -> Value {
    let mut doc = session_run();
    doc["harness"] = json!("pi_core");
    doc.as_object_mut().unwrap().shift_remove("harnessMode");
    doc
}

#[test]
fn the_run_request_schema_ties_keys_to_the_harness_and_the_session() {
    let golden = pi_core_session_run_document();
    for session in [Value::Null, json!("")] {
        let mut doc = golden.clone();
        doc["sessionId"] = session;
        assert!(!schema_errors("RunRequest", &doc).is_empty());
        let parsed: RunRequest = from_json_value(doc).unwrap();
        assert!(parsed
            .problems()
            .contains(&gatehouse_wire::run::RunRequestProblem::EffectiveParametersWithoutSession));
    }
    let mut doc = golden.clone();
    doc["harnessMode"] = json!("read-only");
    assert!(!schema_errors("RunRequest", &doc).is_empty());
    let mut doc = golden;
    doc.as_object_mut().unwrap().shift_remove("tools");
    assert!(!schema_errors("RunRequest", &doc).is_empty());
    doc["harness"] = json!("mock");
    for key in ["customTools", "toolCallback", "permissions"] {
        doc.as_object_mut().unwrap().shift_remove(key);
    }
    assert!(
        schema_errors("RunRequest", &doc).is_empty(),
        "mock omits the tool keys"
    );
    let mut codex = session_run();
    codex["harnessMode"] = json!("agent");
    assert!(schema_errors("RunRequest", &codex).is_empty());
    codex["harnessMode"] = json!("turbo");
    assert_schema_rejects_and_type_keeps("RunRequest", &codex);
}

#[test]
fn every_watch_event_variant_round_trips_and_validates() {
    for document in [
        json!({"type": "ready", "session_id": "s1"}),
        json!({"type": "interaction", "session_id": "s1", "status": "resolved", "interaction_id": "i1"}),
        json!({"type": "records-changed", "session_id": "s1"}),
        json!({"type": "lifecycle", "session_id": "s1", "state": "ended"}),
    ] {
        assert_valid_and_round_trips("WatchEvent", &document);
    }
    // Agenta's `ready` frame carries `{}`.
    assert!(schema_errors("WatchEvent", &json!({})).is_empty());
    let ready: gatehouse_wire::interaction::WatchEvent = from_json_value(json!({})).unwrap();
    assert_eq!(ready.event_name(), "ready");
    assert_schema_rejects_and_type_keeps(
        "WatchEvent",
        &json!({"type": "lifecycle", "session_id": "s1", "state": "paused"}),
    );
    let err = assert_both_reject(
        "WatchEvent",
        &json!({"type": "lifecycle", "session_id": "s1", "state": 3}),
        ".",
    );
    assert!(err.reason.contains("at state"), "{err}");
    assert_both_reject(
        "WatchEvent",
        &json!({"type": "gone", "session_id": "s1"}),
        ".",
    );
}

#[test]
fn python_json_dumps_len_matches_cpython_on_400_random_values() {
    let path =
        gatehouse_tests::workspace_root().join("tests/data/python_json_dumps_len.vectors.json");
    let vectors: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = vectors["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 400);
    let mismatches: Vec<String> = cases
        .iter()
        .filter(|c| python_json_dumps_len(&c["value"]) as u64 != c["python_len"].as_u64().unwrap())
        .map(|c| {
            format!(
                "{} -> ours {} vs python {}",
                c["value"],
                python_json_dumps_len(&c["value"]),
                c["python_len"]
            )
        })
        .collect();
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}
