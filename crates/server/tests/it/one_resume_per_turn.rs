//! One resume per parked turn (issue 23, item 1), on a host without the execution
//! service (whose session hold would otherwise serialise the resumes): a second gate row
//! naming an already parked turn (`POST /api/sessions/interactions/` with its `turn_id`),
//! answered while the turn's own gate is being resumed, or in the same respond-batch,
//! resumes nothing. The turn is resumed once, its allowed tool after the gate runs once,
//! and the second row is resolved with `resolution.error.code` `NOT_THE_PARKED_GATE`
//! naming the gate the turn waits on. `GATEHOUSE_TEST_DATABASE_URL=postgres://...` runs
//! it on PostgreSQL.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::common::db::Db;
use crate::common::{user, Harness};
use gatehouse_server::testing::TestServerOptions;
use serde_json::{json, Value};

/// Rounds per case, each its own agent session, all under way at once.
const ROUNDS: usize = 10;

const BATCH: &str = "/api/sessions/interactions/respond-batch";

/// A `--no-execution` host whose workers wake quickly, enough of them to run every
/// answer's resume at once.
async fn host() -> Harness {
    Harness::with(TestServerOptions {
        execution: false,
        resume_workers: Some(2 * ROUNDS + 4),
        dispatch_poll: Some(Duration::from_millis(30)),
        ..crate::common::legacy_options()
    })
    .await
}

/// Asks before `Read`, allows the rest: the gate, a pause (the resume is still running
/// when the second answer arrives), the allowed `Bash` after the gate.
fn read_then_bash() -> Value {
    json!({"agent": {
        "llm": {"model": "m-once"},
        "runner": {"permissions": {"default": "allow", "rules": [{"pattern": "Read", "permission": "ask"}]}},
        "script": [
            {"tool": "Read", "args": {"path": "/etc/hostname"}},
            {"wait_ms": 1500},
            {"tool": "Bash", "args": {"command": "make release"}},
            {"say": "done"}
        ]
    }})
}

