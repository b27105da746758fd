//! Crash safety over real HTTP: applied means in effect, every end reconciles, a resume
//! that outlives its lease keeps it, a taken-over attempt runs no tool and writes
//! nothing, an approved tool runs once, recovery successors behave as first runs. The
//! kill -9 and two-process scenarios are in `crates/cli/tests/it/crash.rs` (real processes).

use std::time::{Duration, Instant};

use crate::common::db::Db;
use crate::common::{user, Harness};
use gatehouse_server::testing::{self, TestServerOptions};
use serde_json::{json, Value};

fn session_path(room: &str, session: &str) -> String {
    format!("/api/rooms/{room}/execution-sessions/{session}")
}

async fn get_session(h: &Harness, room: &str, session: &str) -> Value {
    let (status, body) = h.get(&session_path(room, session)).await;
    assert_eq!(status, 200, "{body}");
    body["data"].clone()
}

async fn wait_session(h: &Harness, room: &str, session: &str, done: &[&str]) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let doc = get_session(h, room, session).await;
        if done.iter().any(|s| doc["status"] == *s) {
            return doc;
        }
        assert!(
            Instant::now() < deadline,
            "session never reached {done:?}: {doc}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn request(
    h: &Harness,
    room: &str,
    session: &str,
    op: &str,
    instruction: &str,
    checkpoint: &str,
) -> (u16, Value) {
    let doc = get_session(h, room, session).await;
    h.post(
        &format!("{}/interventions", session_path(room, session)),
        json!({"expectedRevision": doc["revision"], "operationId": op, "instruction": instruction, "checkpoint": checkpoint}),
    )
    .await
}

fn intervention<'a>(doc: &'a Value, op: &str) -> &'a Value {
    doc["interventions"]
        .as_array()
        .and_then(|items| items.iter().find(|i| i["operationId"] == op))
        .unwrap_or_else(|| panic!("no intervention {op} in {doc}"))
}

/// A config that asks before `Read` and allows everything else, running `script`.
fn gated(model: &str, script: Value) -> Value {
    json!({"agent": {
        "llm": {"model": model},
        "runner": {"permissions": {"default": "allow", "rules": [{"pattern": "Read", "permission": "ask"}]}},
        "script": script
    }})
}

fn read_then_bash(wait_ms: u64) -> Value {
    json!([
        {"tool": "Read", "args": {"path": "/etc/hostname"}},
        {"wait_ms": wait_ms},
        {"tool": "Bash", "args": {"command": "make release"}},
        {"say": "done"}
    ])
}

/// Park a turn of `task`: `(room, execution session, gate id)`.
async fn park(h: &Harness, task: &str, parameters: Value) -> (String, String, String) {
    let answer = h
        .invoke(json!({"session_id": task, "data": {"inputs": {"messages": user("release")}, "parameters": parameters}}))
        .await;
    assert_eq!(answer["status"], "parked", "{answer}");
    (
        answer["execution"]["room_id"].as_str().unwrap().to_string(),
        answer["execution"]["session_id"]
            .as_str()
            .unwrap()
            .to_string(),
        answer["interaction_ids"][0].as_str().unwrap().to_string(),
    )
}

/// `tool -> how many times the ledger says it ran` for `task`.
fn tool_run_counts(turns: &Value) -> std::collections::BTreeMap<String, usize> {
    let mut counts = std::collections::BTreeMap::new();
    for run in turns["tool_runs"].as_array().unwrap() {
        *counts
            .entry(run["tool"].as_str().unwrap().to_string())
            .or_insert(0) += 1;
    }
    counts
}

