//! The API key and parameter contents never reach logs or errors.
//!
//! These tests live in their own test binary with one process-wide subscriber: a
//! thread-local `set_default` subscriber races tracing's global per-callsite interest
//! cache when other tests of the same binary run concurrently, which made them flaky.
//! Both tests share the buffer; their assertions hold for the union of their logs. (The
//! other tests are modules of `tests/it`, a binary without a global subscriber.)

// Test code: a broken fixture or server should fail the test loudly, here and in helpers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "it/common/mod.rs"]
mod common;

use std::sync::OnceLock;

use common::*;
use gatehouse_client::Answer;

const ID: &str = "019fac94-0000-7000-8000-000000000001";

fn global_logs() -> &'static LogBuffer {
    static LOGS: OnceLock<LogBuffer> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = LogBuffer::default();
        tracing::subscriber::set_global_default(capture_subscriber(logs.clone()))
            .expect("this test binary installs exactly one global subscriber");
        logs
    })
}

#[tokio::test]
async fn logs_and_errors_never_show_the_key_or_parameter_contents() {
    const SECRET_PARAM: &str = "sk-live-PARAM-9d8e7f";
    let server = serve(|index, req, stream| async move {
        // A hostile server echoing the Authorization header and the parameters back.
        let auth = req.header("authorization").unwrap_or("").to_string();
        let row = {
            let mut row = row_json(ID, "pending", serde_json::Value::Null);
            row["data"]["parameters"] = serde_json::json!({"agent": {"llm": {"api_key": SECRET_PARAM}}});
            row
        };
        let body = match index {
            0 => json(500, serde_json::json!({"detail": format!("bad auth {auth}"), "echo": row})),
            1 => json(200, serde_json::json!({"count": 1, "interaction": {"broken": true, "parameters": SECRET_PARAM, "auth": auth}})),
            _ => json(422, serde_json::json!({"detail": [{"loc": ["body"], "msg": format!("bad {auth}"), "input": SECRET_PARAM}]})),
        };
        reply(stream, body).await
    })
    .await;
    let logs = global_logs();
    let c = client(&server.url, 1);
    let e1 = c.interactions().get(ID).await.unwrap_err();
    let e2 = c.interactions().get(ID).await.unwrap_err();
    let e3 = c
        .interactions()
        .respond(ID, &Answer::deny(SECRET_PARAM))
        .await
        .unwrap_err();
    let text = logs.text();
    assert!(
        text.contains("gatehouse_call"),
        "spans are recorded: {text}"
    );
    assert!(text.contains("operation=get_interaction"), "{text}");
    assert!(text.contains("status=500"), "{text}");
    assert!(text.contains("duration_ms"), "{text}");
    for (what, rendered) in [
        ("logs", text),
        ("e1", format!("{e1} {e1:?}")),
        ("e2", format!("{e2} {e2:?}")),
        ("e3", format!("{e3} {e3:?}")),
        ("client", format!("{c:?}")),
    ] {
        assert!(
            !rendered.contains(TEST_KEY),
            "{what} shows the key: {rendered}"
        );
        assert!(
            !rendered.contains(SECRET_PARAM),
            "{what} shows a parameter value: {rendered}"
        );
    }
}

#[tokio::test]
async fn logs_against_the_reference_server_never_show_the_key_or_parameters() {
    const SECRET: &str = "sk-live-DO-NOT-LOG-4417";
    // The legacy contract: the second answer is a 409 there (a durable host answers the
    // same verdict again 202, with nothing new).
    let server = gatehouse_server::testing::spawn(gatehouse_server::testing::TestServerOptions {
        agenta_contract: gatehouse_server::AgentaContract::Legacy,
        ..gatehouse_server::testing::TestServerOptions::default()
    })
    .await;
    let id = open_gate_with(
        &server,
        "logs",
        serde_json::json!({"agent": {
            "llm": {"model": "m-logs", "api_key": SECRET},
            "runner": {"permissions": {"default": "ask"}},
            "script": [{"tool": "Bash", "args": {"command": SECRET}}]
        }}),
    )
    .await;
    let logs = global_logs();
    let c = client_for(&server);
    let rows = c.interactions().list_pending(Some("logs")).await.unwrap();
    assert_eq!(rows.len(), 1);
    c.interactions()
        .respond(&id, &Answer::deny(SECRET))
        .await
        .unwrap();
    let err = c
        .interactions()
        .respond(&id, &Answer::deny(SECRET))
        .await
        .unwrap_err();
    let text = logs.text();
    assert!(text.contains("operation=respond_interaction"), "{text}");
    assert!(text.contains("status=409"), "{text}");
    let rendered = format!("{text}\n{err}\n{err:?}\n{c:?}");
    assert!(
        !rendered.contains(&server.api_key),
        "the key leaked: {rendered}"
    );
    assert!(
        !rendered.contains(SECRET),
        "a parameter value leaked: {rendered}"
    );
}