/// A parked turn of `session` and a second gate row naming it:
/// `(the turn's gate, the second row)`.
async fn parked_with_second_gate(h: &Harness, session: &str) -> (String, String) {
    let parked = h
        .invoke(json!({"session_id": session, "data": {"inputs": {"messages": user("release")}, "parameters": read_then_bash()}}))
        .await;
    assert_eq!(parked["status"], "parked", "{parked}");
    let gate = parked["interaction_ids"][0].as_str().unwrap().to_string();
    let row = h.interaction(&gate).await;
    // The same request under another token, as a second runner (or anyone holding a key
    // of the project) could write it.
    let (status, body) = h
        .post(
            "/api/sessions/interactions/",
            json!({
                "session_id": session, "turn_id": row["turn_id"], "token": format!("second-{session}"),
                "kind": "user_approval", "data": {"request": row["data"]["request"]}
            }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let second = body["interaction"]["id"].as_str().unwrap().to_string();
    (gate, second)
}

/// A round: `(agent session, the turn's gate, the second row)`.
type Rounds = Vec<(String, String, String)>;

/// [`ROUNDS`] parked turns, each with a second gate row, in sessions `prefix-N`.
async fn parked_rounds(h: &Harness, prefix: &str) -> Rounds {
    let mut rounds = Vec::new();
    for n in 0..ROUNDS {
        let session = format!("{prefix}-{n}");
        let (gate, second) = parked_with_second_gate(h, &session).await;
        rounds.push((session, gate, second));
    }
    rounds
}

/// Wait until the resume jobs of both rows of every round are no longer queued (done
/// or failed).
async fn wait_jobs_settled(h: &Harness, rounds: &Rounds) {
    let db = Db::open(&h.server).await;
    let ids = rounds.iter().flat_map(|(_, gate, second)| [gate, second]);
    for id in ids {
        let settled = crate::common::wait_until(Duration::from_secs(30), || async {
            let state = db
                .text(
                    "SELECT state FROM resume_jobs WHERE interaction_id = $1",
                    &[id.as_str()],
                )
                .await;
            matches!(state.as_deref(), Some("done") | Some("failed"))
        })
        .await;
        assert!(settled, "the resume job of {id} never settled");
    }
    db.close().await;
}

/// What one round left behind: resume turns, tool runs per tool, the second row.
struct Round {
    resume_turns: usize,
    tool_runs: BTreeMap<String, usize>,
    second: Value,
}

async fn round_of(h: &Harness, session: &str, second: &str) -> Round {
    let turns = h.turns(session).await;
    let resume_turns = turns["turns"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["resumed"] == true)
        .count();
    let mut tool_runs = BTreeMap::new();
    for run in turns["tool_runs"].as_array().unwrap() {
        *tool_runs
            .entry(run["tool"].as_str().unwrap().to_string())
            .or_insert(0) += 1;
    }
    Round {
        resume_turns,
        tool_runs,
        second: h.interaction(second).await,
    }
}

/// Each round: resumed once, each tool run once, the second row resolved with the typed
/// error naming the turn's own gate. `Some(what went wrong)` otherwise.
fn check_once(session: &str, gate: &str, round: &Round) -> Option<String> {
    let runs = |tool: &str| round.tool_runs.get(tool).copied().unwrap_or(0);
    let error = &round.second["data"]["resolution"]["error"];
    let once = round.resume_turns == 1 && runs("Read") == 1 && runs("Bash") == 1;
    let typed = round.second["status"] == "resolved"
        && error["code"] == "NOT_THE_PARKED_GATE"
        && error["parked_gate_id"] == gate;
    (!once || !typed).then(|| {
        format!(
            "{session}: {} resume turns, tool runs {:?}; the second row {} with resolution {}",
            round.resume_turns,
            round.tool_runs,
            round.second["status"],
            round.second["data"]["resolution"]
        )
    })
}

/// Check every round; fail with the rounds that went wrong.
async fn assert_every_round_once(h: &Harness, rounds: &Rounds) {
    let mut failures = Vec::new();
    for (session, gate, second) in rounds {
        let round = round_of(h, session, second).await;
        failures.extend(check_once(session, gate, &round));
        assert_eq!(h.interaction(gate).await["status"], "resolved");
    }
    assert!(
        failures.is_empty(),
        "{} of {ROUNDS} rounds went wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[tokio::test]
async fn a_second_gate_answered_while_the_first_resume_runs_resumes_nothing() {
    let h = host().await;
    let rounds = parked_rounds(&h, "apart").await;
    let db = Db::open(&h.server).await;
    // Every round at once: answer the turn's gate, wait until its resume ran the gated
    // `Read` (it is now in its pause), answer the second row.
    let answered = rounds.iter().map(|(_, gate, second)| {
        let (h, db) = (&h, &db);
        async move {
            let (status, body) = h.respond(gate, true).await;
            assert_eq!(status, 200, "{body}");
            let running = crate::common::wait_until(Duration::from_secs(20), || async {
                db.text(
                    "SELECT tool FROM tool_runs WHERE interaction_id = $1",
                    &[gate],
                )
                .await
                .is_some()
            })
            .await;
            assert!(running, "the resume of {gate} never ran its gated tool");
            let (status, body) = h.respond(second, true).await;
            assert_eq!(status, 200, "an answer to a pending row is taken: {body}");
        }
    });
    futures::future::join_all(answered).await;
    db.close().await;
    wait_jobs_settled(&h, &rounds).await;
    assert_every_round_once(&h, &rounds).await;
    h.server.shutdown().await;
}

#[tokio::test]
async fn both_gates_answered_in_one_batch_resume_the_turn_once() {
    let h = host().await;
    let rounds = parked_rounds(&h, "batch").await;
    let answers: Vec<Value> = rounds
        .iter()
        .flat_map(|(_, gate, second)| {
            [gate, second].map(|id| json!({"id": id, "answer": {"approved": true}}))
        })
        .collect();
    let (status, body) = h.post(BATCH, json!({ "answers": answers })).await;
    assert_eq!(status, 200, "{body}");
    for result in body["results"].as_array().unwrap() {
        assert_eq!(result["outcome"], "answered", "{body}");
    }
    wait_jobs_settled(&h, &rounds).await;
    assert_every_round_once(&h, &rounds).await;
    h.server.shutdown().await;
}
