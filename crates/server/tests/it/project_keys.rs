//! Keys scoped to projects: a key bound to projects acts in them only. Outside them it
//! gets 404 for anything addressed by id (as if it did not exist) and 403 for the
//! project itself, on every route, whichever way the request names the project.

use crate::common::{config, user, Harness};
use gatehouse_server::testing::TestServerOptions;
use gatehouse_server::ApiKey;
use serde_json::{json, Value};

const PHONE_KEY: &str = "phone-key-5c1f";
const BOTH_KEY: &str = "both-key-77aa";

struct Setup {
    h: Harness,
    mine: String,
    theirs: String,
}

/// The test key (unbound) plus `phone`, bound to one project, and `ops`, bound to both.
async fn setup() -> Setup {
    let mine = uuid::Uuid::new_v4().to_string();
    let theirs = uuid::Uuid::new_v4().to_string();
    let h = Harness::with(TestServerOptions {
        project_id: Some(theirs.clone()),
        extra_api_keys: vec![
            ApiKey::parse(&format!("phone={PHONE_KEY}@{}", mine.to_uppercase())).unwrap(),
            ApiKey::bound("ops", BOTH_KEY, [&mine, &theirs]),
        ],
        ..crate::common::legacy_options()
    })
    .await;
    Setup { h, mine, theirs }
}

