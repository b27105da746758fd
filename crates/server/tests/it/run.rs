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
    let h = Harness::legacy().await;
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
    let h = Harness::legacy().await;
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

/// Post a raw JSON text (what a strict serializer cannot write) to `path`.
async fn post_text(h: &Harness, path: &str, text: &str) -> (u16, serde_json::Value) {
    let response = h
        .http
        .post(h.url(path))
        .header("Authorization", h.server.authorization())
        .header("Content-Type", "application/json")
        .body(text.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or_default())
}

/// `/run` reads a body as Agenta's runner does (JavaScript's `JSON.parse`): lone surrogate
/// escapes in strings and keys, a duplicate key (the last wins), a non-string `is_draft`
/// and `revision.version` are read and run; NaN, which `JSON.parse` refuses, is a 400, and
/// nesting past the typed readers' bound a 422.
#[tokio::test]
async fn run_reads_what_the_runner_reads() {
    let h = Harness::legacy().await;
    let body = r#"{"harness": "pi_core", "sandbox": "local", "sessionId": "s-\ud800", "agentsMd": null,
        "model": "openai/first", "messages": [{"role": "user", "content": "hi \udc00 there"}],
        "context": null, "telemetry": null, "tools": [], "customTools": [], "toolCallback": null,
        "permissions": {"default": "allow"}, "systemPrompt": "\ud83d\ude00\ud800",
        "runContext": {"workflow": {"revision": {"id": "r", "version": 3}, "is_draft": "yes"}},
        "x-\udfff": {"k": 1, "k": 2}, "model": "openai/last"}"#;
    let (status, answer) = post_text(&h, "/run", body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["ok"], true, "{answer}");
    assert_eq!(
        answer["model"], "openai/last",
        "the last of a duplicate key"
    );

    let (status, answer) = post_text(&h, "/run", &body.replace("\"r\"", "NaN")).await;
    assert_eq!(status, 400, "{answer}");

    let deep = format!(
        "{}, \"deep\": {}{}}}",
        body.trim_end_matches('}'),
        "[".repeat(200),
        "]".repeat(200)
    );
    let (status, answer) = post_text(&h, "/run", &deep).await;
    assert_eq!(status, 422, "{answer}");
}

/// `/api/invoke` reads a config as Agenta's API does (Python's `json.loads`). `Infinity`,
/// `-Infinity` and `1E400` are read: the turn parks at its gate, the gate's row keeps them
/// (as the JSON literal `1e+999`, which Python and `JSON.parse` read as the same
/// infinities), and the resume after the answer runs under that config. `NaN` and a lone
/// surrogate escape, in a value or in a key, are refused with a 422 naming where and
/// nothing is run: Agenta's own API cannot send such a config to its runner nor keep it in
/// a row either (CONTRACT.md, differences from Agenta).
#[tokio::test]
async fn invoke_reads_what_agentas_api_reads() {
    let h = Harness::legacy().await;
    let invoke = |session: &str, llm: &str| {
        format!(
            r#"{{"session_id": "{session}", "data": {{"inputs": {{"messages": [{{"role": "user", "content": "go"}}]}},
            "parameters": {{"agent": {{"llm": {{"model": "m", {llm}}},
            "runner": {{"permissions": {{"default": "ask"}}}}}}}}}}}}"#
        )
    };

    let infinities = invoke(
        "s-inf",
        r#""temperature": Infinity, "floor": -Infinity, "top_p": 1E400"#,
    );
    let (status, parked) = post_text(&h, "/api/invoke", &infinities).await;
    assert_eq!(status, 200, "{parked}");
    assert_eq!(parked["status"], "parked", "{parked}");
    let gate = parked["interaction_ids"][0].as_str().unwrap().to_string();
    let row_text = h
        .http
        .get(h.url(&format!("/api/sessions/interactions/{gate}")))
        .header("Authorization", h.server.authorization())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    // The stored row keeps the overflowing literals (the resume below runs under them);
    // over HTTP a row is spelled as Agenta's API (pydantic) spells it: an infinity is `null`.
    assert!(
        row_text.contains(r#""temperature":null,"floor":null,"top_p":null"#),
        "the row answers the infinities as pydantic does: {row_text}"
    );
    let stamped = h.interaction(&gate).await["data"]["parameters"].clone();
    let (status, answer) = h.respond(&gate, true).await;
    assert_eq!(status, 200, "{answer}");
    let resolved = h.wait_resolved(&gate).await;
    assert_eq!(resolved["data"]["parameters"], stamped, "{resolved}");
    let turns = h.turns("s-inf").await;
    let resumed = &turns["turns"][1];
    assert_eq!(
        resumed["resumed_from_interaction_id"],
        gate.as_str(),
        "{turns}"
    );
    assert_eq!(resumed["status"], "completed", "{turns}");
    assert_eq!(
        resumed["model"], "m",
        "the resume runs under the same config: {turns}"
    );

    for (index, (llm, names)) in [
        (r#""temperature": NaN"#, "temperature"),
        (r#""temperature": [1, {"x": NaN}]"#, "temperature.1.x"),
        (r#""stop": "\ud800""#, "stop"),
        (r#""\udfff": 1"#, "\"llm\",\"\u{fffd}\""),
        (r#""seed": {"k\udc00": "v"}"#, "\"seed\",\"k\u{fffd}\""),
    ]
    .into_iter()
    .enumerate()
    {
        let session = format!("s-refused-{index}");
        let (status, answer) = post_text(&h, "/api/invoke", &invoke(&session, llm)).await;
        assert_eq!(status, 422, "{llm}: {answer}");
        assert_eq!(answer["code"], "VALIDATION_ERROR", "{llm}: {answer}");
        assert!(
            answer.to_string().contains(names),
            "{llm}: names where ({names}): {answer}"
        );
        let (status, turns) = h.get(&format!("/api/sessions/{session}/turns")).await;
        assert_eq!(status, 404, "{llm}: nothing ran: {turns}");
    }
}
