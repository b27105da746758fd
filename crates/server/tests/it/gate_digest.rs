//! Answers bound to the gate that was shown (CONTRACT.md C8, issue 34 item 3): every row
//! shows its revision and digest; a respond carrying a digest that is not the pending
//! gate's is 409 `STALE_GATE` with nothing recorded, on the legacy and the durable
//! respond and per item of a batch; a respond without one is taken as before; and a gate
//! changed while an answer is in flight is either answered as it was shown or refused,
//! never answered as changed.

use crate::common::Harness;
use gatehouse_wire::interaction::{InteractionRequest, SessionInteraction};
use serde_json::{json, Value};

/// A server whose Agenta paths speak the durable contract (the respond answers 202).
async fn durable() -> Harness {
    Harness::with(gatehouse_server::testing::TestServerOptions {
        agenta_contract: gatehouse_server::AgentaContract::Durable,
        ..Default::default()
    })
    .await
}

fn respond_path(id: &str) -> String {
    format!("/api/sessions/interactions/{id}/respond")
}

/// The row as a client reads it, and the digest a client computes from it.
async fn shown(h: &Harness, id: &str) -> (Value, String) {
    let row = h.interaction(id).await;
    let typed: SessionInteraction = serde_json::from_value(row.clone()).unwrap();
    let computed = typed
        .computed_digest()
        .expect("a Gatehouse row has a revision");
    assert_eq!(
        row["gate"]["digest"],
        computed.as_str(),
        "the row shows what a client computes: {row}"
    );
    (row, computed)
}

/// Change what the pending gate asks, through the store's one write that does.
async fn revise(h: &Harness, id: &str, command: &str) -> bool {
    let state = h.server.server.state();
    let request = InteractionRequest {
        tool: Some("Bash".into()),
        args: Some(json!({"command": command})),
        tool_call_id: None,
        extra: Default::default(),
    };
    state
        .interactions
        .revise_pending_request(&h.server.project_id, id, &request, "test")
        .await
        .unwrap()
        .is_some()
}

/// Nothing recorded: the gate is pending with no answer and no resume job.
async fn nothing_recorded(h: &Harness, id: &str) {
    let row = h.interaction(id).await;
    assert_eq!(row["status"], "pending", "{row}");
    assert_eq!(row["data"]["resolution"], Value::Null, "{row}");
    let state = h.server.server.state();
    assert!(
        state.interactions.job_state(id).await.unwrap().is_none(),
        "no resume job"
    );
}

#[tokio::test]
async fn a_row_shows_its_revision_and_digest_and_capabilities_say_it_is_checked() {
    let h = durable().await;
    let id = h.park("digest-shown", "m-shown").await;
    let (row, digest) = shown(&h, &id).await;
    assert_eq!(row["gate"]["revision"], 1, "{row}");
    assert!(revise(&h, &id, "rm -rf /").await);
    let (row, revised) = shown(&h, &id).await;
    assert_eq!(row["gate"]["revision"], 2, "{row}");
    assert_ne!(digest, revised);
    let (_, caps) = h.get("/api/capabilities").await;
    assert!(
        caps["capabilities"]
            .as_array()
            .unwrap()
            .contains(&json!("answer_digest")),
        "{caps}"
    );
}

