//! An approved tool runs, and a turn never says it ran what did not (issue 23, item 2).
//! A turn gated at `Bash`, then at `Deploy`: an answer to the `Deploy` gate naming
//! `Bash`'s call id is refused (422, nothing written), alone or in a batch; an answer
//! stored with another call id (written before this rule) still runs the call its gate
//! names; `Deploy` runs under its own id and the ledger records it.
//! `GATEHOUSE_TEST_DATABASE_URL=postgres://...` runs it on PostgreSQL.

use std::time::Duration;

use crate::common::db::Db;
use crate::common::{user, Harness};
use serde_json::{json, Value};

const BATCH: &str = "/api/sessions/interactions/respond-batch";

/// Asks before `Bash` and `Deploy`.
fn bash_then_deploy() -> Value {
    json!({"agent": {
        "llm": {"model": "m-deploy"},
        "runner": {"permissions": {"default": "allow", "rules": [
            {"pattern": "Bash", "permission": "ask"}, {"pattern": "Deploy", "permission": "ask"}
        ]}},
        "script": [
            {"tool": "Bash", "args": {"command": "make release"}},
            {"tool": "Deploy", "args": {"target": "prod"}},
            {"say": "done"}
        ]
    }})
}

/// The gate row's call id.
fn call_id(row: &Value) -> String {
    row["data"]["request"]["tool_call_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Park `session` at `Bash`, approve it, wait for the resume to park at `Deploy`:
/// `(the Bash gate row, the Deploy gate row)`.
async fn at_the_deploy_gate(h: &Harness, session: &str) -> (Value, Value) {
    let parked = h
        .invoke(json!({"session_id": session, "data": {"inputs": {"messages": user("ship it")}, "parameters": bash_then_deploy()}}))
        .await;
    assert_eq!(parked["status"], "parked", "{parked}");
    let bash_gate = parked["interaction_ids"][0].as_str().unwrap().to_string();
    let (status, body) = h.respond(&bash_gate, true).await;
    assert_eq!(status, 200, "{body}");
    let bash = h.wait_resolved(&bash_gate).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let deploy = loop {
        let (_, body) = h
            .post(
                "/api/sessions/interactions/query",
                json!({"query": {"session_id": session, "status": "pending"}}),
            )
            .await;
        if let Some(row) = body["interactions"]
            .as_array()
            .and_then(|rows| rows.first())
        {
            break row.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the resume never parked at Deploy"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(deploy["data"]["request"]["tool"], "Deploy", "{deploy}");
    (bash, deploy)
}

/// `(tool, tool_call_id)` of every ledger row of `session`.
async fn ledger(h: &Harness, session: &str) -> Vec<(String, String)> {
    let turns = h.turns(session).await;
    turns["tool_runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| {
            (
                run["tool"].as_str().unwrap().to_string(),
                run["tool_call_id"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Deploy ran once under its own call id, Bash once under its own; no output claims a
/// run that did not happen.
async fn assert_deploy_ran(h: &Harness, session: &str, bash: &Value, deploy: &Value) {
    let deploy_id = deploy["id"].as_str().unwrap();
    let resolved = h.wait_resolved(deploy_id).await;
    // The ledger as it settles (bounded): once, on PostgreSQL under a loaded CI run, it
    // was read with Bash's row only just after the gate read resolved; a run that never
    // happens still fails here, after the deadline.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut rows = loop {
        let mut rows = ledger(h, session).await;
        rows.sort();
        if rows.len() >= 2 || std::time::Instant::now() >= deadline {
            break rows;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    rows.sort();
    assert_eq!(
        rows,
        vec![
            ("Bash".to_string(), call_id(bash)),
            ("Deploy".to_string(), call_id(deploy))
        ],
        "the ledger of {session}"
    );
    let turns = h.turns(session).await;
    let outputs: Vec<&str> = turns["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["output"].as_str().unwrap_or(""))
        .collect();
    let all = outputs.join("\n");
    assert!(all.contains(r#"ran Deploy {"target":"prod"}: ok"#), "{all}");
    assert!(!all.contains("not run again"), "{all}");
    assert_eq!(
        resolved["data"]["resolution"]["tool_call_id"],
        call_id(deploy).as_str(),
        "{resolved}"
    );
}

#[tokio::test]
async fn an_answer_naming_another_call_is_refused_and_the_gated_call_runs() {
    let h = Harness::legacy().await;
    let (bash, deploy) = at_the_deploy_gate(&h, "deploy-apart").await;
    let deploy_id = deploy["id"].as_str().unwrap();
    let wrong = json!({"approved": true, "tool_call_id": call_id(&bash)});

    let (status, body) = h
        .post(
            &format!("/api/sessions/interactions/{deploy_id}/respond"),
            json!({ "answer": wrong }),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["code"], "VALIDATION_ERROR", "{body}");
    assert_eq!(
        body["detail"][0]["loc"],
        json!(["body", "answer", "tool_call_id"]),
        "{body}"
    );
    let (status, body) = h
        .post(
            BATCH,
            json!({"answers": [{"id": deploy_id, "answer": wrong}]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"][0]["outcome"], "invalid", "{body}");
    assert_eq!(
        body["results"][0]["error"]["code"], "VALIDATION_ERROR",
        "{body}"
    );
    // Nothing written: still pending, nothing queued, nothing run.
    assert_eq!(h.interaction(deploy_id).await["status"], "pending");
    let db = Db::open(&h.server).await;
    let job = db
        .text(
            "SELECT state FROM resume_jobs WHERE interaction_id = $1",
            &[deploy_id],
        )
        .await;
    assert_eq!(job, None);
    db.close().await;
    assert_eq!(ledger(&h, "deploy-apart").await.len(), 1);

    // Naming the gate's own call is an answer like any other.
    let (status, body) = h
        .post(
            &format!("/api/sessions/interactions/{deploy_id}/respond"),
            json!({"answer": {"approved": true, "tool_call_id": call_id(&deploy)}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_deploy_ran(&h, "deploy-apart", &bash, &deploy).await;
    h.server.shutdown().await;
}

/// An answer stored with another call id (as one taken before the rule, or written by
/// anything else than the respond routes) is resumed for the call its gate names.
#[tokio::test]
async fn a_stored_answer_naming_another_call_runs_the_gated_call() {
    let h = Harness::legacy().await;
    let (bash, deploy) = at_the_deploy_gate(&h, "deploy-stored").await;
    let deploy_id = deploy["id"].as_str().unwrap();
    let resolution = json!({"answer": {"approved": true, "tool_call_id": call_id(&bash)}});
    let db = Db::open(&h.server).await;
    let flipped = db
        .execute(
            "UPDATE interactions SET status = 'responded', resolution = $1 WHERE id = $2",
            &[&resolution.to_string(), deploy_id],
        )
        .await;
    assert_eq!(flipped, 1);
    let project = h.server.project_id.clone();
    db.execute(
        "INSERT INTO resume_jobs (interaction_id, project_id, state, created_at) \
         VALUES ($1, $2, 'queued', '2026-12-02T00:00:00.000000Z')",
        &[deploy_id, &project],
    )
    .await;
    db.close().await;
    assert_deploy_ran(&h, "deploy-stored", &bash, &deploy).await;
    h.server.shutdown().await;
}
