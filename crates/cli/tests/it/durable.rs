//! Agenta's durable contract through the command (issue 33, item 5): `interactions
//! respond`'s typed outcomes and refusals, against a local fake durable host that answers
//! Agenta's shapes: the recorded examples of `agenta/durable/examples` (read at run time through
//! `gatehouse_fixtures`; skipped with one line when absent), else bodies written from the
//! contract table.

use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::common::{gatehouse_without_env, text};

const GATE: &str = "0196a001-0000-7000-8000-000000000001";
const TURN: &str = "7d3f2c1e-5b6a-4c8d-9e0f-a1b2c3d4e5f6";
const CONTINUATION: &str = "c0ffee00-1111-4222-8333-444455556666";
const SESSION: &str = "sess_demo_01";
const KEY: &str = "agenta-test-key";
const PROJECT: &str = "0196a000-0000-7000-8000-0000000000aa";

// ---- the fake durable host ------------------------------------------------------------

/// One request the host received.
#[derive(Debug, Clone)]
struct Req {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Req {
    fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// What the host answers a request with.
enum Answer {
    /// A JSON body with this status.
    Json(u16, Value),
}

type Handler = dyn Fn(usize, &Req) -> Answer + Send + Sync;

struct Host {
    url: String,
    requests: Arc<Mutex<Vec<Req>>>,
}

impl Host {
    fn requests(&self) -> Vec<Req> {
        self.requests.lock().unwrap().clone()
    }
}

async fn read_request(stream: &mut TcpStream) -> Option<Req> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_string();
    let target = request_line.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Req {
        method,
        target,
        headers,
        body,
    })
}

/// A host answering each connection's request through `handler` (with the request's
/// index among those of its path, from 0).
async fn host(handler: impl Fn(usize, &Req) -> Answer + Send + Sync + 'static) -> Host {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let requests: Arc<Mutex<Vec<Req>>> = Arc::new(Mutex::new(Vec::new()));
    let handler: Arc<Handler> = Arc::new(handler);
    let log = requests.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (handler, log) = (handler.clone(), log.clone());
            tokio::spawn(async move {
                let Some(req) = read_request(&mut stream).await else {
                    return;
                };
                let index = {
                    let mut log = log.lock().unwrap();
                    let index = log.iter().filter(|r| r.path() == req.path()).count();
                    log.push(req.clone());
                    index
                };
                match handler(index, &req) {
                    Answer::Json(status, body) => {
                        let body = body.to_string();
                        let head = format!(
                            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                            body.len()
                        );
                        let _ = stream.write_all(head.as_bytes()).await;
                        let _ = stream.write_all(body.as_bytes()).await;
                        let _ = stream.shutdown().await;
                    }
                }
            });
        }
    });
    Host { url, requests }
}

/// A host's answer: (status, body).
type Example = (u16, Value);

/// The `response` of an example of Agenta's durable contract: (status, body).
fn example(name: &str) -> Option<Example> {
    let text = gatehouse_fixtures::read_text(
        gatehouse_fixtures::Upstream::Agenta,
        "durable CLI contract",
        &format!("durable/examples/{name}"),
    )?;
    let value: Value = serde_json::from_str(&text).unwrap();
    let status = value["response"]["status"].as_u64().unwrap() as u16;
    Some((status, value["response"]["body"].clone()))
}

