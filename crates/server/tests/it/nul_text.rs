//! No text of a request may hold a NUL character (U+0000): an identifier, free-form
//! data, a path segment or a query value with one is refused with the same typed 4xx on
//! SQLite and PostgreSQL (whose text columns cannot store it), naming where it was, and
//! nothing is written. `GATEHOUSE_TEST_DATABASE_URL=postgres://...` runs it on Postgres.

use std::time::Duration;

use crate::common::db::Db;
use crate::common::{config, user, Harness};
use serde_json::{json, Value};

/// Every table's row count, as text.
async fn row_counts(h: &Harness) -> Vec<(String, Option<String>)> {
    let db = Db::open(&h.server).await;
    let mut counts = Vec::new();
    for table in [
        "interactions",
        "idempotency_keys",
        "resume_jobs",
        "turns",
        "tool_runs",
        "workflows",
        "workflow_variants",
        "workflow_revisions",
        "execution_sessions",
    ] {
        let sql = format!("SELECT CAST(COUNT(*) AS TEXT) FROM {table}");
        counts.push((table.to_string(), db.text(&sql, &[]).await));
    }
    db.close().await;
    counts
}

/// Every case was refused as promised (`wrong` lists those that were not), and no
/// table has a row more than `before`.
async fn assert_refused_and_unwritten(
    h: &Harness,
    wrong: &[String],
    before: &[(String, Option<String>)],
) {
    assert!(
        wrong.is_empty(),
        "not refused as promised:\n{}",
        wrong.join("\n")
    );
    assert_eq!(row_counts(h).await, before, "nothing written");
}

/// An Agenta-route request with a NUL somewhere: `(what, path, body or GET, the loc the
/// 422 names)`.
fn agenta_cases(gate: &str) -> Vec<(&'static str, String, Option<Value>, Value)> {
    let commit = |workflow: &str, variant: &str| {
        json!({"workflow": {"slug": workflow}, "variant": {"slug": variant},
               "parameters": config("m", "ask")})
    };
    let go = json!({"inputs": {"messages": user("go")}, "parameters": config("m-nul", "ask")});
    vec![
        (
            "invoke session_id",
            "/api/invoke".into(),
            Some(json!({"session_id": "a\u{0}b", "data": go})),
            json!(["body", "session_id"]),
        ),
        (
            "invoke reference slug",
            "/api/invoke".into(),
            Some(
                json!({"session_id": "s", "references": {"workflow": {"slug": "w\u{0}"}},
                        "data": {"inputs": {"messages": user("go")}}}),
            ),
            json!(["body", "references", "workflow", "slug"]),
        ),
        (
            "invoke message text",
            "/api/invoke".into(),
            Some(
                json!({"session_id": "s", "data": {"inputs": {"messages": user("g\u{0}o")},
                        "parameters": config("m-nul", "ask")}}),
            ),
            json!(["body", "data", "inputs", "messages", 0, "content"]),
        ),
        (
            "invoke parameters (the model)",
            "/api/invoke".into(),
            Some(
                json!({"session_id": "s", "data": {"inputs": {"messages": user("go")},
                        "parameters": config("m\u{0}", "ask")}}),
            ),
            json!(["body", "data", "parameters", "agent", "llm", "model"]),
        ),
        (
            "invoke a key of free-form data",
            "/api/invoke".into(),
            Some(
                json!({"session_id": "s", "data": {"inputs": {"messages": user("go"), "x\u{0}": 1},
                        "parameters": config("m-nul", "ask")}}),
            ),
            json!(["body", "data", "inputs", "x\u{0}"]),
        ),
        (
            "create token",
            "/api/sessions/interactions/".into(),
            Some(json!({"session_id": "s", "token": "t\u{0}", "kind": "user_approval"})),
            json!(["body", "token"]),
        ),
        (
            "create session_id",
            "/api/sessions/interactions/".into(),
            Some(json!({"session_id": "\u{0}", "token": "t", "kind": "user_approval"})),
            json!(["body", "session_id"]),
        ),
        (
            "create tags",
            "/api/sessions/interactions/".into(),
            Some(
                json!({"session_id": "s", "token": "t", "kind": "user_approval",
                        "tags": {"note": "a\u{0}"}}),
            ),
            json!(["body", "tags", "note"]),
        ),
        (
            "query filter",
            "/api/sessions/interactions/query".into(),
            Some(json!({"query": {"session_id": "a\u{0}b"}})),
            json!(["body", "query", "session_id"]),
        ),
        (
            "transition",
            "/api/sessions/interactions/transition".into(),
            Some(json!({"session_id": "a\u{0}b", "token": "t", "status": "cancelled"})),
            json!(["body", "session_id"]),
        ),
        (
            "cancel-stale session_id",
            "/api/sessions/interactions/cancel-stale".into(),
            Some(json!({"session_id": "a\u{0}b", "turn_id": "t"})),
            json!(["body", "session_id"]),
        ),
        (
            "cancel-stale tokens",
            "/api/sessions/interactions/cancel-stale".into(),
            Some(json!({"session_id": "s", "turn_id": "t", "tokens": ["ok", "x\u{0}"]})),
            json!(["body", "tokens", 1]),
        ),
        (
            "respond answer",
            format!("/api/sessions/interactions/{gate}/respond"),
            Some(json!({"answer": {"approved": true, "note": "\u{0}"}})),
            json!(["body", "answer", "note"]),
        ),
        (
            "batch item idempotency_key",
            "/api/sessions/interactions/respond-batch".into(),
            Some(
                json!({"answers": [{"id": gate, "answer": {"approved": true},
                                     "idempotency_key": "k\u{0}"}]}),
            ),
            json!(["body", "answers", 0, "idempotency_key"]),
        ),
        (
            "commit workflow slug",
            "/api/workflows/revisions/commit".into(),
            Some(commit("w\u{0}", "v")),
            json!(["body", "workflow", "slug"]),
        ),
        (
            "commit variant slug",
            "/api/workflows/revisions/commit".into(),
            Some(commit("w", "\u{0}v")),
            json!(["body", "variant", "slug"]),
        ),
        (
            "a session's turns (path)",
            "/api/sessions/a%00b/turns".into(),
            None,
            json!(["path"]),
        ),
        (
            "the watch stream (query)",
            "/api/sessions/streams/watch?session_id=a%00b".into(),
            None,
            json!(["query", "session_id"]),
        ),
    ]
}

