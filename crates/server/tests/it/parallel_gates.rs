//! Parallel gates (issue 33, item 4; CONTRACT.md A7): a `parallel` script step whose
//! calls ask park the turn on one gate per asking call (one transaction, one turn), the
//! allowed call running at once. The turn continues ONCE, after its last gate is
//! answered, whichever order and path the answers take (the legacy respond, a batch, a
//! transition, the durable respond one by one or in `answers[]`), each verdict honoured:
//! an approved call runs once (the tool-run ledger says so), a denied one does not, and
//! the script goes on after the step. Racing last answers resume it once.
//! Over real HTTP, on SQLite (and on PostgreSQL with `GATEHOUSE_TEST_DATABASE_URL`).

use std::time::Duration;

use gatehouse_server::testing::TestServerOptions;
use gatehouse_server::AgentaContract;
use serde_json::{json, Value};

use crate::common::db::Db;
use crate::common::{user, wait_until, Harness};

const BATCH: &str = "/api/sessions/interactions/respond-batch";

/// Asks before everything but `Read` (and `Delete`, denied by policy): a step, a
/// parallel step of `Bash` (asks), `Read` (allowed), `Edit` (asks) and, with
/// `with_denied`, `Delete` (denied), then a `Read` and a last word after it.
fn parallel_config(with_denied: bool) -> Value {
    let mut calls = vec![
        json!({"tool": "Bash", "args": {"command": "make"}}),
        json!({"tool": "Read", "args": {"path": "notes.md"}}),
        json!({"tool": "Edit", "args": {"file": "main.rs"}}),
    ];
    if with_denied {
        calls.push(json!({"tool": "Delete", "args": {"path": "/"}}));
    }
    json!({"agent": {
        "llm": {"model": "m-parallel"},
        "runner": {"permissions": {"default": "ask", "rules": [
            {"pattern": "Read", "permission": "allow"},
            {"pattern": "Delete", "permission": "deny"}
        ]}},
        "script": [
            {"say": "starting"},
            {"parallel": calls},
            {"tool": "Read", "args": {"path": "after.md"}},
            {"say": "all done"}
        ]
    }})
}

