//! AgentPlat's root paths (`/rooms/...`) as AgentPlat's own clients meet them: its
//! header-only tenant auth (off by default, on with `agentplat_header_auth`), its 409
//! for a missing `expectedRevision`, its JSON and SSE framing, while `/api/...` keeps
//! Gatehouse's richer shape.

use std::time::Duration;

use crate::common::{Harness, ParkedRun};
use gatehouse_server::testing::TestServerOptions;
use serde_json::{json, Value};

/// A request and its answer as text (status, body).
struct Call<'a> {
    h: &'a Harness,
    method: reqwest::Method,
    url: String,
    headers: Vec<(&'static str, String)>,
    body: Option<Value>,
}

impl<'a> Call<'a> {
    fn new(h: &'a Harness, method: reqwest::Method, path: &str) -> Self {
        Self {
            h,
            method,
            url: format!("{}{path}", h.server.base_url),
            headers: Vec::new(),
            body: None,
        }
    }

    fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    fn tenant(self) -> Self {
        let project = self.h.server.project_id.clone();
        self.header("X-Agentplat-Tenant-Id", project)
    }

    fn key(self) -> Self {
        let key = format!("Bearer {}", self.h.server.api_key);
        self.header("Authorization", key)
    }

    fn json(mut self, body: Value) -> Self {
        self.body = Some(body);
        self
    }

    async fn send(self) -> (u16, String) {
        let mut request = self.h.http.request(self.method, &self.url);
        for (name, value) in &self.headers {
            request = request.header(*name, value);
        }
        if let Some(body) = &self.body {
            request = request.json(body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.text().await.unwrap())
    }
}

fn root(room: &str, session: &str) -> String {
    format!("/rooms/{room}/execution-sessions/{session}")
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[tokio::test]
async fn without_the_setting_a_tenant_header_alone_is_refused() {
    let h = Harness::legacy().await;
    let ParkedRun {
        room,
        session,
        revision,
        ..
    } = h.park_run("task-no-header-auth", "m-root").await;
    let (status, body) = Call::new(&h, reqwest::Method::GET, &root(&room, &session))
        .tenant()
        .send()
        .await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(
        parse(&body)["error"]["message"],
        "Authentication is required"
    );
    let (status, body) = Call::new(
        &h,
        reqwest::Method::POST,
        &format!("{}/interventions", root(&room, &session)),
    )
    .tenant()
    .json(json!({"expectedRevision": revision, "operationId": "op-1",
                 "requestedByParticipantId": "human-1", "instruction": "x", "checkpoint": "pre_step"}))
    .send()
    .await;
    assert_eq!(status, 401, "{body}");
    // The key still works.
    let (status, body) = Call::new(&h, reqwest::Method::GET, &root(&room, &session))
        .tenant()
        .key()
        .send()
        .await;
    assert_eq!(status, 200, "{body}");
    h.server.shutdown().await;
}

#[tokio::test]
async fn with_the_setting_the_tenant_header_reaches_its_project_and_nothing_else() {
    let h = Harness::with(TestServerOptions {
        agentplat_header_auth: true,
        ..crate::common::legacy_options()
    })
    .await;
    let ParkedRun {
        room,
        session,
        revision,
        ..
    } = h.park_run("task-header-auth", "m-root").await;
    let path = root(&room, &session);
    let get = || Call::new(&h, reqwest::Method::GET, &path);

    let (status, body) = get().tenant().send().await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(parse(&body)["data"]["tenantId"], h.server.project_id);
    // Another tenant's sessions do not exist here; no tenant is AgentPlat's 400.
    let other = uuid::Uuid::new_v4().to_string();
    let (status, body) = get().header("X-Agentplat-Tenant-Id", other).send().await;
    assert_eq!(
        (status, parse(&body)["error"]["message"].clone()),
        (404, json!("Execution session not found"))
    );
    let (status, body) = get().send().await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        parse(&body)["error"]["message"],
        "Missing required X-Agentplat-Tenant-Id header"
    );
    // A key that is sent is checked as a key.
    let (status, body) = get()
        .tenant()
        .header("Authorization", "Bearer not-a-key")
        .send()
        .await;
    assert_eq!(status, 401, "{body}");
    // Nothing under /api is reached without a key.
    for api in [
        format!("/api{path}?project_id={}", h.server.project_id),
        format!(
            "/api/sessions/task-header-auth/turns?project_id={}",
            h.server.project_id
        ),
    ] {
        let (status, body) = Call::new(&h, reqwest::Method::GET, &api)
            .tenant()
            .send()
            .await;
        assert_eq!(status, 401, "{api}: {body}");
    }

    // The requester is the body's, as AgentPlat takes it without an authenticated actor;
    // naming none is AgentPlat's 403.
    let interventions = format!("{path}/interventions");
    let post = |body: Value| {
        Call::new(&h, reqwest::Method::POST, &interventions)
            .tenant()
            .json(body)
    };
    let (status, body) = post(json!({"expectedRevision": revision, "operationId": "op-1",
                                     "instruction": "x", "checkpoint": "pre_step"}))
    .send()
    .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        parse(&body)["error"]["message"],
        "Run interventions require a human Agent Room participant"
    );
    let (status, body) = post(json!({"expectedRevision": revision, "operationId": "op-1",
                                     "requestedByParticipantId": "human-1",
                                     "instruction": "x", "checkpoint": "pre_step"}))
    .send()
    .await;
    assert_eq!(status, 202, "{body}");
    let doc = parse(&body);
    assert_eq!(
        doc["data"]["interventions"][0]["requestedByParticipantId"],
        "human-1"
    );
    h.server.shutdown().await;
}