async fn call(
    h: &Harness,
    method: reqwest::Method,
    path_and_query: &str,
    key: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    let mut request = h
        .http
        .request(method, format!("{}{path_and_query}", h.server.base_url))
        .header("Authorization", format!("ApiKey {key}"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    crate::common::decode(request.send().await.unwrap()).await
}

#[tokio::test]
async fn a_bound_key_acts_only_in_its_projects() {
    let Setup { h, mine, theirs } = setup().await;
    // Their project has a pending gate, a session and an execution run.
    let parked = h
        .invoke(json!({"session_id": "their-session",
                       "data": {"inputs": {"messages": user("go")}, "parameters": config("m", "ask")}}))
        .await;
    let their_gate = parked["interaction_ids"][0].as_str().unwrap().to_string();
    let room = parked["execution"]["room_id"].as_str().unwrap().to_string();
    let exec_session = parked["execution"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let get = reqwest::Method::GET;
    let post = reqwest::Method::POST;

    // In its own project the phone key works (the project id in any letter case).
    let (status, body) = call(
        &h,
        post.clone(),
        &format!("/api/invoke?project_id={mine}"),
        PHONE_KEY,
        Some(json!({"session_id": "mine", "data": {"inputs": {"messages": user("go")}, "parameters": config("m", "ask")}})),
        &[],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let my_gate = body["interaction_ids"][0].as_str().unwrap().to_string();
    let (status, body) = call(
        &h,
        get.clone(),
        &format!(
            "/api/sessions/interactions/{my_gate}?project_id={}",
            mine.to_uppercase()
        ),
        PHONE_KEY,
        None,
        &[],
    )
    .await;
    assert_eq!(status, 200, "{body}");

    // Addressed by id in their project: 404, exactly as for an id that does not exist.
    let by_id: Vec<(reqwest::Method, String, Option<Value>)> = vec![
        (
            get.clone(),
            format!("/api/sessions/interactions/{their_gate}"),
            None,
        ),
        (
            post.clone(),
            format!("/api/sessions/interactions/{their_gate}/respond"),
            Some(json!({"answer": {"approved": true}})),
        ),
        (
            get.clone(),
            "/api/sessions/their-session/turns".to_string(),
            None,
        ),
    ];
    for (method, path, body) in by_id {
        let (status, answer) = call(
            &h,
            method,
            &format!("{path}?project_id={theirs}"),
            PHONE_KEY,
            body,
            &[],
        )
        .await;
        assert_eq!(status, 404, "{path}: {answer}");
        assert_eq!(answer["code"], "NOT_FOUND", "{path}: {answer}");
    }
    let (_, unknown) = call(
        &h,
        get.clone(),
        &format!(
            "/api/sessions/interactions/{}?project_id={mine}",
            uuid::Uuid::new_v4()
        ),
        PHONE_KEY,
        None,
        &[],
    )
    .await;
    let (_, foreign) = call(
        &h,
        get.clone(),
        &format!("/api/sessions/interactions/{their_gate}?project_id={theirs}"),
        PHONE_KEY,
        None,
        &[],
    )
    .await;
    // The same answer but for the request's id, new each request.
    let strip = |mut body: Value| {
        body.as_object_mut().map(|o| o.remove("request_id"));
        body
    };
    assert_eq!(
        strip(unknown),
        strip(foreign),
        "a foreign id reads as a missing one"
    );
    for path in [
        format!("/api/rooms/{room}/execution-sessions/{exec_session}"),
        format!("/api/rooms/{room}/execution-sessions/{exec_session}/events"),
    ] {
        let (status, answer) = call(
            &h,
            get.clone(),
            &format!("{path}?project_id={theirs}"),
            PHONE_KEY,
            None,
            &[],
        )
        .await;
        assert_eq!(status, 404, "{path}: {answer}");
        assert_eq!(answer["error"]["code"], "NOT_FOUND", "{answer}");
    }
    let (status, answer) = call(
        &h,
        post.clone(),
        &format!(
            "/api/rooms/{room}/execution-sessions/{exec_session}/interventions?project_id={theirs}"
        ),
        PHONE_KEY,
        Some(json!({"operationId": "op-1", "instruction": "stop", "expectedRevision": 1})),
        &[],
    )
    .await;
    assert_eq!(status, 404, "{answer}");

    // Acting on their project itself: 403.
    let on_project: Vec<(reqwest::Method, &str, Option<Value>)> = vec![
        (
            post.clone(),
            "/api/sessions/interactions/query",
            Some(json!({})),
        ),
        (
            post.clone(),
            "/api/invoke",
            Some(json!({"data": {"inputs": {"messages": user("x")}}})),
        ),
        (
            post.clone(),
            "/api/sessions/interactions/",
            Some(json!({"session_id": "s", "token": "t", "kind": "user_approval"})),
        ),
        (
            post.clone(),
            "/api/sessions/interactions/transition",
            Some(json!({"session_id": "their-session", "token": "t", "status": "cancelled"})),
        ),
        (
            post.clone(),
            "/api/sessions/interactions/cancel-stale",
            Some(json!({"session_id": "their-session", "turn_id": "x"})),
        ),
        (
            post.clone(),
            "/api/workflows/revisions/commit",
            Some(json!({"workflow": {"slug": "w"}, "variant": {"slug": "v"}, "parameters": {}})),
        ),
        (
            get.clone(),
            "/api/sessions/streams/watch?session_id=their-session",
            None,
        ),
    ];
    for (method, path, body) in on_project {
        let separator = if path.contains('?') { '&' } else { '?' };
        let (status, answer) = call(
            &h,
            method,
            &format!("{path}{separator}project_id={theirs}"),
            PHONE_KEY,
            body,
            &[],
        )
        .await;
        assert_eq!(status, 403, "{path}: {answer}");
        assert_eq!(answer["code"], "FORBIDDEN", "{path}: {answer}");
    }
    // Naming the project in AgentPlat's tenant header is checked the same way.
    let (status, answer) = call(
        &h,
        post.clone(),
        &format!("/api/sessions/interactions/query?project_id={mine}"),
        PHONE_KEY,
        Some(json!({})),
        &[("X-Agentplat-Tenant-Id", &theirs)],
    )
    .await;
    assert_eq!(status, 403, "{answer}");

    // Nothing of theirs changed; a key bound to both projects acts in both.
    assert_eq!(h.interaction(&their_gate).await["status"], "pending");
    for project in [&mine, &theirs] {
        let (status, body) = call(
            &h,
            post.clone(),
            &format!("/api/sessions/interactions/query?project_id={project}"),
            BOTH_KEY,
            Some(json!({})),
            &[],
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["count"], 1, "{body}");
    }
    let (status, body) = call(
        &h,
        post.clone(),
        &format!("/api/sessions/interactions/{their_gate}/respond?project_id={theirs}"),
        BOTH_KEY,
        Some(json!({"answer": {"approved": true}})),
        &[],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // The capabilities need no key and name no project.
    let (status, _) = call(&h, get, "/api/capabilities", PHONE_KEY, None, &[]).await;
    assert_eq!(status, 200);
}