/// A turn parked on its parallel step: `(turn id, [Bash gate, Edit gate])`.
async fn park_parallel(h: &Harness, session: &str, with_denied: bool) -> (String, Vec<Value>) {
    let parked = h
        .invoke(
            json!({"session_id": session, "data": {"inputs": {"messages": user("go")},
                       "parameters": parallel_config(with_denied)}}),
        )
        .await;
    assert_eq!(parked["status"], "parked", "{parked}");
    let ids: Vec<String> = parked["interaction_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 2, "one gate per asking call: {parked}");
    let mut rows = Vec::new();
    for id in &ids {
        rows.push(h.interaction(id).await);
    }
    let turn = parked["turn_id"].as_str().unwrap().to_string();
    (turn, rows)
}

fn id(row: &Value) -> String {
    row["id"].as_str().unwrap().to_string()
}

fn call_id(row: &Value) -> String {
    row["data"]["request"]["tool_call_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `(tool, tool_call_id)` of every ledger row of `session`, sorted.
async fn ledger(h: &Harness, session: &str) -> Vec<(String, String)> {
    let turns = h.turns(session).await;
    let mut rows: Vec<(String, String)> = turns["tool_runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| {
            (
                run["tool"].as_str().unwrap().to_string(),
                run["tool_call_id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    rows.sort();
    rows
}

/// How many times `tool` ran in `session` (ledger rows).
async fn runs_of(h: &Harness, session: &str, tool: &str) -> usize {
    ledger(h, session)
        .await
        .iter()
        .filter(|(t, _)| t == tool)
        .count()
}

/// The resumed turns of `session`.
async fn resumes(h: &Harness, session: &str) -> Vec<Value> {
    h.turns(session).await["turns"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["resumed"] == true)
        .cloned()
        .collect()
}

/// The state of a gate's resume job (`queued`, `done`, `failed`), if it has one.
async fn job_state(db: &Db, gate: &str) -> Option<String> {
    db.text(
        "SELECT state FROM resume_jobs WHERE interaction_id = $1",
        &[gate],
    )
    .await
}

/// Wait until `gate`'s resume job is done (it found nothing to run, or ran).
async fn wait_job_done(db: &Db, gate: &str) {
    let done = wait_until(Duration::from_secs(10), || async {
        job_state(db, gate).await.as_deref() == Some("done")
    })
    .await;
    assert!(done, "the job of {gate} never finished");
}

/// Both gates resolved, the turn resumed exactly once (after its last answer), the
/// resume continued after the parallel step: `verdicts` are Bash's and Edit's. Each
/// approved call ran once under its gate's id, a denied one never; Read ran at park
/// time and once after the step.
async fn assert_resumed_once(h: &Harness, session: &str, gates: &[Value], verdicts: [bool; 2]) {
    for (gate, approved) in gates.iter().zip(verdicts) {
        let resolved = h.wait_resolved(&id(gate)).await;
        let verdict = if approved { "approved" } else { "denied" };
        assert_eq!(
            resolved["data"]["resolution"]["verdict"], verdict,
            "{resolved}"
        );
        assert_eq!(
            resolved["data"]["resolution"]["tool_call_id"],
            call_id(gate).as_str(),
            "{resolved}"
        );
        assert!(
            resolved["data"]["resolution"].get("error").is_none(),
            "{resolved}"
        );
    }
    let resumed = resumes(h, session).await;
    assert_eq!(resumed.len(), 1, "one resume: {resumed:?}");
    let output = resumed[0]["output"].as_str().unwrap_or_default();
    assert!(output.contains("all done"), "{output}");
    assert!(!output.contains("not run again"), "{output}");
    let ledger = ledger(h, session).await;
    let has = |tool: &str, gate: &Value| ledger.contains(&(tool.to_string(), call_id(gate)));
    assert_eq!(has("Bash", &gates[0]), verdicts[0], "{ledger:?}");
    assert_eq!(has("Edit", &gates[1]), verdicts[1], "{ledger:?}");
    assert_eq!(runs_of(h, session, "Bash").await, usize::from(verdicts[0]));
    assert_eq!(runs_of(h, session, "Edit").await, usize::from(verdicts[1]));
    // Read: once in the parallel step, once after it.
    assert_eq!(runs_of(h, session, "Read").await, 2, "{ledger:?}");
    if !verdicts[1] {
        assert!(
            output.contains("skipped Edit: denied by the user"),
            "{output}"
        );
    }
}

fn new_session() -> String {
    format!("par-{}", uuid::Uuid::new_v4().simple())
}

#[tokio::test]
async fn a_parallel_step_runs_the_allowed_call_and_parks_on_one_gate_per_asking_call() {
    let h = Harness::start().await;
    let session = new_session();
    let (turn, gates) = park_parallel(&h, &session, true).await;
    for gate in &gates {
        assert_eq!(gate["status"], "pending", "{gate}");
        assert_eq!(gate["turn_id"], turn.as_str(), "{gate}");
        assert_eq!(gate["session_id"], session.as_str(), "{gate}");
        assert!(!gate["data"]["parameters"].is_null(), "stamped: {gate}");
    }
    assert_eq!(gates[0]["data"]["request"]["tool"], "Bash");
    assert_eq!(gates[1]["data"]["request"]["tool"], "Edit");
    assert_ne!(call_id(&gates[0]), call_id(&gates[1]));
    // The allowed call ran at once; nothing else did; the denied one was skipped.
    let ledger = ledger(&h, &session).await;
    assert_eq!(ledger.len(), 1, "{ledger:?}");
    assert_eq!(ledger[0].0, "Read");
    let turns = h.turns(&session).await;
    let output = turns["turns"][0]["output"].as_str().unwrap();
    assert!(
        output.contains(r#"ran Read {"path":"notes.md"}: ok"#),
        "{output}"
    );
    assert!(
        output.contains("skipped Delete: denied by policy"),
        "{output}"
    );
    assert!(
        output.contains("waiting for approval to run Bash"),
        "{output}"
    );
    assert!(
        output.contains("waiting for approval to run Edit"),
        "{output}"
    );
    assert!(!output.contains("all done"), "{output}");
    // The parked state remembers both gates, each with its row's token.
    let db = Db::open(&h.server).await;
    let (_, state) = db.parked_state_of_gate(&id(&gates[0])).await;
    let parked: Vec<(String, String)> = state["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["token"].as_str().unwrap().to_string(),
                g["gate"]["tool_call_id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = gates
        .iter()
        .map(|g| (g["token"].as_str().unwrap().to_string(), call_id(g)))
        .collect();
    assert_eq!(parked, expected);
}

/// One by one through the legacy respond, in both orders: the first answer resumes
/// nothing (its job finishes, the turn stays parked), the second resumes the turn once.
#[tokio::test]
async fn answered_one_by_one_in_either_order_the_turn_resumes_once_after_the_last() {
    let h = Harness::start().await;
    let db = Db::open(&h.server).await;
    for order in [[0usize, 1], [1, 0]] {
        let session = new_session();
        let (turn, gates) = park_parallel(&h, &session, false).await;
        let first = &gates[order[0]];
        let (status, body) = h.respond(&id(first), true).await;
        assert_eq!(status, 200, "{body}");
        wait_job_done(&db, &id(first)).await;
        // Nothing resumed: the turn waits for its other gate.
        assert!(resumes(&h, &session).await.is_empty(), "order {order:?}");
        assert_eq!(h.interaction(&id(first)).await["status"], "responded");
        assert_eq!(runs_of(&h, &session, "Bash").await, 0);
        assert_eq!(runs_of(&h, &session, "Edit").await, 0);
        let second = &gates[order[1]];
        let (status, body) = h.respond(&id(second), true).await;
        assert_eq!(status, 200, "{body}");
        assert_resumed_once(&h, &session, &gates, [true, true]).await;
        let resumed = resumes(&h, &session).await;
        assert_eq!(
            resumed[0]["resumed_from_interaction_id"],
            id(second).as_str(),
            "the last answer resumed it"
        );
        let parked = h.turns(&session).await["turns"][0].clone();
        assert_eq!(parked["turn_id"], turn.as_str());
        assert_eq!(parked["resumed_by_turn_id"], resumed[0]["turn_id"]);
    }
}

/// An approval and a denial: the approved call ran once, the denied one never.
#[tokio::test]
async fn each_verdict_is_honoured_the_approved_call_runs_once_the_denied_never() {
    let h = Harness::start().await;
    let session = new_session();
    let (_, gates) = park_parallel(&h, &session, false).await;
    let (status, _) = h.respond(&id(&gates[1]), false).await;
    assert_eq!(status, 200);
    let (status, _) = h.respond(&id(&gates[0]), true).await;
    assert_eq!(status, 200);
    assert_resumed_once(&h, &session, &gates, [true, false]).await;
}

/// A batch answering both gates, and a transition answering the last one: once each.
#[tokio::test]
async fn a_batch_and_a_transition_continue_the_turn_once() {
    let h = Harness::start().await;
    let session = new_session();
    let (_, gates) = park_parallel(&h, &session, false).await;
    let (status, body) = h
        .post(
            BATCH,
            json!({"answers": [
                {"id": id(&gates[0]), "answer": {"approved": false}},
                {"id": id(&gates[1]), "answer": {"approved": true}}
            ]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"][0]["outcome"], "answered", "{body}");
    assert_eq!(body["results"][1]["outcome"], "answered", "{body}");
    assert_resumed_once(&h, &session, &gates, [false, true]).await;

    // The last answer as a runner's transition (`resolved` with its verdict).
    let session = new_session();
    let (_, gates) = park_parallel(&h, &session, false).await;
    let (status, _) = h.respond(&id(&gates[0]), true).await;
    assert_eq!(status, 200);
    let (status, body) = h
        .post(
            "/api/sessions/interactions/transition",
            json!({"session_id": session, "token": gates[1]["token"], "status": "resolved",
                   "resolution": {"verdict": "denied", "tool_call_id": call_id(&gates[1])}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_resumed_once(&h, &session, &gates, [true, false]).await;
}

/// A cancelled gate (here by `cancel-stale` naming its token): the turn does not
/// continue, and the answered gate says why.
#[tokio::test]
async fn a_cancelled_sibling_gate_means_the_turn_does_not_continue() {
    let h = Harness::start().await;
    let db = Db::open(&h.server).await;
    let session = new_session();
    let (_, gates) = park_parallel(&h, &session, false).await;
    let (status, body) = h
        .post(
            "/api/sessions/interactions/cancel-stale",
            json!({"session_id": session, "turn_id": "another-turn", "tokens": [gates[1]["token"]]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(h.interaction(&id(&gates[1])).await["status"], "cancelled");
    let (status, _) = h.respond(&id(&gates[0]), true).await;
    assert_eq!(status, 200);
    let resolved = h.wait_resolved(&id(&gates[0])).await;
    assert_eq!(
        resolved["data"]["resolution"]["error"]["code"], "SIBLING_GATE_CANCELLED",
        "{resolved}"
    );
    assert_eq!(
        resolved["data"]["resolution"]["error"]["cancelled_gate_id"],
        id(&gates[1]).as_str()
    );
    wait_job_done(&db, &id(&gates[0])).await;
    assert!(resumes(&h, &session).await.is_empty());
    assert_eq!(runs_of(&h, &session, "Bash").await, 0);
}

/// The last two answers at once (two HTTP requests joined), 20 times: one resume each
/// time, each call run once.
#[tokio::test]
async fn two_concurrent_last_answers_resume_the_turn_once() {
    let h = Harness::start().await;
    for round in 0..20 {
        let session = new_session();
        let (_, gates) = park_parallel(&h, &session, false).await;
        let (first, second) = (id(&gates[0]), id(&gates[1]));
        let (a, b) = tokio::join!(h.respond(&first, true), h.respond(&second, true));
        assert_eq!((a.0, b.0), (200, 200), "round {round}: {a:?} {b:?}");
        assert_resumed_once(&h, &session, &gates, [true, true]).await;
    }
}

/// A server whose Agenta paths speak the durable contract.
async fn durable_harness() -> Harness {
    Harness::with(TestServerOptions {
        agenta_contract: AgentaContract::Durable,
        ..TestServerOptions::default()
    })
    .await
}

fn respond_path(id: &str) -> String {
    format!("/api/sessions/interactions/{id}/respond")
}

/// `SELECT CAST(COUNT(*) AS TEXT) ...` of `sql` with `param`, as a number.
async fn count(db: &Db, sql: &str, param: &str) -> usize {
    db.text(sql, &[param])
        .await
        .and_then(|n| n.parse().ok())
        .unwrap_or(usize::MAX)
}

async fn commands_of(db: &Db, turn: &str) -> usize {
    count(
        db,
        "SELECT CAST(COUNT(*) AS TEXT) FROM session_commands WHERE target_execution_id = $1",
        turn,
    )
    .await
}

async fn settlements_of(db: &Db, turn: &str) -> usize {
    count(
        db,
        "SELECT CAST(COUNT(*) AS TEXT) FROM session_executions WHERE execution_id = $1",
        turn,
    )
    .await
}

/// The gates a command lists, sorted.
async fn command_gates(db: &Db, command: &str) -> Vec<String> {
    let text = db
        .text(
            "SELECT interaction_ids FROM session_commands WHERE id = $1",
            &[command],
        )
        .await
        .unwrap();
    let mut ids: Vec<String> = serde_json::from_str(&text).unwrap();
    ids.sort();
    ids
}

/// `answers[]` of both gates in one durable request: one continuation naming both, one
/// resume, as the continuation's execution.
#[tokio::test]
async fn durable_answers_of_every_gate_in_one_request_make_one_continuation() {
    let h = durable_harness().await;
    let db = Db::open(&h.server).await;
    let session = new_session();
    let (turn, gates) = park_parallel(&h, &session, false).await;
    let body = json!({"answers": [
        {"interaction_id": id(&gates[0]), "answer": {"approved": true}},
        {"interaction_id": id(&gates[1]), "answer": {"approved": false}}
    ], "expected_execution_id": turn});
    let (status, answer) = h
        .post_with_key(&respond_path(&id(&gates[0])), body, "both")
        .await;
    assert_eq!(status, 202, "{answer}");
    assert_eq!(answer["command"]["state"], "pending", "{answer}");
    assert_eq!(answer["execution"]["state"], "pending_delivery", "{answer}");
    let command = answer["command"]["id"].as_str().unwrap().to_string();
    let execution = answer["execution"]["id"].as_str().unwrap().to_string();
    let mut both = vec![id(&gates[0]), id(&gates[1])];
    both.sort();
    assert_eq!(command_gates(&db, &command).await, both);
    assert_resumed_once(&h, &session, &gates, [true, false]).await;
    assert_eq!(
        resumes(&h, &session).await[0]["turn_id"],
        execution.as_str()
    );
    assert_eq!(commands_of(&db, &turn).await, 1);
    let state = db
        .text(
            "SELECT state FROM session_commands WHERE id = $1",
            &[&command],
        )
        .await;
    assert_eq!(state.as_deref(), Some("applied"));
}

/// A partial durable answer: 202 `awaiting_interactions`, `command: null`, the source
/// turn not settled, nothing resumed; sent again with its key, the same; the answer
/// that completes the set settles it and continues it once, its command naming both
/// gates. `answers[]` naming a gate of another turn stays `execution_mismatch`.
#[tokio::test]
async fn a_partial_durable_answer_waits_for_the_other_gates() {
    let h = durable_harness().await;
    let db = Db::open(&h.server).await;
    let session = new_session();
    let (turn, gates) = park_parallel(&h, &session, false).await;
    let partial = json!({"answer": {"approved": true}, "expected_execution_id": turn});
    for _ in 0..2 {
        let (status, answer) = h
            .post_with_key(&respond_path(&id(&gates[1])), partial.clone(), "part-1")
            .await;
        assert_eq!(status, 202, "{answer}");
        assert!(answer.as_object().unwrap().contains_key("command"));
        assert_eq!(answer["command"], Value::Null, "{answer}");
        assert_eq!(
            answer["execution"],
            json!({"id": turn, "state": "awaiting_interactions"}),
            "{answer}"
        );
        assert_eq!(answer["interaction"]["status"], "responded", "{answer}");
    }
    assert_eq!(
        settlements_of(&db, &turn).await,
        0,
        "the source is not settled"
    );
    assert_eq!(commands_of(&db, &turn).await, 0);
    assert_eq!(
        job_state(&db, &id(&gates[1])).await,
        None,
        "nothing delivered"
    );
    assert_eq!(h.interaction(&id(&gates[0])).await["status"], "pending");
    // A gate of another turn among the answers: refused, nothing written.
    let other_session = new_session();
    let (_, others) = park_parallel(&h, &other_session, false).await;
    let (status, mixed) = h
        .post_with_key(
            &respond_path(&id(&gates[0])),
            json!({"answers": [
                {"interaction_id": id(&gates[0]), "answer": {"approved": true}},
                {"interaction_id": id(&others[0]), "answer": {"approved": true}}
            ]}),
            "mixed",
        )
        .await;
    assert_eq!(status, 409, "{mixed}");
    assert_eq!(mixed["code"], "execution_mismatch", "{mixed}");
    assert_eq!(h.interaction(&id(&gates[0])).await["status"], "pending");
    assert_eq!(h.interaction(&id(&others[0])).await["status"], "pending");
    // The last answer completes the set.
    let (status, last) = h
        .post_with_key(
            &respond_path(&id(&gates[0])),
            json!({"answer": {"approved": true}}),
            "last",
        )
        .await;
    assert_eq!(status, 202, "{last}");
    assert_eq!(last["command"]["state"], "pending", "{last}");
    assert_eq!(last["execution"]["state"], "pending_delivery", "{last}");
    let command = last["command"]["id"].as_str().unwrap().to_string();
    let mut both = vec![id(&gates[0]), id(&gates[1])];
    both.sort();
    assert_eq!(command_gates(&db, &command).await, both);
    assert_eq!(settlements_of(&db, &turn).await, 1);
    assert_resumed_once(&h, &session, &gates, [true, true]).await;
    assert_eq!(
        resumes(&h, &session).await[0]["turn_id"],
        last["execution"]["id"]
    );
    // The partial answer's key again: no longer waiting, the source is settled.
    let (status, again) = h
        .post_with_key(&respond_path(&id(&gates[1])), partial, "part-1")
        .await;
    assert_eq!(status, 202, "{again}");
    assert_eq!(again["command"], Value::Null);
    assert_eq!(again["execution"], json!({"id": turn, "state": "terminal"}));

    // A turn one of whose gates was cancelled can no longer be continued: the answer
    // to the other is refused, nothing written.
    let session = new_session();
    let (turn, gates) = park_parallel(&h, &session, false).await;
    let (status, _) = h
        .post(
            "/api/sessions/interactions/cancel-stale",
            json!({"session_id": session, "turn_id": "another-turn", "tokens": [gates[1]["token"]]}),
        )
        .await;
    assert_eq!(status, 200);
    let (status, refused) = h
        .post_with_key(
            &respond_path(&id(&gates[0])),
            json!({"answer": {"approved": true}}),
            "c-1",
        )
        .await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["code"], "execution_terminal", "{refused}");
    assert_eq!(h.interaction(&id(&gates[0])).await["status"], "pending");
    assert_eq!(commands_of(&db, &turn).await, 0);
    assert_eq!(settlements_of(&db, &turn).await, 0);
}

/// Two durable last answers at once, 20 times: exactly one creates the continuation,
/// the other waits (its view was partial) or finds it; one resume.
#[tokio::test]
async fn two_concurrent_durable_answers_make_one_continuation() {
    let h = durable_harness().await;
    let db = Db::open(&h.server).await;
    for round in 0..20 {
        let session = new_session();
        let (turn, gates) = park_parallel(&h, &session, false).await;
        let answer = json!({"answer": {"approved": true}});
        let (first, second) = (respond_path(&id(&gates[0])), respond_path(&id(&gates[1])));
        let (key_a, key_b) = (format!("a{round}"), format!("b{round}"));
        let (a, b) = tokio::join!(
            h.post_with_key(&first, answer.clone(), &key_a),
            h.post_with_key(&second, answer.clone(), &key_b)
        );
        assert_eq!((a.0, b.0), (202, 202), "round {round}: {a:?} {b:?}");
        let commands = [&a.1, &b.1]
            .iter()
            .filter(|body| !body["command"].is_null())
            .count();
        assert_eq!(commands, 1, "round {round}: {a:?} {b:?}");
        assert_resumed_once(&h, &session, &gates, [true, true]).await;
        assert_eq!(commands_of(&db, &turn).await, 1);
        assert_eq!(settlements_of(&db, &turn).await, 1);
    }
}
/// Gatehouse's respond-batch on a durable host: each turn's gates admitted durably
/// (the source settled, one continuation naming every gate, its resume applied), each
/// gate reported as before; a gate answered again is `already_answered`.
#[tokio::test]
async fn respond_batch_on_a_durable_host_continues_each_turn_durably() {
    let h = durable_harness().await;
    let db = Db::open(&h.server).await;
    let (s1, s2) = (new_session(), new_session());
    let (t1, g1) = park_parallel(&h, &s1, false).await;
    let (t2, g2) = park_parallel(&h, &s2, false).await;
    let (status, body) = h
        .post(
            BATCH,
            json!({"answers": [
                {"id": id(&g1[0]), "answer": {"approved": true}},
                {"id": id(&g2[0]), "answer": {"approved": false}},
                {"id": id(&g1[1]), "answer": {"approved": false}}
            ]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    for i in 0..3 {
        assert_eq!(body["results"][i]["outcome"], "answered", "{body}");
        assert_eq!(
            body["results"][i]["interaction"]["status"], "responded",
            "{body}"
        );
    }
    // Turn 1 complete: settled, one continuation naming both gates, resumed once.
    assert_eq!(settlements_of(&db, &t1).await, 1);
    assert_eq!(commands_of(&db, &t1).await, 1);
    assert_resumed_once(&h, &s1, &g1, [true, false]).await;
    let command = db
        .text(
            "SELECT id FROM session_commands WHERE target_execution_id = $1",
            &[&t1],
        )
        .await
        .unwrap();
    let mut both = vec![id(&g1[0]), id(&g1[1])];
    both.sort();
    assert_eq!(command_gates(&db, &command).await, both);
    // Turn 2 half answered: waiting, not settled, nothing resumed.
    assert_eq!(settlements_of(&db, &t2).await, 0);
    assert_eq!(commands_of(&db, &t2).await, 0);
    assert!(resumes(&h, &s2).await.is_empty());
    // Its last gate by batch, with a gate answered again beside it.
    let (status, body) = h
        .post(
            BATCH,
            json!({"answers": [
                {"id": id(&g2[1]), "answer": {"approved": true}},
                {"id": id(&g1[0]), "answer": {"approved": false}}
            ]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"][0]["outcome"], "answered", "{body}");
    assert_eq!(body["results"][1]["outcome"], "already_answered", "{body}");
    assert_eq!(settlements_of(&db, &t2).await, 1);
    assert_eq!(commands_of(&db, &t2).await, 1);
    assert_resumed_once(&h, &s2, &g2, [false, true]).await;
    assert_eq!(commands_of(&db, &t1).await, 1, "nothing new for turn 1");
}

/// Two instances on one database (the same SQLite file, or the same PostgreSQL
/// database), each with its resume workers: the two last answers sent one to each at
/// once, 10 times; the turn resumes once each time (the parked turn's claim fences the
/// instances' resumes), each approved call run once.
#[tokio::test]
async fn two_instances_resume_a_parallel_turn_once() {
    let a = Harness::start().await;
    let b = Harness {
        server: gatehouse_server::testing::spawn(TestServerOptions {
            database_path: a.server.options.database_path.clone(),
            database_url: a.server.options.database_url.clone(),
            api_key: a.server.options.api_key.clone(),
            project_id: a.server.options.project_id.clone(),
            ..TestServerOptions::default()
        })
        .await,
        http: reqwest::Client::new(),
    };
    for round in 0..10 {
        let session = new_session();
        let (_, gates) = park_parallel(&a, &session, false).await;
        let (first, second) = (id(&gates[0]), id(&gates[1]));
        let (x, y) = tokio::join!(a.respond(&first, true), b.respond(&second, false));
        assert_eq!((x.0, y.0), (200, 200), "round {round}: {x:?} {y:?}");
        assert_resumed_once(&a, &session, &gates, [true, false]).await;
    }
    b.server.shutdown().await;
}

/// The continuation of a parallel turn is delivered for the whole turn: the answer that
/// completes the set writes the resume job of every gate (the partial answer's too);
/// lost after the commit, `continuations/resume` writes them again, and an instance with
/// resume workers then resumes the turn once.
#[tokio::test]
async fn a_parallel_continuation_is_delivered_and_redelivered_for_the_whole_turn() {
    let h = Harness::with(TestServerOptions {
        run_dispatcher: false,
        agenta_contract: AgentaContract::Durable,
        ..TestServerOptions::default()
    })
    .await;
    let db = Db::open(&h.server).await;
    let session = new_session();
    let (_, gates) = park_parallel(&h, &session, false).await;
    let (first, second) = (id(&gates[0]), id(&gates[1]));
    let (status, partial) = h
        .post_with_key(
            &respond_path(&first),
            json!({"answer": {"approved": true}}),
            "p",
        )
        .await;
    assert_eq!(status, 202, "{partial}");
    assert_eq!(job_state(&db, &first).await, None);
    let (status, last) = h
        .post_with_key(
            &respond_path(&second),
            json!({"answer": {"approved": true}}),
            "l",
        )
        .await;
    assert_eq!(status, 202, "{last}");
    assert_eq!(last["execution"]["state"], "pending_delivery", "{last}");
    for gate in [&first, &second] {
        assert_eq!(
            job_state(&db, gate).await.as_deref(),
            Some("queued"),
            "{gate}"
        );
    }
    // Both jobs lost, as if their write had failed after the commit.
    for gate in [&first, &second] {
        db.execute("DELETE FROM resume_jobs WHERE interaction_id = $1", &[gate])
            .await;
    }
    let resume = format!("/api/sessions/{session}/continuations/resume");
    let (status, body) = h.post(&resume, json!({})).await;
    assert_eq!((status, body), (200, json!({"resumed": true})));
    for gate in [&first, &second] {
        assert_eq!(
            job_state(&db, gate).await.as_deref(),
            Some("queued"),
            "{gate}"
        );
    }
    // An instance with resume workers on the same database resumes the turn once.
    let worker = h.durable_peer().await;
    assert_resumed_once(&worker, &session, &gates, [true, true]).await;
    assert_eq!(
        resumes(&worker, &session).await[0]["turn_id"],
        last["execution"]["id"]
    );
    worker.server.shutdown().await;
}
