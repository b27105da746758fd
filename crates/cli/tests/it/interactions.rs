//! `gatehouse interactions ...` against a real server (`gatehouse_server::testing::spawn`):
//! output, `--json`, and exit codes (3 already answered, 4 not found, 1 server down, 2 usage).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::common::{client, gatehouse, gatehouse_without_env, invoke_parked, run, text, BIN};
use gatehouse_server::testing::{spawn, TestServer, TestServerOptions};
use gatehouse_wire::run::ChatMessage;
use serde_json::{json, Value};

const MODEL: &str = "anthropic/claude-sonnet-4-5";

/// The agent config of the turns parked here: `MODEL`, every tool asks first.
fn agent() -> Value {
    json!({"llm": {"model": MODEL}, "runner": {"permissions": {"default": "ask"}}})
}

/// Invoke a turn that parks at one approval gate; returns (session id, gate id).
async fn park(server: &TestServer) -> (String, String) {
    let session = uuid::Uuid::new_v4().to_string();
    let answer = invoke_parked(
        server,
        &session,
        agent(),
        vec![ChatMessage::text("user", "say hi")],
    )
    .await;
    (session, answer.interaction_ids[0].clone())
}

#[tokio::test(flavor = "multi_thread")]
async fn list_get_respond_and_exit_codes() {
    let server = spawn(TestServerOptions::default()).await;
    let (session, gate) = park(&server).await;

    let list = run(&server, &["interactions", "list"]);
    assert_eq!(list.status.code(), Some(0), "{}", text(&list.stderr));
    let table = text(&list.stdout);
    let header = table.lines().next().unwrap();
    assert!(
        header.starts_with("ID") && header.contains("STATUS") && header.contains("STAMPED MODEL")
    );
    let line = table.lines().find(|l| l.starts_with(&gate)).unwrap();
    assert!(
        line.contains("pending") && line.contains(MODEL) && line.contains(&session),
        "{line}"
    );

    let json_list = run(
        &server,
        &["interactions", "list", "--json", "--session", &session],
    );
    let rows: Vec<Value> = serde_json::from_slice(&json_list.stdout).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["id"], json!(gate));
    assert_eq!(
        rows[0]["data"]["parameters"]["agent"]["llm"]["model"],
        json!(MODEL)
    );

    let other_session = run(
        &server,
        &[
            "interactions",
            "list",
            "--session",
            &uuid::Uuid::new_v4().to_string(),
        ],
    );
    assert_eq!(text(&other_session.stdout).trim(), "no interactions");

    let get = run(&server, &["interactions", "get", &gate]);
    assert_eq!(get.status.code(), Some(0));
    let shown = text(&get.stdout);
    assert!(
        shown.contains("status") && shown.contains("pending"),
        "{shown}"
    );
    assert!(shown.contains("stamped config"), "{shown}");
    assert!(shown.contains(MODEL), "{shown}");

    let get_json = run(&server, &["interactions", "get", &gate, "--json"]);
    let row: Value = serde_json::from_slice(&get_json.stdout).unwrap();
    assert_eq!(row["status"], "pending");

    let missing = run(
        &server,
        &["interactions", "get", &uuid::Uuid::new_v4().to_string()],
    );
    assert_eq!(missing.status.code(), Some(4), "{}", text(&missing.stderr));
    assert!(text(&missing.stderr).contains("not found"));

    let no_verdict = run(&server, &["interactions", "respond", &gate]);
    assert_eq!(no_verdict.status.code(), Some(2));
    let both = run(
        &server,
        &["interactions", "respond", &gate, "--approve", "--deny"],
    );
    assert_eq!(both.status.code(), Some(2));

    let approve = run(
        &server,
        &[
            "interactions",
            "respond",
            &gate,
            "--approve",
            "--message",
            "go ahead",
        ],
    );
    assert_eq!(approve.status.code(), Some(0), "{}", text(&approve.stderr));
    assert!(text(&approve.stdout).starts_with(&format!("approved {gate}")));

    let pending_now = run(&server, &["interactions", "list", "--json"]);
    let rows: Vec<Value> = serde_json::from_slice(&pending_now.stdout).unwrap();
    assert!(rows.iter().all(|r| r["id"] != json!(gate)));
    let any = run(
        &server,
        &["interactions", "list", "--json", "--status", "any"],
    );
    let rows: Vec<Value> = serde_json::from_slice(&any.stdout).unwrap();
    let row = rows.iter().find(|r| r["id"] == json!(gate)).unwrap();
    assert_ne!(row["status"], "pending");

    let again = run(&server, &["interactions", "respond", &gate, "--deny"]);
    assert_eq!(again.status.code(), Some(3));
    assert!(
        text(&again.stderr).contains("already answered"),
        "{}",
        text(&again.stderr)
    );

    let respond_missing = run(
        &server,
        &[
            "interactions",
            "respond",
            &uuid::Uuid::new_v4().to_string(),
            "--approve",
        ],
    );
    assert_eq!(respond_missing.status.code(), Some(4));

    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn approve_all_reports_each_target() {
    let server = spawn(TestServerOptions::default()).await;
    let (_, first) = park(&server).await;
    let (_, second) = park(&server).await;
    let (_, settled) = park(&server).await;
    client(&server)
        .interactions()
        .respond(&settled, &gatehouse_client::Answer::approve())
        .await
        .unwrap();

    let out = run(
        &server,
        &[
            "interactions",
            "approve-all",
            "--json",
            &first,
            &second,
            &settled,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut answered: Vec<String> = report["answered"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    answered.sort();
    let mut expected = vec![first.clone(), second.clone()];
    expected.sort();
    assert_eq!(answered, expected);
    assert_eq!(report["already_answered"], json!([settled]));
    assert_eq!(report["failed"], json!([]));
    assert_eq!(report["all_already_answered"], json!(false));

    // Nothing pending is left: the human form says so.
    let none = run(
        &server,
        &["interactions", "approve-all", "--all-sessions", "--yes"],
    );
    assert_eq!(none.status.code(), Some(0));
    assert!(text(&none.stdout).contains("nothing to approve"));

    // Everything already answered: still exit 0, and the idle signal.
    let again = run(&server, &["interactions", "approve-all", &first, &second]);
    assert_eq!(again.status.code(), Some(0));
    assert!(text(&again.stdout).contains("every gate was already answered"));

    // An unknown id fails that target: exit 4, the others still reported.
    let (_, fresh) = park(&server).await;
    let unknown = uuid::Uuid::new_v4().to_string();
    let mixed = run(&server, &["interactions", "approve-all", &fresh, &unknown]);
    assert_eq!(mixed.status.code(), Some(4), "{}", text(&mixed.stderr));
    let table = text(&mixed.stdout);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with(&fresh) && l.contains("approved")),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with(&unknown) && l.contains("failed")),
        "{table}"
    );

    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_prints_gates_as_they_open_and_resolve() {
    let server = spawn(TestServerOptions::default()).await;
    let session = uuid::Uuid::new_v4().to_string();
    let mut child = gatehouse(&server)
        .args([
            "interactions",
            "watch",
            &session,
            "--json",
            "--max-events",
            "12",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<Value>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let Ok(value) = serde_json::from_str::<Value>(&line) else {
                break;
            };
            if tx.send(value).is_err() {
                break;
            }
        }
    });
    let next = |want: &str| -> Value {
        loop {
            let event = rx
                .recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|_| panic!("no {want} event"));
            if event["type"] == want || event["status"] == want {
                return event;
            }
        }
    };
    next("ready");

    // Park a turn on the watched session, then answer it.
    let parked = invoke_parked(&server, &session, agent(), Vec::new()).await;
    let gate = parked.interaction_ids[0].clone();
    let pending = next("pending");
    assert_eq!(pending["type"], "interaction");
    assert_eq!(pending["session_id"], json!(session));
    client(&server)
        .interactions()
        .respond(&gate, &gatehouse_client::Answer::approve())
        .await
        .unwrap();
    let resolved = next("resolved");
    assert_eq!(resolved["type"], "interaction");

    let _ = child.kill();
    let _ = child.wait();
    let _ = reader.join();
    server.shutdown().await;
}

