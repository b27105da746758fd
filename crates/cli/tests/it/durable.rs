//! Agenta's durable contract through the command (issue 33, item 5): `interactions
//! respond`'s typed outcomes and refusals, `sessions stop [--wait]`, `sessions snapshot`,
//! `sessions events [--follow]`, against a local fake durable host that answers Agenta's
//! shapes: the recorded examples of `agenta/durable/examples` (read at run time through
//! `gatehouse_fixtures`; skipped with one line when absent), else bodies written from the
//! contract table.

use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::common::{gatehouse_without_env, text};

const GATE: &str = "0196a001-0000-7000-8000-000000000001";
const TURN: &str = "7d3f2c1e-5b6a-4c8d-9e0f-a1b2c3d4e5f6";
const NEWER_TURN: &str = "9a8b7c6d-0000-4000-8000-00000000beef";
const CONTINUATION: &str = "c0ffee00-1111-4222-8333-444455556666";
const STOP_COMMAND: &str = "0196a002-0000-7000-8000-000000000020";
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
    /// An event stream: these frames, then the connection closes (`hold: false`) or stays
    /// open until the client hangs up.
    Sse { frames: Vec<String>, hold: bool },
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
                    Answer::Sse { frames, hold } => {
                        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-store\r\nconnection: close\r\n\r\n";
                        let _ = stream.write_all(head.as_bytes()).await;
                        let _ = stream.write_all(frames.concat().as_bytes()).await;
                        let _ = stream.flush().await;
                        if hold {
                            // Until the client hangs up.
                            let mut sink = [0u8; 256];
                            while let Ok(n) = stream.read(&mut sink).await {
                                if n == 0 {
                                    break;
                                }
                            }
                        } else {
                            let _ = stream.shutdown().await;
                        }
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
fn events_example() -> Option<Vec<String>> {
    let text = gatehouse_fixtures::read_text(
        gatehouse_fixtures::Upstream::Agenta,
        "durable CLI contract",
        "durable/examples/events.stream.json",
    )?;
    let value: Value = serde_json::from_str(&text).unwrap();
    Some(
        value["response"]["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|frame| frame["raw"].as_str().unwrap().to_string())
            .map(|raw| {
                if raw.starts_with("retry:") {
                    "retry: 20\n\n".to_string()
                } else {
                    raw
                }
            })
            .collect(),
    )
}

/// A durable event frame written from the contract (`execution.failed`, `execution.lost`
/// have no recorded example).
fn event_frame(sequence: u64, execution: &str, event_type: &str, payload: Value) -> String {
    let event = json!({
        "version": 1, "kind": "event", "session_id": SESSION, "execution_id": execution,
        "frame_or_event_id": format!("evt_{sequence}"), "entity_id": execution,
        "sequence": sequence, "created_at": "2026-09-24T10:00:01Z", "type": event_type,
        "payload": payload,
    });
    format!("data: {event}\n\n")
}

const RETRY: &str = "retry: 20\n\n";
const READY: &str = "event: ready\ndata: {}\n\n";

/// A snapshot written from the contract: the session's execution in `state`.
fn snapshot_in(execution: &str, state: &str) -> Value {
    json!({
        "execution_state": {"id": execution, "state": state},
        "pending": {"inputs": [], "interactions": []},
        "read": {"latest_sequence": 42, "history_complete": true},
        "capabilities": {"durable_approvals": true, "queue": false, "steer": false}
    })
}

/// `gatehouse --upstream agenta ... <args>` against `host`, run to completion off the
/// runtime's threads.
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

    // Without --session nothing more is asked of the host: the answer goes out in the
    // form every host takes, and the host's 202 is still read for what it says.
    let (out, host) = respond(continuation.clone(), &[]).await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let paths: Vec<String> = host
        .requests()
        .iter()
        .map(|r| r.path().to_string())
        .collect();
    assert_eq!(
        paths,
        [format!("/api/sessions/interactions/{GATE}/respond")]
    );
    assert_eq!(
        stdout(&out).trim(),
        format!("approved {GATE} (status responded); the row carries no stamped config")
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
            13,
            "can no longer be continued (state terminal); your answer was not recorded",
        ),
        (
            example("respond.409.execution_terminal.settle_lost.json"),
            13,
            "can no longer be continued (outcome lost)",
        ),
        (
            example("respond.409.execution_mismatch.stale_expected.json"),
            14,
            "belongs to execution 7d3f2c1e-5b6a-4c8d-9e0f-a1b2c3d4e5f6, not the one you expected: refresh and ask again",
        ),
        (
            Some(idempotency_reused),
            15,
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
        format!("approved {GATE} (status responded); the row carries no stamped config")
    );
    let post = host
        .requests()
        .into_iter()
        .find(|r| r.method == "POST")
        .unwrap();
    assert_eq!(post.json(), json!({"answer": {"approved": true}}));
}

// ---- sessions stop --------------------------------------------------------------------

/// A durable host for Stop: the cancel answers `stop`; the snapshot answers
/// `snapshot(read index)`; the events replay `events` and close.
async fn stop_host(
    stop: (u16, Value),
    snapshot: impl Fn(usize) -> Value + Send + Sync + 'static,
    events: Vec<String>,
) -> Host {
    host(move |index, req| {
        if req.method == "POST" {
            Answer::Json(stop.0, stop.1.clone())
        } else if req.path().ends_with("/events") {
            Answer::Sse {
                frames: events.clone(),
                hold: false,
            }
        } else {
            Answer::Json(200, snapshot(index))
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_prints_requested_never_stopped_from_the_202() {
    let Some(accepted) = example("cancel.202.json") else {
        return;
    };
    let host = stop_host(accepted, |_| snapshot_in(TURN, "stopping"), Vec::new()).await;
    let out = gatehouse(
        &host,
        &["sessions", "stop", SESSION, "--expected-execution", TURN],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let printed = stdout(&out);
    assert_eq!(
        printed.trim(),
        format!("stop requested for session {SESSION}: command {STOP_COMMAND} (pending), execution {TURN} stopping; not stopped yet (the outcome comes from the session's events: --wait)")
    );
    assert!(!printed.contains("stopped:"), "{printed}");
    let requests = host.requests();
    assert_eq!(requests.len(), 1, "no wait: nothing else is read");
    assert_eq!(
        requests[0].path(),
        format!("/api/sessions/{SESSION}/cancel")
    );
    assert_eq!(requests[0].json(), json!({"expected_execution_id": TURN}));
    assert!(requests[0].header("Idempotency-Key").is_some());

    let out = gatehouse(&host, &["sessions", "stop", SESSION, "--json"]).await;
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["requested"], true);
    assert_eq!(printed["command"]["state"], "pending");
    assert_eq!(printed["execution"]["state"], "stopping");
    assert!(printed.get("outcome").is_none(), "{printed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_wait_says_stopped_with_the_event_as_evidence() {
    let (Some(accepted), Some(frames)) = (example("cancel.202.json"), events_example()) else {
        return;
    };
    let host = stop_host(
        accepted,
        |read| snapshot_in(TURN, if read < 1 { "stopping" } else { "idle" }),
        frames,
    )
    .await;
    let out = gatehouse(&host, &["sessions", "stop", SESSION, "--wait"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].starts_with("stop requested"), "{lines:?}");
    assert_eq!(
        lines[1],
        format!("stopped: execution {TURN} (event #43 execution.stopped at 2026-09-24T10:00:00Z, reason user_stop, command {STOP_COMMAND})")
    );
    // The events were read after the log's end while the turn still stopped.
    let events = host
        .requests()
        .into_iter()
        .find(|r| r.path().ends_with("/events"))
        .unwrap();
    assert!(events.target.ends_with("after=42"), "{}", events.target);

    let out = gatehouse(&host, &["sessions", "stop", SESSION, "--wait", "--json"]).await;
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["outcome"]["outcome"], "stopped");
    assert_eq!(printed["outcome"]["event"]["sequence"], 43);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_wait_prints_failed_lost_and_superseded() {
    let Some(accepted) = example("cancel.202.json") else {
        return;
    };
    let failed = event_frame(
        43,
        TURN,
        "execution.failed",
        json!({"failed_at": "2026-09-24T10:00:01Z", "error": {"code": "runner_crashed", "message": "the runner exited", "retryable": false}}),
    );
    let lost = event_frame(
        43,
        TURN,
        "execution.lost",
        json!({"lost_at": "2026-09-24T10:00:01Z", "reason": "runner_heartbeat_expired", "history_complete": false}),
    );
    let cases: [(Vec<String>, &str, &str); 3] = [
        (
            vec![RETRY.into(), failed, READY.into()],
            TURN,
            "failed: execution 7d3f2c1e-5b6a-4c8d-9e0f-a1b2c3d4e5f6 failed before it stopped (execution.failed: runner_crashed: the runner exited)",
        ),
        (
            vec![RETRY.into(), lost, READY.into()],
            TURN,
            "lost: execution 7d3f2c1e-5b6a-4c8d-9e0f-a1b2c3d4e5f6 was lost (execution.lost: runner_heartbeat_expired)",
        ),
        (
            vec![RETRY.into(), READY.into()],
            NEWER_TURN,
            "superseded by a newer turn: the targeted turn ended without a stop, failure or loss event, and execution 9a8b7c6d-0000-4000-8000-00000000beef runs now",
        ),
    ];
    for (events, now, says) in cases {
        let host = stop_host(
            accepted.clone(),
            move |_| {
                if now == TURN {
                    snapshot_in(TURN, "idle")
                } else {
                    snapshot_in(now, "running")
                }
            },
            events,
        )
        .await;
        let out = gatehouse(&host, &["sessions", "stop", SESSION, "--wait"]).await;
        assert_eq!(out.status.code(), Some(0), "{says}: {}", stderr(&out));
        let printed = stdout(&out);
        assert_eq!(printed.lines().nth(1), Some(says), "{printed}");
        assert!(!printed.contains("stopped:"), "{printed}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_wait_unresolved_has_its_own_exit_code() {
    let Some(accepted) = example("cancel.202.json") else {
        return;
    };
    // Still stopping at the timeout.
    let host = stop_host(
        accepted.clone(),
        |_| snapshot_in(TURN, "stopping"),
        Vec::new(),
    )
    .await;
    let started = Instant::now();
    let out = gatehouse(
        &host,
        &["sessions", "stop", SESSION, "--wait", "--wait-timeout", "1"],
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(16), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).lines().nth(1),
        Some(format!("unresolved at the timeout: execution {TURN} is stopping").as_str())
    );
    assert!(
        stderr(&out).contains(&format!(
            "error: the Stop is still unresolved after 1 s: execution {TURN} is stopping"
        )),
        "{}",
        stderr(&out)
    );

    // The turn no longer runs, but no event says how it ended.
    let host = stop_host(
        accepted,
        |_| snapshot_in(TURN, "idle"),
        vec![RETRY.into(), READY.into()],
    )
    .await;
    let out = gatehouse(&host, &["sessions", "stop", SESSION, "--wait"]).await;
    assert_eq!(out.status.code(), Some(16), "{}", stderr(&out));
    assert!(!stdout(&out).contains("stopped:"), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("the Stop's outcome could not be established"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_with_nothing_running_and_a_stale_stop() {
    let (Some(not_running), Some(stale)) = (
        example("cancel.200.not_running.json"),
        example("cancel.409.stale_expected.json"),
    ) else {
        return;
    };
    let host = stop_host(not_running, |_| snapshot_in(TURN, "idle"), Vec::new()).await;
    let out = gatehouse(&host, &["sessions", "stop", SESSION, "--wait"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim(),
        format!("nothing was running in session {SESSION}: command {STOP_COMMAND} (obsolete), execution idle")
    );
    assert_eq!(host.requests().len(), 1, "the 200 says it; nothing is read");
    let out = gatehouse(&host, &["sessions", "stop", SESSION, "--json"]).await;
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["requested"], false);
    assert_eq!(printed["outcome"]["outcome"], "not_running");

    let host = stop_host(stale, |_| snapshot_in(NEWER_TURN, "running"), Vec::new()).await;
    let out = gatehouse(
        &host,
        &[
            "sessions",
            "stop",
            SESSION,
            "--expected-execution",
            TURN,
            "--wait",
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(14), "{}", stderr(&out));
    assert!(stdout(&out).is_empty());
    assert_eq!(
        stderr(&out).trim(),
        format!("error: the Stop of session {SESSION} was refused: {TURN} is not the running execution (execution {NEWER_TURN} runs now); nothing was stopped: refresh and ask again")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_refusals_have_their_exit_codes() {
    let (Some(none_running), Some(reused)) = (
        example("cancel.409.stale_expected.none_running.json"),
        example("cancel.409.idempotency_conflict.json"),
    ) else {
        return;
    };
    let host = stop_host(none_running, |_| snapshot_in(TURN, "idle"), Vec::new()).await;
    let out = gatehouse(
        &host,
        &["sessions", "stop", SESSION, "--expected-execution", TURN],
    )
    .await;
    assert_eq!(out.status.code(), Some(14), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "{TURN} is not the running execution (nothing runs now)"
        )),
        "{}",
        stderr(&out)
    );

    // The same key with another expectation: a plain conflict.
    let host = stop_host(reused, |_| snapshot_in(TURN, "idle"), Vec::new()).await;
    let out = gatehouse(
        &host,
        &["sessions", "stop", SESSION, "--idempotency-key", "stop-1"],
    )
    .await;
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(host.requests()[0].header("Idempotency-Key"), Some("stop-1"));

    // Accepted, but the body does not read: requested, never "failed"; --wait cannot
    // follow it (16).
    let host = stop_host(
        (202, json!({"command": "?"})),
        |_| snapshot_in(TURN, "idle"),
        Vec::new(),
    )
    .await;
    let out = gatehouse(&host, &["sessions", "stop", SESSION]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with(&format!(
            "stop requested for session {SESSION} (the host accepted it)"
        )),
        "{}",
        stdout(&out)
    );
    let out = gatehouse(&host, &["sessions", "stop", SESSION, "--wait"]).await;
    assert_eq!(out.status.code(), Some(16), "{}", stderr(&out));

    // A host without the route: capability unavailable.
    let host = stop_host(
        (404, json!({"detail": "Not Found"})),
        |_| snapshot_in(TURN, "idle"),
        Vec::new(),
    )
    .await;
    let out = gatehouse(&host, &["sessions", "stop", SESSION]).await;
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(stdout(&out).is_empty());
}

// ---- sessions snapshot ----------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_prints_state_gates_and_capabilities() {
    let Some((_, snapshot)) = example("snapshot.200.parked_on_two_gates.json") else {
        return;
    };
    let recorded = snapshot.clone();
    let host = host(move |_, _| Answer::Json(200, snapshot.clone())).await;
    let out = gatehouse(&host, &["sessions", "snapshot", SESSION]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let printed = stdout(&out);
    for line in [
        format!("session          {SESSION}"),
        format!("execution state  idle (execution {TURN})"),
        "events           up to sequence 42 (history complete)".to_string(),
        "capabilities     durable_approvals yes, queue no, steer no".to_string(),
        "pending inputs   0".to_string(),
        "pending gates:".to_string(),
        "ID                                    KIND           TOOL  TURN".to_string(),
        format!("0196a001-0000-7000-8000-000000000001  user_approval  bash  {TURN}"),
        format!("0196a001-0000-7000-8000-000000000002  user_approval  bash  {TURN}"),
    ] {
        assert!(printed.lines().any(|l| l == line), "{line:?} in\n{printed}");
    }
    assert_eq!(
        host.requests()[0].path(),
        format!("/api/sessions/{SESSION}")
    );

    // --json: the snapshot as the host wrote it.
    let out = gatehouse(&host, &["sessions", "snapshot", SESSION, "--json"]).await;
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed, recorded);

    // An unknown session: the host's 404, exit 4.
    let missing = crate::durable::host(|_, _| {
        Answer::Json(404, json!({"detail": "Session stream not found"}))
    })
    .await;
    let out = gatehouse(&missing, &["sessions", "snapshot", "nope"]).await;
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).starts_with("error: "), "{}", stderr(&out));
}

// ---- sessions events ------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_replay_after_n_and_stop_at_ready() {
    let Some(frames) = events_example() else {
        return;
    };
    let host = host(move |_, _| Answer::Sse {
        frames: frames.clone(),
        // Held open after the live frame: without --follow the command ends at `ready`.
        hold: true,
    })
    .await;
    let out = gatehouse(&host, &["sessions", "events", SESSION, "--after", "42"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim(),
        format!("#43  execution.stopped  execution {TURN}  2026-09-24T10:00:00Z  reason user_stop, command {STOP_COMMAND}")
    );
    let requests = host.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].path(),
        format!("/api/sessions/{SESSION}/events")
    );
    assert!(
        requests[0].target.contains("after=42"),
        "{}",
        requests[0].target
    );

    let out = gatehouse(&host, &["sessions", "events", SESSION, "--json"]).await;
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["sequence"], 43);
    assert_eq!(lines[0]["type"], "execution.stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_follow_resumes_after_the_last_sequence_until_sigint() {
    let Some(frames) = events_example() else {
        return;
    };
    let newer = event_frame(
        44,
        NEWER_TURN,
        "execution.started",
        json!({"started_at": "2026-09-24T10:00:02Z"}),
    );
    let connections = Arc::new(AtomicUsize::new(0));
    let seen = connections.clone();
    let host = host(move |index, _| {
        seen.fetch_add(1, Ordering::SeqCst);
        if index == 0 {
            // The replayed event, then the connection drops.
            Answer::Sse {
                frames: frames[..2].to_vec(),
                hold: false,
            }
        } else {
            // The replay repeats 43, then 44; ready; a live frame; then it stays open.
            let mut again = vec![frames[0].clone(), frames[1].clone(), newer.clone()];
            again.extend_from_slice(&frames[2..4]);
            Answer::Sse {
                frames: again,
                hold: true,
            }
        }
    })
    .await;
    let mut cmd = agenta_command(&host);
    cmd.args(["sessions", "events", SESSION, "--after", "42", "--follow"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while connections.load(Ordering::SeqCst) < 2 {
        assert!(Instant::now() < deadline, "no reconnect");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Let it print what the second connection holds, then Ctrl-C.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[0].starts_with("#43  execution.stopped"), "{lines:?}");
    assert_eq!(
        lines[1],
        format!("#44  execution.started  execution {NEWER_TURN}  2026-09-24T10:00:01Z")
    );
    assert_eq!(
        lines[2],
        format!("live  message.delta  execution {CONTINUATION}  2026-09-24T10:00:00Z")
    );
    let err = stderr(&out);
    assert!(err.contains("connection lost (attempt 1)"), "{err}");
    let targets: Vec<String> = host.requests().iter().map(|r| r.target.clone()).collect();
    assert!(targets[0].contains("after=42"), "{targets:?}");
    assert!(targets[1].contains("after=43"), "{targets:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_follow_ends_when_the_host_closes_for_good() {
    let Some(frames) = events_example() else {
        return;
    };
    // The recorded stream ends with `relay-close` `authorization_revoked`, reconnect false.
    let host = host(move |_, _| Answer::Sse {
        frames: frames.clone(),
        hold: false,
    })
    .await;
    let out = gatehouse(&host, &["sessions", "events", SESSION, "--follow"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().count(), 2, "{}", stdout(&out));
    assert!(
        stderr(&out).contains(&format!(
            "error: the host closed the event stream of session {SESSION} for good (authorization_revoked)"
        )),
        "{}",
        stderr(&out)
    );
    assert_eq!(host.requests().len(), 1, "not reconnected");
}

// ---- help -----------------------------------------------------------------------------

#[test]
fn help_names_the_commands_and_their_flags() {
    let help = |args: &[&str]| {
        let out = gatehouse_without_env().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        text(&out.stdout)
    };
    let top = help(&["--help"]);
    assert!(top.contains("sessions"), "{top}");
    let sessions = help(&["sessions", "--help"]);
    for word in ["stop", "snapshot", "events"] {
        assert!(sessions.contains(word), "{word} in {sessions}");
    }
    let stop = help(&["sessions", "stop", "--help"]);
    for flag in [
        "--expected-execution <ID>",
        "--wait",
        "--wait-timeout <SECONDS>",
        "--idempotency-key <KEY>",
    ] {
        assert!(stop.contains(flag), "{flag} in {stop}");
    }
    let events = help(&["sessions", "events", "--help"]);
    for flag in ["--after <N>", "--follow"] {
        assert!(events.contains(flag), "{flag} in {events}");
    }
    let respond = help(&["interactions", "respond", "--help"]);
    for flag in [
        "--expected-execution <ID>",
        "--session <SESSION>",
        "--idempotency-key <KEY>",
    ] {
        assert!(respond.contains(flag), "{flag} in {respond}");
    }
    // --wait-timeout needs --wait.
    let out = gatehouse_without_env()
        .args(["sessions", "stop", SESSION, "--wait-timeout", "5"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
