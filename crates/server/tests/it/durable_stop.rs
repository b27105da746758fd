//! Agenta's durable Stop, the session snapshot and the session's events on Gatehouse's
//! server (docs/CONTRACT.md, "Durable contract"; CONTRACT-TABLE.md's cancel, snapshot and
//! events tables and its race table). Requested is not applied: a 202 says the command is
//! recorded; `stopped` comes only with the turn's record (its harness halted at a step
//! boundary) or a parked turn whose gates were cancelled. Over real HTTP, on SQLite (and
//! on PostgreSQL with `GATEHOUSE_TEST_DATABASE_URL`), one instance and two.

use std::time::Duration;

use gatehouse_server::testing::TestServerOptions;
use gatehouse_server::AgentaContract;
use serde_json::{json, Value};

use crate::common::db::Db;
use crate::common::{user, Harness};

fn cancel_path(session: &str) -> String {
    format!("/api/sessions/{session}/cancel")
}

fn respond_path(id: &str) -> String {
    format!("/api/sessions/interactions/{id}/respond")
}

fn new_session() -> String {
    format!("s-{}", uuid::Uuid::new_v4().simple())
}

/// A config whose turn says something, works for `wait_ms`, runs an allowed `Bash`, says
/// done: a turn a Stop can catch in flight.
fn slow_config(wait_ms: u64) -> Value {
    json!({"agent": {
        "llm": {"model": "gpt-4o"},
        "runner": {"permissions": {"default": "allow"}},
        "script": [
            {"say": "starting"},
            {"wait_ms": wait_ms},
            {"tool": "Bash", "args": {"command": "echo after-the-wait"}},
            {"say": "done"}
        ]
    }})
}

async fn durable_harness() -> Harness {
    Harness::with(TestServerOptions {
        agenta_contract: AgentaContract::Durable,
        ..TestServerOptions::default()
    })
    .await
}

impl Harness {
    /// `POST /api/sessions/{session}/cancel` with `body` and, maybe, a key.
    async fn stop(&self, session: &str, body: Value, key: Option<&str>) -> (u16, Value) {
        match key {
            Some(key) => self.post_with_key(&cancel_path(session), body, key).await,
            None => self.post(&cancel_path(session), body).await,
        }
    }

