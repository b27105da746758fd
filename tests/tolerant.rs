//! The tolerant readers against CPython's `json` and Node's `JSON.parse`: project-owned
//! vectors only (`tests/data/tolerant_json.vectors.json`, written by
//! `tests/python/make_tolerant_vectors.py`, seeded); no upstream fixture needed.
//!
//! - every text reads (or is refused) as Python reads it, and writes back as `json.dumps`
//!   writes it: a lone surrogate survives as the same escape, the last duplicate wins at the
//!   first key's position;
//! - every text reads (or is refused) as `JSON.parse` reads it, and its canonical JSON is
//!   the runner's;
//! - every `/run` body, holding lone surrogates, duplicate keys and a non-string
//!   `is_draft` or `revision.version`, validates against the committed schema, reads as a
//!   typed `RunRequest` and has the runner's `configFingerprint` (PR head and main).

// Test code: a broken vector file should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use gatehouse_wire::fingerprint::{
    canonical_json_of, config_fingerprint_of_text, FingerprintVariant,
};
use gatehouse_wire::pyjson::{dumps, loads, parse_js, PyValue, JS_MAX_DEPTH};
use gatehouse_wire::run::RunRequest;
use serde_json::Value;
use sha2::{Digest, Sha256};

fn vectors() -> Value {
    let path = gatehouse_tests::workspace_root().join("tests/data/tolerant_json.vectors.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// On a thread with a main thread's 8 MiB stack, as `gatehouse wire` reads (the typed
/// form of a text nested [`JS_MAX_DEPTH`] deep recurses per level; the server takes at most
/// 128 levels into it).
fn on_a_main_sized_stack(test: fn()) {
    std::thread::Builder::new()
        .stack_size(8 * 1024 * 1024)
        .spawn(test)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn texts_read_as_python_and_javascript_read_them() {
    on_a_main_sized_stack(texts_read_as_python_and_javascript_read_them_inner);
}

fn texts_read_as_python_and_javascript_read_them_inner() {
    let vectors = vectors();
    let texts = vectors["texts"].as_array().unwrap();
    assert!(texts.len() >= 400);
    let mut mismatches = Vec::new();
    let (mut surrogates, mut duplicates) = (0, 0);
    for case in texts {
        let text = case["text"].as_str().unwrap();
        let python = &case["python"];
        let short: String = text.chars().take(80).collect();
        match (loads(text), python["dumps"].as_str()) {
            (Ok(value), Some(want)) => {
                if dumps(&value) != want {
                    mismatches.push(format!("python {short}: {} vs {want}", dumps(&value)));
                }
            }
            (Ok(_), None) => mismatches.push(format!("python refuses {short}: {python}")),
            (Err(err), Some(_)) => mismatches.push(format!("python reads {short}: {err}")),
            (Err(err), None) => {
                let want = python["error"].as_str().unwrap();
                let same = match want {
                    "RecursionError" => err.message == "maximum recursion depth exceeded",
                    _ => {
                        err.message.starts_with(want)
                            && python["pos"]
                                .as_u64()
                                .is_none_or(|pos| pos == err.position as u64)
                    }
                };
                if !same {
                    mismatches.push(format!("python error {short}: {err} vs {python}"));
                }
            }
        }
        let read = parse_js(text);
        if read.is_ok() != case["js"].as_bool().unwrap() {
            mismatches.push(format!("JSON.parse {short}: {read:?} vs {}", case["js"]));
            continue;
        }
        let Ok(value) = read else { continue };
        // One model: what both parsers read, they read alike.
        if let Ok(python_value) = loads(text) {
            if python_value != value {
                mismatches.push(format!("models differ {short}"));
            }
        }
        if let Some(want) = case["canonical"].as_str() {
            let canonical = canonical_json_of(&value);
            if canonical != want {
                mismatches.push(format!("canonical {short}: {canonical} vs {want}"));
            }
            assert_eq!(
                hex::encode(Sha256::digest(canonical.as_bytes())),
                case["sha256"].as_str().unwrap()
            );
        }
        if value.to_json_lossy(JS_MAX_DEPTH).is_err() {
            mismatches.push(format!("no typed form {short}"));
        }
        surrogates += usize::from(value.lone_surrogate_path().is_some());
        duplicates += usize::from(text.contains(r#""a": 1, "a""#) || has_duplicate(&value, text));
    }
    assert!(mismatches.is_empty(), "{mismatches:#?}");
    // The vectors do hold what they are for.
    assert!(surrogates >= 50, "{surrogates} texts with a lone surrogate");
    assert!(duplicates >= 20, "{duplicates} texts with a duplicate key");
}

/// True when the text has more keys than the value: a duplicate was folded.
fn has_duplicate(value: &PyValue, text: &str) -> bool {
    fn keys(value: &PyValue) -> usize {
        match value {
            PyValue::Dict(map) => map.len() + map.values().map(keys).sum::<usize>(),
            PyValue::List(items) => items.iter().map(keys).sum(),
            _ => 0,
        }
    }
    // Every key of these texts is followed by its separator's colon, and no string value
    // holds one.
    text.matches(':').count() > keys(value)
}

#[test]
fn run_bodies_read_typed_and_fingerprint_as_the_runner() {
    let vectors = vectors();
    let bodies = vectors["run_bodies"].as_array().unwrap();
    assert!(bodies.len() >= 300);
    let schema_path = gatehouse_tests::schema_dir().join("run_request.schema.json");
    let schema = jsonschema::validator_for(
        &serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap(),
    )
    .unwrap();
    let mut mismatches = Vec::new();
    let mut strict_refuses = 0;
    for case in bodies {
        let text = case["text"].as_str().unwrap();
        let short: String = text.chars().take(120).collect();
        for (variant, key) in [
            (FingerprintVariant::PrHead, "fingerprint"),
            (FingerprintVariant::Main, "fingerprint_main"),
        ] {
            let ours = config_fingerprint_of_text(text, variant).unwrap();
            if ours != case[key].as_str().unwrap() {
                mismatches.push(format!("{key} {short}"));
            }
        }
        let value = parse_js(text).unwrap();
        let json = value.to_json_lossy(JS_MAX_DEPTH).unwrap();
        if let Some(err) = schema.iter_errors(&json).next() {
            mismatches.push(format!("schema {short}: {err} at {}", err.instance_path()));
        }
        if let Err(err) = gatehouse_wire::from_json_value::<RunRequest>(json) {
            mismatches.push(format!("typed {short}: {err}"));
        }
        strict_refuses +=
            usize::from(gatehouse_wire::from_json_slice::<RunRequest>(text.as_bytes()).is_err());
    }
    assert!(mismatches.is_empty(), "{mismatches:#?}");
    // Most of these bodies are what a strict reader refused before the tolerant one.
    assert!(strict_refuses >= 150, "{strict_refuses}");
}
