//! Agenta's durable contract on the respond (docs/CONTRACT.md, "Durable contract"): the
//! setting and what `/api/capabilities` says of it, the 202 continuation, Agenta's errors
//! in its check order, replays, the same verdict sent again, racing answers, the
//! continuation applied only once its resume ran, and its redelivery. Over real HTTP, on
//! SQLite (and on PostgreSQL with `GATEHOUSE_TEST_DATABASE_URL`).

use gatehouse_server::testing::TestServerOptions;
use gatehouse_server::AgentaContract;
use serde_json::{json, Value};

use crate::common::db::Db;
use crate::common::Harness;

fn respond_path(id: &str) -> String {
    format!("/api/sessions/interactions/{id}/respond")
}

impl Harness {
    /// A durable respond of `body` under `key` (none: no header).
    async fn durable(&self, id: &str, body: Value, key: Option<&str>) -> (u16, Value) {
        match key {
            Some(key) => self.post_with_key(&respond_path(id), body, key).await,
            None => self.post(&respond_path(id), body).await,
        }
    }

    /// A parked gate of a fresh session: (gate id, its turn id, the session).
    async fn parked_gate(&self) -> (String, String, String) {
        let session = format!("s-{}", uuid::Uuid::new_v4().simple());
        let gate = self.park(&session, "gpt-4o").await;
        let row = self.interaction(&gate).await;
        let turn = row["turn_id"].as_str().unwrap().to_string();
        (gate, turn, session)
    }