#[tokio::test]
async fn a_nul_anywhere_in_an_agenta_request_is_a_422_naming_it_and_writes_nothing() {
    let h = Harness::legacy().await;
    let gate = h.park("nul-gate", "m-nul").await;
    let before = row_counts(&h).await;
    let mut wrong = Vec::new();
    for (what, path, body, loc) in agenta_cases(&gate) {
        let request = async {
            match body {
                Some(body) => h.post(&path, body).await,
                None => h.get(&path).await,
            }
        };
        // A stream that is not refused would never end: bound the wait.
        let Ok((status, answer)) = tokio::time::timeout(Duration::from_secs(10), request).await
        else {
            wrong.push(format!("{what}: no answer within 10 s"));
            continue;
        };
        let refused = status == 422
            && answer["code"] == "VALIDATION_ERROR"
            && answer["detail"][0]["loc"] == loc
            && answer["detail"][0]["type"] == "string_contains_nul";
        if !refused {
            wrong.push(format!("{what}: {status} {answer}"));
        }
    }
    assert_refused_and_unwritten(&h, &wrong, &before).await;
    // The gate is untouched and still answers normally.
    assert_eq!(h.interaction(&gate).await["status"], "pending");
    let (status, body) = h.respond(&gate, true).await;
    assert_eq!(status, 200, "{body}");
    h.server.shutdown().await;
}

#[tokio::test]
async fn a_nul_in_an_agentplat_request_is_a_400_and_writes_nothing() {
    let h = Harness::legacy().await;
    let before = row_counts(&h).await;
    let project = h.server.project_id.clone();
    // `(what, path, body or GET, the code)`: a path is refused before routing
    // (`BAD_REQUEST`), a body field as the route's other field checks (`VALIDATION_ERROR`).
    let cases: Vec<(&str, String, Option<Value>, &str)> = vec![
        (
            "room id (root path)",
            "/rooms/r%00/execution-sessions/s".into(),
            None,
            "BAD_REQUEST",
        ),
        (
            "session id (under /api)",
            format!("/api/rooms/r/execution-sessions/s%00?project_id={project}"),
            None,
            "BAD_REQUEST",
        ),
        (
            "intervention operationId",
            "/rooms/r/execution-sessions/s/interventions".into(),
            Some(json!({"operationId": "op\u{0}", "instruction": "stop",
                        "checkpoint": "pre_step", "expectedRevision": 0})),
            "VALIDATION_ERROR",
        ),
        (
            "intervention instruction",
            "/rooms/r/execution-sessions/s/interventions".into(),
            Some(json!({"operationId": "op", "instruction": "st\u{0}op",
                        "checkpoint": "pre_step", "expectedRevision": 0})),
            "VALIDATION_ERROR",
        ),
    ];
    let mut wrong = Vec::new();
    for (what, path, body, code) in cases {
        let url = format!("{}{path}", h.server.base_url);
        let request = match body {
            Some(body) => h.http.post(url).json(&body),
            None => h.http.get(url),
        };
        let response = request
            .header("Authorization", h.server.authorization())
            .header("X-Agentplat-Tenant-Id", &project)
            .send()
            .await
            .unwrap();
        let (status, answer) = crate::common::decode(response).await;
        let refused = status == 400
            && answer["error"]["gatehouseCode"] == code
            && answer["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("U+0000"));
        if !refused {
            wrong.push(format!("{what}: {status} {answer}"));
        }
    }
    assert_refused_and_unwritten(&h, &wrong, &before).await;
    h.server.shutdown().await;
}