#[tokio::test]
async fn legacy_respond_stale_digest_is_refused_and_records_nothing() {
    let h = Harness::legacy().await;
    let id = h.park("digest-legacy", "m-legacy").await;
    let (_, before) = shown(&h, &id).await;
    assert!(revise(&h, &id, "rm -rf /").await);
    let (status, body) = h
        .post(
            &respond_path(&id),
            json!({"answer": {"approved": true}, "digest": before}),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["code"], "STALE_GATE", "{body}");
    nothing_recorded(&h, &id).await;
    // The gate as it is now is answered.
    let (_, now) = shown(&h, &id).await;
    let (status, body) = h
        .post(
            &respond_path(&id),
            json!({"answer": {"approved": true}, "digest": now}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["interaction"]["status"], "responded", "{body}");
}

#[tokio::test]
async fn legacy_respond_without_a_digest_is_taken_as_before() {
    let h = Harness::legacy().await;
    let id = h.park("digest-none", "m-none").await;
    assert!(revise(&h, &id, "echo changed").await);
    let (status, body) = h.respond(&id, true).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn durable_respond_stale_digest_is_refused_and_records_nothing() {
    let h = durable().await;
    let id = h.park("digest-durable", "m-durable").await;
    let (_, before) = shown(&h, &id).await;
    assert!(revise(&h, &id, "rm -rf /").await);
    let (status, body) = h
        .post_with_key(
            &respond_path(&id),
            json!({"answer": {"approved": true}, "digest": before}),
            "k-stale",
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["code"], "STALE_GATE", "{body}");
    nothing_recorded(&h, &id).await;
    let (_, now) = shown(&h, &id).await;
    let (status, body) = h
        .post_with_key(
            &respond_path(&id),
            json!({"answer": {"approved": true}, "digest": now}),
            "k-fresh",
        )
        .await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["interaction"]["status"], "responded", "{body}");
    // A durable respond without a digest is taken too.
    let other = h.park("digest-durable-none", "m-durable-none").await;
    let (status, body) = h
        .post_with_key(
            &respond_path(&other),
            json!({"answer": {"approved": false}}),
            "k-none",
        )
        .await;
    assert_eq!(status, 202, "{body}");
}

#[tokio::test]
async fn batch_items_are_checked_one_by_one() {
    for harness in [Harness::legacy().await, durable().await] {
        let h = harness;
        let stale = h.park("digest-batch-a", "m-batch-a").await;
        let fresh = h.park("digest-batch-b", "m-batch-b").await;
        let (_, stale_digest) = shown(&h, &stale).await;
        let (_, fresh_digest) = shown(&h, &fresh).await;
        assert!(revise(&h, &stale, "rm -rf /").await);
        let (status, body) = h
            .post(
                "/api/sessions/interactions/respond-batch",
                json!({"answers": [
                    {"id": stale, "answer": {"approved": true}, "digest": stale_digest},
                    {"id": fresh, "answer": {"approved": true}, "digest": fresh_digest},
                ]}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["results"][0]["outcome"], "invalid", "{body}");
        assert_eq!(body["results"][0]["error"]["code"], "STALE_GATE", "{body}");
        assert_eq!(body["results"][1]["outcome"], "answered", "{body}");
        nothing_recorded(&h, &stale).await;
    }
}

/// A gate changed while answers to it are in flight, many times over: each answer
/// carrying the digest read before the change either lands (the change then finds the
/// gate answered and changes nothing) or is refused `STALE_GATE` with the gate pending
/// and changed. Never both, never an answer recorded on the changed gate.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_gate_changed_between_read_and_respond_is_never_answered_as_changed() {
    for durable in [false, true] {
        let h = if durable {
            self::durable().await
        } else {
            Harness::legacy().await
        };
        let (mut landed, mut refused) = (0, 0);
        for round in 0..12 {
            let id = h
                .park(
                    &format!("digest-race-{durable}-{round}"),
                    &format!("m-race-{round}"),
                )
                .await;
            let (_, digest) = shown(&h, &id).await;
            let answer = {
                let http = h.http.clone();
                let url = h.url(&respond_path(&id));
                let auth = h.server.authorization();
                tokio::spawn(async move {
                    let response = http
                        .post(url)
                        .header("Authorization", auth)
                        .header("Idempotency-Key", format!("race-{round}"))
                        .json(&json!({"answer": {"approved": true}, "digest": digest}))
                        .send()
                        .await
                        .unwrap();
                    let status = response.status().as_u16();
                    (status, response.json::<Value>().await.unwrap())
                })
            };
            let revised = revise(&h, &id, "rm -rf /").await;
            let (status, body) = answer.await.unwrap();
            let row = h.interaction(&id).await;
            match status {
                200 | 202 => {
                    landed += 1;
                    assert!(!revised, "the gate changed after an answer landed: {row}");
                    assert_eq!(row["gate"]["revision"], 1, "{row}");
                    assert_ne!(row["status"], "pending", "{row}");
                }
                409 => {
                    refused += 1;
                    assert_eq!(body["code"], "STALE_GATE", "{body}");
                    assert!(
                        revised,
                        "refused as stale, but the gate never changed: {row}"
                    );
                    assert_eq!(row["status"], "pending", "{row}");
                    assert_eq!(row["data"]["resolution"], Value::Null, "{row}");
                }
                other => panic!("unexpected {other}: {body}"),
            }
        }
        assert_eq!(landed + refused, 12);
        eprintln!("durable={durable}: {landed} answers landed first, {refused} refused as stale");
    }
}
