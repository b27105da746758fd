//! Exactly-once respond (C1) and Idempotency-Key replay.

use crate::common::Harness;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_responders_exactly_one_winner_one_resume() {
    let h = Harness::legacy().await;
    let id = h.park("race", "m-race").await;
    let url = h.url(&format!("/api/sessions/interactions/{id}/respond"));
    let mut tasks = Vec::new();
    for i in 0..50 {
        let http = h.http.clone();
        let url = url.clone();
        let auth = h.server.authorization();
        tasks.push(tokio::spawn(async move {
            let response = http
                .post(&url)
                .header("Authorization", auth)
                .json(
                    &json!({"answer": {"approved": i % 2 == 0, "message": format!("client {i}")}}),
                )
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let body: serde_json::Value = response.json().await.unwrap();
            (status, body)
        }));
    }
    let mut winners = 0;
    let mut losers = 0;
    for task in tasks {
        let (status, body) = task.await.unwrap();
        match status {
            200 => winners += 1,
            409 => {
                assert_eq!(body["detail"], "Interaction is no longer pending");
                assert_eq!(body["code"], "ALREADY_ANSWERED");
                losers += 1;
            }
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!((winners, losers), (1, 49));
    h.wait_resolved(&id).await;
    let turns = h.turns("race").await;
    assert_eq!(turns["count"], 2, "exactly one resume: {turns}");
    let state = h.server.server.state();
    let (job_state, resume_turn, attempts) =
        state.interactions.job_state(&id).await.unwrap().unwrap();
    assert_eq!(job_state, "done");
    assert_eq!(
        resume_turn.as_deref(),
        turns["turns"][1]["turn_id"].as_str()
    );
    assert_eq!(attempts, 1);
}

#[tokio::test]
async fn idempotency_key_replays_the_winning_request() {
    let h = Harness::legacy().await;
    let id = h.park("idem", "m-race").await;
    let path = format!("/api/sessions/interactions/{id}/respond");
    let body = json!({"answer": {"approved": true}});
    let (first_status, first) = h.post_with_key(&path, body.clone(), "key-1").await;
    assert_eq!(first_status, 200, "{first}");
    let (again_status, again) = h.post_with_key(&path, body.clone(), "key-1").await;
    assert_eq!(again_status, 200, "a replay answers the same 200: {again}");
    assert_eq!(again, first);
    // Without the key, the same answer is a 409 (someone already answered).
    let (plain_status, plain) = h.post(&path, body.clone()).await;
    assert_eq!(plain_status, 409, "{plain}");
    // Same key, different body.
    let (reused_status, reused) = h
        .post_with_key(&path, json!({"answer": {"approved": false}}), "key-1")
        .await;
    assert_eq!(reused_status, 409);
    assert_eq!(reused["code"], "IDEMPOTENCY_KEY_REUSED");
    // A fresh key on an answered row: 409 already answered.
    let (fresh_status, fresh) = h.post_with_key(&path, body, "key-2").await;
    assert_eq!(fresh_status, 409);
    assert_eq!(fresh["code"], "ALREADY_ANSWERED");
    h.wait_resolved(&id).await;
    assert_eq!(h.turns("idem").await["count"], 2);
}
