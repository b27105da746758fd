//! `gatehouse invoke` and `gatehouse serve --demo-gates`: a gate to answer without
//! writing the invoke body by hand. On SQLite, and again on PostgreSQL when
//! `GATEHOUSE_TEST_DATABASE_URL=postgres://...` is set (`cargo xtask test` sets it).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

use crate::common::{gatehouse, run, text, BIN};
use gatehouse_server::testing::{spawn, TestServer, TestServerOptions};
use serde_json::{json, Value};

/// The databases these tests run on: a SQLite file, and a fresh PostgreSQL database
/// when one is configured.
async fn databases() -> Vec<Option<String>> {
    let mut urls = vec![None];
    if let Some(base) = std::env::var("GATEHOUSE_TEST_DATABASE_URL")
        .ok()
        .filter(|url| url.starts_with("postgres"))
    {
        let url = gatehouse_server::testing::fresh_postgres_database(&base)
            .await
            .expect("a fresh Postgres database");
        urls.push(Some(url));
    }
    urls
}

async fn server_on(database_url: Option<String>) -> TestServer {
    spawn(TestServerOptions {
        database_url,
        ..TestServerOptions::default()
    })
    .await
}

fn json_of(output: &std::process::Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "not JSON ({err}): {}\nstderr: {}",
            text(&output.stdout),
            text(&output.stderr)
        )
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn invoke_opens_a_gate_that_list_shows_and_respond_answers() {
    for database_url in databases().await {
        let server = server_on(database_url).await;
        let session = uuid::Uuid::new_v4().to_string();
        let opened = run(
            &server,
            &[
                "invoke",
                "--session",
                &session,
                "--prompt",
                "list the files",
                "--gate-tool",
                "Bash",
                "--args",
                r#"{"command":"ls"}"#,
                "--permission",
                "ask",
                "--json",
            ],
        );
        assert_eq!(opened.status.code(), Some(0), "{}", text(&opened.stderr));
        let opened = json_of(&opened);
        assert_eq!(opened["status"], "parked", "{opened}");
        assert_eq!(opened["session_id"], json!(session));
        assert_eq!(opened["gates"][0]["tool"], "Bash", "{opened}");
        let gate = opened["gates"][0]["id"].as_str().unwrap().to_string();
        assert_eq!(opened["interaction_ids"], json!([gate]));

        // `interactions list` shows it pending, with the tool and arguments asked for.
        let listed = json_of(&run(
            &server,
            &["interactions", "list", "--session", &session, "--json"],
        ));
        let rows = listed.as_array().unwrap();
        assert_eq!(rows.len(), 1, "{listed}");
        assert_eq!(rows[0]["id"], json!(gate));
        assert_eq!(rows[0]["status"], "pending");
        assert_eq!(rows[0]["data"]["request"]["tool"], "Bash");
        assert_eq!(rows[0]["data"]["request"]["args"], json!({"command": "ls"}));

        // `respond` answers it, once.
        let answered = run(&server, &["interactions", "respond", &gate, "--approve"]);
        assert_eq!(
            answered.status.code(),
            Some(0),
            "{}",
            text(&answered.stderr)
        );
        let pending = json_of(&run(
            &server,
            &["interactions", "list", "--session", &session, "--json"],
        ));
        assert_eq!(pending, json!([]), "the gate is no longer pending");
        let again = run(&server, &["interactions", "respond", &gate, "--deny"]);
        assert_ne!(again.status.code(), Some(0), "a second answer is refused");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn invoke_prints_the_gate_and_takes_other_permissions_and_a_full_body() {
    let server = server_on(None).await;

    // The table: the turn, then each gate with its tool.
    let opened = run(&server, &["invoke"]);
    assert_eq!(opened.status.code(), Some(0), "{}", text(&opened.stderr));
    let out = text(&opened.stdout);
    assert!(out.contains("parked"), "{out}");
    let line = out
        .lines()
        .skip_while(|l| !l.starts_with("GATE"))
        .nth(1)
        .unwrap_or_else(|| panic!("no gate line: {out}"));
    assert!(line.ends_with("Bash"), "{line}");

    // `allow` runs the tool: no gate.
    let allowed = json_of(&run(
        &server,
        &[
            "invoke",
            "--permission",
            "allow",
            "--gate-tool",
            "Read",
            "--json",
        ],
    ));
    assert_eq!(allowed["status"], "completed", "{allowed}");
    assert_eq!(allowed["gates"], json!([]));
    assert!(
        allowed["output"].as_str().unwrap().contains("ran Read"),
        "{allowed}"
    );

    // `--body -`: any invoke body, from stdin.
    let body = json!({"data": {
        "inputs": {"messages": [{"role": "user", "content": "two calls"}]},
        "parameters": {"agent": {
            "llm": {"model": "body-model"},
            "runner": {"permissions": {"default": "ask"}},
            "script": [{"parallel": [{"tool": "Edit"}, {"tool": "Write"}]}]
        }}
    }});
    let mut child = gatehouse(&server)
        .args(["invoke", "--body", "-", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let parallel = json_of(&output);
    assert_eq!(parallel["model"], "body-model");
    let tools: Vec<&str> = parallel["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["tool"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["Edit", "Write"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn invoke_refuses_bad_input_with_usage_and_reports_errors_by_kind() {
    let server = server_on(None).await;
    for args in [
        &["invoke", "--args", "{not json"][..],
        &["invoke", "--permission", "maybe"],
        &["invoke", "--gate-tool", " "],
        &["invoke", "--body", "-", "--prompt", "both"],
    ] {
        let output = run(&server, args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&output.stderr)
        );
        assert!(text(&output.stderr).starts_with("error"), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?}");
    }
    // A wrong key: the server's refusal, typed (1: unauthorized), one line, nothing on stdout.
    let output = gatehouse(&server)
        .env("GATEHOUSE_API_KEY", "not-the-key")
        .arg("invoke")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    assert!(output.stdout.is_empty());
    // No server there: exit 1, "cannot reach the server".
    let output = Command::new(BIN)
        .args(["invoke", "--url", "http://127.0.0.1:9", "--timeout", "2"])
        .env_remove("GATEHOUSE_URL")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("cannot reach the server"),
        "{}",
        text(&output.stderr)
    );
}

/// The quick start's project, where `--demo-gates` opens its gates by default.
const DEMO_PROJECT: &str = "019fac94-0000-7000-8000-000000000000";

struct Served {
    child: Child,
    base_url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `gatehouse serve --demo-gates` once it printed its listening line (the gates are open
/// by then), on a fresh SQLite file or `database_url`.
fn serve_demo(database_url: Option<&str>, extra: &[&str]) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = format!("sqlite://{}", dir.path().join("serve.db").display());
    let mut child = Command::new(BIN)
        .args(["serve", "--bind", "127.0.0.1:0", "--database-url"])
        .arg(database_url.unwrap_or(&sqlite))
        .args(extra)
        .env_remove("GATEHOUSE_API_KEYS")
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base_url = line
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .trim_end()
        .to_string();
    Served {
        child,
        base_url,
        _dir: dir,
    }
}

fn demo_client(served: &Served, key: &str, project: &str) -> gatehouse_client::Client {
    gatehouse_client::Client::builder(&served.base_url)
        .api_key(key)
        .project_id(project)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_demo_gates_opens_that_many_pending_gates() {
    for database_url in databases().await {
        let served = serve_demo(database_url.as_deref(), &["--demo-gates", "3"]);
        let client = demo_client(&served, "gatehouse-dev", DEMO_PROJECT);
        let pending = client.interactions().list_pending(None).await.unwrap();
        assert_eq!(pending.len(), 3, "{pending:?}");
        let mut sessions: Vec<_> = pending.iter().map(|g| g.session_id.clone()).collect();
        sessions.sort();
        sessions.dedup();
        assert_eq!(sessions.len(), 3, "one session per gate");
        for gate in &pending {
            let request = gate.data.as_ref().unwrap().request.as_ref().unwrap();
            assert_eq!(request.tool.as_deref(), Some("Bash"));
        }
        // They are ordinary gates: the CLI answers one.
        let id = pending[0].id.clone().unwrap();
        let answered = Command::new(BIN)
            .args(["interactions", "respond", &id, "--approve"])
            .env("GATEHOUSE_URL", &served.base_url)
            .env("GATEHOUSE_API_KEY", "gatehouse-dev")
            .env("GATEHOUSE_PROJECT", DEMO_PROJECT)
            .output()
            .unwrap();
        assert_eq!(
            answered.status.code(),
            Some(0),
            "{}",
            text(&answered.stderr)
        );
        assert_eq!(
            client
                .interactions()
                .list_pending(None)
                .await
                .unwrap()
                .len(),
            2
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_demo_gates_follows_the_demo_project_and_the_keys() {
    // Another project, with a key bound to it.
    let project = uuid::Uuid::new_v4().to_string();
    let key = format!("ops=demo-secret@{project}");
    let served = serve_demo(
        None,
        &[
            "--demo-gates",
            "2",
            "--demo-project",
            &project,
            "--api-key",
            &key,
        ],
    );
    let client = demo_client(&served, "demo-secret", &project);
    assert_eq!(
        client
            .interactions()
            .list_pending(None)
            .await
            .unwrap()
            .len(),
        2
    );
    drop(served);

    // No key may act in the demo project: a usage error before anything is served.
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(BIN)
        .args(["serve", "--bind", "127.0.0.1:0", "--database-url"])
        .arg(format!("sqlite://{}", dir.path().join("s.db").display()))
        .args(["--demo-gates", "1", "--api-key", &key])
        .env_remove("GATEHOUSE_API_KEYS")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("--demo-project"),
        "{}",
        text(&output.stderr)
    );
    assert!(!text(&output.stdout).contains("listening on"));
    // --demo-gates 0 (the default) opens none.
    let served = serve_demo(None, &[]);
    let client = demo_client(&served, "gatehouse-dev", DEMO_PROJECT);
    assert!(client
        .interactions()
        .list_pending(None)
        .await
        .unwrap()
        .is_empty());
}
