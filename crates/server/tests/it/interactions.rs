//! The A5 endpoints a runner and a client use: create, query, get, transition, cancel-stale.

use crate::common::Harness;
use serde_json::{json, Value};

fn gate(session: &str, token: &str, turn: &str) -> Value {
    json!({
        "session_id": session, "turn_id": turn, "token": token, "kind": "user_approval",
        "data": {
            "request": {"tool": "Bash", "args": {"command": "echo hi"}, "tool_call_id": format!("call-{token}")},
            "references": {"workflow": {"slug": "wf"}},
            "parameters": {"agent": {"llm": {"model": "m-ext"}}}
        },
        "flags": {"delivered_in_band": token.ends_with('b'), "delivered_webhook": false}
    })
}

#[tokio::test]
async fn create_is_idempotent_and_renders_every_field() {
    let h = Harness::legacy().await;
    let (status, first) = h
        .post("/api/sessions/interactions/", gate("s1", "tok-a", "t-1"))
        .await;
    assert_eq!(status, 200, "{first}");
    let row = &first["interaction"];
    assert_eq!(first["count"], 1);
    assert_eq!(row["status"], "pending");
    assert_eq!(row["project_id"], h.server.project_id.as_str());
    // Agenta's model types actor ids as UUIDs: one stable UUID per actor.
    assert_eq!(
        row["created_by_id"],
        gatehouse_server::auth::actor_uuid("tester").as_str()
    );
    assert_eq!(row["data"]["parameters"]["agent"]["llm"]["model"], "m-ext");
    for key in [
        "tags",
        "meta",
        "updated_at",
        "deleted_at",
        "updated_by_id",
        "deleted_by_id",
    ] {
        assert!(
            row[key].is_null() && row.get(key).is_some(),
            "{key} rendered as null"
        );
    }
    assert!(row["data"]["selector"].is_null() && row["data"]["resolution"].is_null());
    // A re-post returns the existing row unchanged.
    let mut again = gate("s1", "tok-a", "t-1");
    again["data"]["request"]["tool"] = json!("Other");
    let (status, second) = h.post("/api/sessions/interactions", again).await;
    assert_eq!(status, 200);
    assert_eq!(second, first);
    // A row without a stamp renders `"parameters": null`, as Agenta's API renders it.
    let mut bare = gate("s1", "tok-c", "t-1");
    bare["data"].as_object_mut().unwrap().remove("parameters");
    let (_, bare) = h.post("/api/sessions/interactions/", bare).await;
    assert!(bare["interaction"]["data"]["parameters"].is_null());
}