    async fn snapshot(&self, session: &str) -> Value {
        let (status, body) = self.get(&format!("/api/sessions/{session}")).await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// Start a slow turn of `session` in the background; returns once the snapshot says
    /// it runs: (its execution id, the invoke's answer when it ends).
    async fn running_turn(
        &self,
        session: &str,
        wait_ms: u64,
    ) -> (String, tokio::task::JoinHandle<(u16, Value)>) {
        let http = self.http.clone();
        let url = self.url("/api/invoke");
        let auth = self.server.authorization();
        let body = json!({"session_id": session,
                          "data": {"inputs": {"messages": user("go")}, "parameters": slow_config(wait_ms)}});
        let invoke = tokio::spawn(async move {
            let response = http
                .post(url)
                .header("Authorization", auth)
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            (status, response.json::<Value>().await.unwrap())
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let execution = loop {
            let snapshot = self.snapshot(session).await;
            if snapshot["execution_state"]["state"] == "running" {
                break snapshot["execution_state"]["id"]
                    .as_str()
                    .unwrap()
                    .to_string();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the turn never showed as running: {snapshot}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        (execution, invoke)
    }

    /// A parked gate of a fresh session: (gate, its turn, the session).
    async fn parked(&self) -> (String, String, String) {
        let session = new_session();
        let gate = self.park(&session, "gpt-4o").await;
        let turn = self.interaction(&gate).await["turn_id"]
            .as_str()
            .unwrap()
            .to_string();
        (gate, turn, session)
    }

    /// The session's durable events after `after` (reads the stream until `ready`).
    async fn replay(&self, session: &str, after: u64) -> Vec<Value> {
        let response = self
            .http
            .get(self.url(&format!("/api/sessions/{session}/events?after={after}")))
            .header("Authorization", self.server.authorization())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["cache-control"], "no-store");
        let mut response = response;
        let mut text = String::new();
        while !text.contains("event: ready") {
            let chunk = tokio::time::timeout(Duration::from_secs(5), response.chunk())
                .await
                .expect("the replay ends with ready")
                .unwrap()
                .expect("the stream stays open");
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
        assert!(text.starts_with("retry:"), "{text}");
        text.split("\n\n")
            .take_while(|frame| !frame.contains("event: ready"))
            .filter_map(|frame| frame.strip_prefix("data: "))
            .map(|data| serde_json::from_str(data).unwrap())
            .collect()
    }
}

async fn command(db: &Db, id: &str) -> (String, String) {
    let state = db
        .text("SELECT state FROM session_commands WHERE id = $1", &[id])
        .await
        .unwrap();
    let outcome = db
        .text(
            "SELECT COALESCE(outcome, '') FROM session_commands WHERE id = $1",
            &[id],
        )
        .await
        .unwrap();
    (state, outcome)
}

async fn tool_runs(db: &Db, session: &str) -> String {
    db.text(
        "SELECT CAST(COUNT(*) AS TEXT) FROM tool_runs WHERE session_id = $1",
        &[session],
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn a_running_turn_stops_at_its_next_step_and_only_then_reads_stopped() {
    let h = durable_harness().await;
    let db = Db::open(&h.server).await;
    let session = new_session();
    let (execution, invoke) = h.running_turn(&session, 4_000).await;
    let (status, body) = h.stop(&session, json!({}), None).await;
    assert_eq!(status, 202, "{body}");
    // Requested, not applied: the 202 names the command and the stopping execution.
    assert_eq!(
        body["execution"],
        json!({"id": execution, "state": "stopping"})
    );
    let command_id = body["command"]["id"].as_str().unwrap().to_string();
    assert!(
        matches!(
            body["command"]["state"].as_str(),
            Some("pending" | "applied")
        ),
        "{body}"
    );
    let (status, ended) = invoke.await.unwrap();
    assert_eq!(status, 200, "{ended}");
    assert_eq!(ended["status"], "failed", "{ended}");
    assert!(
        ended["output"]
            .as_str()
            .unwrap()
            .contains("stopped before step"),
        "{ended}"
    );
    // The evidence: the turn's record, the command applied with outcome stopped, the
    // tool after the wait never ran.
    assert_eq!(
        command(&db, &command_id).await,
        ("applied".to_string(), "stopped".to_string())
    );
    assert_eq!(tool_runs(&db, &session).await, "0");
    let snapshot = h.snapshot(&session).await;
    assert_eq!(snapshot["execution_state"], json!({"state": "idle"}));
    let events = h.replay(&session, 0).await;
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        ["execution.started", "execution.stopped"],
        "{events:?}"
    );
    let stopped = &events[1];
    assert_eq!(stopped["execution_id"], execution.as_str());
    assert_eq!(stopped["payload"]["command_id"], command_id.as_str());
    assert_eq!(stopped["payload"]["reason"], "user_stop");
    assert_eq!(stopped["sequence"], 2);
    assert_eq!(stopped["kind"], "event");
    // Replay resumes after a sequence.
    let after_first = h.replay(&session, 1).await;
    assert_eq!(after_first.len(), 1);
    assert_eq!(after_first[0]["type"], "execution.stopped");
}

#[tokio::test]
async fn two_stops_of_one_turn_collapse_and_a_key_replays() {
    let h = durable_harness().await;
    let session = new_session();
    let (execution, invoke) = h.running_turn(&session, 4_000).await;
    let (s1, first) = h.stop(&session, json!({}), Some("k1")).await;
    let (s2, second) = h
        .stop(&session, json!({"expected_execution_id": execution}), None)
        .await;
    assert_eq!((s1, s2), (202, 202), "{first} {second}");
    assert_eq!(first["command"]["id"], second["command"]["id"]);
    invoke.await.unwrap();
    // The key replays its command (202: it had a target), even now it is applied.
    let (s3, replay) = h.stop(&session, json!({}), Some("k1")).await;
    assert_eq!(s3, 202, "{replay}");
    assert_eq!(replay["command"]["id"], first["command"]["id"]);
    assert_eq!(replay["command"]["state"], "applied");
    assert_eq!(replay["execution"]["id"], execution.as_str());
    // The same key with another expectation is refused, a plain detail string.
    let (s4, reused) = h
        .stop(
            &session,
            json!({"expected_execution_id": execution}),
            Some("k1"),
        )
        .await;
    assert_eq!(s4, 409, "{reused}");
    assert!(reused["detail"].is_string(), "{reused}");
}

#[tokio::test]
async fn nothing_running_is_200_obsolete_and_a_stale_expectation_is_409() {
    let h = durable_harness().await;
    let db = Db::open(&h.server).await;
    let session = new_session();
    let (status, body) = h.stop(&session, json!({}), Some("none-1")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["execution"], json!({"id": null, "state": "idle"}));
    assert_eq!(body["command"]["state"], "obsolete");
    let id = body["command"]["id"].as_str().unwrap();
    assert_eq!(
        command(&db, id).await,
        ("obsolete".to_string(), "not_running".to_string())
    );
    // Replayed by its key: the same command, still 200.
    let (status, again) = h.stop(&session, json!({}), Some("none-1")).await;
    assert_eq!(status, 200);
    assert_eq!(again["command"]["id"], id);
    // A named Stop of an execution that is not running: 409, current none.
    let (status, stale) = h
        .stop(&session, json!({"expected_execution_id": "t-gone"}), None)
        .await;
    assert_eq!(status, 409, "{stale}");
    assert_eq!(
        stale["detail"],
        json!({"message": "expected execution 't-gone' is not the running execution (current: none)",
               "current_execution_id": null})
    );
    // Extra keys are refused (the request model forbids them), a long key too.
    let (status, _) = h.stop(&session, json!({"force": true}), None).await;
    assert_eq!(status, 422);
    let (status, long) = h.stop(&session, json!({}), Some(&"k".repeat(256))).await;
    assert_eq!(status, 422);
    assert_eq!(long["details"]["reason"], "too_long", "{long}");
    // An invalid session id: 422 with a detail string (snapshot and events: 400).
    let (status, bad) = h.stop("bad.id", json!({}), None).await;
    assert_eq!(status, 422, "{bad}");
    let (status, _) = h.get("/api/sessions/bad.id").await;
    assert_eq!(status, 400);
    let (status, _) = h.get("/api/sessions/bad.id/events").await;
    assert_eq!(status, 400);
    let (status, _) = h
        .get(&format!("/api/sessions/{session}/events?after=-1"))
        .await;
    assert_eq!(status, 422);
}

#[tokio::test]
async fn a_named_stop_of_a_parked_turn_cancels_its_gate_and_stops_it() {
    let h = durable_harness().await;
    let db = Db::open(&h.server).await;
    let (gate, turn, session) = h.parked().await;
    let snapshot = h.snapshot(&session).await;
    // Parked: idle, its gate pending, the host's capabilities.
    assert_eq!(
        snapshot["execution_state"],
        json!({"id": turn, "state": "idle"})
    );
    assert_eq!(snapshot["pending"]["interactions"][0]["id"], gate.as_str());
    assert_eq!(
        snapshot["capabilities"],
        json!({"durable_approvals": true, "queue": false, "steer": false})
    );
    // An unnamed Stop targets only a running turn: nothing is stopped.
    let (status, body) = h.stop(&session, json!({}), None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(h.interaction(&gate).await["status"], "pending");
    // Named, it reaches the parked turn the caller is looking at.
    let (status, body) = h
        .stop(&session, json!({"expected_execution_id": turn}), None)
        .await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["execution"], json!({"id": turn, "state": "stopping"}));
    let id = body["command"]["id"].as_str().unwrap();
    assert_eq!(
        command(&db, id).await,
        ("applied".to_string(), "stopped".to_string())
    );
    assert_eq!(h.interaction(&gate).await["status"], "cancelled");
    // The answer after it: the source can no longer be continued.
    let (status, refused) = h
        .post_with_key(
            &respond_path(&gate),
            json!({"answer": {"approved": true}}),
            "late",
        )
        .await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["code"], "execution_terminal");
    let snapshot = h.snapshot(&session).await;
    assert!(snapshot["pending"]["interactions"]
        .as_array()
        .unwrap()
        .is_empty());
    // A named Stop of it again: it already ended (409, current none).
    let (status, again) = h
        .stop(&session, json!({"expected_execution_id": turn}), None)
        .await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(again["detail"]["current_execution_id"], Value::Null);
    let types: Vec<String> = h
        .replay(&session, 0)
        .await
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        types,
        [
            "execution.started",
            "message.completed",
            "execution.stopped"
        ]
    );
}

#[tokio::test]
async fn a_stop_after_the_turn_ended_stops_nothing() {
    let h = durable_harness().await;
    let session = new_session();
    let (execution, invoke) = h.running_turn(&session, 200).await;
    let (status, ended) = invoke.await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(ended["status"], "completed", "{ended}");
    let (status, body) = h.stop(&session, json!({}), None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["command"]["state"], "obsolete");
    let (status, body) = h
        .stop(&session, json!({"expected_execution_id": execution}), None)
        .await;
    assert_eq!(status, 409, "{body}");
}

/// An answer and a named Stop of one parked turn, sent at once, `rounds` times against
/// `hosts` (round robin): exactly one wins every time. The Stop's win: the gate
/// cancelled, the answer 409 `execution_terminal`. The answer's: the turn resumed once,
/// the Stop 409 with `current_execution_id` null (or, if the resume already runs, its id).
async fn stop_races_an_answer(hosts: &[&Harness], rounds: usize) {
    let a = hosts[0];
    let db = Db::open(&a.server).await;
    let (mut stops, mut answers) = (0, 0);
    for round in 0..rounds {
        let (gate, turn, session) = a.parked().await;
        let answer_host = hosts[round % hosts.len()];
        let stop_host = hosts[(round + 1) % hosts.len()];
        let answer = {
            let http = answer_host.http.clone();
            let url = answer_host.url(&respond_path(&gate));
            let auth = answer_host.server.authorization();
            async move {
                let response = http
                    .post(url)
                    .header("Authorization", auth)
                    .header("Idempotency-Key", format!("race-{round}"))
                    .json(&json!({"answer": {"approved": true}, "expected_execution_id": null}))
                    .send()
                    .await
                    .unwrap();
                (
                    response.status().as_u16(),
                    response.json::<Value>().await.unwrap(),
                )
            }
        };
        let stop = {
            let http = stop_host.http.clone();
            let url = stop_host.url(&cancel_path(&session));
            let auth = stop_host.server.authorization();
            let turn = turn.clone();
            async move {
                let response = http
                    .post(url)
                    .header("Authorization", auth)
                    .json(&json!({"expected_execution_id": turn}))
                    .send()
                    .await
                    .unwrap();
                (
                    response.status().as_u16(),
                    response.json::<Value>().await.unwrap(),
                )
            }
        };
        // A jitter of up to 0.6 ms on one side or the other, so that both sides win some
        // rounds whichever instance is faster to its write.
        let jitter = Duration::from_micros(((round * 7919) % 600) as u64);
        let answer = async move {
            if round % 2 == 0 {
                tokio::time::sleep(jitter).await;
            }
            answer.await
        };
        let stop = async move {
            if round % 2 == 1 {
                tokio::time::sleep(jitter).await;
            }
            stop.await
        };
        let ((answer_status, answer_body), (stop_status, stop_body)) = tokio::join!(answer, stop);
        let answer_won = answer_status == 202;
        let stop_won = stop_status == 202;
        assert!(
            answer_won ^ stop_won,
            "round {round}: exactly one wins: answer {answer_status} {answer_body}, stop {stop_status} {stop_body}"
        );
        let settled = db
            .text(
                "SELECT state FROM session_executions WHERE execution_id = $1",
                &[&turn],
            )
            .await;
        if stop_won {
            stops += 1;
            assert_eq!(answer_status, 409, "{answer_body}");
            assert_eq!(answer_body["code"], "execution_terminal", "{answer_body}");
            assert!(
                matches!(
                    answer_body["details"]["execution_state"].as_str(),
                    Some("stopping" | "terminal")
                ) || answer_body["details"]["interaction_status"] == "cancelled",
                "{answer_body}"
            );
            assert_eq!(a.interaction(&gate).await["status"], "cancelled");
            assert!(matches!(settled.as_deref(), Some("stopping" | "stopped")));
        } else {
            answers += 1;
            assert_eq!(stop_status, 409, "{stop_body}");
            assert!(stop_body["detail"]["message"].is_string(), "{stop_body}");
            assert_eq!(settled.as_deref(), Some("continued"));
            a.wait_resolved(&gate).await;
            let resumes = a.turns(&session).await["turns"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|t| t["resumed"] == true)
                .count();
            assert_eq!(resumes, 1, "round {round}");
        }
        let commands = db
            .text(
                "SELECT CAST(COUNT(*) AS TEXT) FROM session_commands WHERE target_execution_id = $1",
                &[&turn],
            )
            .await;
        assert_eq!(
            commands.as_deref(),
            Some("1"),
            "round {round}: one command wins"
        );
    }
    eprintln!("stop vs answer: {stops} Stops won, {answers} answers won of {rounds}");
}

#[tokio::test]
async fn a_stop_racing_an_answer_has_one_winner_every_time() {
    let h = durable_harness().await;
    stop_races_an_answer(&[&h], 100).await;
}

#[tokio::test]
async fn a_stop_racing_an_answer_across_two_instances_has_one_winner_every_time() {
    let a = durable_harness().await;
    let b = a.durable_peer().await;
    stop_races_an_answer(&[&a, &b], 100).await;
    b.server.shutdown().await;
}

#[tokio::test]
async fn a_stop_sent_to_another_instance_stops_the_turn_this_one_runs() {
    let a = durable_harness().await;
    let b = a.durable_peer().await;
    let session = new_session();
    let (execution, invoke) = a.running_turn(&session, 4_000).await;
    let (status, body) = b
        .stop(&session, json!({"expected_execution_id": execution}), None)
        .await;
    assert_eq!(status, 202, "{body}");
    let (_, ended) = invoke.await.unwrap();
    assert_eq!(ended["status"], "failed", "{ended}");
    let db = Db::open(&a.server).await;
    let id = body["command"]["id"].as_str().unwrap();
    assert_eq!(
        command(&db, id).await,
        ("applied".to_string(), "stopped".to_string())
    );
    // Instance b streams the event instance a wrote (its poll finds it).
    let events = b.replay(&session, 0).await;
    assert_eq!(events.last().unwrap()["type"], "execution.stopped");
    b.server.shutdown().await;
}

#[tokio::test]
async fn the_events_stream_tells_new_events_live_after_ready() {
    let h = durable_harness().await;
    let session = new_session();
    let mut response = h
        .http
        .get(h.url(&format!("/api/sessions/{session}/events")))
        .header("Authorization", h.server.authorization())
        .send()
        .await
        .unwrap();
    let mut text = String::new();
    while !text.contains("event: ready") {
        let chunk = response.chunk().await.unwrap().unwrap();
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    // A turn starts and parks: its events arrive on the open stream.
    let gate = h.park(&session, "gpt-4o").await;
    assert!(!gate.is_empty());
    while !text.contains("message.completed") {
        let chunk = tokio::time::timeout(Duration::from_secs(5), response.chunk())
            .await
            .expect("the live event arrives")
            .unwrap()
            .unwrap();
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(text.contains("\"type\":\"execution.started\""), "{text}");
    assert!(text.contains("\"sequence\":2"), "{text}");
}

/// Agenta's second late-Stop guard: an unnamed Stop never reaches a turn that started
/// after the request arrived (`superseded_by_newer_turn`, 200, the turn left running);
/// and a run whose instance died (its lease ran out) is not running: its Stop is settled
/// `lost` by the sweep, with `execution.lost`.
#[tokio::test]
async fn a_stop_never_reaches_a_turn_that_started_after_it_arrived_nor_a_dead_one() {
    use gatehouse_server::interactions::store::{StopOutcome, StopRequest};
    let (_dir, store) = crate::common::fresh_store("late-stop.db").await;
    store
        .start_run("p", "s-late", "t-new", "attempt-1", 60_000)
        .await
        .unwrap();
    let stop = |received_ms: i64, expected: Option<&str>| StopRequest {
        project_id: "p".into(),
        session_id: "s-late".into(),
        expected_execution_id: expected.map(str::to_string),
        key: None,
        received_ms,
    };
    // Arrived (long) before the running turn started.
    match store.admit_stop(&stop(0, None)).await.unwrap() {
        StopOutcome::NothingToStop { command } => {
            assert_eq!(command.state, "obsolete");
            assert_eq!(command.outcome.as_deref(), Some("superseded_by_newer_turn"));
            assert_eq!(command.target_execution_id, None);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(store.stop_requested("p", "t-new").await.unwrap(), None);
    // Named, the guard is the name: it reaches the turn.
    let now = chrono::Utc::now().timestamp_millis();
    let command = match store.admit_stop(&stop(now, Some("t-new"))).await.unwrap() {
        StopOutcome::Accepted {
            command,
            execution_id,
            parked,
        } => {
            assert_eq!(execution_id, "t-new");
            assert!(!parked);
            command
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(
        store.stop_requested("p", "t-new").await.unwrap().as_deref(),
        Some(command.id.as_str())
    );
    // Its instance dies: the lease runs out, nothing will honour the Stop: `lost`.
    assert!(store
        .renew_run_row("p", "t-new", "attempt-1", -1)
        .await
        .unwrap());
    assert_eq!(store.settle_orphaned_stops().await.unwrap(), 1);
    let settled = store.get_command("p", &command.id).await.unwrap().unwrap();
    assert_eq!(
        (settled.state.as_str(), settled.outcome.as_deref()),
        ("obsolete", Some("lost"))
    );
    let events =
        gatehouse_server::announce::session_log::read_after(store.db(), "p", "s-late", 0, 10)
            .await
            .unwrap();
    let types: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
    assert_eq!(types, ["execution.started", "execution.lost"]);
}

/// The race table's last Stop line: an answer that won its turn's settlement leaves an
/// unfenced Stop to whatever runs now, the continuation; a Stop of that resumed turn is
/// honoured at its next step boundary like any other (its run row is written on resume).
#[tokio::test]
async fn an_unfenced_stop_after_an_answer_stops_the_continuation_that_runs() {
    let h = durable_harness().await;
    let db = Db::open(&h.server).await;
    let session = new_session();
    let parameters = json!({"agent": {
        "llm": {"model": "gpt-4o"},
        "runner": {"permissions": {"default": "ask"}},
        "script": [
            {"tool": "Bash", "args": {"command": "echo gated"}},
            {"wait_ms": 4000},
            {"say": "after the wait"}
        ]
    }});
    let parked = h
        .invoke(json!({"session_id": session,
                       "data": {"inputs": {"messages": user("go")}, "parameters": parameters}}))
        .await;
    assert_eq!(parked["status"], "parked", "{parked}");
    let gate = parked["interaction_ids"][0].as_str().unwrap().to_string();
    let (status, answered) = h
        .post_with_key(
            &respond_path(&gate),
            json!({"answer": {"approved": true}}),
            "go-1",
        )
        .await;
    assert_eq!(status, 202, "{answered}");
    let continuation = answered["execution"]["id"].as_str().unwrap().to_string();
    assert_ne!(continuation, parked["turn_id"].as_str().unwrap());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let snapshot = h.snapshot(&session).await;
        if snapshot["execution_state"]["state"] == "running" {
            assert_eq!(snapshot["execution_state"]["id"], continuation.as_str());
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{snapshot}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (status, stop) = h.stop(&session, json!({}), None).await;
    assert_eq!(status, 202, "{stop}");
    assert_eq!(stop["execution"]["id"], continuation.as_str());
    let id = stop["command"]["id"].as_str().unwrap().to_string();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while command(&db, &id).await.0 == "pending" {
        assert!(
            std::time::Instant::now() < deadline,
            "the Stop was never settled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        command(&db, &id).await,
        ("applied".to_string(), "stopped".to_string())
    );
    // The approved call ran once, before the Stop; the step after the wait never did.
    assert_eq!(tool_runs(&db, &session).await, "1");
    let turns = h.turns(&session).await;
    let resumed = turns["turns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["turn_id"] == continuation.as_str())
        .cloned()
        .unwrap();
    assert_eq!(resumed["status"], "failed", "{resumed}");
    let output = resumed["output"].as_str().unwrap();
    assert!(output.contains("stopped before step"), "{output}");
    assert!(!output.contains("after the wait"), "{output}");
}
