//! Every bad input answers a JSON error with a machine code; nothing panics.

use crate::common::{user, Harness};
use gatehouse_server::testing::TestServerOptions;
use serde_json::{json, Value};

async fn raw(
    h: &Harness,
    method: reqwest::Method,
    url: String,
    auth: Option<String>,
    body: Option<Vec<u8>>,
) -> (u16, Value) {
    let mut request = h.http.request(method, url);
    if let Some(auth) = auth {
        request = request.header("Authorization", auth);
    }
    if let Some(body) = body {
        request = request
            .header("Content-Type", "application/json")
            .body(body);
    }
    crate::common::decode(request.send().await.unwrap()).await
}

#[tokio::test]
async fn unauthenticated_requests_get_401() {
    let h = Harness::legacy().await;
    let url = h.url("/api/sessions/interactions/query");
    let (status, body) = raw(
        &h,
        reqwest::Method::POST,
        url.clone(),
        None,
        Some(b"{}".to_vec()),
    )
    .await;
    assert_eq!(status, 401);
    assert_eq!(body["code"], "UNAUTHORIZED");
    let (status, body) = raw(
        &h,
        reqwest::Method::POST,
        url.clone(),
        Some("ApiKey wrong".into()),
        Some(b"{}".to_vec()),
    )
    .await;
    assert_eq!(status, 401, "{body}");
    let (status, _) = raw(
        &h,
        reqwest::Method::POST,
        url.clone(),
        Some(format!("Basic {}", h.server.api_key)),
        Some(b"{}".to_vec()),
    )
    .await;
    assert_eq!(status, 401);
    let (status, _) = raw(
        &h,
        reqwest::Method::POST,
        url,
        Some(format!("Bearer {}", h.server.api_key)),
        Some(b"{}".to_vec()),
    )
    .await;
    assert_eq!(status, 200);
    let (status, body) = raw(
        &h,
        reqwest::Method::POST,
        format!("{}/run", h.server.base_url),
        None,
        Some(b"{}".to_vec()),
    )
    .await;
    assert_eq!(status, 401, "{body}");
    // Capabilities need no key.
    let (status, body) = raw(
        &h,
        reqwest::Method::GET,
        format!("{}/api/capabilities", h.server.base_url),
        None,
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["service"], "gatehouse");
    let caps: Vec<&str> = body["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    for cap in ["interactions", "interaction_watch", "invoke", "runs"] {
        assert!(caps.contains(&cap), "{caps:?}");
    }
}