/// AgentPlat compares `expectedRevision` with the session's revision as it came: a
/// missing one is its 409 revision conflict, not a 400, unless the request replays.
#[tokio::test]
async fn a_missing_expected_revision_is_a_revision_conflict() {
    let h = Harness::legacy().await;
    let ParkedRun { room, session, .. } = h.park_run("task-no-revision", "m-root").await;
    // The request's id (sent, so it is known) last, after Gatehouse's code.
    let conflict = r#"{"error":{"code":"CONFLICT","message":"Execution session revision conflict","gatehouseCode":"REVISION_CONFLICT","requestId":"rev-check"}}"#;
    for prefix in ["", "/api"] {
        let path = format!(
            "{prefix}{}/interventions?project_id={}",
            root(&room, &session),
            h.server.project_id
        );
        let post = |body: Value| {
            Call::new(&h, reqwest::Method::POST, &path)
                .tenant()
                .key()
                .header("X-Request-Id", "rev-check")
                .json(body)
        };
        let op = format!("op{}", prefix.replace('/', "-"));
        for unusable in [json!(null), json!("0"), json!(-1)] {
            let mut body = json!({"operationId": op, "instruction": "x", "checkpoint": "pre_step"});
            if !unusable.is_null() {
                body["expectedRevision"] = unusable;
            }
            let (status, text) = post(body).send().await;
            assert_eq!((status, text.as_str()), (409, conflict), "{prefix}");
        }
        let current = parse(
            &Call::new(
                &h,
                reqwest::Method::GET,
                &path.replace("/interventions", ""),
            )
            .tenant()
            .key()
            .send()
            .await
            .1,
        )["data"]["revision"]
            .as_u64()
            .unwrap();
        let body = json!({"expectedRevision": current, "operationId": op, "instruction": "x", "checkpoint": "pre_step"});
        let (status, text) = post(body).send().await;
        assert_eq!(status, 202, "{text}");
        // A replay needs no revision.
        let (status, text) =
            post(json!({"operationId": op, "instruction": "x", "checkpoint": "pre_step"}))
                .send()
                .await;
        assert_eq!(status, 202, "{prefix}: {text}");
    }
    // Gatehouse's own compare-and-set route answers alike.
    let (status, body) = h
        .post(
            &format!("/api{}/authority", root(&room, &session)),
            json!({"authorityRevision": "a2"}),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["gatehouseCode"], "REVISION_CONFLICT");
    h.server.shutdown().await;
}

/// Read a stream until the server closes it.
async fn read_to_end(response: reqwest::Response) -> String {
    tokio::time::timeout(Duration::from_secs(10), response.text())
        .await
        .expect("the stream ended")
        .unwrap()
}

