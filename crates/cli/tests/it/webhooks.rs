//! Webhooks end to end (issue 26, item 6): `gatehouse serve --webhook ...` as a child
//! process, and a receiver (`webhook_receiver.py`) that verifies every request with the
//! `standardwebhooks` package from PyPI, the Standard Webhooks reference verifier.
//!
//! - every event (a gate opened, answered, resolved; an intervention resolved) arrives
//!   signed and verified, once, after the receiver was down for a while (nothing lost),
//!   without a secret in any body or the webhook secret or URL token in any log line;
//!   the gate's `flags.delivered_webhook` is set;
//! - an endpoint whose secret the receiver does not hold: every attempt refused by the
//!   verifier, retried to `--webhook-max-attempts`, then `failed` (the other endpoint's
//!   copy delivered);
//! - `kill -9` of the server while deliveries hang mid-POST and another event waits
//!   committed but unsent: all are delivered after the restart; a graceful stop (SIGTERM)
//!   interrupts a hung delivery, due again at once for the next start;
//! - two instances on one PostgreSQL (`GATEHOUSE_TEST_DATABASE_URL`, set by `cargo xtask
//!   test`'s PostgreSQL pass): every event delivered, none twice, none by both at once.
//!
//! The verifier's Python: `$GATEHOUSE_PYTHON`, else `cargo xtask test`'s virtual
//! environment (`<target>/python-venv`), else one made here (`<target>/tmp/webhooks-venv`,
//! `pip install standardwebhooks`). Without python3 or PyPI the tests say so in one line
//! and pass, except under `CI=true`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::BIN;

const KEY: &str = "webhook-test-key";
const PROJECT: &str = "019fac94-0000-7000-8000-0000000000b0";
/// The endpoint's secret (24 random bytes, as Standard Webhooks suggests).
const SECRET: &str = "whsec_C2FtcGxlLXNlY3JldC1mb3ItdGVzdHMtMDE=";
/// A token in the endpoint's URL: never to be logged.
const URL_TOKEN: &str = "url-token-5f1e";
/// Credential values sent in a gated config and an answer: never to be in a payload.
const CONFIG_SECRET: &str = "sk-config-secret-93e1";
const ANSWER_SECRET: &str = "answer-text-secret-77c2";

/// The verifier's Python, or `None` (with the reason printed) when it cannot be had
/// outside CI. Found or built once per test process: the tests run on threads, and
/// several building one venv at once saw each other's half-made `bin/python` (no pip yet).
fn verifier_python() -> Option<PathBuf> {
    static FOUND: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    let found = FOUND.get_or_init(find_or_build_verifier_python).clone();
    if found.is_none() {
        let why = "webhooks.rs: skipped, the standardwebhooks verifier is not available \
                   (python3 with venv and PyPI, or GATEHOUSE_PYTHON with standardwebhooks)";
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
        eprintln!("{why}");
    }
    found
}

