//! A batch respond is exactly the sequence of its single responds, duplicates included
//! (CONTRACT.md C4): per-item `idempotency_key`s are claimed, replayed and stored item by
//! item in the request's order, and no later item of a batch gives back a key an earlier
//! one holds. The differential test runs a set of batch shapes on one fresh database and
//! the same answers as single responds on another, and compares every outcome and the
//! final rows and keys. `GATEHOUSE_TEST_DATABASE_URL=postgres://...` runs it on Postgres.

use std::collections::BTreeMap;

use crate::common::db::Db;
use crate::common::Harness;
use gatehouse_server::testing::TestServerOptions;
use serde_json::{json, Value};

const BATCH: &str = "/api/sessions/interactions/respond-batch";
/// A gate id no server has.
const UNKNOWN: &str = "019fac94-0000-7000-8000-00000000beef";

/// A server whose answered gates stay `responded` (no resume worker), so the final rows
/// of two servers can be compared without racing the resumes.
async fn quiet_server() -> Harness {
    Harness::with(TestServerOptions {
        run_dispatcher: false,
        ..crate::common::legacy_options()
    })
    .await
}

/// Park `n` gates, one per agent session `gate-i`.
async fn gates(h: &Harness, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(h.park(&format!("gate-{i}"), "m-batch-keys").await);
    }
    ids
}

fn item(id: &str, approved: bool, key: Option<&str>) -> Value {
    let mut item = json!({"id": id, "answer": {"approved": approved}});
    if let Some(key) = key {
        item["idempotency_key"] = json!(key);
    }
    item
}

async fn single(h: &Harness, id: &str, approved: bool, key: Option<&str>) -> (u16, Value) {
    let path = format!("/api/sessions/interactions/{id}/respond");
    let body = json!({"answer": {"approved": approved}});
    match key {
        Some(key) => h.post_with_key(&path, body, key).await,
        None => h.post(&path, body).await,
    }
}

#[tokio::test]
async fn the_same_gate_and_key_twice_in_a_batch_is_one_answer_replayed() {
    let h = quiet_server().await;
    let ids = gates(&h, 1).await;
    let twice =
        json!({"answers": [item(&ids[0], true, Some("k")), item(&ids[0], true, Some("k"))]});
    let (status, first) = h.post(BATCH, twice.clone()).await;
    assert_eq!(status, 200, "{first}");
    let results = first["results"].as_array().unwrap();
    // The second item repeats the first: its replay, not "already answered".
    assert_eq!(results[0]["outcome"], "answered", "{first}");
    assert_eq!(results[1]["outcome"], "answered", "{first}");
    assert_eq!(results[0]["interaction"], results[1]["interaction"]);
    // Retried (the answer was lost): the caller's own answer back, twice.
    let (status, again) = h.post(BATCH, twice).await;
    assert_eq!(status, 200, "{again}");
    for result in again["results"].as_array().unwrap() {
        assert_eq!(result["outcome"], "answered", "{again}");
        assert_eq!(result["interaction"], results[0]["interaction"]);
    }
    // The key still holds the answer: a single respond with it replays it.
    let (status, replay) = single(&h, &ids[0], true, Some("k")).await;
    assert_eq!(status, 200, "{replay}");
    assert_eq!(replay["interaction"], results[0]["interaction"]);
    h.server.shutdown().await;
}