    /// A gate written by an external runner for `turn` (none: not linked to a turn).
    async fn external_gate(&self, session: &str, turn: Option<&str>) -> String {
        let (status, body) = self
            .post(
                "/api/sessions/interactions/",
                json!({"session_id": session, "turn_id": turn,
                       "token": uuid::Uuid::new_v4().to_string(), "kind": "user_approval",
                       "data": {"request": {"tool": "bash", "args": {}}}}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body["interaction"]["id"].as_str().unwrap().to_string()
    }
}

fn approve() -> Value {
    json!({"answer": {"approved": true}})
}

fn deny() -> Value {
    json!({"answer": {"approved": false}})
}

/// The envelope's `code` and `details`; asserts its shape: the four keys at most, no null.
fn envelope(body: &Value) -> (&str, Value) {
    let map = body.as_object().unwrap_or_else(|| panic!("{body}"));
    for (key, value) in map {
        assert!(
            ["code", "message", "retryable", "details", "next_step"].contains(&key.as_str()),
            "unexpected key {key} in {body}"
        );
        assert!(!value.is_null(), "null {key} in {body}");
    }
    assert_eq!(body["retryable"], false, "{body}");
    assert!(body["message"].is_string(), "{body}");
    (
        body["code"].as_str().unwrap_or_default(),
        body.get("details").cloned().unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn capabilities_say_which_contract_agentas_paths_speak() {
    for (contract, listed) in [
        (AgentaContract::Durable, true),
        (AgentaContract::Legacy, false),
    ] {
        let h = Harness::with(TestServerOptions {
            agenta_contract: contract,
            ..TestServerOptions::default()
        })
        .await;
        let (status, body) = h.get("/api/capabilities").await;
        assert_eq!(status, 200);
        let names: Vec<&str> = body["capabilities"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(names.contains(&"durable_approvals"), listed, "{body}");
        let read: gatehouse_wire::capabilities::CapabilitiesResponse =
            serde_json::from_value(body).unwrap();
        assert!(read.other_capabilities.is_empty());
        h.server.shutdown().await;
    }
    // A server speaks the durable contract by default (it serves Stop, the snapshot and
    // the events too); the test harness defaults to the legacy one most suites speak.
    assert_eq!(
        gatehouse_server::ServerConfig::default().agenta_contract,
        AgentaContract::Durable
    );
    assert_eq!(
        TestServerOptions::default().agenta_contract,
        AgentaContract::Legacy
    );
}

#[tokio::test]
async fn the_legacy_contract_answers_as_before() {
    let h = Harness::with(TestServerOptions {
        agenta_contract: AgentaContract::Legacy,
        ..TestServerOptions::default()
    })
    .await;
    let (gate, _, session) = h.parked_gate().await;
    let (status, body) = h.respond(&gate, true).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["count"], 1);
    assert_eq!(body["interaction"]["status"], "responded");
    let (status, body) = h.respond(&gate, true).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["detail"], "Interaction is no longer pending");
    // A legacy respond records no continuation: nothing to redeliver.
    let (status, body) = h
        .post(
            &format!("/api/sessions/{session}/continuations/resume"),
            json!({}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["resumed"], false, "{body}");
    h.wait_resolved(&gate).await;
}

#[tokio::test]
async fn an_answer_is_admitted_with_its_continuation_which_applies_once_its_resume_ran() {
    let h = durable_harness().await;
    let (gate, turn, session) = h.parked_gate().await;
    let body = json!({"answer": {"approved": true}, "expected_execution_id": turn});
    let (status, first) = h.durable(&gate, body.clone(), Some("k-1")).await;
    assert_eq!(status, 202, "{first}");
    assert_eq!(first["interaction"]["id"], gate);
    assert_eq!(first["interaction"]["status"], "responded");
    assert_eq!(
        first["interaction"]["data"]["resolution"]["answer"]["approved"],
        true
    );
    assert_eq!(first["command"]["state"], "pending", "{first}");
    let command = first["command"]["id"].as_str().unwrap().to_string();
    let execution = first["execution"]["id"].as_str().unwrap().to_string();
    assert_eq!(first["execution"]["state"], "pending_delivery");
    assert_ne!(execution, turn, "the continuation is a new execution");
    // The wire reads it back as Agenta's model.
    let read: gatehouse_wire::sessions::SessionInteractionContinuationResponse =
        serde_json::from_value(first.clone()).unwrap();
    assert_eq!(read.command.unwrap().id, command);
    // The resume runs, as the continuation's execution.
    let resolved = h.wait_resolved(&gate).await;
    assert_eq!(resolved["data"]["resolution"]["verdict"], "approved");
    let turns = h.turns(&session).await;
    let ids: Vec<&str> = turns["turns"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["turn_id"].as_str())
        .collect();
    assert!(ids.contains(&execution.as_str()), "{turns}");
    // Replayed with the same key and body: the same command, now applied (its resume
    // turn is recorded); the same execution.
    let (status, replay) = h.durable(&gate, body.clone(), Some("k-1")).await;
    assert_eq!(status, 202, "{replay}");
    assert_eq!(replay["command"]["id"], command);
    assert_eq!(replay["command"]["state"], "applied");
    assert_eq!(replay["execution"]["id"], execution);
    let db = Db::open(&h.server).await;
    let outcome = db
        .text(
            "SELECT outcome FROM session_commands WHERE id = $1",
            &[&command],
        )
        .await;
    assert_eq!(outcome.as_deref(), Some("started"));
    // The same key with another body: reused.
    let (status, reused) = h.durable(&gate, deny(), Some("k-1")).await;
    assert_eq!(status, 409, "{reused}");
    assert_eq!(envelope(&reused).0, "idempotency_key_reused");
    // The same verdict under another key: 202, nothing new, the source turn terminal.
    let (status, again) = h.durable(&gate, approve(), Some("k-2")).await;
    assert_eq!(status, 202, "{again}");
    assert_eq!(again["command"], Value::Null);
    assert!(again.as_object().unwrap().contains_key("command"));
    assert_eq!(
        again["execution"],
        json!({"id": turn, "state": "terminal"}),
        "{again}"
    );
    // Another verdict after the continuation: the source can no longer be continued.
    let (status, other) = h.durable(&gate, deny(), Some("k-3")).await;
    assert_eq!(status, 409, "{other}");
    let (code, details) = envelope(&other);
    assert_eq!(code, "execution_terminal");
    assert_eq!(details, json!({"execution_state": "terminal"}));
    // One resume ran: one command, one settlement.
    let commands = db
        .text(
            "SELECT CAST(COUNT(*) AS TEXT) FROM session_commands WHERE target_execution_id = $1",
            &[&turn],
        )
        .await;
    assert_eq!(commands.as_deref(), Some("1"));
}

#[tokio::test]
async fn errors_come_in_agentas_check_order_as_its_envelope() {
    let h = durable_harness().await;
    let (gate, turn, session) = h.parked_gate().await;
    let other = uuid::Uuid::new_v4().to_string();
    // anchor_missing comes before the missing key.
    let (status, body) = h
        .durable(
            &gate,
            json!({"answers": [{"interaction_id": other, "answer": {"approved": true}}]}),
            None,
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        envelope(&body),
        (
            "validation_error",
            json!({"field": "answers", "reason": "anchor_missing"})
        )
    );
    assert!(body.get("next_step").is_none());
    // No key, a blank key, a key too long: with next_step.
    for (key, reason) in [
        (None, "required"),
        (Some("   "), "required"),
        (Some(&*"k".repeat(256)), "too_long"),
    ] {
        let (status, body) = h.durable(&gate, approve(), key).await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(
            envelope(&body),
            (
                "validation_error",
                json!({"field": "Idempotency-Key", "reason": reason})
            )
        );
        assert!(body["next_step"].is_string(), "{body}");
    }
    // 255 characters are fine (the check is on the stripped key).
    let long = "k".repeat(255);
    // Neither answer nor answers.
    let (status, body) = h.durable(&gate, json!({}), Some("k")).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        envelope(&body),
        (
            "validation_error",
            json!({"field": "answer", "reason": "required"})
        )
    );
    // Both: FastAPI's model error.
    let (status, body) = h
        .durable(
            &gate,
            json!({"answer": {"approved": true},
                   "answers": [{"interaction_id": gate, "answer": {"approved": true}}]}),
            Some("k"),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["detail"][0]["loc"], json!(["body"]));
    // The same gate twice.
    let twice = json!({"answers": [
        {"interaction_id": gate, "answer": {"approved": true}},
        {"interaction_id": gate, "answer": {"approved": false}}]});
    let (status, body) = h.durable(&gate, twice, Some("k")).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(envelope(&body), ("validation_error", Value::Null));
    // A gate of no turn: not linked.
    let unlinked = h.external_gate(&session, None).await;
    let (status, body) = h.durable(&unlinked, approve(), Some("k")).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["message"],
        "The interaction is not linked to an execution."
    );
    // A stale expectation: the row's turn, before the key is looked at.
    let stale = json!({"answer": {"approved": true}, "expected_execution_id": other});
    let (status, body) = h.durable(&gate, stale, Some(&long)).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        envelope(&body),
        (
            "execution_mismatch",
            json!({ "current_execution_id": turn })
        )
    );
    // Answers spanning turns.
    let (elsewhere, _, _) = h.parked_gate().await;
    let mixed = json!({"answers": [
        {"interaction_id": gate, "answer": {"approved": true}},
        {"interaction_id": elsewhere, "answer": {"approved": true}}]});
    let (status, body) = h.durable(&gate, mixed, Some("k")).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        envelope(&body),
        (
            "execution_mismatch",
            json!({ "current_execution_id": turn })
        )
    );
    // An unknown gate.
    let (status, body) = h.durable(&other, approve(), Some("k")).await;
    assert_eq!(status, 404, "{body}");
    // Nothing of the refused requests was written: the gate is still pending, and the
    // key `k` was never bound.
    assert_eq!(h.interaction(&gate).await["status"], "pending");
    let (status, body) = h.durable(&gate, approve(), Some("k")).await;
    assert_eq!(status, 202, "{body}");
    h.wait_resolved(&gate).await;
}

