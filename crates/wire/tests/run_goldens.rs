//! The `/run` goldens parse and re-serialize byte-for-byte in key order (quick check;
//! the full contract suite lives in tests/contract.rs).

use gatehouse_wire::run::{RunRequest, RunResult};
use std::path::PathBuf;

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/agenta")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn run_request_goldens_round_trip_in_key_order() {
    for name in [
        "run_request.pi_core.json",
        "run_request.claude.json",
        "run_request.codex.json",
        "run_request.attachment.json",
    ] {
        let text = fixture(name);
        let original: serde_json::Value = serde_json::from_str(&text).unwrap();
        let parsed: RunRequest = gatehouse_wire::from_json_slice(text.as_bytes()).unwrap();
        assert!(
            parsed.problems().is_empty(),
            "{name}: {:?}",
            parsed.problems()
        );
        let again = serde_json::to_string(&parsed).unwrap();
        assert_eq!(again, serde_json::to_string(&original).unwrap(), "{name}");
    }
}

#[test]
fn run_result_goldens_round_trip_minus_typeless_events() {
    for name in ["run_result.ok.json", "run_result.error.json"] {
        let text = fixture(name);
        let mut original: serde_json::Value = serde_json::from_str(&text).unwrap();
        if let Some(events) = original.get_mut("events").and_then(|e| e.as_array_mut()) {
            events.retain(|e| e.get("type").is_some());
        }
        let parsed: RunResult = gatehouse_wire::from_json_slice(text.as_bytes()).unwrap();
        assert_eq!(
            serde_json::to_string(&parsed).unwrap(),
            serde_json::to_string(&original).unwrap(),
            "{name}"
        );
    }
}
