//! The batch answer (`POST /api/sessions/interactions/respond-batch`, C4): many gates in
//! one request, each exactly once with its own outcome, idempotent per gate under a
//! retried batch, racing batches with exactly one winner per gate, the size limit.

use std::collections::HashMap;

use crate::common::Harness;
use serde_json::{json, Value};

const BATCH: &str = "/api/sessions/interactions/respond-batch";

/// Park `n` gates, one per agent session `prefix-i`.
async fn gates(h: &Harness, prefix: &str, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(h.park(&format!("{prefix}-{i}"), "m-batch").await);
    }
    ids
}

fn approve(id: &str, key: Option<&str>) -> Value {
    let mut item = json!({"id": id, "answer": {"approved": true}});
    if let Some(key) = key {
        item["idempotency_key"] = json!(key);
    }
    item
}

fn outcomes(body: &Value) -> Vec<(String, String)> {
    body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_string(),
                r["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn each_gate_gets_its_own_outcome_in_the_request_order() {
    let h = Harness::legacy().await;
    let ids = gates(&h, "mixed", 3).await;
    let (status, _) = h.respond(&ids[2], false).await;
    assert_eq!(status, 200);
    let unknown = "019fac94-0000-7000-8000-00000000beef";
    let (status, body) = h
        .post(
            BATCH,
            json!({"answers": [approve(&ids[0], None), approve(&ids[1], None), approve(&ids[2], None),
                               approve(unknown, None), approve("not-a-uuid", None)]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["count"], 5);
    let got: Vec<String> = outcomes(&body).into_iter().map(|(_, o)| o).collect();
    assert_eq!(
        got,
        [
            "answered",
            "answered",
            "already_answered",
            "not_found",
            "invalid"
        ],
        "{body}"
    );
    let results = body["results"].as_array().unwrap();
    assert_eq!(results[0]["interaction"]["status"], "responded");
    assert_eq!(
        results[0]["interaction"]["data"]["resolution"]["answer"]["approved"],
        true
    );
    assert_eq!(results[2]["error"]["code"], "ALREADY_ANSWERED");
    assert_eq!(results[3]["error"]["code"], "NOT_FOUND");
    assert_eq!(results[4]["error"]["code"], "VALIDATION_ERROR");
    // Each answered gate is resumed, once.
    for id in &ids[..2] {
        let row = h.wait_resolved(id).await;
        assert_eq!(row["data"]["resolution"]["verdict"], "approved");
    }
    for i in 0..2 {
        let turns = h.turns(&format!("mixed-{i}")).await;
        assert_eq!(turns["count"], 2, "parked + one resume: {turns}");
    }
    h.server.shutdown().await;
}

#[tokio::test]
async fn a_retried_batch_replays_each_gate_and_a_key_binds_to_its_answer() {
    let h = Harness::legacy().await;
    let ids = gates(&h, "retry", 4).await;
    let items: Vec<Value> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| approve(id, Some(&format!("phone-{i}"))))
        .collect();
    let (status, first) = h.post(BATCH, json!({"answers": items})).await;
    assert_eq!(status, 200, "{first}");
    // The same batch again (the phone lost the answer): every gate is its own answer
    // back, not "already answered".
    let (status, again) = h.post(BATCH, json!({"answers": items})).await;
    assert_eq!(status, 200);
    assert!(
        outcomes(&again).iter().all(|(_, o)| o == "answered"),
        "{again}"
    );
    for (a, b) in first["results"]
        .as_array()
        .unwrap()
        .iter()
        .zip(again["results"].as_array().unwrap())
    {
        assert_eq!(a["interaction"]["id"], b["interaction"]["id"]);
        assert_eq!(
            a["interaction"]["updated_at"],
            b["interaction"]["updated_at"]
        );
    }
    // A single respond under a batch item's key, same answer: the same replay.
    let (status, single) = h
        .post_with_headers(
            &format!("/api/sessions/interactions/{}/respond", ids[0]),
            json!({"answer": {"approved": true}}),
            &[("Idempotency-Key", "phone-0")],
        )
        .await;
    assert_eq!(status, 200, "{single}");
    assert_eq!(
        single["interaction"]["updated_at"],
        first["results"][0]["interaction"]["updated_at"]
    );
    // The key with another answer is refused for that gate only.
    let (status, reused) = h
        .post(
            BATCH,
            json!({"answers": [{"id": ids[1], "answer": {"approved": false}, "idempotency_key": "phone-1"}]}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(reused["results"][0]["outcome"], "invalid");
    assert_eq!(
        reused["results"][0]["error"]["code"],
        "IDEMPOTENCY_KEY_REUSED"
    );
    for (i, id) in ids.iter().enumerate() {
        h.wait_resolved(id).await;
        let turns = h.turns(&format!("retry-{i}")).await;
        assert_eq!(turns["count"], 2, "resumed once: {turns}");
    }
    h.server.shutdown().await;
}

/// Two devices approve all at once, with overlapping batches: every gate has exactly
/// one winner across both, and is resumed once.
#[tokio::test]
async fn racing_batches_have_one_winner_per_gate() {
    let h = Harness::legacy().await;
    let ids = gates(&h, "race", 40).await;
    let phone: Vec<Value> = ids.iter().map(|id| approve(id, None)).collect();
    let mut tablet: Vec<Value> = ids.iter().rev().map(|id| approve(id, None)).collect();
    tablet.truncate(30);
    let (a, b) = tokio::join!(
        h.post(BATCH, json!({"answers": phone})),
        h.post(BATCH, json!({"answers": tablet}))
    );
    assert_eq!((a.0, b.0), (200, 200), "{} {}", a.1, b.1);
    let mut winners: HashMap<String, usize> = HashMap::new();
    for (id, outcome) in outcomes(&a.1).into_iter().chain(outcomes(&b.1)) {
        if outcome == "answered" {
            *winners.entry(id).or_default() += 1;
        } else {
            assert_eq!(outcome, "already_answered");
        }
    }
    for id in &ids {
        assert_eq!(winners.get(id), Some(&1), "{id}: exactly one winner");
    }
    for (i, id) in ids.iter().enumerate() {
        h.wait_resolved(id).await;
        assert_eq!(h.turns(&format!("race-{i}")).await["count"], 2);
    }
    h.server.shutdown().await;
}

#[tokio::test]
async fn a_batch_holds_1_to_500_answers_and_is_advertised() {
    let h = Harness::legacy().await;
    let (status, body) = h.post(BATCH, json!({"answers": []})).await;
    assert_eq!(status, 422, "{body}");
    let many: Vec<Value> = (0..501)
        .map(|i| approve(&format!("019fac94-0000-7000-8000-{i:012}"), None))
        .collect();
    let (status, body) = h.post(BATCH, json!({"answers": many})).await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["detail"][0]["msg"].as_str().unwrap().contains("500"),
        "{body}"
    );
    let (status, caps) = h.get("/api/capabilities").await;
    assert_eq!(status, 200);
    assert!(
        caps["capabilities"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "interaction_batch"),
        "{caps}"
    );
    h.server.shutdown().await;
}
