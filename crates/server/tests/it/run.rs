//! The runner tier's `POST /run`: JSON `RunResult` and NDJSON `RunStreamRecord` lines.

use crate::common::Harness;
use gatehouse_wire::run::{RunResult, RunStreamRecord};
use serde_json::json;

fn run_request(permission: &str) -> serde_json::Value {
    json!({
        "harness": "pi_core", "sandbox": "local", "sessionId": "run-session", "agentsMd": null,
        "model": "openai/m-run", "messages": [{"role": "user", "content": "hello"}],
        "context": null, "telemetry": null, "tools": [], "customTools": [], "toolCallback": null,
        "permissions": {"default": permission}
    })
}

#[tokio::test]
async fn run_answers_json() {
    let h = Harness::start().await;
    let response = h
        .http
        .post(format!("{}/run", h.server.base_url))
        .header("Authorization", format!("Bearer {}", h.server.api_key))
        .json(&run_request("allow"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let result: RunResult = response.json().await.unwrap();
    assert!(result.ok);
    assert_eq!(result.stop_reason.as_deref(), Some("end_turn"));
    assert_eq!(result.model.as_deref(), Some("openai/m-run"));
    let output = result.output.unwrap();
    assert!(
        output.contains("[model=openai/m-run] Working on: hello"),
        "{output}"
    );
    assert!(output.contains("ran Bash"), "{output}");
    let events = result.events.unwrap();
    assert_eq!(events.last().unwrap().event_type(), "done");

    // A custom script through the `script` extension key; a fail step fails the run.
    let mut body = run_request("allow");
    body["script"] = json!([{"say": "one"}, {"fail": "nope"}]);
    let result: RunResult = h
        .http
        .post(format!("{}/run", h.server.base_url))
        .header("Authorization", format!("Bearer {}", h.server.api_key))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(!result.ok);
    assert_eq!(result.error.as_deref(), Some("nope"));

    body["script"] = json!("not a list");
    let response = h
        .http
        .post(format!("{}/run", h.server.base_url))
        .header("Authorization", format!("Bearer {}", h.server.api_key))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 422);
}

#[tokio::test]
async fn run_streams_ndjson() {
    let h = Harness::start().await;
    let response = h
        .http
        .post(format!("{}/run", h.server.base_url))
        .header("Authorization", format!("Bearer {}", h.server.api_key))
        .header("Accept", "application/x-ndjson")
        .json(&run_request("ask"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.headers()["content-type"], "application/x-ndjson");
    let text = response.text().await.unwrap();
    let records: Vec<RunStreamRecord> = text
        .lines()
        .filter_map(|line| RunStreamRecord::from_ndjson_line(line).unwrap())
        .collect();
    assert!(records.len() >= 3, "{text}");
    let (last, events) = records.split_last().unwrap();
    assert!(events
        .iter()
        .all(|r| matches!(r, RunStreamRecord::Event { .. })));
    let RunStreamRecord::Result { result } = last else {
        panic!("last line is the result: {text}")
    };
    assert!(result.ok);
    assert_eq!(result.stop_reason.as_deref(), Some("awaiting_approval"));
    assert!(events
        .iter()
        .any(|r| matches!(r, RunStreamRecord::Event { event } if event.event_type() == "gate")));
}
