//! Numbers as Agenta's Python and JavaScript have them, end to end: parse, stamp, measure,
//! re-serialize; and the runner's canonical JSON. Project-owned vectors only
//! (`tests/data/numbers.vectors.json`, written by `tests/python/make_number_vectors.py` from
//! CPython's `json` and Node's `JSON`); no upstream fixture needed.

// Test code: a broken fixture or server should fail the test loudly, here and in helpers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use gatehouse_wire::effective::{
    stamp_effective_parameters, stamp_python_text, NotStamped, PythonStampError, StampPolicy,
};
use gatehouse_wire::fingerprint::canonical_json;
use gatehouse_wire::interaction::SessionInteraction;
use gatehouse_wire::numbers::{js_literal_text, python_literal_text, python_number_len};
use gatehouse_wire::pyjson::{python_json_dumps, python_json_dumps_len};
use gatehouse_wire::redact::Redaction;
use gatehouse_wire::run::{RunRequest, RunResult, RunStreamRecord};
use gatehouse_wire::{from_json_slice, from_json_value};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn vectors() -> Value {
    let path = gatehouse_tests::workspace_root().join("tests/data/numbers.vectors.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn number_literals_read_as_python_and_javascript_read_them() {
    let vectors = vectors();
    let numbers = vectors["numbers"].as_array().unwrap();
    assert!(numbers.len() >= 200);
    let mut mismatches = Vec::new();
    for case in numbers {
        let literal = case["literal"].as_str().unwrap();
        let python = case["python"].as_str().unwrap();
        if python_literal_text(literal) != python {
            mismatches.push(format!(
                "python {literal}: {} vs {python}",
                python_literal_text(literal)
            ));
        }
        if let Some(js) = case["js"].as_str() {
            if js_literal_text(literal) != js {
                mismatches.push(format!(
                    "js {literal}: {} vs {js}",
                    js_literal_text(literal)
                ));
            }
            // serde_json reads every literal JSON allows and keeps it whole: an integer digit
            // for digit, a float's digits as written (its exponent respelled `e+`).
            let number: serde_json::Number = serde_json::from_str(literal).unwrap();
            if gatehouse_wire::numbers::is_integer_literal(literal) {
                assert_eq!(number.as_str(), literal, "{literal}");
            } else {
                let read = gatehouse_wire::numbers::literal_to_f64(number.as_str());
                let want = gatehouse_wire::numbers::literal_to_f64(literal);
                assert!(
                    read == want || (read.is_nan() && want.is_nan()),
                    "{literal}"
                );
            }
            if python_number_len(&number) != python.len() {
                mismatches.push(format!("len {literal}"));
            }
        }
    }
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}

#[test]
fn canonical_json_is_the_runners_canonical_json() {
    let vectors = vectors();
    let documents = vectors["canonical"].as_array().unwrap();
    assert!(documents.len() >= 100);
    for case in documents {
        let document: Value = serde_json::from_str(case["document"].as_str().unwrap()).unwrap();
        let canonical = canonical_json(&document);
        assert_eq!(
            canonical,
            case["canonical"].as_str().unwrap(),
            "{}",
            case["document"]
        );
        assert_eq!(
            hex::encode(Sha256::digest(canonical.as_bytes())),
            case["sha256"].as_str().unwrap()
        );
    }
}

const BIG: &str = "123456789012345678901234567890";

/// A session run whose config, tool schema and unknown keys carry numbers serde_json's
/// default `f64` would change.
fn request_text() -> String {
    format!(
        r#"{{"harness":"pi_core","sandbox":"local","sessionId":"s-1","agentsMd":null,"model":"m","messages":[{{"role":"user","content":[{{"type":"attachment","attachmentId":"a","size":482113}}]}}],"context":null,"telemetry":null,"tools":[],"customTools":[{{"name":"t","inputSchema":{{"maximum":{BIG},"minimum":-0,"multipleOf":1.0,"default":1E+16}},"timeoutMs":30000}}],"toolCallback":null,"permissions":{{"default":"allow_reads"}},"effectiveParameters":{{"agent":{{"llm":{{"seed":{BIG},"temperature":-0,"top_p":0.10,"n":18446744073709551616}}}}}},"futureKey":{{"big":-9223372036854775809}}}}"#
    )
}

#[test]
fn a_run_request_keeps_every_number_whole_from_bytes_and_from_a_value() {
    let text = request_text();
    let from_bytes: RunRequest = from_json_slice(text.as_bytes()).unwrap();
    assert_eq!(
        serde_json::to_string(&from_bytes).unwrap(),
        text.replace("1E+16", "1e+16")
    );
    let value: Value = serde_json::from_str(&text).unwrap();
    let from_value: RunRequest = from_json_value(value).unwrap();
    assert_eq!(from_value, from_bytes);
    let params = from_value.effective_parameters.unwrap();
    assert_eq!(params["agent"]["llm"]["seed"].to_string(), BIG);
    assert_eq!(
        params["agent"]["llm"]["n"].to_string(),
        "18446744073709551616"
    );
}

#[test]
fn rows_results_and_stream_records_keep_big_integers() {
    let row = format!(
        r#"{{"session_id":"s","token":"t","kind":"user_approval","data":{{"request":{{"tool":"Bash","args":{{"n":{BIG}}}}},"parameters":{{"agent":{{"seed":{BIG}}}}}}},"future":{BIG}}}"#
    );
    let value: Value = serde_json::from_str(&row).unwrap();
    let parsed: SessionInteraction = from_json_value(value).unwrap();
    let again = serde_json::to_string(&parsed).unwrap();
    assert_eq!(again.matches(BIG).count(), 3, "{again}");

    let line = format!(
        r#"{{"kind":"result","result":{{"ok":true,"events":[{{"type":"usage","tokens":{BIG}}}],"usage":{{"input":10,"cost":0.001}},"future":{BIG}}}}}"#
    );
    let record = RunStreamRecord::from_ndjson_line(&line).unwrap().unwrap();
    assert_eq!(record.to_ndjson_line(), line);
    let result: RunResult =
        from_json_slice(br#"{"ok":true,"usage":{"input":10,"output":2,"cost":1E-5}}"#).unwrap();
    assert_eq!(result.usage.unwrap().cost, Some(1e-5));
}

#[test]
fn the_stamp_measures_numbers_as_python_writes_them() {
    // The issue's example: Agenta keeps the 30 digits and measures 60 bytes.
    let text = format!(r#"{{"agent":{{"llm":{{"seed":{BIG}}}}}}}"#);
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        python_json_dumps(&value),
        format!(r#"{{"agent": {{"llm": {{"seed": {BIG}}}}}}}"#)
    );
    assert_eq!(python_json_dumps_len(&value), 60);
    let stamped =
        stamp_effective_parameters(value.clone(), &StampPolicy::with_max_bytes(60)).unwrap();
    assert_eq!(stamped.measured_bytes, 60);
    assert_eq!(Value::Object(stamped.parameters), value);
    assert_eq!(
        stamp_effective_parameters(value, &StampPolicy::with_max_bytes(55)),
        Err(NotStamped::OverCap {
            measured_bytes: 60,
            max_bytes: 55
        })
    );
    let policy = StampPolicy {
        max_bytes: 55,
        redaction: Redaction::AgentaCompatible,
    };
    assert_eq!(
        stamp_python_text(&text, &policy),
        Err(PythonStampError::NotStamped(NotStamped::OverCap {
            measured_bytes: 60,
            max_bytes: 55
        }))
    );

    // `-0` is Python's int 0; `-0.0` stays a negative float; floats are written as repr.
    for (input, python) in [
        (r#"{"t": -0}"#, r#"{"t": 0}"#),
        (r#"{"t": -0.0}"#, r#"{"t": -0.0}"#),
        (
            r#"{"t": 1E+16, "u": 1.5e-7, "v": 100.0, "w": 1e400}"#,
            r#"{"t": 1e+16, "u": 1.5e-07, "v": 100.0, "w": Infinity}"#,
        ),
    ] {
        let value: Value = serde_json::from_str(input).unwrap();
        assert_eq!(python_json_dumps(&value), python, "{input}");
        assert_eq!(python_json_dumps_len(&value), python.len(), "{input}");
        let policy = StampPolicy {
            max_bytes: 1000,
            redaction: Redaction::AgentaCompatible,
        };
        assert_eq!(
            stamp_python_text(input, &policy).unwrap().text,
            python,
            "{input}"
        );
    }
}

fn agenta_api_row_vectors() -> Value {
    let path = gatehouse_tests::workspace_root().join("tests/data/agenta_api_rows.vectors.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every number literal is spelled as FastAPI 0.139.2 (pydantic-core 2.50.5) spelled the
/// Python number `json.loads` reads from it, in a row it answered
/// (`tests/data/agenta_api_rows.vectors.json`).
#[test]
fn number_literals_are_spelled_as_agentas_api_spells_them() {
    let vectors = agenta_api_row_vectors();
    let numbers = vectors["numbers"].as_array().unwrap();
    assert!(numbers.len() >= 300, "only {} numbers", numbers.len());
    let mismatches: Vec<String> = numbers
        .iter()
        .filter_map(|case| {
            let literal = case["literal"].as_str().unwrap();
            let fastapi = case["fastapi"].as_str().unwrap();
            let ours = gatehouse_wire::numbers::pydantic_literal_text(literal);
            (ours != fastapi).then(|| format!("{literal}: {ours} vs {fastapi}"))
        })
        .collect();
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}

/// A row given as Python's `json.dumps` writes it (floats spelled by `repr`, `1e-05`) is
/// rendered byte for byte as FastAPI answered the same row (`0.00001`), and the row read
/// back from that rendering renders the same again.
#[test]
fn rows_render_byte_for_byte_as_agentas_api_renders_them() {
    use gatehouse_wire::agenta_api_json::to_agenta_api_json;
    use gatehouse_wire::interaction::InteractionResponse;
    let vectors = agenta_api_row_vectors();
    let rows = vectors["rows"].as_array().unwrap();
    assert!(rows.len() >= 150, "only {} rows", rows.len());
    let mut respelled = 0;
    for (index, case) in rows.iter().enumerate() {
        let input = case["input"].as_str().unwrap();
        let fastapi = case["fastapi"].as_str().unwrap();
        let row: InteractionResponse = from_json_slice(input.as_bytes()).unwrap();
        let ours = to_agenta_api_json(&row).unwrap();
        assert_eq!(ours, fastapi, "row {index}");
        let again: InteractionResponse = from_json_slice(ours.as_bytes()).unwrap();
        assert_eq!(to_agenta_api_json(&again).unwrap(), fastapi, "row {index}");
        if serde_json::to_string(&row).unwrap() != fastapi {
            respelled += 1;
        }
    }
    // The vectors exercise the respelling: most rows hold a float `repr` writes otherwise.
    assert!(respelled >= 50, "only {respelled} rows needed respelling");
}
