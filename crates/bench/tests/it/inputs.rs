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
use gatehouse_wire::effective::{stamp_effective_parameters, StampPolicy};
use gatehouse_wire::pyjson::python_json_dumps_len;

/// The upstream conformance suite of this file.
const SUITE: &str = "Agenta stamp vectors as benchmark inputs (crates/bench/tests/it/inputs.rs)";

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
    // Where the default stamp departs from Agenta's rule, C2's rule for credential-shaped
    // fields explains it (the parity comparison skips those inputs and counts them).
    for (output, input) in outputs.iter().zip(&inputs) {
        if output["agenta_compatible_agrees"] != true {
            assert!(
                has_credential_shaped_field(&input.input),
                "{} departs from Agenta without a credential-shaped field",
                output["name"]
            );
        }
    }
    let agreeing = outputs
        .iter()
        .filter(|o| o["agenta_compatible_agrees"] == true)
        .count();
    assert!(
        agreeing * 2 > outputs.len(),
        "most shared inputs are parity inputs"
    );
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

/// True when C2's rule for credential-shaped fields can strip something of `value` (an
/// over-approximation: a key naming a credential, an `env` block, an inline `value`, a
/// URL with a secret query parameter).
fn has_credential_shaped_field(value: &serde_json::Value) -> bool {
    use gatehouse_wire::redact::{is_credential_shaped_key, strip_url_secrets};
    match value {
        serde_json::Value::Object(map) => map.iter().any(|(key, inner)| {
            (!inner.is_null()
                && (is_credential_shaped_key(key)
                    || key == "value"
                    || (key.eq_ignore_ascii_case("env")
                        && (inner.is_object() || inner.is_array()))))
                || has_credential_shaped_field(inner)
        }),
        serde_json::Value::Array(items) => items.iter().any(has_credential_shaped_field),
        serde_json::Value::String(text) => strip_url_secrets(text).is_some(),
        _ => false,
    }
}

/// The borrowing stamp and the owning one are one rule: on every shared input (the
/// recorded vectors and 200 generated configs) the view serializes to the owned stamp's
/// object, measures the same, and names the same stripped fields.
#[test]
fn the_borrowing_stamp_writes_what_the_owning_stamp_keeps() {
    use gatehouse_wire::effective::{stamp_borrowed, stamp_effective_parameters, StampPolicy};
    let Ok(inputs) = shared_stamp_inputs(200) else {
        // Without Agenta's fixtures the recorded vectors are absent; the generated
        // configs alone still run.
        return;
    };
    for policy in [StampPolicy::default(), StampPolicy::with_max_bytes(262_144)] {
        for input in &inputs {
            let Some(object) = input.input.as_object() else {
                continue;
            };
            let owned = stamp_effective_parameters(input.input.clone(), &policy);
            match (stamp_borrowed(object, &policy), owned) {
                (Ok(view), Ok(stamped)) => {
                    assert_eq!(
                        serde_json::to_value(view).unwrap(),
                        serde_json::Value::Object(stamped.parameters.clone()),
                        "{}",
                        input.name
                    );
                    assert_eq!(view.to_object(), stamped.parameters, "{}", input.name);
                    assert_eq!(
                        view.measured_bytes, stamped.measured_bytes,
                        "{}",
                        input.name
                    );
                    assert_eq!(view.stripped(), stamped.stripped, "{}", input.name);
                }
                (Err(a), Err(b)) => assert_eq!(a, b, "{}", input.name),
                (a, b) => panic!("{}: {a:?} vs {b:?}", input.name),
            }
        }
    }
}

/// The measured stamp (row 1) is the walking stamp: on every shared input read back from
/// its JSON text, and on the 64 KiB config, `stamp_measured` gives the same view, size,
/// stripped fields and verdict as `stamp_borrowed`, under both rules.
#[test]
fn the_measured_stamp_is_the_walking_stamp_on_every_benchmark_input() {
    use gatehouse_bench::inputs::config_text;
    use gatehouse_wire::effective::{stamp_borrowed, stamp_measured, MeasuredConfig};
    use gatehouse_wire::redact::Redaction;
    let mut inputs = shared_stamp_inputs(200).unwrap_or_default();
    inputs.push(gatehouse_bench::inputs::NamedInput {
        name: "config_64k".into(),
        input: config_64k(),
    });
    let mut compared = 0;
    for redaction in [Redaction::Gatehouse, Redaction::AgentaCompatible] {
        for max_bytes in [65_536, 262_144] {
            let policy = StampPolicy {
                max_bytes,
                redaction,
            };
            for input in &inputs {
                if !input.input.is_object() {
                    continue;
                }
                let config = MeasuredConfig::from_json(&config_text(&input.input)).unwrap();
                let walked = stamp_borrowed(config.object(), &policy);
                match (stamp_measured(&config, &policy), walked) {
                    (Ok(measured), Ok(walked)) => {
                        assert_eq!(
                            serde_json::to_string(&measured).unwrap(),
                            serde_json::to_string(&walked).unwrap(),
                            "{}",
                            input.name
                        );
                        assert_eq!(
                            measured.measured_bytes, walked.measured_bytes,
                            "{}",
                            input.name
                        );
                        assert_eq!(measured.stripped(), walked.stripped(), "{}", input.name);
                    }
                    (Err(a), Err(b)) => assert_eq!(a, b, "{}", input.name),
                    (a, b) => panic!("{}: {a:?} vs {b:?}", input.name),
                }
                compared += 1;
            }
        }
    }
    assert!(compared >= 4, "{compared}");
}
