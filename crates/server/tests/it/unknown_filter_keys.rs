//! Issue 37, item 11: a misspelt filter must not fail open. A query body or a list's query
//! string with a key the API does not know is refused with 422 `VALIDATION_ERROR` naming
//! the key (pydantic's `extra_forbidden`), never answered with every row of the project.
//! The keys Agenta's own clients send (the live recordings) are all known.

use crate::common::Harness;
use serde_json::{json, Value};

async fn gate(h: &Harness, session: &str, token: &str) {
    let (status, body) = h
        .post(
            "/api/sessions/interactions/",
            json!({"session_id": session, "token": token, "kind": "user_approval"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
}

fn assert_unknown_key(status: u16, body: &Value, loc: Value) {
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["code"], "VALIDATION_ERROR", "{body}");
    assert_eq!(body["detail"][0]["loc"], loc, "{body}");
    assert_eq!(body["detail"][0]["type"], "extra_forbidden", "{body}");
}

#[tokio::test]
async fn a_query_with_an_unknown_key_is_refused_naming_it() {
    let h = Harness::start().await;
    gate(&h, "mine", "t1").await;
    gate(&h, "theirs", "t2").await;
    let path = "/api/sessions/interactions/query";
    for (body, loc) in [
        (
            json!({"query": {"sesion_id": "mine"}}),
            json!(["body", "query", "sesion_id"]),
        ),
        (
            json!({"interaction": {"session_id": "mine"}}),
            json!(["body", "interaction"]),
        ),
        (
            json!({"query": {"session_id": "mine", "flags": {"delivered": true}}}),
            json!(["body", "query", "flags", "delivered"]),
        ),
        (
            json!({"query": {"session_id": "mine"}, "windowing": {"limt": 1}}),
            json!(["body", "windowing", "limt"]),
        ),
    ] {
        let (status, answer) = h.post(path, body.clone()).await;
        assert_unknown_key(status, &answer, loc);
    }
    // Every key the API offers is known (Agenta's clients send a subset of these).
    let (status, answer) = h
        .post(
            path,
            json!({
                "query": {"session_id": "mine", "turn_id": null, "kind": "user_approval",
                          "status": "pending", "actionable_only": true,
                          "flags": {"delivered_in_band": null, "delivered_webhook": false}},
                "windowing": {"newest": null, "oldest": null, "next": null, "limit": 10,
                              "order": "ascending", "interval": null, "rate": null}
            }),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["count"], 1, "{answer}");
    for body in [json!({}), json!({"query": null}), json!({"query": {}})] {
        let (status, answer) = h.post(path, body).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["count"], 2, "{answer}");
    }
}

#[tokio::test]
async fn the_bodies_agentas_clients_send_are_accepted() {
    let Some(dir) =
        gatehouse_fixtures::require(gatehouse_fixtures::Upstream::Agenta, "unknown filter keys")
    else {
        return;
    };
    let h = Harness::start().await;
    let mut bodies = Vec::new();
    for entry in std::fs::read_dir(dir.join("live/recorded")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let recording: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            collect_query_bodies(&recording, &mut bodies);
        }
    }
    assert!(!bodies.is_empty(), "the recording has query requests");
    for body in bodies {
        let (status, answer) = h
            .post("/api/sessions/interactions/query", body.clone())
            .await;
        assert_eq!(status, 200, "{body} -> {answer}");
    }
}

fn collect_query_bodies(value: &Value, out: &mut Vec<Value>) {
    match value {
        Value::Object(map) => {
            let is_query = map
                .values()
                .any(|v| v.as_str().is_some_and(|s| s.contains("interactions/query")));
            if is_query {
                if let Some(body) = map.get("body").filter(|b| b.is_object()) {
                    out.push(body.clone());
                }
            }
            map.values().for_each(|v| collect_query_bodies(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_query_bodies(v, out)),
        _ => {}
    }
}

#[tokio::test]
async fn the_deliveries_list_refuses_an_unknown_query_key() {
    let h = Harness::start().await;
    let (status, answer) = h.get("/api/webhooks/deliveries?stat=pending").await;
    assert_unknown_key(status, &answer, json!(["query", "stat"]));
    let (status, answer) = h
        .get("/api/webhooks/deliveries?state=pending&limit=5")
        .await;
    assert_eq!(status, 200, "{answer}");
}