/// How often `needle` occurs in the outputs of the recorded turns.
fn in_outputs(turns: &Value, needle: &str) -> usize {
    turns["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["output"].as_str().unwrap_or("").matches(needle).count())
        .sum()
}

#[tokio::test]
async fn a_stop_is_applied_in_the_same_commit_as_the_step_it_stopped() {
    let h = Harness::legacy().await;
    let (room, session, gate) = park(&h, "task-stop", gated("m-stop", read_then_bash(0))).await;
    let (status, body) = request(&h, &room, &session, "op-stop", "stop", "pre_action").await;
    assert_eq!(status, 202, "{body}");
    let (status, _) = h.respond(&gate, true).await;
    assert_eq!(status, 200);
    let doc = wait_session(&h, &room, &session, &["canceled"]).await;
    let stop = intervention(&doc, "op-stop");
    assert_eq!(stop["status"], "applied", "{doc}");
    // The evidence and the end of the run are one write: the applied event is followed
    // by the reconciliation, nothing in between.
    let events: Vec<&str> = doc["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    let applied = events
        .iter()
        .position(|t| *t == "intervention_applied")
        .unwrap();
    assert_eq!(events[applied + 1], "session_reconciled", "{events:?}");
    let turns = h.turns("task-stop").await;
    assert_eq!(in_outputs(&turns, "halted at pre_action"), 1, "{turns}");
    assert!(tool_run_counts(&turns).is_empty(), "no tool ran: {turns}");
    h.server.shutdown().await;
}

#[tokio::test]
async fn a_gate_cancelled_by_a_newer_turn_ends_its_session_with_the_reason() {
    let h = Harness::legacy().await;
    let (room, session, _) = park(&h, "task-newer", gated("m", read_then_bash(0))).await;
    let (status, _) = request(&h, &room, &session, "op-wait", "stop", "pre_action").await;
    assert_eq!(status, 202);
    // A newer turn of the same agent session makes the parked gate stale.
    let answer = h
        .invoke(json!({"session_id": "task-newer", "data": {"inputs": {"messages": user("other")}, "parameters": crate::common::config("m", "allow")}}))
        .await;
    assert_eq!(answer["status"], "completed", "{answer}");
    let doc = wait_session(&h, &room, &session, &["canceled"]).await;
    let reason = doc["outcome"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("was cancelled before the run resumed"),
        "{reason}"
    );
    let stop = intervention(&doc, "op-wait");
    assert_eq!(stop["status"], "rejected");
    assert!(
        stop["resolutionReason"]
            .as_str()
            .unwrap()
            .contains("canceled"),
        "{stop}"
    );
    let (status, body) = request(&h, &room, &session, "op-late", "stop", "pre_step").await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["gatehouseCode"], "SESSION_NOT_ACTIVE");
    h.server.shutdown().await;
}

#[tokio::test]
async fn cancel_stale_and_a_resolving_transition_end_their_sessions() {
    let h = Harness::legacy().await;
    let (room, session, gate) = park(&h, "task-stale", gated("m", read_then_bash(0))).await;
    let (status, body) = h
        .post(
            "/api/sessions/interactions/cancel-stale",
            json!({"session_id": "task-stale", "turn_id": "a-newer-turn"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["cancelled"], 1);
    let doc = wait_session(&h, &room, &session, &["canceled"]).await;
    assert!(doc["outcome"]["reason"].as_str().unwrap().contains(&gate));

    let (room, session, gate) = park(&h, "task-transition", gated("m", read_then_bash(0))).await;
    let row = h.interaction(&gate).await;
    let (status, body) = h
        .post(
            "/api/sessions/interactions/transition",
            json!({"session_id": "task-transition", "token": row["token"], "status": "resolved",
                   "resolution": {"verdict": "approved", "tool_call_id": row["data"]["request"]["tool_call_id"]}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let doc = wait_session(&h, &room, &session, &["failed"]).await;
    let reason = doc["outcome"]["reason"].as_str().unwrap();
    assert!(reason.contains("nothing will resume"), "{reason}");
    h.server.shutdown().await;
}

#[tokio::test]
async fn a_resume_that_gives_up_says_so_on_the_row_and_ends_its_session() {
    let h = Harness::with(TestServerOptions {
        lease: Some(Duration::from_millis(150)),
        dispatch_poll: Some(Duration::from_millis(50)),
        ..crate::common::legacy_options()
    })
    .await;
    let (room, session, gate) = park(&h, "task-broken", gated("m", read_then_bash(0))).await;
    let (request_status, _) =
        request(&h, &room, &session, "op-inject", "be brief", "pre_step").await;
    assert_eq!(request_status, 202);
    // A parked state a resume cannot read: every attempt fails.
    let db = Db::open(&h.server).await;
    let (turn_id, _) = db.parked_state_of_gate(&gate).await;
    db.set_parked_state(&turn_id, &json!({"script": 5})).await;
    let (status, _) = h.respond(&gate, true).await;
    assert_eq!(status, 200);
    let row = h.wait_resolved(&gate).await;
    assert_eq!(
        row["data"]["resolution"]["error"]["code"], "RESUME_FAILED",
        "{row}"
    );
    let doc = wait_session(&h, &room, &session, &["failed"]).await;
    assert!(
        doc["outcome"]["reason"]
            .as_str()
            .unwrap()
            .contains("gave up"),
        "{doc}"
    );
    assert_eq!(intervention(&doc, "op-inject")["status"], "rejected");
    db.close().await;
    h.server.shutdown().await;
}

/// Two instances on one database (the same SQLite file, or the same Postgres database);
/// a resume three leases long. Its heartbeat keeps the job: claimed once, each tool run
/// once, one resume turn, the session completed.
#[tokio::test]
async fn a_resume_longer_than_its_lease_keeps_it_across_two_instances() {
    // A lease of 1 s renewed every third of it: a heartbeat must be late by two thirds
    // of a second to lose it, which a loaded 2-core CI machine running the suite in
    // parallel did with 300 ms (its heartbeat 100 ms) on PostgreSQL.
    let lease = Duration::from_secs(1);
    let a = Harness::with(TestServerOptions {
        lease: Some(lease),
        dispatch_poll: Some(Duration::from_millis(30)),
        ..crate::common::legacy_options()
    })
    .await;
    let b = Harness {
        server: testing::spawn(TestServerOptions {
            database_path: a.server.options.database_path.clone(),
            database_url: a.server.options.database_url.clone(),
            api_key: a.server.options.api_key.clone(),
            project_id: a.server.options.project_id.clone(),
            lease: Some(lease),
            dispatch_poll: Some(Duration::from_millis(30)),
            ..crate::common::legacy_options()
        })
        .await,
        http: reqwest::Client::new(),
    };
    let (room, session, gate) = park(&a, "task-long", gated("m-long", read_then_bash(3000))).await;
    let (status, _) = b.respond(&gate, true).await;
    assert_eq!(status, 200);
    a.wait_resolved(&gate).await;
    let doc = wait_session(&a, &room, &session, &["completed"]).await;
    assert_eq!(doc["status"], "completed");
    let turns = a.turns("task-long").await;
    let counts = tool_run_counts(&turns);
    assert_eq!(counts.get("Read"), Some(&1), "{turns}");
    assert_eq!(counts.get("Bash"), Some(&1), "{turns}");
    assert_eq!(turns["count"], 2, "one parked turn, one resume: {turns}");
    assert_eq!(in_outputs(&turns, "ran Bash"), 1);
    let db = Db::open(&a.server).await;
    let attempts = db
        .text(
            "SELECT CAST(attempts AS TEXT) FROM resume_jobs WHERE interaction_id = $1",
            &[&gate],
        )
        .await;
    assert_eq!(attempts.as_deref(), Some("1"), "claimed once");
    db.close().await;
    b.server.shutdown().await;
    a.server.shutdown().await;
}

/// A resume attempt whose job and session are taken over while it works (as when its
/// instance stalls past its lease): it stops at its next step, runs no further tool and
/// writes nothing; the attempt that took over finds the approved tool already run
/// (never runs it again), runs the rest, and is the one recorded.
#[tokio::test]
async fn a_taken_over_attempt_runs_no_tool_and_the_approved_one_runs_once() {
    let h = Harness::with(TestServerOptions {
        lease: Some(Duration::from_millis(300)),
        dispatch_poll: Some(Duration::from_millis(30)),
        ..crate::common::legacy_options()
    })
    .await;
    let (room, session, gate) =
        park(&h, "task-taken", gated("m-taken", read_then_bash(1200))).await;
    let (status, _) = h.respond(&gate, true).await;
    assert_eq!(status, 200);
    let db = Db::open(&h.server).await;
    // Wait for the first attempt to run the approved Read.
    assert!(
        crate::common::wait_until(Duration::from_secs(10), || async {
            db.text(
                "SELECT tool FROM tool_runs WHERE interaction_id = $1",
                &[&gate],
            )
            .await
            .is_some()
        })
        .await
    );
    // Another worker takes the job over (its lease as if expired) and the session's hold.
    db.execute(
        "UPDATE resume_jobs SET lease_owner = 'another-instance', lease_expires_ms = 0 WHERE interaction_id = $1",
        &[&gate],
    )
    .await;
    db.execute(
        "UPDATE execution_sessions SET run_token = 'another-instance', run_lease_expires_ms = 0 WHERE session_id = $1",
        &[&session],
    )
    .await;
    h.wait_resolved(&gate).await;
    let doc = wait_session(&h, &room, &session, &["completed"]).await;
    assert_eq!(doc["status"], "completed");
    let turns = h.turns("task-taken").await;
    let counts = tool_run_counts(&turns);
    assert_eq!(counts.get("Read"), Some(&1), "{turns}");
    assert_eq!(counts.get("Bash"), Some(&1), "{turns}");
    assert_eq!(turns["count"], 2, "{turns}");
    assert_eq!(in_outputs(&turns, "ran Read"), 1, "{turns}");
    assert_eq!(
        in_outputs(&turns, "not run again"),
        1,
        "the retry reports the earlier run: {turns}"
    );
    db.close().await;
    h.server.shutdown().await;
}

/// Recovery: a run that failed with an intervention still pending rejects it (with the
/// reason); its successor (`predecessorSessionId`) takes interventions as a first run.
#[tokio::test]
async fn a_recovery_successor_behaves_as_a_first_run() {
    let h = Harness::legacy().await;
    let failing = gated(
        "m-fail",
        json!([
            {"tool": "Read", "args": {"path": "a"}},
            {"fail": "the disk is full"},
            {"tool": "Bash", "args": {"command": "x"}}
        ]),
    );
    let (room, failed, gate) = park(&h, "task-recover", failing).await;
    let (status, _) = request(&h, &room, &failed, "op-never", "stop", "pre_action").await;
    assert_eq!(status, 202);
    h.respond(&gate, false).await;
    let doc = wait_session(&h, &room, &failed, &["failed"]).await;
    let never = intervention(&doc, "op-never");
    assert_eq!(never["status"], "rejected");
    assert_eq!(
        never["resolutionReason"],
        "the run failed before reaching checkpoint pre_action"
    );

    let answer = h
        .invoke(json!({"session_id": "task-recover",
            "data": {"inputs": {"messages": user("again")}, "parameters": gated("m-fail", read_then_bash(0)),
                     "execution": {"predecessorSessionId": failed}}}))
        .await;
    assert_eq!(answer["status"], "parked", "{answer}");
    let successor = answer["execution"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let room2 = answer["execution"]["room_id"].as_str().unwrap().to_string();
    let gate2 = answer["interaction_ids"][0].as_str().unwrap().to_string();
    assert_eq!(
        get_session(&h, &room2, &successor).await["predecessorSessionId"],
        failed.as_str()
    );
    let (status, _) = request(&h, &room2, &successor, "op-stop", "stop", "pre_action").await;
    assert_eq!(status, 202);
    h.respond(&gate2, true).await;
    let doc = wait_session(&h, &room2, &successor, &["canceled"]).await;
    assert_eq!(intervention(&doc, "op-stop")["status"], "applied");
    h.server.shutdown().await;
}

/// Delivery is bound to the revisions a request was made under (B1): after the room's
/// authority moves on, an intervention requested before is rejected with that reason at
/// its checkpoint (never applied under the new authority); one requested after applies.
#[tokio::test]
async fn a_request_made_before_an_authority_change_is_not_applied_under_it() {
    let h = Harness::legacy().await;
    let (room, session, gate) =
        park(&h, "task-authority", gated("m-auth", read_then_bash(0))).await;
    let (status, _) = request(&h, &room, &session, "op-before", "before", "pre_step").await;
    assert_eq!(status, 202);
    let doc = get_session(&h, &room, &session).await;
    assert_eq!(
        intervention(&doc, "op-before")["sessionRevision"],
        doc["revision"].as_u64().unwrap() - 1
    );
    let (status, body) = h
        .post(
            &format!("{}/authority", session_path(&room, &session)),
            json!({"expectedRevision": doc["revision"], "authorityRevision": "auth-2", "roleRevision": "role-2"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["authorityRevision"], "auth-2");
    // A stale revision is the usual conflict.
    let (status, _) = h
        .post(
            &format!("{}/authority", session_path(&room, &session)),
            json!({"expectedRevision": doc["revision"], "authorityRevision": "auth-3"}),
        )
        .await;
    assert_eq!(status, 409);
    let (status, _) = request(&h, &room, &session, "op-after", "after", "post_output").await;
    assert_eq!(status, 202);
    h.respond(&gate, true).await;
    let doc = wait_session(&h, &room, &session, &["completed"]).await;
    let before = intervention(&doc, "op-before");
    assert_eq!(before["status"], "rejected", "{doc}");
    let reason = before["resolutionReason"].as_str().unwrap();
    assert!(
        reason.contains("not applied under the new authority"),
        "{reason}"
    );
    assert!(reason.contains("auth-2"), "{reason}");
    assert_eq!(intervention(&doc, "op-after")["status"], "applied");
    let turns = h.turns("task-authority").await;
    assert_eq!(in_outputs(&turns, "(instruction: after)"), 1, "{turns}");
    assert_eq!(in_outputs(&turns, "(instruction: before)"), 0, "{turns}");
    h.server.shutdown().await;
}