#[tokio::test]
async fn query_filters_and_windows() {
    let h = Harness::legacy().await;
    let mut ids = Vec::new();
    for (session, token, turn) in [
        ("q1", "t0", "a"),
        ("q1", "t1b", "a"),
        ("q1", "t2", "b"),
        ("q2", "t3", "c"),
        ("q1", "t4b", "b"),
    ] {
        let (_, body) = h
            .post("/api/sessions/interactions/", gate(session, token, turn))
            .await;
        ids.push(body["interaction"]["id"].as_str().unwrap().to_string());
    }
    let hr = &h;
    let query = |q: Value| async move {
        let (status, body) = hr.post("/api/sessions/interactions/query", q).await;
        assert_eq!(status, 200, "{body}");
        body["interactions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(query(json!({})).await, ids);
    assert_eq!(query(json!({"query": {"session_id": "q1"}})).await.len(), 4);
    assert_eq!(
        query(json!({"query": {"session_id": "q1", "turn_id": "b"}})).await,
        vec![ids[2].clone(), ids[4].clone()]
    );
    assert_eq!(
        query(json!({"query": {"flags": {"delivered_in_band": true}}})).await,
        vec![ids[1].clone(), ids[4].clone()]
    );
    assert_eq!(
        query(json!({"query": {"kind": "user_input"}})).await.len(),
        0
    );
    // Windowing: pages of 2 by cursor, ascending and descending. A window with no
    // order lists newest first, as Agenta's does (its `Windowing.order` defaults to
    // descending); a body with no window lists in the order rows were written.
    let page1 = query(json!({"windowing": {"limit": 2, "order": "ascending"}})).await;
    assert_eq!(page1, ids[..2].to_vec());
    let page2 =
        query(json!({"windowing": {"limit": 2, "order": "ascending", "next": page1[1]}})).await;
    assert_eq!(page2, ids[2..4].to_vec());
    let unordered = query(json!({"windowing": {"limit": 2}})).await;
    assert_eq!(unordered, vec![ids[4].clone(), ids[3].clone()]);
    let unordered_next = query(json!({"windowing": {"limit": 2, "next": unordered[1]}})).await;
    assert_eq!(unordered_next, vec![ids[2].clone(), ids[1].clone()]);
    let newest_first = query(json!({"windowing": {"limit": 2, "order": "descending"}})).await;
    assert_eq!(newest_first, vec![ids[4].clone(), ids[3].clone()]);
    let older = query(json!({"windowing": {"order": "descending", "next": ids[3]}})).await;
    assert_eq!(older, vec![ids[2].clone(), ids[1].clone(), ids[0].clone()]);
    assert_eq!(query(json!({"windowing": {"oldest": "2000-01-01T00:00:00Z", "newest": "2999-01-01T00:00:00+00:00"}})).await.len(), 5);
    assert_eq!(
        query(json!({"windowing": {"newest": "2000-01-01T00:00:00Z"}}))
            .await
            .len(),
        0
    );
    let (status, body) = h
        .post(
            "/api/sessions/interactions/query",
            json!({"windowing": {"oldest": "yesterday"}}),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(
        body["detail"][0]["loc"],
        json!(["body", "windowing", "oldest"])
    );

    // actionable_only = pending.
    let (status, _) = h
        .post(
            &format!("/api/sessions/interactions/{}/respond", ids[0]),
            json!({"answer": {"approved": true}}),
        )
        .await;
    assert_eq!(status, 200);
    let actionable = query(json!({"query": {"actionable_only": true}})).await;
    assert_eq!(actionable, ids[1..].to_vec());
    assert_eq!(
        query(json!({"query": {"status": "responded"}})).await,
        vec![ids[0].clone()]
    );
    assert!(
        query(json!({"query": {"status": "responded", "actionable_only": true}}))
            .await
            .is_empty()
    );
}

/// A gate opened by an external runner: the answer is stored and left `responded` for
/// that runner, which consumes it and transitions the row by token.
#[tokio::test]
async fn external_runner_transitions_and_cancel_stale() {
    let h = Harness::legacy().await;
    let (_, created) = h
        .post(
            "/api/sessions/interactions/",
            gate("ext", "tok-1", "turn-1"),
        )
        .await;
    let id = created["interaction"]["id"].as_str().unwrap().to_string();
    let (status, _) = h
        .post(
            &format!("/api/sessions/interactions/{id}/respond"),
            json!({"answer": {"approved": true, "message": "ok"}}),
        )
        .await;
    assert_eq!(status, 200);
    // The dispatcher finishes the job without resuming (no parked turn here).
    let store = &h.server.server.state().interactions;
    let mut done = false;
    for _ in 0..500 {
        if let Some((state, resume_turn, _)) = store.job_state(&id).await.unwrap() {
            if state == "done" {
                assert!(resume_turn.is_none());
                done = true;
                break;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(done, "the job completes");
    assert_eq!(h.interaction(&id).await["status"], "responded");

    let (status, moved) = h
        .post(
            "/api/sessions/interactions/transition",
            json!({"session_id": "ext", "token": "tok-1", "status": "resolved", "resolution": {"verdict": "approved", "tool_call_id": "call-tok-1"}}),
        )
        .await;
    assert_eq!(status, 200, "{moved}");
    let resolution = &moved["interaction"]["data"]["resolution"];
    assert_eq!(resolution["verdict"], "approved");
    assert_eq!(
        resolution["answer"]["message"], "ok",
        "the answer is kept: {resolution}"
    );
    let (status, again) = h
        .post(
            "/api/sessions/interactions/transition",
            json!({"session_id": "ext", "token": "tok-1", "status": "cancelled"}),
        )
        .await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(again["code"], "ALREADY_ANSWERED");
    let (status, _) = h
        .post(
            "/api/sessions/interactions/transition",
            json!({"session_id": "ext", "token": "nope", "status": "resolved"}),
        )
        .await;
    assert_eq!(status, 404);
    let (status, body) = h
        .post(
            "/api/sessions/interactions/transition",
            json!({"session_id": "ext", "token": "tok-1", "status": "pending"}),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(body["detail"][0]["loc"], json!(["body", "status"]));

    // In-band resolution straight from pending.
    h.post(
        "/api/sessions/interactions/",
        gate("ext", "tok-2", "turn-1"),
    )
    .await;
    let (status, _) = h
        .post("/api/sessions/interactions/transition", json!({"session_id": "ext", "token": "tok-2", "status": "resolved", "resolution": {"verdict": "denied", "tool_call_id": "toolu_2"}}))
        .await;
    assert_eq!(status, 200);

    // cancel-stale: pending gates of other turns go; the live turn's stay.
    for (token, turn) in [
        ("s-1", "old"),
        ("s-2", "old"),
        ("s-3", "live"),
        ("s-4", "old"),
    ] {
        h.post("/api/sessions/interactions/", gate("ext", token, turn))
            .await;
    }
    let (status, body) = h
        .post(
            "/api/sessions/interactions/cancel-stale",
            json!({"session_id": "ext", "turn_id": "live", "tokens": ["s-1", "s-3"]}),
        )
        .await;
    assert_eq!((status, body), (200, json!({"cancelled": 1})));
    let (_, body) = h
        .post(
            "/api/sessions/interactions/cancel-stale",
            json!({"session_id": "ext", "turn_id": "live"}),
        )
        .await;
    assert_eq!(body, json!({"cancelled": 2}));
    let (_, pending) = h
        .post(
            "/api/sessions/interactions/query",
            json!({"query": {"session_id": "ext", "actionable_only": true}}),
        )
        .await;
    assert_eq!(pending["count"], 1);
    assert_eq!(pending["interactions"][0]["token"], "s-3");
}