#[tokio::test]
async fn a_cancelled_gate_and_a_gate_answered_differently_are_refused() {
    let h = durable_harness().await;
    let session = format!("s-{}", uuid::Uuid::new_v4().simple());
    let turn = uuid::Uuid::new_v4().to_string();
    // Cancelled by its runner: no longer pending.
    let cancelled = h.external_gate(&session, Some(&turn)).await;
    let row = h.interaction(&cancelled).await;
    let (status, body) = h
        .post(
            "/api/sessions/interactions/transition",
            json!({"session_id": session, "token": row["token"], "status": "cancelled"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = h.durable(&cancelled, approve(), Some("c")).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        envelope(&body),
        (
            "execution_terminal",
            json!({"interaction_status": "cancelled"})
        )
    );
    assert_eq!(body["message"], "The interaction is no longer pending.");
    // Answered outside the durable path (a runner's transition to `responded`; the
    // batch route is durable on a durable host) while its turn is still open, then
    // answered again with another verdict: "already answered differently".
    let open = h.external_gate(&session, Some(&turn)).await;
    let row = h.interaction(&open).await;
    let (status, body) = h
        .post(
            "/api/sessions/interactions/transition",
            json!({"session_id": session, "token": row["token"], "status": "responded",
                   "resolution": {"verdict": "approved", "tool_call_id": "toolu_outside"}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = h.durable(&open, deny(), Some("d")).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        envelope(&body),
        (
            "execution_terminal",
            json!({"interaction_status": "responded"})
        )
    );
    assert_eq!(
        body["message"],
        "The interaction was already answered differently."
    );
}

#[tokio::test]
async fn of_racing_answers_exactly_one_continues_the_turn() {
    let h = durable_harness().await;
    for round in 0..5 {
        let (gate, turn, _) = h.parked_gate().await;
        let mut tasks = Vec::new();
        for i in 0..8 {
            let http = h.http.clone();
            let url = h.url(&respond_path(&gate));
            let auth = h.server.authorization();
            // Half approve, half deny: one wins, the same verdict is 202 without a
            // command, the other 409.
            let approved = i % 2 == 0;
            tasks.push(tokio::spawn(async move {
                let response = http
                    .post(url)
                    .header("Authorization", auth)
                    .header("Idempotency-Key", format!("r{round}-{i}"))
                    .json(&json!({"answer": {"approved": approved}}))
                    .send()
                    .await
                    .unwrap();
                let status = response.status().as_u16();
                (approved, status, response.json::<Value>().await.unwrap())
            }));
        }
        let mut winners = Vec::new();
        let mut answers = Vec::new();
        for task in tasks {
            answers.push(task.await.unwrap());
        }
        for (approved, status, body) in &answers {
            if *status == 202 && !body["command"].is_null() {
                winners.push(*approved);
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: {answers:?}");
        let won = winners[0];
        for (approved, status, body) in &answers {
            if body["command"].is_null() {
                if *approved == won {
                    assert_eq!(*status, 202, "{body}");
                    assert_eq!(body["execution"]["id"], turn.as_str());
                } else {
                    assert_eq!(*status, 409, "{body}");
                    assert_eq!(envelope(body).0, "execution_terminal");
                }
            }
        }
        let resolved = h.wait_resolved(&gate).await;
        let verdict = if won { "approved" } else { "denied" };
        assert_eq!(resolved["data"]["resolution"]["verdict"], verdict);
    }
}

#[tokio::test]
async fn a_continuation_whose_delivery_was_lost_is_redelivered() {
    let h = Harness::with(TestServerOptions {
        run_dispatcher: false,
        agenta_contract: AgentaContract::Durable,
        ..TestServerOptions::default()
    })
    .await;
    let (gate, _, session) = h.parked_gate().await;
    let (status, body) = h.durable(&gate, approve(), Some("k")).await;
    assert_eq!(status, 202, "{body}");
    let resume = format!("/api/sessions/{session}/continuations/resume");
    // Delivered: nothing to redeliver.
    let (status, body) = h.post(&resume, json!({})).await;
    assert_eq!((status, body), (200, json!({"resumed": false})));
    // The delivery lost (the job gone, as if its write had failed after the commit).
    let db = Db::open(&h.server).await;
    assert_eq!(
        db.execute(
            "DELETE FROM resume_jobs WHERE interaction_id = $1",
            &[&gate]
        )
        .await,
        1
    );
    let (status, body) = h.post(&resume, json!({})).await;
    assert_eq!((status, body), (200, json!({"resumed": true})));
    let (status, body) = h.post(&resume, json!({})).await;
    assert_eq!((status, body), (200, json!({"resumed": false})));
    let state = db
        .text(
            "SELECT state FROM resume_jobs WHERE interaction_id = $1",
            &[&gate],
        )
        .await;
    assert_eq!(state.as_deref(), Some("queued"));
}

/// Upstream conformance: the error bodies Agenta's router writes (the fixtures'
/// examples), compared by code, retryable, details and next_step's presence.
#[tokio::test]
async fn error_bodies_match_agentas_examples() {
    let Some(dir) = gatehouse_fixtures::require(
        gatehouse_fixtures::Upstream::Agenta,
        "durable respond error bodies",
    ) else {
        return;
    };
    let examples = dir.join("durable/examples");
    let read = |name: &str| -> Value {
        let text = std::fs::read_to_string(examples.join(name)).unwrap();
        serde_json::from_str::<Value>(&text).unwrap()["response"]["body"].clone()
    };
    let h = durable_harness().await;
    let (gate, _, _) = h.parked_gate().await;
    let other = uuid::Uuid::new_v4().to_string();
    let cases = [
        ("respond.422.idempotency_key_required.json", approve(), None),
        (
            "respond.422.idempotency_key_too_long.json",
            approve(),
            Some("k".repeat(300)),
        ),
        (
            "respond.422.answer_required.json",
            json!({}),
            Some("k".to_string()),
        ),
        (
            "respond.422.anchor_missing.json",
            json!({"answers": [{"interaction_id": other, "answer": {"approved": true}}]}),
            Some("k".to_string()),
        ),
        (
            "respond.422.not_distinct.json",
            json!({"answers": [{"interaction_id": gate, "answer": {}}, {"interaction_id": gate, "answer": {}}]}),
            Some("k".to_string()),
        ),
    ];
    for (name, body, key) in cases {
        let want = read(name);
        let (status, got) = h.durable(&gate, body, key.as_deref()).await;
        assert_eq!(status, 422, "{name}: {got}");
        assert_eq!(got, want, "{name}");
    }
    let (status, _) = h.durable(&gate, approve(), Some("k")).await;
    assert_eq!(status, 202);
    let (status, got) = h.durable(&gate, deny(), Some("k2")).await;
    assert_eq!(status, 409);
    assert_eq!(
        got,
        read("respond.409.execution_terminal.source_settled.json")
    );
    h.wait_resolved(&gate).await;
}

/// Two instances on one database (the same SQLite file, or the same PostgreSQL
/// database): answers to one gate sent to both at once; exactly one creates the
/// continuation, the turn is resumed once (one resume turn, one command).
#[tokio::test]
async fn two_instances_admit_one_continuation_per_turn() {
    let a = durable_harness().await;
    let b = a.durable_peer().await;
    let db = Db::open(&a.server).await;
    for round in 0..10 {
        let (gate, turn, session) = a.parked_gate().await;
        let mut tasks = Vec::new();
        for i in 0..6 {
            let host = if i % 2 == 0 { &a } else { &b };
            let http = host.http.clone();
            let url = host.url(&respond_path(&gate));
            let auth = host.server.authorization();
            tasks.push(tokio::spawn(async move {
                let response = http
                    .post(url)
                    .header("Authorization", auth)
                    .header("Idempotency-Key", format!("two-{round}-{i}"))
                    .json(&json!({"answer": {"approved": true}}))
                    .send()
                    .await
                    .unwrap();
                let status = response.status().as_u16();
                (status, response.json::<Value>().await.unwrap())
            }));
        }
        let mut commands = 0;
        for task in tasks {
            let (status, body) = task.await.unwrap();
            assert_eq!(status, 202, "round {round}: {body}");
            if !body["command"].is_null() {
                commands += 1;
            } else {
                assert_eq!(body["execution"]["id"], turn.as_str(), "{body}");
            }
        }
        assert_eq!(commands, 1, "round {round}");
        a.wait_resolved(&gate).await;
        let turns = a.turns(&session).await;
        let resumes = turns["turns"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["resumed"] == true)
            .count();
        assert_eq!(resumes, 1, "round {round}: {turns}");
        let count = db
            .text(
                "SELECT CAST(COUNT(*) AS TEXT) FROM session_commands WHERE target_execution_id = $1",
                &[&turn],
            )
            .await;
        assert_eq!(count.as_deref(), Some("1"));
    }
    b.server.shutdown().await;
}

/// A server whose Agenta paths speak the durable contract.
async fn durable_harness() -> Harness {
    Harness::with(TestServerOptions {
        agenta_contract: AgentaContract::Durable,
        ..TestServerOptions::default()
    })
    .await
}