#[test]
fn server_down_is_exit_1_with_a_clear_message() {
    // Bind then drop a listener: the port is (very likely) closed now.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let out = Command::new(BIN)
        .args(["interactions", "list", "--url", &url, "--timeout", "2"])
        .env("GATEHOUSE_API_KEY", "k")
        .env("GATEHOUSE_PROJECT", uuid::Uuid::new_v4().to_string())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("cannot reach the server"), "{stderr}");
    assert!(out.stdout.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_key_is_exit_1_and_never_echoed() {
    let server = spawn(TestServerOptions::default()).await;
    let out = gatehouse(&server)
        .env("GATEHOUSE_API_KEY", "not-the-key-123")
        .args(["interactions", "list"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("unauthorized"), "{stderr}");
    assert!(!stderr.contains("not-the-key-123"));
    server.shutdown().await;
}

/// A query without a project answers 422; the CLI names where it takes the project from.
#[tokio::test(flavor = "multi_thread")]
async fn a_missing_project_is_exit_8_naming_gatehouse_project() {
    let server = spawn(TestServerOptions::default()).await;
    let out = gatehouse_without_env()
        .args(["interactions", "list", "--url", &server.base_url])
        .args(["--api-key", &server.api_key])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(8), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("project_id"), "{stderr}");
    assert!(stderr.contains("GATEHOUSE_PROJECT"), "{stderr}");
}

/// Without ids, `approve-all` answers only a scope the caller named: a bare
/// `approve-all` (or `--all-sessions` without `--yes`) is a usage error that answers
/// nothing, `--session` answers that session's gates only, and `--all-sessions --yes`
/// every session's.
#[tokio::test(flavor = "multi_thread")]
async fn approve_all_without_ids_needs_a_session_or_all_sessions_yes() {
    let server = spawn(TestServerOptions::default()).await;
    let (mine, my_gate) = park(&server).await;
    let (_, other_gate) = park(&server).await;
    let status = |out: &std::process::Output| out.status.code();

    for args in [
        &["interactions", "approve-all"][..],
        &["interactions", "approve-all", "--all-sessions"][..],
    ] {
        let out = run(&server, args);
        assert_eq!(status(&out), Some(2), "{args:?}: {}", text(&out.stderr));
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("--session") || stderr.contains("--yes"),
            "{stderr}"
        );
        assert!(out.stdout.is_empty());
    }
    // `--yes` alone says nothing about the scope.
    let yes_alone = run(&server, &["interactions", "approve-all", "--yes"]);
    assert_eq!(status(&yes_alone), Some(2), "{}", text(&yes_alone.stderr));
    let pending = || async {
        let mut ids: Vec<String> = client(&server)
            .interactions()
            .list_pending(None)
            .await
            .unwrap()
            .into_iter()
            .filter_map(|row| row.id)
            .collect();
        ids.sort();
        ids
    };
    let mut both = vec![my_gate.clone(), other_gate.clone()];
    both.sort();
    assert_eq!(pending().await, both, "nothing was answered");

    let one = run(
        &server,
        &["interactions", "approve-all", "--session", &mine, "--json"],
    );
    assert_eq!(status(&one), Some(0), "{}", text(&one.stderr));
    let report: Value = serde_json::from_slice(&one.stdout).unwrap();
    assert_eq!(report["answered"], json!([my_gate]));
    assert_eq!(pending().await, vec![other_gate.clone()]);

    let all = run(
        &server,
        &[
            "interactions",
            "approve-all",
            "--all-sessions",
            "--yes",
            "--json",
        ],
    );
    assert_eq!(status(&all), Some(0), "{}", text(&all.stderr));
    let report: Value = serde_json::from_slice(&all.stdout).unwrap();
    assert_eq!(report["answered"], json!([other_gate]));
    assert!(pending().await.is_empty());
    server.shutdown().await;
}