/// The frames of the events example, its `retry:` shortened (the client waits at least
/// that long before it reconnects).
async fn gatehouse(host: &Host, args: &[&str]) -> Output {
    let mut cmd = agenta_command(host);
    cmd.args(args);
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

fn agenta_command(host: &Host) -> Command {
    let mut cmd = gatehouse_without_env();
    cmd.env("GATEHOUSE_URL", &host.url)
        .env("GATEHOUSE_UPSTREAM", "agenta")
        .env("GATEHOUSE_API_KEY", KEY)
        .env("GATEHOUSE_PROJECT", PROJECT);
    cmd
}

fn stdout(out: &Output) -> String {
    text(&out.stdout)
}

fn stderr(out: &Output) -> String {
    text(&out.stderr)
}

// ---- interactions respond -------------------------------------------------------------

/// A durable host whose snapshot says so and whose respond answers `respond`.
async fn respond_host(respond: (u16, Value)) -> Option<Host> {
    let (_, snapshot) = example("snapshot.200.parked_on_two_gates.json")?;
    Some(
        host(move |_, req| {
            if req.method == "GET" && req.path() == format!("/api/sessions/{SESSION}") {
                Answer::Json(200, snapshot.clone())
            } else if req.method == "GET" {
                // The gate's row (read for its session when --session is not given).
                let row = snapshot["pending"]["interactions"][0].clone();
                Answer::Json(200, json!({"count": 1, "interaction": row}))
            } else {
                Answer::Json(respond.0, respond.1.clone())
            }
        })
        .await,
    )
}

async fn respond(example_body: (u16, Value), extra: &[&str]) -> Option<(Output, Host)> {
    let host = respond_host(example_body).await?;
    let mut args = vec!["interactions", "respond", GATE, "--approve"];
    args.extend_from_slice(extra);
    let out = gatehouse(&host, &args).await;
    Some((out, host))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn respond_prints_each_durable_outcome() {
    let Some(continuation) = example("respond.202.continuation.json") else {
        return;
    };
    let (out, host) = respond(
        continuation.clone(),
        &["--session", SESSION, "--expected-execution", TURN],
    )
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim(),
        format!("approved {GATE}: recorded; the turn continues as execution {CONTINUATION} (pending_delivery), command 0196a002-0000-7000-8000-000000000010 (pending)")
    );
    let requests = host.requests();
    let paths: Vec<&str> = requests.iter().map(|r| r.path()).collect();
    assert_eq!(
        paths,
        [
            format!("/api/sessions/{SESSION}"),
            format!("/api/sessions/interactions/{GATE}/respond")
        ]
    );
    let post = &requests[1];
    assert_eq!(
        post.json(),
        json!({"answer": {"approved": true}, "expected_execution_id": TURN})
    );
    assert!(post.header("Idempotency-Key").is_some());
    assert_eq!(post.header("Authorization"), Some("ApiKey agenta-test-key"));

    // Without --session the gate's row is read first, for the session to ask.
    let (out, host) = respond(continuation.clone(), &[]).await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let paths: Vec<String> = host
        .requests()
        .iter()
        .map(|r| r.path().to_string())
        .collect();
    assert_eq!(
        paths,
        [
            format!("/api/sessions/interactions/{GATE}"),
            format!("/api/sessions/{SESSION}"),
            format!("/api/sessions/interactions/{GATE}/respond")
        ]
    );

    // --json: the outcome, the row, the command and the execution.
    let (out, _) = respond(continuation.clone(), &["--session", SESSION, "--json"])
        .await
        .unwrap();
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["outcome"], "continued");
    assert_eq!(printed["execution"]["id"], CONTINUATION);
    assert_eq!(printed["interaction"]["id"], GATE);

    // A caller's key is sent as given.
    let (_, host) = respond(
        continuation.clone(),
        &["--session", SESSION, "--idempotency-key", "respond-7f1c2b"],
    )
    .await
    .unwrap();
    assert_eq!(
        host.requests()[1].header("Idempotency-Key"),
        Some("respond-7f1c2b")
    );

    let recoverable = example("respond.202.delivery_failed_recoverable.json").unwrap();
    let (out, _) = respond(recoverable, &["--session", SESSION]).await.unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stdout(&out).contains(&format!("execution {CONTINUATION} (recoverable)"))
            && stdout(&out).contains("its delivery to the runner failed"),
        "{}",
        stdout(&out)
    );

    let same = example("respond.202.second_answer_same_verdict.json").unwrap();
    let (out, _) = respond(same, &["--session", SESSION]).await.unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout(&out).trim(),
        format!("approved {GATE}: the same verdict was already recorded; nothing new was created (turn {TURN} is terminal)")
    );

    // Accepted, but the body does not read: recorded, never reported as failed.
    let (out, _) = respond((202, json!({"unexpected": true})), &["--session", SESSION])
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim(),
        format!("approved {GATE}: recorded (the host accepted it); what it did is unknown: its answer could not be read")
    );
    assert!(stderr(&out).starts_with("warning: "), "{}", stderr(&out));

    // A partial answer of a turn's parallel gates (no example: the contract's shape).
    let (status, mut awaiting) = continuation;
    awaiting["command"] = Value::Null;
    awaiting["execution"] = json!({"id": TURN, "state": "awaiting_interactions"});
    let (out, _) = respond((status, awaiting), &["--session", SESSION])
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout(&out).trim(),
        format!("approved {GATE}: recorded; turn {TURN} waits for its other gates (awaiting_interactions): the answer that completes them continues it")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn respond_refusals_have_their_messages_and_exit_codes() {
    let idempotency_reused = (
        409,
        json!({"code": "idempotency_key_reused", "message": "The Idempotency-Key was used with another request.", "retryable": false}),
    );
    let cases: [(Option<Example>, i32, &str); 6] = [
        (
            example("respond.409.execution_terminal.answered_differently.json"),
            3,
            "was already answered differently; your answer was not recorded",
        ),
        (
            example("respond.409.execution_terminal.no_longer_pending.json"),
            3,
            "is no longer pending (it is cancelled); your answer was not recorded",
        ),
        (
            example("respond.409.execution_terminal.source_settled.json"),
            11,
            "can no longer be continued (state terminal); your answer was not recorded",
        ),
        (
            example("respond.409.execution_terminal.settle_lost.json"),
            11,
            "can no longer be continued (outcome lost)",
        ),
        (
            example("respond.409.execution_mismatch.stale_expected.json"),
            12,
            "belongs to execution 7d3f2c1e-5b6a-4c8d-9e0f-a1b2c3d4e5f6, not the one you expected: refresh and ask again",
        ),
        (
            Some(idempotency_reused),
            13,
            "the idempotency key was already used for another request; nothing was recorded",
        ),
    ];
    for (body, code, says) in cases {
        let Some(body) = body else {
            return;
        };
        let Some((out, host)) = respond(body, &["--session", SESSION]).await else {
            return;
        };
        assert_eq!(out.status.code(), Some(code), "{says}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{}", stdout(&out));
        let err = stderr(&out);
        assert!(err.starts_with("error: "), "{err}");
        assert!(err.contains(says), "{err}");
        // None of them is re-sent.
        let posts = host
            .requests()
            .iter()
            .filter(|r| r.method == "POST")
            .count();
        assert_eq!(posts, 1, "{says}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn respond_on_a_legacy_agenta_host_prints_the_row_as_before() {
    let Some((_, legacy)) = example("legacy.respond.200.json") else {
        return;
    };
    let host = host(move |_, req| {
        if req.method == "GET" {
            // No snapshot route: the host predates the durable contract.
            Answer::Json(404, json!({"detail": "Not Found"}))
        } else {
            Answer::Json(200, legacy.clone())
        }
    })
    .await;
    let out = gatehouse(
        &host,
        &[
            "interactions",
            "respond",
            GATE,
            "--approve",
            "--session",
            SESSION,
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim(),
        format!("approved {GATE} (status responded); the turn resumes under its stamped config")
    );
    let post = host
        .requests()
        .into_iter()
        .find(|r| r.method == "POST")
        .unwrap();
    assert_eq!(post.json(), json!({"answer": {"approved": true}}));
}

// ---- help -----------------------------------------------------------------------------

#[test]
fn help_names_the_respond_flags() {
    let help = |args: &[&str]| {
        let out = gatehouse_without_env().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        text(&out.stdout)
    };
    let respond = help(&["interactions", "respond", "--help"]);
    for flag in [
        "--expected-execution <ID>",
        "--session <SESSION>",
        "--idempotency-key <KEY>",
    ] {
        assert!(respond.contains(flag), "{flag} in {respond}");
    }
}
