//! One log line per request, never the API key, the parameters, or a stripped secret;
//! the dev key is accepted when no key is configured.
//!
//! A test binary of its own, not a module of `tests/it`: it installs the process-wide
//! tracing subscriber, and every other test's server would log into it (its count of
//! `/api/invoke` request lines would then be wrong).

// Test code: a broken fixture or server should fail the test loudly, here and in helpers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "it/common/mod.rs"]
mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::{user, Harness};
use gatehouse_server::{start, ServerConfig, DEV_API_KEY};
use serde_json::json;

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn logs_requests_without_secrets_and_accepts_the_dev_key() {
    let capture = Capture::default();
    let writer = capture.clone();
    tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_env_filter("gatehouse_server=debug")
        .init();

    let h = Harness::start().await;
    let secret_header = "Bearer sk-very-secret-value";
    let parked = h
        .invoke(json!({
            "session_id": "logged",
            "data": {
                "inputs": {"messages": user("private prompt text")},
                "parameters": {"agent": {
                    "llm": {"model": "m-log"},
                    "runner": {"permissions": {"default": "ask"}},
                    "mcps": [{"name": "notion", "headers": {"Authorization": secret_header},
                              "credentials": {"type": "header_secret_refs", "headers": {"authorization": "NOTION_TOKEN"}}}]
                }}
            }
        }))
        .await;
    let id = parked["interaction_ids"][0].as_str().unwrap().to_string();
    let row = h.interaction(&id).await;
    let mcp = &row["data"]["parameters"]["agent"]["mcps"][0];
    assert!(
        mcp.get("headers").is_none(),
        "stripped before stamping: {mcp}"
    );
    assert_eq!(
        mcp["credentials"]["headers"]["authorization"],
        "NOTION_TOKEN"
    );

    let logs = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    let request_lines: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains(" request ") && l.contains("path=/api/invoke"))
        .collect();
    assert_eq!(request_lines.len(), 1, "{logs}");
    assert!(
        !request_lines[0].contains('?'),
        "no query string: {}",
        request_lines[0]
    );
    assert!(logs.contains("status=200"));
    assert!(logs.contains("stripped a secret field"), "{logs}");
    assert!(
        !logs.contains(&h.server.api_key),
        "the API key never appears"
    );
    assert!(!logs.contains("sk-very-secret-value"), "no secret value");
    assert!(!logs.contains("private prompt text"), "no inputs");

    // With no key configured, the dev key works (and a warning is logged).
    let dir = tempfile::tempdir().unwrap();
    let config = ServerConfig::new(format!("sqlite://{}", dir.path().join("dev.db").display()));
    let server = start(config).await.unwrap();
    let response = reqwest::Client::new()
        .post(format!(
            "{}/api/sessions/interactions/query?project_id={}",
            server.base_url(),
            uuid::Uuid::new_v4()
        ))
        .header("Authorization", format!("ApiKey {DEV_API_KEY}"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    server.shutdown().await;
    let logs = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("no API key configured"), "{logs}");
}