/// Every key of every object, recursively.
fn keys(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                out.push(key.clone());
                keys(value, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| keys(v, out)),
        _ => {}
    }
}

#[tokio::test]
async fn the_root_paths_write_agentplat_json_and_api_keeps_the_richer_shape() {
    let h = Harness::legacy().await;
    let ParkedRun {
        room,
        session,
        revision,
        gate,
    } = h.park_run("task-shapes", "m-root").await;
    let path = root(&room, &session);
    let (status, body) = h
        .post(
            &format!("/api{path}/interventions"),
            json!({"expectedRevision": revision, "operationId": "op-1",
                   "instruction": "be brief", "checkpoint": "pre_step"}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    let (status, body) = h.respond(&gate, true).await;
    assert_eq!(status, 200, "{body}");
    let ended = crate::common::wait_until(Duration::from_secs(10), || async {
        let (_, doc) = h.get(&format!("/api{path}")).await;
        doc["data"]["status"] == "completed"
    })
    .await;
    assert!(ended, "the run never ended");

    // Root: AgentPlat's fields only, millisecond times.
    let (status, text) = Call::new(&h, reqwest::Method::GET, &path)
        .tenant()
        .key()
        .send()
        .await;
    assert_eq!(status, 200, "{text}");
    let doc = parse(&text);
    let mut root_keys = Vec::new();
    keys(&doc, &mut root_keys);
    for gatehouse_only in [
        "sessionRevision",
        "details",
        "runtimeProfile",
        "checkpointProgress",
        "outcome",
        "authorityRevision",
        "roleRevision",
    ] {
        assert!(
            !root_keys.iter().any(|k| k == gatehouse_only),
            "{gatehouse_only}: {text}"
        );
    }
    let occurred = doc["data"]["events"][0]["occurredAt"].as_str().unwrap();
    assert_eq!(occurred.len(), 24, "{occurred}");
    // /api: Gatehouse's richer shape.
    let (_, api) = h.get(&format!("/api{path}")).await;
    let mut api_keys = Vec::new();
    keys(&api, &mut api_keys);
    for rich in [
        "sessionRevision",
        "details",
        "runtimeProfile",
        "checkpointProgress",
        "outcome",
    ] {
        assert!(api_keys.iter().any(|k| k == rich), "{rich}: {api}");
    }

    // Root stream: frames only, numbered per connection, ids `stream:<n>`.
    let response = h
        .http
        .get(format!("{}{path}/events/stream?after=2", h.server.base_url))
        .header("X-Agentplat-Tenant-Id", h.server.project_id.clone())
        .header("Authorization", format!("Bearer {}", h.server.api_key))
        .header("Last-Event-ID", "stream:4")
        .send()
        .await
        .unwrap();
    let text = read_to_end(response).await;
    assert!(text.starts_with("id: stream:1\nevent: agentplat.execution_session_event\ndata: {\"version\":1,\"sequence\":1,\"type\":\"execution_session_event\",\"payload\":{\"type\":"), "{text}");
    assert!(
        text.contains("\"sequence\":3}}\n\n"),
        "Last-Event-ID is ignored, after=2 holds: {text}"
    );
    assert!(!text.contains("retry:"), "{text}");
    // /api stream: the retry hint first, ids by session event.
    let response = h
        .open_stream(&format!("/api{path}/events/stream?after=2"))
        .await;
    let api_text = read_to_end(response).await;
    assert!(api_text.starts_with("retry: "), "{api_text}");
    assert!(api_text.contains("id: stream:3\n"), "{api_text}");

    // Root failure frame: AgentPlat's, numbered like any other.
    let response = h
        .http
        .get(format!(
            "{}{}/events/stream",
            h.server.base_url,
            root(&room, "no-such-session")
        ))
        .header("X-Agentplat-Tenant-Id", h.server.project_id.clone())
        .header("Authorization", format!("Bearer {}", h.server.api_key))
        .send()
        .await
        .unwrap();
    assert_eq!(
        read_to_end(response).await,
        "id: stream:1\nevent: agentplat.failed\ndata: {\"version\":1,\"sequence\":1,\"type\":\"failed\",\"content\":\"Stream failed\"}\n\n"
    );
    h.server.shutdown().await;
}
