//! Typed answers where the server used to answer 500 or store anything: identifiers over
//! the limit (422 naming the field), token lists past the databases' parameter limits
//! (processed in chunks), and the same `Idempotency-Key` racing on different gates (a
//! typed 409, on SQLite and Postgres alike).

use crate::common::{config, user, Harness};
use serde_json::{json, Value};

const MAX_ID: usize = gatehouse_server::api::extract::MAX_ID_CHARS;

fn assert_too_long(status: u16, body: &Value, loc: Value) {
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["code"], "VALIDATION_ERROR", "{body}");
    assert_eq!(body["detail"][0]["loc"], loc, "{body}");
    assert_eq!(body["detail"][0]["type"], "string_too_long", "{body}");
    assert!(
        body["detail"][0]["msg"]
            .as_str()
            .unwrap()
            .contains(&MAX_ID.to_string()),
        "{body}"
    );
}

#[tokio::test]
async fn identifiers_over_the_limit_are_refused_and_not_stored() {
    let h = Harness::legacy().await;
    let huge = "s".repeat(900_000);
    let long = "t".repeat(MAX_ID + 1);
    let (status, body) = h
        .post(
            "/api/invoke",
            json!({"session_id": huge, "data": {"inputs": {"messages": user("x")}, "parameters": config("m", "ask")}}),
        )
        .await;
    assert_too_long(status, &body, json!(["body", "session_id"]));

    let gate = h.park("limits", "m").await;
    let cases = [
        (
            "/api/sessions/interactions/",
            json!({"session_id": "s", "token": long, "kind": "user_approval"}),
            json!(["body", "token"]),
        ),
        (
            "/api/sessions/interactions/",
            json!({"session_id": "s", "token": "t", "turn_id": long, "kind": "user_approval"}),
            json!(["body", "turn_id"]),
        ),
        (
            "/api/sessions/interactions/transition",
            json!({"session_id": long, "token": "t", "status": "cancelled"}),
            json!(["body", "session_id"]),
        ),
        (
            "/api/sessions/interactions/cancel-stale",
            json!({"session_id": "s", "turn_id": "t", "tokens": ["ok", long]}),
            json!(["body", "tokens", 1]),
        ),
        (
            "/api/sessions/interactions/query",
            json!({"query": {"session_id": long}}),
            json!(["body", "query", "session_id"]),
        ),
        (
            "/api/invoke",
            json!({"references": {"workflow": {"slug": long}}, "data": {"inputs": {"messages": user("x")}}}),
            json!(["body", "references", "workflow", "slug"]),
        ),
        (
            "/api/workflows/revisions/commit",
            json!({"workflow": {"slug": long}, "variant": {"slug": "v"}, "parameters": {}}),
            json!(["body", "workflow", "slug"]),
        ),
        (
            &format!("/api/sessions/interactions/{gate}/respond"),
            json!({"answer": {"approved": true, "tool_call_id": long}}),
            json!(["body", "answer", "tool_call_id"]),
        ),
    ];
    for (path, body, loc) in cases {
        let (status, answer) = h.post(path, body).await;
        assert_too_long(status, &answer, loc);
    }
    // Path segments and query identifiers too.
    let (status, body) = h.get(&format!("/api/sessions/{long}/turns")).await;
    assert_too_long(status, &body, json!(["path"]));
    let (status, body) = h
        .get(&format!("/api/sessions/streams/watch?session_id={long}"))
        .await;
    assert_too_long(status, &body, json!(["query", "session_id"]));
    // The execution routes answer in AgentPlat's envelope.
    let (status, body) = h
        .get(&format!("/api/rooms/{long}/execution-sessions/s"))
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "BAD_REQUEST", "{body}");

    // At the limit is fine; nothing of the refused requests was stored, the gate waits.
    let at_limit = "a".repeat(MAX_ID);
    let done = h
        .invoke(json!({"session_id": at_limit, "data": {"inputs": {"messages": user("x")}, "parameters": config("m", "allow")}}))
        .await;
    assert_eq!(done["session_id"], at_limit.as_str());
    let (_, rows) = h.post("/api/sessions/interactions/query", json!({})).await;
    assert_eq!(rows["count"], 1, "{rows}");
    assert_eq!(h.interaction(&gate).await["status"], "pending");
}

