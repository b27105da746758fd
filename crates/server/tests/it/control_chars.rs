//! An identifier never needs a control character, and one shown to an operator could
//! rewrite what is shown (an ESC sequence made a `Bash rm -rf ~` gate read as a `Read`
//! line): a gate's session id, turn id, token, tool name and tool call id, and an
//! invoke's session id, with one are refused with a typed 422 naming where it was, and
//! nothing is written, on SQLite and PostgreSQL (`GATEHOUSE_TEST_DATABASE_URL=postgres://...`).
//! A tool call's arguments are free text and keep them (the CLI shows them escaped).

use crate::common::db::Db;
use crate::common::{config, user, Harness};
use serde_json::{json, Value};

/// The gates stored, as text.
async fn interaction_count(h: &Harness) -> Option<String> {
    let db = Db::open(&h.server).await;
    let count = db
        .text("SELECT CAST(COUNT(*) AS TEXT) FROM interactions", &[])
        .await;
    db.close().await;
    count
}

/// A create body with `session_id`, `token`, `tool` and `args` as given.
fn create(session_id: &str, token: &str, turn_id: &str, tool: &str, call: &str) -> Value {
    json!({
        "session_id": session_id, "token": token, "turn_id": turn_id, "kind": "user_approval",
        "data": {"request": {"tool": tool, "tool_call_id": call, "args": {"command": "ls"}}},
    })
}

#[tokio::test]
async fn a_control_character_in_an_identifier_is_a_422_naming_it_and_writes_nothing() {
    let h = Harness::start().await;
    let go = json!({"inputs": {"messages": user("go")}, "parameters": config("m", "ask")});
    let cases: Vec<(&str, &str, Value, Value)> = vec![
        (
            "create tool name (ESC)",
            "/api/sessions/interactions/",
            create("s", "t1", "u", "Bash\u{1b}[2K\rRead", "c"),
            json!(["body", "data", "request", "tool"]),
        ),
        (
            "create session_id (CR)",
            "/api/sessions/interactions/",
            create("s\r", "t2", "u", "Bash", "c"),
            json!(["body", "session_id"]),
        ),
        (
            "create token (BEL)",
            "/api/sessions/interactions/",
            create("s", "t\u{7}", "u", "Bash", "c"),
            json!(["body", "token"]),
        ),
        (
            "create turn_id (C1 CSI)",
            "/api/sessions/interactions/",
            create("s", "t3", "u\u{9b}2K", "Bash", "c"),
            json!(["body", "turn_id"]),
        ),
        (
            "create tool_call_id (LF)",
            "/api/sessions/interactions/",
            create("s", "t4", "u", "Bash", "c\nerror: forged"),
            json!(["body", "data", "request", "tool_call_id"]),
        ),
        (
            "transition token (ESC)",
            "/api/sessions/interactions/transition",
            json!({"session_id": "s", "token": "t\u{1b}", "status": "cancelled"}),
            json!(["body", "token"]),
        ),
        (
            "invoke session_id (ESC)",
            "/api/invoke",
            json!({"session_id": "s\u{1b}]0;x\u{7}", "data": go}),
            json!(["body", "session_id"]),
        ),
    ];
    let before = interaction_count(&h).await;
    let mut wrong = Vec::new();
    for (what, path, body, loc) in cases {
        let (status, answer) = h.post(path, body).await;
        let refused = status == 422
            && answer["code"] == "VALIDATION_ERROR"
            && answer["detail"][0]["loc"] == loc
            && answer["detail"][0]["msg"]
                .as_str()
                .is_some_and(|m| m.contains("control characters"));
        if !refused {
            wrong.push(format!("{what}: {status} {answer}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "not refused as promised:\n{}",
        wrong.join("\n")
    );
    assert_eq!(interaction_count(&h).await, before, "nothing written");

    // Arguments are free text: kept as sent (the CLI escapes them when it shows them).
    let mut body = create("s", "t5", "u", "Bash", "c");
    body["data"]["request"]["args"] = json!({"command": "rm -rf ~\u{1b}[2K\r"});
    let (status, row) = h.post("/api/sessions/interactions/", body).await;
    assert_eq!(status, 200, "{row}");
    let id = row["interaction"]["id"]
        .as_str()
        .or_else(|| row["id"].as_str())
        .unwrap()
        .to_string();
    assert_eq!(
        h.interaction(&id).await["data"]["request"]["args"]["command"],
        "rm -rf ~\u{1b}[2K\r"
    );
    h.server.shutdown().await;
}
