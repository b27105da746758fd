//! A request id on every request: the client's `X-Request-Id` when usable, a new one
//! otherwise; answered in the header and in every error body, in both envelopes.

use serde_json::Value;

use crate::common::Harness;

async fn get_with(h: &Harness, path: &str, id: Option<&str>) -> (u16, String, Value) {
    let mut request = h
        .http
        .get(h.url(path))
        .header("Authorization", h.server.authorization());
    if let Some(id) = id {
        request = request.header("X-Request-Id", id);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let answered = response
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, answered, body)
}

#[tokio::test]
async fn the_request_id_is_answered_and_in_every_error_body() {
    let h = Harness::start().await;
    let missing = format!("/api/sessions/interactions/{}", uuid::Uuid::new_v4());

    // Sent and usable: kept, in the header and the Agenta-shaped error body.
    let (status, answered, body) = get_with(&h, &missing, Some("trace-42.a_b")).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(answered, "trace-42.a_b");
    assert_eq!(body["request_id"], "trace-42.a_b", "{body}");
    assert_eq!(body["code"], "NOT_FOUND");

    // Not sent, or not usable (too long, spaces): a fresh one, different each time.
    let (_, first, body) = get_with(&h, &missing, None).await;
    assert_eq!(first.len(), 32, "{first}");
    assert_eq!(body["request_id"], first.as_str());
    let (_, second, _) = get_with(&h, &missing, Some(&"x".repeat(129))).await;
    assert_eq!(second.len(), 32);
    assert_ne!(first, second);
    let (_, spaced, _) = get_with(&h, &missing, Some("two words")).await;
    assert_ne!(spaced, "two words");
    // One that text-format logs would read as span structure (issue 37, item 9): a
    // fresh one, and the forged text is nowhere in the answer.
    let forged = "x}:forged{request_id=evil";
    let (_, replaced, body) = get_with(&h, &missing, Some(forged)).await;
    assert_eq!(replaced.len(), 32, "{replaced}");
    assert_eq!(body["request_id"], replaced.as_str(), "{body}");
    assert!(!body.to_string().contains("forged"), "{body}");

    // A success answers the header too; an unknown route's 404 carries the id.
    let (status, answered, _) = get_with(&h, "/api/capabilities", Some("caps-1")).await;
    assert_eq!((status, answered.as_str()), (200, "caps-1"));
    let (status, _, body) = get_with(&h, "/nowhere", Some("lost-1")).await;
    assert_eq!((status, &body["request_id"]), (404, &Value::from("lost-1")));

    // AgentPlat's envelope: `requestId` inside `error`.
    let (status, answered, body) = get_with(
        &h,
        "/api/rooms/r/execution-sessions/no-such-session",
        Some("room-7"),
    )
    .await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(answered, "room-7");
    assert_eq!(body["error"]["requestId"], "room-7", "{body}");
    h.server.shutdown().await;
}