/// Far more tokens than SQLite's variable limit (32766) or Postgres's bind-parameter
/// limit (65535) in one `cancel-stale`: every listed stale gate is cancelled, no other.
#[tokio::test]
async fn cancel_stale_takes_token_lists_past_the_database_parameter_limits() {
    let h = Harness::legacy().await;
    let mut tokens: Vec<String> = (0..70_000).map(|i| format!("t{i}")).collect();
    for (token, turn) in [
        ("stale-1", "old"),
        ("stale-2", "old"),
        ("live", "live"),
        ("unlisted", "old"),
    ] {
        let (status, body) = h
            .post(
                "/api/sessions/interactions/",
                json!({"session_id": "many", "token": token, "turn_id": turn, "kind": "user_approval"}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    tokens.insert(100, "stale-1".to_string());
    tokens.insert(40_000, "stale-2".to_string());
    tokens.push("live".to_string());
    tokens.push("stale-1".to_string());
    let (status, body) = h
        .post(
            "/api/sessions/interactions/cancel-stale",
            json!({"session_id": "many", "turn_id": "live", "tokens": tokens}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["cancelled"], 2, "{body}");
    let (_, rows) = h
        .post(
            "/api/sessions/interactions/query",
            json!({"query": {"session_id": "many"}}),
        )
        .await;
    for row in rows["interactions"].as_array().unwrap() {
        let expected = match row["token"].as_str().unwrap() {
            "stale-1" | "stale-2" => "cancelled",
            _ => "pending",
        };
        assert_eq!(row["status"], expected, "{row}");
    }
}

/// 50 pairs of responds to two different gates with the same `Idempotency-Key`, each
/// pair at once: one wins, the other gets a typed 409 `IDEMPOTENCY_KEY_REUSED`, never a
/// 500; and 10 identical responds at once all get the one answer.
#[tokio::test]
async fn the_same_idempotency_key_on_two_gates_at_once_is_a_typed_conflict() {
    let h = Harness::legacy().await;
    let mut pairs = Vec::new();
    for i in 0..50 {
        let a = h.park(&format!("race-a-{i}"), "m").await;
        let b = h.park(&format!("race-b-{i}"), "m").await;
        pairs.push((a, b, format!("race-key-{i}")));
    }
    let answer = json!({"answer": {"approved": true}});
    let results = futures::future::join_all(pairs.iter().map(|(a, b, key)| {
        let h = &h;
        let answer = answer.clone();
        async move {
            let path_a = format!("/api/sessions/interactions/{a}/respond");
            let path_b = format!("/api/sessions/interactions/{b}/respond");
            let (first, second) = tokio::join!(
                h.post_with_key(&path_a, answer.clone(), key),
                h.post_with_key(&path_b, answer.clone(), key)
            );
            (first, second)
        }
    }))
    .await;
    for ((a, b, _), ((status_a, body_a), (status_b, body_b))) in pairs.iter().zip(results) {
        let mut statuses = [status_a, status_b];
        statuses.sort();
        assert_eq!(statuses, [200, 409], "{body_a} {body_b}");
        let (loser, winner_id, loser_id) = if status_a == 409 {
            (&body_a, b, a)
        } else {
            (&body_b, a, b)
        };
        assert_eq!(loser["code"], "IDEMPOTENCY_KEY_REUSED", "{loser}");
        assert_eq!(h.interaction(loser_id).await["status"], "pending");
        assert_ne!(h.interaction(winner_id).await["status"], "pending");
    }

    let gate = h.park("same-request", "m").await;
    let path = format!("/api/sessions/interactions/{gate}/respond");
    let answers = futures::future::join_all(
        (0..10).map(|_| h.post_with_key(&path, answer.clone(), "same-request-key")),
    )
    .await;
    for (status, body) in &answers {
        assert_eq!(*status, 200, "{body}");
        assert_eq!(body, &answers[0].1);
    }
}