fn find_or_build_verifier_python() -> Option<PathBuf> {
    let has_verifier = |python: &Path| {
        Command::new(python)
            .args(["-c", "import standardwebhooks"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(python) = std::env::var_os("GATEHOUSE_PYTHON") {
        candidates.push(PathBuf::from(python));
    }
    if let Some(target) = tmp.parent() {
        candidates.push(target.join("python-venv/bin/python"));
    }
    let own = tmp.join("webhooks-venv");
    candidates.push(own.join("bin/python"));
    if let Some(found) = candidates.iter().find(|p| p.is_file() && has_verifier(p)) {
        return Some(found.clone());
    }
    // Built beside its final place and renamed in, so another process (or a run that
    // was killed halfway) never leaves a venv without its package under the final name.
    let building = tmp.join(format!("webhooks-venv.building-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&building);
    let python = building.join("bin/python");
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&building)
        .status()
        .is_ok_and(|s| s.success())
        && Command::new(&python)
            .args(["-m", "pip", "install", "-q", "standardwebhooks"])
            .status()
            .is_ok_and(|s| s.success())
        && has_verifier(&python);
    if !made {
        let _ = std::fs::remove_dir_all(&building);
        return None;
    }
    let _ = std::fs::remove_dir_all(&own);
    if std::fs::rename(&building, &own).is_err() {
        // Another process renamed its venv in first: use that one, or ours where it is.
        let _ = std::fs::remove_dir_all(&building);
    }
    let python = own.join("bin/python");
    has_verifier(&python).then_some(python)
}

/// A free local port (bound, then released for the receiver to take later).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The Python receiver, a child process; killed when dropped.
struct Receiver {
    child: Child,
}

impl Receiver {
    fn start(python: &Path, port: u16, log: &Path, mode: &str, delay_ms: u64) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/webhook_receiver.py");
        let mut child = Command::new(python)
            .arg(script)
            .args([
                "--port",
                &port.to_string(),
                "--secret",
                SECRET,
                "--mode",
                mode,
            ])
            .args(["--delay-ms", &delay_ms.to_string()])
            .arg("--log")
            .arg(log)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the receiver starts");
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        assert!(line.starts_with("listening"), "receiver said {line:?}");
        Self { child }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the receiver recorded, one value per request.
fn received(log: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// An endpoint spec: `name`, signed with `secret`, to the receiver on `port`.
fn endpoint(name: &str, secret: &str, port: u16) -> String {
    format!("{name}={secret}@http://127.0.0.1:{port}/hook?token={URL_TOKEN}")
}

/// A `gatehouse serve` child process whose stderr goes to a file; killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(database_url: &str, webhook_port: u16, stderr: &Path, extra: &[&str]) -> Self {
        Self::start_with(
            database_url,
            &endpoint("phone", SECRET, webhook_port),
            stderr,
            extra,
        )
    }

    /// With `webhooks` as `GATEHOUSE_WEBHOOKS`.
    fn start_with(database_url: &str, webhooks: &str, stderr: &Path, extra: &[&str]) -> Self {
        // Quick retries, many of them, unless the test sets its own.
        let mut extra = extra.to_vec();
        for (flag, value) in [
            ("--webhook-retry-ms", "100"),
            ("--webhook-max-attempts", "60"),
        ] {
            if !extra.contains(&flag) {
                extra.extend([flag, value]);
            }
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(stderr)
            .unwrap();
        let mut child = Command::new(BIN)
            .args([
                "serve",
                "--bind",
                "127.0.0.1:0",
                "--database-url",
                database_url,
            ])
            .args(["--api-key", &format!("tester={KEY}@*")])
            // Its responds are the legacy contract's (200 `{count, interaction}`).
            .args(["--agenta-contract", "legacy"])
            .args(&extra)
            // The endpoint from the environment, as a container would set it.
            .env("GATEHOUSE_WEBHOOKS", webhooks)
            .env("RUST_LOG", "debug")
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("gatehouse serve starts");
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let url = loop {
            let line = lines.next().expect("a listening line").unwrap();
            if let Some(url) = line.strip_prefix("listening on ") {
                break url.trim().to_string();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Self { child, url }
    }

    /// SIGKILL, and reap.
    fn kill_9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn call(server: &Server, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let http = reqwest::Client::new();
    let sep = if path.contains('?') { '&' } else { '?' };
    let url = format!("{}{path}{sep}project_id={PROJECT}", server.url);
    let request = match method {
        "GET" => http.get(url),
        _ => http.post(url).json(&body.unwrap_or(Value::Null)),
    };
    let response = request
        .header("Authorization", format!("ApiKey {KEY}"))
        .timeout(Duration::from_secs(20))
        .send()
        .await
        .expect("request sent");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// `gatehouse webhooks list --json [args]` against `server`: the outbox rows.
fn outbox(server: &Server, args: &[&str]) -> Vec<Value> {
    let output = Command::new(BIN)
        .args(["webhooks", "list", "--json"])
        .args(args)
        .env("GATEHOUSE_URL", &server.url)
        .env("GATEHOUSE_API_KEY", KEY)
        .env("GATEHOUSE_PROJECT", PROJECT)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice::<Value>(&output.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// Create a gate the plain way (an external runner's row): its `interaction.opened`.
async fn create_gate(server: &Server, session: &str, token: &str) -> String {
    let body = json!({"session_id": session, "turn_id": "t-1", "token": token,
        "kind": "user_approval",
        "data": {"request": {"tool": "Bash", "args": {"command": "ls"}, "tool_call_id": format!("call-{token}")}}});
    let (status, row) = call(server, "POST", "/api/sessions/interactions/", Some(body)).await;
    assert_eq!(status, 200, "{row}");
    row["interaction"]["id"].as_str().unwrap().to_string()
}

/// Wait (up to `limit`) until `done` holds for what the receiver recorded.
async fn wait_for(log: &Path, limit: Duration, what: &str, done: impl Fn(&[Value]) -> bool) {
    let start = Instant::now();
    loop {
        let got = received(log);
        if done(&got) {
            return;
        }
        assert!(
            start.elapsed() < limit,
            "timed out waiting for {what}; received: {got:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The parsed bodies of the verified requests, by `webhook-id`, with how often each
/// arrived.
fn verified_events(got: &[Value]) -> HashMap<String, (Value, usize)> {
    let mut events: HashMap<String, (Value, usize)> = HashMap::new();
    for request in got.iter().filter(|r| r["verified"] == true) {
        let id = request["id"].as_str().unwrap().to_string();
        let body: Value = serde_json::from_str(request["body"].as_str().unwrap()).unwrap();
        events.entry(id).or_insert((body, 0)).1 += 1;
    }
    events
}

fn has_event(got: &[Value], event_type: &str, key: &str, value: &str) -> bool {
    verified_events(got)
        .values()
        .any(|(body, _)| body["type"] == event_type && body["data"][key] == value)
}

/// The whole story with a receiver that is down at first: every event verified, once,
/// none lost, no secret in a body or a log line, the gate flagged delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_arrives_signed_once_after_the_receiver_was_down() {
    let Some(python) = verifier_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("gatehouse.db").display());
    let log = dir.path().join("received.ndjson");
    let stderr = dir.path().join("server.log");
    let port = free_port();
    let server = Server::start(&db, port, &stderr, &["--webhook-timeout", "2"]);

    // A gate opened by a turn whose config carries a credential.
    let (status, parked) = call(
        &server,
        "POST",
        "/api/invoke",
        Some(json!({"session_id": "wh-task", "data": {
            "inputs": {"messages": [{"role": "user", "content": "release"}]},
            "parameters": {"agent": {
                "llm": {"model": "m-webhooks", "api_key": CONFIG_SECRET},
                "runner": {"permissions": {"default": "allow", "rules": [{"pattern": "Bash", "permission": "ask"}]}},
                "script": [{"tool": "Bash", "args": {"command": "make release"}}, {"say": "done"}]}}}})),
    )
    .await;
    assert_eq!(status, 200, "{parked}");
    assert_eq!(parked["status"], "parked", "{parked}");
    let gate = parked["interaction_ids"][0].as_str().unwrap().to_string();
    let room = parked["execution"]["room_id"].as_str().unwrap().to_string();
    let session = parked["execution"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    // An intervention the run will resolve (applied after the output, or rejected).
    let path = format!("/api/rooms/{room}/execution-sessions/{session}");
    let (status, doc) = call(&server, "GET", &path, None).await;
    assert_eq!(status, 200, "{doc}");
    let (status, body) = call(
        &server,
        "POST",
        &format!("{path}/interventions"),
        Some(
            json!({"expectedRevision": doc["data"]["revision"], "operationId": "op-wh",
                    "instruction": "be brief", "checkpoint": "post_output"}),
        ),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    // Answered while the receiver is still down.
    let (status, body) = call(
        &server,
        "POST",
        &format!("/api/sessions/interactions/{gate}/respond"),
        Some(json!({"answer": {"approved": true, "message": ANSWER_SECRET}})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // Down for a while: attempts fail and are retried with backoff.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(received(&log).is_empty());
    // The outbox shows them waiting: attempts made, the next one due, the error.
    let pending = outbox(&server, &["--state", "pending"]);
    assert!(pending.len() >= 2, "{pending:#?}");
    for row in &pending {
        assert_eq!(row["endpoint"], "phone", "{row}");
        assert!(row["attempts"].as_u64().unwrap() >= 1, "{row}");
        assert!(row["next_attempt_at"].is_string(), "{row}");
        let error = row["last_error"].as_str().unwrap();
        assert!(error.starts_with("cannot connect"), "{row}");
        assert!(
            !error.contains(URL_TOKEN) && !error.contains("/hook"),
            "{row}"
        );
    }
    // And as a table.
    let table = Command::new(BIN)
        .args([
            "webhooks",
            "list",
            "--url",
            &server.url,
            "--api-key",
            KEY,
            "--project",
            PROJECT,
        ])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains("NEXT ATTEMPT") && table.contains("interaction.opened"),
        "{table}"
    );
    let _receiver = Receiver::start(&python, port, &log, "ok", 0);

    wait_for(&log, Duration::from_secs(60), "every event", |got| {
        has_event(got, "interaction.opened", "interaction_id", &gate)
            && has_event(got, "interaction.responded", "interaction_id", &gate)
            && has_event(got, "interaction.resolved", "interaction_id", &gate)
            && has_event(got, "intervention.resolved", "operation_id", "op-wh")
    })
    .await;
    // Let any duplicate arrive before counting.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let got = received(&log);
    for request in &got {
        assert_eq!(request["verified"], true, "{request}");
        let body = request["body"].as_str().unwrap();
        for secret in [CONFIG_SECRET, ANSWER_SECRET, SECRET, "make release"] {
            assert!(!body.contains(secret), "{secret} in a payload: {body}");
        }
    }
    let events = verified_events(&got);
    for (id, (body, count)) in &events {
        assert_eq!(*count, 1, "{id} arrived {count} times: {body}");
        assert!(id.starts_with("msg_"), "{id}");
        assert!(body["timestamp"].is_string(), "{body}");
    }
    let resolved = events
        .values()
        .find(|(b, _)| b["type"] == "interaction.resolved")
        .unwrap();
    assert_eq!(resolved.0["data"]["verdict"], "approved", "{}", resolved.0);
    assert_eq!(resolved.0["data"]["session_id"], "wh-task");
    let intervention = events
        .values()
        .find(|(b, _)| b["type"] == "intervention.resolved")
        .unwrap();
    assert_eq!(
        intervention.0["data"]["execution_session_id"],
        session.as_str()
    );
    assert!(
        ["applied", "rejected"].contains(&intervention.0["data"]["status"].as_str().unwrap()),
        "{}",
        intervention.0
    );

    // The gate's row says its event was delivered (as Agenta's flag does).
    let (status, row) = call(
        &server,
        "GET",
        &format!("/api/sessions/interactions/{gate}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{row}");
    assert_eq!(
        row["interaction"]["flags"]["delivered_webhook"], true,
        "{row}"
    );
    let (status, flagged) = call(
        &server,
        "POST",
        "/api/sessions/interactions/query",
        Some(json!({"query": {"session_id": "wh-task", "flags": {"delivered_webhook": true}}})),
    )
    .await;
    assert_eq!(status, 200, "{flagged}");
    assert_eq!(flagged["count"], 1, "{flagged}");
    let all = outbox(&server, &[]);
    assert_eq!(all.len(), events.len(), "{all:#?}");
    assert!(
        all.iter().all(|row| row["state"] == "delivered"),
        "{all:#?}"
    );

    // Readiness counts the delivery workers.
    let (status, ready) = call(&server, "GET", "/health/ready", None).await;
    assert_eq!(status, 200, "{ready}");
    let check = ready["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "webhook_workers")
        .unwrap();
    assert_eq!(
        (&check["ok"], &check["detail"]),
        (&json!(true), &json!("2 of 2 alive")),
        "{ready}"
    );

    // /metrics counts each attempt by outcome: every event delivered once, and the
    // attempts made while the receiver was down as failed.
    let metrics = reqwest::get(format!("{}/metrics", server.url))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let count = |outcome: &str| -> u64 {
        let series = format!("gatehouse_webhook_deliveries_total{{outcome=\"{outcome}\"}} ");
        metrics
            .lines()
            .find_map(|line| line.strip_prefix(series.as_str()))
            .map(|value| value.trim().parse().unwrap())
            .unwrap_or(0)
    };
    assert_eq!(count("delivered"), events.len() as u64, "{metrics}");
    assert!(count("failed") >= 1, "{metrics}");

    drop(server);
    let logs = std::fs::read_to_string(&stderr).unwrap();
    assert!(logs.contains("webhook attempt failed; retrying"), "{logs}");
    for secret in [SECRET, &SECRET["whsec_".len()..], URL_TOKEN, CONFIG_SECRET] {
        assert!(!logs.contains(secret), "{secret} logged");
    }
}

/// `kill -9` while two deliveries hang mid-POST and a third event waits committed but
/// unsent: after the restart all three arrive, verified.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_committed_before_a_kill_9_are_delivered_after_the_restart() {
    let Some(python) = verifier_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("gatehouse.db").display());
    let hung_log = dir.path().join("hung.ndjson");
    let log = dir.path().join("received.ndjson");
    let stderr = dir.path().join("server.log");
    let port = free_port();
    let flags = ["--webhook-timeout", "5", "--lease-ms", "300"];
    let server = Server::start(&db, port, &stderr, &flags);
    let hanging = Receiver::start(&python, port, &hung_log, "hang", 0);
    let first = create_gate(&server, "kill-9", "g-1").await;
    let second = create_gate(&server, "kill-9", "g-2").await;
    // Both workers are inside a POST the receiver never answers.
    wait_for(
        &hung_log,
        Duration::from_secs(30),
        "two hung deliveries",
        |got| got.len() >= 2,
    )
    .await;
    // Committed (the 200 says so), not sent: both workers are busy.
    let third = create_gate(&server, "kill-9", "g-3").await;
    server.kill_9();
    drop(hanging);
    let _receiver = Receiver::start(&python, port, &log, "ok", 0);
    let server = Server::start(&db, port, &stderr, &flags);
    wait_for(&log, Duration::from_secs(90), "the three events", |got| {
        [&first, &second, &third]
            .iter()
            .all(|id| has_event(got, "interaction.opened", "interaction_id", id))
    })
    .await;
    let hung_ids: Vec<String> = received(&hung_log)
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    let events = verified_events(&received(&log));
    for id in &hung_ids {
        assert!(
            events.contains_key(id),
            "the hung delivery {id} was not sent again under its id"
        );
    }
    assert!(received(&log).iter().all(|r| r["verified"] == true));
    drop(server);
}

/// A graceful stop (SIGTERM) while a delivery hangs mid-POST: the attempt is abandoned
/// and recorded as interrupted, due again at once; the next start delivers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_stop_interrupts_a_hung_delivery_for_the_next_start() {
    let Some(python) = verifier_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("gatehouse.db").display());
    let hung_log = dir.path().join("hung.ndjson");
    let log = dir.path().join("received.ndjson");
    let stderr = dir.path().join("server.log");
    let port = free_port();
    // A POST would wait 300 s: only the stop ends it.
    let flags = ["--webhook-timeout", "300"];
    let mut server = Server::start(&db, port, &stderr, &flags);
    let hanging = Receiver::start(&python, port, &hung_log, "hang", 0);
    let gate = create_gate(&server, "sigterm", "g-1").await;
    wait_for(
        &hung_log,
        Duration::from_secs(30),
        "the hung delivery",
        |got| !got.is_empty(),
    )
    .await;
    let status = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = server.child.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
    drop(hanging);
    let _receiver = Receiver::start(&python, port, &log, "ok", 0);
    let server = Server::start(&db, port, &stderr, &flags);
    wait_for(&log, Duration::from_secs(60), "the event", |got| {
        has_event(got, "interaction.opened", "interaction_id", &gate)
    })
    .await;
    let hung_id = received(&hung_log)[0]["id"].as_str().unwrap().to_string();
    let rows = outbox(&server, &[]);
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert_eq!(rows[0]["event_id"], hung_id.as_str());
    assert_eq!(
        (&rows[0]["state"], &rows[0]["attempts"]),
        (&json!("delivered"), &json!(2)),
        "{rows:#?}"
    );
    drop(server);
}

fn postgres_url() -> Option<String> {
    let url = std::env::var("GATEHOUSE_TEST_DATABASE_URL").ok()?;
    url.starts_with("postgres").then_some(url)
}

/// Two instances on one PostgreSQL database, gates opened through both, a slow
/// receiver: every event arrives, verified, exactly once, and no two requests of one
/// event overlap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_on_postgres_deliver_each_event_once() {
    let Some(base) = postgres_url() else {
        eprintln!(
            "webhooks.rs: two-instance test skipped (set GATEHOUSE_TEST_DATABASE_URL=postgres://...; \
             cargo xtask test runs it on its own PostgreSQL cluster)"
        );
        return;
    };
    let Some(python) = verifier_python() else {
        return;
    };
    let url = gatehouse_server::testing::fresh_postgres_database(&base)
        .await
        .expect("a fresh Postgres database");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("received.ndjson");
    let stderr = dir.path().join("server.log");
    let port = free_port();
    let _receiver = Receiver::start(&python, port, &log, "ok", 100);
    let a = Server::start(&url, port, &stderr, &[]);
    let b = Server::start(&url, port, &stderr, &[]);
    let mut ids = Vec::new();
    for i in 0..24 {
        let via = if i % 2 == 0 { &a } else { &b };
        ids.push(create_gate(via, "two", &format!("g-{i}")).await);
    }
    wait_for(&log, Duration::from_secs(90), "every event", |got| {
        ids.iter()
            .all(|id| has_event(got, "interaction.opened", "interaction_id", id))
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let got = received(&log);
    assert!(got.iter().all(|r| r["verified"] == true));
    let events = verified_events(&got);
    assert_eq!(events.len(), ids.len(), "{events:#?}");
    for (id, (_, count)) in &events {
        assert_eq!(*count, 1, "{id} delivered {count} times");
    }
    // One claim each: an event two instances both claimed would show two attempts.
    let rows = outbox(&a, &["--state", "delivered", "--limit", "1000"]);
    assert_eq!(rows.len(), ids.len(), "{rows:#?}");
    assert!(rows.iter().all(|row| row["attempts"] == 1), "{rows:#?}");
    // Never one event in two requests at once (intervals of one id never overlap).
    for (i, x) in got.iter().enumerate() {
        for y in &got[i + 1..] {
            if x["id"] == y["id"] {
                let overlap = x["start"].as_f64() < y["end"].as_f64()
                    && y["start"].as_f64() < x["end"].as_f64();
                assert!(!overlap, "{x} and {y} overlap");
            }
        }
    }
    drop((a, b));
}

/// An endpoint whose secret the receiver does not hold: the verifier refuses every
/// attempt (400), which is retried up to the bound and then marked `failed`; the other
/// endpoint's copy of the same event is delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_event_is_retried_to_the_bound_then_failed() {
    let Some(python) = verifier_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("gatehouse.db").display());
    let log = dir.path().join("received.ndjson");
    let stderr = dir.path().join("server.log");
    let port = free_port();
    let _receiver = Receiver::start(&python, port, &log, "ok", 0);
    let wrong = "whsec_d3Jvbmctc2VjcmV0LW5vdC10aGUtcmVjZWl2ZXJz";
    let webhooks = format!(
        "{},{}",
        endpoint("phone", SECRET, port),
        endpoint("stale", wrong, port)
    );
    let server = Server::start_with(
        &db,
        &webhooks,
        &stderr,
        &["--webhook-max-attempts", "3", "--webhook-retry-ms", "50"],
    );
    let gate = create_gate(&server, "refused", "g-1").await;
    let start = Instant::now();
    let rows = loop {
        let rows = outbox(&server, &[]);
        if rows.len() == 2 && rows.iter().all(|r| r["state"] != "pending") {
            break rows;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{rows:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let by_endpoint = |name: &str| rows.iter().find(|r| r["endpoint"] == name).unwrap().clone();
    let (good, bad) = (by_endpoint("phone"), by_endpoint("stale"));
    assert_eq!(
        good["event_id"], bad["event_id"],
        "one webhook-id per event"
    );
    assert_eq!(
        (&good["state"], &good["attempts"]),
        (&json!("delivered"), &json!(1)),
        "{good}"
    );
    assert_eq!(
        (&bad["state"], &bad["attempts"]),
        (&json!("failed"), &json!(3)),
        "{bad}"
    );
    assert_eq!(bad["last_error"], "HTTP 400", "{bad}");
    assert!(bad.get("next_attempt_at").is_none(), "{bad}");
    let got = received(&log);
    let refused: Vec<&Value> = got.iter().filter(|r| r["verified"] == false).collect();
    assert_eq!(refused.len(), 3, "{got:#?}");
    assert!(
        refused.iter().all(|r| r["error"]
            .as_str()
            .unwrap()
            .contains("No matching signature")),
        "{refused:#?}"
    );
    assert!(has_event(
        &got,
        "interaction.opened",
        "interaction_id",
        &gate
    ));
    let failed = outbox(&server, &["--state", "failed"]);
    assert_eq!(failed.len(), 1, "{failed:#?}");
    drop(server);
    let logs = std::fs::read_to_string(&stderr).unwrap();
    assert!(
        logs.contains("webhook delivery failed for the last time"),
        "{logs}"
    );
    assert!(!logs.contains(&wrong["whsec_".len()..]), "secret logged");
}
