//! The benchmark inputs are what the report says they are.
//!
//! The parity inputs come from Agenta's fixtures: those tests are an upstream
//! conformance suite, skipped (one line says so) when the fixtures are absent, required
//! under `CI=true`. The generated inputs are our own and always checked.

use std::collections::HashSet;

use gatehouse_bench::inputs::{
    config_64k, gate_parameters, golden_blob, shared_stamp_inputs, stamp_vector_cases,
    C2_DEPARTURE_CASES, CONFIG_64K_CAP,
};
use gatehouse_bench::stamp_outputs;
use gatehouse_fixtures::{require, Upstream};
use gatehouse_wire::effective::{python_json_dumps_len, stamp_effective_parameters, StampPolicy};

/// The upstream conformance suite of this file.
const SUITE: &str = "Agenta stamp vectors as benchmark inputs (crates/bench/tests/inputs.rs)";

// upstream conformance: Agenta stamp vectors as benchmark inputs
#[test]
fn golden_blob_is_the_178_byte_vector() {
    if require(Upstream::Agenta, SUITE).is_none() {
        return;
    }
    let golden = golden_blob().unwrap();
    assert_eq!(python_json_dumps_len(&golden), 178);
    let stamped = stamp_effective_parameters(golden, &StampPolicy::default()).unwrap();
    assert_eq!(stamped.measured_bytes, 178);
    assert!(stamped.stripped.is_empty());
}

#[test]
fn the_live_gate_parameters_measure_178_bytes_and_strip_nothing() {
    let parameters = gate_parameters();
    assert_eq!(python_json_dumps_len(&parameters), 178);
    let stamped = stamp_effective_parameters(parameters, &StampPolicy::default()).unwrap();
    assert_eq!(stamped.measured_bytes, 178);
    assert!(stamped.stripped.is_empty());
}

#[test]
fn config_64k_is_stamped_just_under_the_cap_and_deterministic() {
    let config = config_64k();
    assert_eq!(config, config_64k(), "the same config on every call");
    let stamped = stamp_effective_parameters(config.clone(), &StampPolicy::default()).unwrap();
    assert!(
        (CONFIG_64K_CAP - 64..=CONFIG_64K_CAP).contains(&stamped.measured_bytes),
        "measured {}",
        stamped.measured_bytes
    );
    assert_eq!(stamped.stripped, vec!["connection.headers".to_string()]);
    let tools = config["agent"]["tools"].as_array().unwrap();
    assert!(tools.len() > 50, "mostly tool specs: {}", tools.len());
    assert!(tools.iter().all(|t| t["inputSchema"]["type"] == "object"));
}

// upstream conformance: Agenta stamp vectors as benchmark inputs
#[test]
fn shared_inputs_leave_out_the_c2_departures_and_agree_under_both_rules() {
    if require(Upstream::Agenta, SUITE).is_none() {
        return;
    }
    let inputs = shared_stamp_inputs(60).unwrap();
    let names: HashSet<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names.len(), inputs.len(), "names are unique");
    for departure in C2_DEPARTURE_CASES {
        assert!(!names.contains(departure), "{departure} is left out");
    }
    let vectors = stamp_vector_cases().unwrap();
    assert_eq!(
        vectors.len() - C2_DEPARTURE_CASES.len() + 3 + 60,
        inputs.len()
    );
    let outputs = stamp_outputs(&inputs);
    let outputs = outputs.as_array().unwrap();
    for output in outputs {
        assert_eq!(
            output["agenta_compatible_agrees"], true,
            "{} hits a C2 departure",
            output["name"]
        );
    }
    let by_name = |name: &str| {
        outputs
            .iter()
            .find(|o| o["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing"))
    };
    let at_cap = by_name("cap_boundary_exactly_65536_stamped");
    assert_eq!(
        (at_cap["emitted"].clone(), at_cap["measured_bytes"].clone()),
        (true.into(), 65536.into())
    );
    let over = by_name("cap_boundary_65537_dropped");
    assert_eq!(over["emitted"], false);
    assert_eq!(over["reason"], "over_cap");
    assert_eq!(over["measured_bytes"], 65537);
    // The generated configs exercise redaction: some strip, some do not.
    let generated: Vec<_> = outputs
        .iter()
        .filter(|o| o["name"].as_str().unwrap().starts_with("generated_"))
        .collect();
    assert!(generated
        .iter()
        .any(|o| o["stripped"].as_array().unwrap().is_empty()));
    assert!(generated
        .iter()
        .any(|o| !o["stripped"].as_array().unwrap().is_empty()));
}

// upstream conformance: Agenta stamp vectors as benchmark inputs
#[test]
fn the_vector_outputs_match_the_fixture() {
    if require(Upstream::Agenta, SUITE).is_none() {
        return;
    }
    // Every parity vector reproduces the fixture's own expectation.
    let fixture =
        gatehouse_bench::inputs::fixture_json("effective_config.stamp.vectors.derived.json")
            .unwrap();
    let inputs = shared_stamp_inputs(0).unwrap();
    let outputs = stamp_outputs(&inputs);
    for case in fixture["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        if C2_DEPARTURE_CASES.contains(&name) {
            continue;
        }
        let output = outputs
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == name)
            .unwrap();
        assert_eq!(output["emitted"], case["emitted"], "{name}");
        if case["emitted"] == true {
            assert_eq!(output["stamped"], case["stamped"], "{name}");
            assert_eq!(output["measured_bytes"], case["measured_bytes"], "{name}");
        }
    }
}