#[tokio::test]
async fn one_key_on_two_gates_in_a_batch_answers_the_first_and_refuses_the_second() {
    let h = quiet_server().await;
    let ids = gates(&h, 2).await;
    let (status, body) = h
        .post(
            BATCH,
            json!({"answers": [item(&ids[1], true, Some("shared")), item(&ids[0], true, Some("shared"))]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let results = body["results"].as_array().unwrap();
    assert_eq!(results[0]["outcome"], "answered", "{body}");
    assert_eq!(results[0]["interaction"]["id"], ids[1].as_str());
    assert_eq!(results[1]["outcome"], "invalid", "{body}");
    assert_eq!(results[1]["error"]["code"], "IDEMPOTENCY_KEY_REUSED");
    assert_eq!(h.interaction(&ids[0]).await["status"], "pending");
    // The key is bound to the gate of the first item, and replays that gate's row only.
    let (status, replay) = single(&h, &ids[1], true, Some("shared")).await;
    assert_eq!(status, 200, "{replay}");
    assert_eq!(replay["interaction"], results[0]["interaction"]);
    let (status, refused) = single(&h, &ids[0], true, Some("shared")).await;
    assert_eq!(
        refused["code"], "IDEMPOTENCY_KEY_REUSED",
        "{status} {refused}"
    );
    assert_eq!(h.interaction(&ids[0]).await["status"], "pending");
    h.server.shutdown().await;
}

/// Which gate an item names: one of the parked gates, or an id no server has.
#[derive(Debug, Clone, Copy)]
enum Gate {
    Parked(usize),
    Unknown,
}

/// One answer of the program.
#[derive(Debug, Clone, Copy)]
struct Answer {
    gate: Gate,
    approved: bool,
    key: Option<&'static str>,
}

/// A step of the program: one single respond, or one batch.
#[derive(Debug, Clone)]
enum Step {
    Single(Answer),
    Batch(Vec<Answer>),
}

fn a(gate: usize, approved: bool, key: Option<&'static str>) -> Answer {
    Answer {
        gate: Gate::Parked(gate),
        approved,
        key,
    }
}

fn unknown(key: Option<&'static str>) -> Answer {
    Answer {
        gate: Gate::Unknown,
        approved: true,
        key,
    }
}

const GATES: usize = 12;

/// The batch shapes, each on gates and keys of its own, then all of them retried in one
/// batch.
fn program() -> Vec<Step> {
    use Step::{Batch, Single};
    let mut steps = vec![
        // The same gate with the same key twice, retried, then a single respond.
        Batch(vec![a(0, true, Some("a")), a(0, true, Some("a"))]),
        Batch(vec![a(0, true, Some("a")), a(0, true, Some("a"))]),
        Single(a(0, true, Some("a"))),
        // One key on two gates, each gate then answered alone with it, then retried.
        Batch(vec![a(1, true, Some("b")), a(2, true, Some("b"))]),
        Single(a(1, true, Some("b"))),
        Single(a(2, true, Some("b"))),
        Batch(vec![a(2, true, Some("b")), a(1, true, Some("b"))]),
        Single(a(2, false, None)),
        // The same gate under two keys (two answers).
        Batch(vec![a(3, true, Some("c1")), a(3, false, Some("c2"))]),
        Single(a(3, false, Some("c2"))),
        Single(a(3, true, Some("c1"))),
        // Single responds before and after, keyed and not.
        Single(a(4, true, Some("d"))),
        Batch(vec![
            a(4, true, Some("d")),
            a(5, true, Some("d")),
            a(5, true, Some("e")),
            a(6, true, None),
            a(6, true, Some("f")),
        ]),
        Single(a(5, true, Some("e"))),
        Single(a(6, true, Some("f"))),
        Single(a(6, true, None)),
        // A key first meets an answered gate (and is given back), then a pending one.
        Single(a(7, false, None)),
        Batch(vec![a(7, true, Some("g")), a(8, true, Some("g"))]),
        Batch(vec![a(7, true, Some("g")), a(8, true, Some("g"))]),
        // The same gate and key with another answer.
        Batch(vec![a(9, true, Some("h")), a(9, false, Some("h"))]),
        Single(a(9, false, Some("h"))),
        // A key on a gate that does not exist, then on one that does.
        Batch(vec![
            unknown(Some("i")),
            a(10, true, Some("i")),
            unknown(Some("i")),
            unknown(None),
        ]),
        // A fresh gate answered twice, then everything above in one batch.
        Batch(vec![a(11, false, Some("j")), a(11, false, Some("j"))]),
    ];
    let everything: Vec<Answer> = steps
        .iter()
        .flat_map(|step| match step {
            Single(answer) => vec![*answer],
            Batch(answers) => answers.clone(),
        })
        .collect();
    steps.push(Batch(everything));
    steps
}

/// An outcome as both paths can state it: the batch outcome, the error code, and the
/// row answered or replayed (the gate's session, status and answer; ids and times
/// differ between two servers).
type Outcome = (String, Option<String>, Option<Value>);

fn row_summary(row: &Value) -> Value {
    json!({
        "session_id": row["session_id"],
        "status": row["status"],
        "answer": row["data"]["resolution"]["answer"],
    })
}

fn batch_outcome(result: &Value) -> Outcome {
    (
        result["outcome"].as_str().unwrap_or_default().to_string(),
        result["error"]["code"].as_str().map(str::to_string),
        result
            .get("interaction")
            .filter(|row| !row.is_null())
            .map(row_summary),
    )
}

fn single_outcome(status: u16, body: &Value) -> Outcome {
    let code = body["code"].as_str().map(str::to_string);
    let outcome = match (status, code.as_deref()) {
        (200, _) => "answered",
        (_, Some("ALREADY_ANSWERED")) => "already_answered",
        (_, Some("NOT_FOUND")) => "not_found",
        _ => "invalid",
    };
    let row = (status == 200).then(|| row_summary(&body["interaction"]));
    (outcome.to_string(), code, row)
}

fn gate_id(ids: &[String], gate: Gate) -> &str {
    match gate {
        Gate::Parked(i) => &ids[i],
        Gate::Unknown => UNKNOWN,
    }
}

/// Run the program, each batch as a batch (`as_batches`) or as its answers one by one;
/// every answer's outcome in order.
async fn run(h: &Harness, ids: &[String], as_batches: bool) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    for step in program() {
        match step {
            Step::Batch(answers) if as_batches => {
                let items: Vec<Value> = answers
                    .iter()
                    .map(|x| item(gate_id(ids, x.gate), x.approved, x.key))
                    .collect();
                let (status, body) = h.post(BATCH, json!({"answers": items})).await;
                assert_eq!(status, 200, "{body}");
                let results = body["results"].as_array().unwrap();
                assert_eq!(results.len(), answers.len(), "{body}");
                outcomes.extend(results.iter().map(batch_outcome));
            }
            Step::Batch(answers) => {
                for x in answers {
                    let (status, body) = single(h, gate_id(ids, x.gate), x.approved, x.key).await;
                    outcomes.push(single_outcome(status, &body));
                }
            }
            Step::Single(x) => {
                let (status, body) = single(h, gate_id(ids, x.gate), x.approved, x.key).await;
                outcomes.push(single_outcome(status, &body));
            }
        }
    }
    outcomes
}

/// Every gate's final row (session, status, resolution) and every idempotency key with
/// the session of the gate it is bound to and of the row its stored answer holds.
async fn final_state(h: &Harness, ids: &[String]) -> (Vec<Value>, BTreeMap<String, Value>) {
    let mut rows = Vec::new();
    for id in ids {
        let row = h.interaction(id).await;
        rows.push(json!({
            "session_id": row["session_id"],
            "status": row["status"],
            "resolution": row["data"]["resolution"],
        }));
    }
    let session_of = |id: &str| {
        ids.iter()
            .position(|x| x == id)
            .map(|i| format!("gate-{i}"))
            .unwrap_or_else(|| format!("unknown {id}"))
    };
    let db = Db::open(&h.server).await;
    let mut keys = BTreeMap::new();
    for key in ["a", "b", "c1", "c2", "d", "e", "f", "g", "h", "i", "j"] {
        let project = h.server.project_id.as_str();
        let sql =
            "SELECT interaction_id FROM idempotency_keys WHERE project_id = $1 AND idem_key = $2";
        let Some(bound) = db.text(sql, &[project, key]).await else {
            keys.insert(key.to_string(), Value::Null);
            continue;
        };
        let sql = "SELECT response FROM idempotency_keys WHERE project_id = $1 AND idem_key = $2";
        let response: Value = db
            .text(sql, &[project, key])
            .await
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or(Value::Null);
        let answered = response["interaction"]["id"].as_str().map(session_of);
        keys.insert(
            key.to_string(),
            json!({"gate": session_of(&bound), "stored_row_of": answered}),
        );
    }
    db.close().await;
    (rows, keys)
}

#[tokio::test]
async fn a_batch_answers_as_the_sequence_of_its_single_responds() {
    let batched = quiet_server().await;
    let one_by_one = quiet_server().await;
    let batched_ids = gates(&batched, GATES).await;
    let single_ids = gates(&one_by_one, GATES).await;
    let got = run(&batched, &batched_ids, true).await;
    let expected = run(&one_by_one, &single_ids, false).await;
    let answers: Vec<Answer> = program()
        .into_iter()
        .flat_map(|step| match step {
            Step::Single(answer) => vec![answer],
            Step::Batch(answers) => answers,
        })
        .collect();
    assert_eq!(got.len(), expected.len());
    for (n, ((got, expected), answer)) in got.iter().zip(&expected).zip(&answers).enumerate() {
        assert_eq!(got, expected, "answer {n} ({answer:?}): batch vs single");
    }
    let (batched_rows, batched_keys) = final_state(&batched, &batched_ids).await;
    let (single_rows, single_keys) = final_state(&one_by_one, &single_ids).await;
    assert_eq!(batched_rows, single_rows, "final rows");
    assert_eq!(batched_keys, single_keys, "final idempotency keys");
    // The program answers every gate: nothing stays pending.
    assert!(
        single_rows.iter().all(|row| row["status"] == "responded"),
        "{single_rows:?}"
    );
    batched.server.shutdown().await;
    one_by_one.server.shutdown().await;
}