#[tokio::test]
async fn another_projects_id_is_404_never_403() {
    let h = Harness::legacy().await;
    let id = h.park("bad", "m").await;
    let other = uuid::Uuid::new_v4();
    let auth = Some(h.server.authorization());
    let base = &h.server.base_url;
    let (status, body) = raw(
        &h,
        reqwest::Method::GET,
        format!("{base}/api/sessions/interactions/{id}?project_id={other}"),
        auth.clone(),
        None,
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(
        without_request_id(body),
        json!({"detail": "Interaction not found", "code": "NOT_FOUND"})
    );
    let (status, body) = raw(
        &h,
        reqwest::Method::POST,
        format!("{base}/api/sessions/interactions/{id}/respond?project_id={other}"),
        auth.clone(),
        Some(br#"{"answer":{"approved":true}}"#.to_vec()),
    )
    .await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = raw(
        &h,
        reqwest::Method::POST,
        format!("{base}/api/sessions/interactions/query?project_id={other}"),
        auth.clone(),
        Some(b"{}".to_vec()),
    )
    .await;
    assert_eq!((status, body["count"].as_u64()), (200, Some(0)));
    let (status, _) = raw(
        &h,
        reqwest::Method::GET,
        format!("{base}/api/sessions/bad/turns?project_id={other}"),
        auth,
        None,
    )
    .await;
    assert_eq!(status, 404);
    // Still pending in its own project.
    assert_eq!(h.interaction(&id).await["status"], "pending");
}

#[tokio::test]
async fn oversized_body_is_413_json() {
    let h = Harness::with(TestServerOptions {
        max_body_bytes: Some(4096),
        ..crate::common::legacy_options()
    })
    .await;
    let big = json!({"data": {"inputs": {"messages": user(&"x".repeat(5000))}}});
    let (status, body) = h.post("/api/invoke", big).await;
    assert_eq!(status, 413);
    assert_eq!(body["code"], "PAYLOAD_TOO_LARGE");
    // Default limit: 1 MiB.
    let h = Harness::legacy().await;
    let big = json!({"data": {"inputs": {"messages": user(&"x".repeat(1024 * 1024 + 10))}}});
    let (status, body) = h.post("/api/invoke", big).await;
    assert_eq!(status, 413, "{body}");
}

#[tokio::test]
async fn malformed_json_and_wrong_types_name_the_field() {
    let h = Harness::legacy().await;
    let id = h.park("bad", "m").await;
    let auth = Some(h.server.authorization());
    let respond = h.url(&format!("/api/sessions/interactions/{id}/respond"));
    let (status, body) = raw(
        &h,
        reqwest::Method::POST,
        respond.clone(),
        auth.clone(),
        Some(b"{not json".to_vec()),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["code"], "BAD_REQUEST");
    assert!(body["detail"].as_str().unwrap().contains("Malformed JSON"));
    let (status, body) = raw(
        &h,
        reqwest::Method::POST,
        respond.clone(),
        auth.clone(),
        None,
    )
    .await;
    assert_eq!(status, 400, "empty body: {body}");

    let (status, body) = h
        .post(
            &format!("/api/sessions/interactions/{id}/respond"),
            json!({"answer": 3}),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(body["code"], "VALIDATION_ERROR");
    assert_eq!(body["detail"][0]["loc"], json!(["body", "answer"]));

    // Any object is an answer, as in Agenta (tests/it/agenta.rs): no 422 for its content.

    let (status, body) = h
        .post(
            "/api/sessions/interactions/",
            json!({"session_id": "s", "token": "t", "kind": "bogus"}),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(body["detail"][0]["loc"], json!(["body", "kind"]));
    let (status, body) = h
        .post(
            "/api/sessions/interactions/query",
            json!({"windowing": {"limit": "ten"}}),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(
        body["detail"][0]["loc"],
        json!(["body", "windowing", "limit"])
    );
    let (status, body) = h
        .post(
            "/api/invoke",
            json!({"data": {"inputs": {"messages": [{"role": 5}]}}}),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["detail"][0]["loc"],
        json!(["body", "data", "inputs", "messages", 0, "role"])
    );
    let (status, body) = h
        .post(
            "/api/workflows/revisions/commit",
            json!({"workflow": {"slug": ""}, "variant": {"slug": "v"}, "parameters": {}}),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(
        body["detail"][0]["loc"],
        json!(["body", "workflow", "slug"])
    );
    // Still answerable after all that.
    assert_eq!(h.interaction(&id).await["status"], "pending");
}

#[tokio::test]
async fn bad_ids_unknown_routes_and_missing_project() {
    let h = Harness::legacy().await;
    let (status, body) = h.get("/api/sessions/interactions/not-a-uuid").await;
    assert_eq!(status, 422);
    assert_eq!(body["detail"][0]["loc"], json!(["path", "id"]));
    let (status, _) = h
        .post(
            "/api/sessions/interactions/not-a-uuid/respond",
            json!({"answer": {"approved": true}}),
        )
        .await;
    assert_eq!(status, 422);
    let (status, body) = h
        .get(&format!(
            "/api/sessions/interactions/{}",
            uuid::Uuid::new_v4()
        ))
        .await;
    assert_eq!(status, 404);
    assert_eq!(body["detail"], "Interaction not found");

    let (status, body) = h.get("/api/nothing/here").await;
    assert_eq!(status, 404);
    assert_eq!(
        without_request_id(body),
        json!({"detail": "Not Found", "code": "ROUTE_NOT_FOUND"})
    );
    // Without the execution service, its routes are absent: AgentPlat's route-not-found.
    let no_exec = Harness::with(TestServerOptions {
        execution: false,
        ..crate::common::legacy_options()
    })
    .await;
    let (status, body) = no_exec.get("/api/rooms/r1/execution-sessions/s1").await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "NOT_FOUND");
    assert_eq!(body["error"]["message"], "Route not found");
    assert_eq!(body["error"]["gatehouseCode"], "ROUTE_NOT_FOUND");

    let auth = Some(h.server.authorization());
    let base = &h.server.base_url;
    let (status, body) = raw(
        &h,
        reqwest::Method::POST,
        format!("{base}/api/sessions/interactions/query"),
        auth.clone(),
        Some(b"{}".to_vec()),
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(body["detail"][0]["loc"], json!(["query", "project_id"]));
    let (status, body) = raw(
        &h,
        reqwest::Method::POST,
        format!("{base}/api/sessions/interactions/query?project_id=nope"),
        auth.clone(),
        Some(b"{}".to_vec()),
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(body["detail"][0]["loc"], json!(["query", "project_id"]));
    let (status, body) = raw(
        &h,
        reqwest::Method::DELETE,
        h.url("/api/sessions/interactions/query"),
        auth,
        None,
    )
    .await;
    assert_eq!(status, 405, "{body}");
    assert!(body["detail"].is_string());
}

/// An error body less its `request_id` (a new one per request), which it must carry.
fn without_request_id(mut body: Value) -> Value {
    let id = body.as_object_mut().and_then(|o| o.remove("request_id"));
    assert!(
        id.as_ref().is_some_and(Value::is_string),
        "no request_id: {body}"
    );
    body
}
