//! Idle watchers against the open-file limit (issue 23, item 8): a server started with
//! `prlimit --nofile=512:512` refuses the watch stream over its cap at once (503, a
//! typed body, `Retry-After`) instead of running out of file descriptors, and `/health`
//! and an invoke on new connections still answer promptly. And past its caps: when the
//! process has no descriptor left at all (its limit lowered under it), `accept()` fails
//! with `EMFILE`; the server backs off and goes on, and answers `/health` again once
//! the connections over the limit are closed.

use crate::common;

use std::time::{Duration, Instant};

use gatehouse_server::testing::{ChildServer, ChildServerOptions};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The entry test a child server process runs (see [`ChildServer`]).
const ENTRY: &str = "fd_limit_child_server";

/// The open-file limit the server runs under.
const OPEN_FILES: u32 = 512;

/// More watchers than the limit: the server must refuse before the last.
const MOST_WATCHERS: usize = 700;

/// How long an answer may take before it counts as hung.
const PROMPT: Duration = Duration::from_secs(3);

#[test]
#[ignore = "the server of a child process; the fd-limit test starts it"]
fn fd_limit_child_server() {
    gatehouse_server::testing::serve_child_if_asked(ENTRY);
}

#[tokio::test]
async fn watchers_over_the_cap_are_refused_and_new_connections_still_answer() {
    let server = ChildServer::spawn(&ChildServerOptions {
        entry: ENTRY.to_string(),
        wrapper: vec![
            "prlimit".to_string(),
            format!("--nofile={OPEN_FILES}:{OPEN_FILES}"),
        ],
        env: vec![("RUST_LOG".to_string(), "error".to_string())],
        // Every watcher comes from one address: no per-address cap, so the caps
        // measured are the event streams' and the open-file limit's.
        max_connections_per_client: Some(0),
        ..ChildServerOptions::default()
    })
    .expect("a server under a low open-file limit");
    let address = server.base_url.trim_start_matches("http://").to_string();
    let watch = format!(
        "GET /api/sessions/streams/watch?session_id=idle&project_id={} HTTP/1.1\r\n\
         Host: {address}\r\nAuthorization: {}\r\n\r\n",
        server.project_id,
        server.authorization()
    );

    let mut open = Vec::new();
    let mut refusal = None;
    for n in 0..MOST_WATCHERS {
        match open_watcher(&address, &watch).await {
            Ok((stream, head)) if head.starts_with("HTTP/1.1 200") => open.push(stream),
            Ok((_, head)) => {
                refusal = Some((n, head));
                break;
            }
            Err(why) => panic!(
                "watcher {n} got no answer ({why}) with {} watchers open: the server ran out of file descriptors instead of refusing",
                open.len()
            ),
        }
    }
    let Some((refused_at, head)) = refusal else {
        panic!(
            "{MOST_WATCHERS} watchers were all accepted under an open-file limit of {OPEN_FILES}"
        );
    };
    eprintln!("fd_limit.rs: {refused_at} watchers open, the next refused");
    assert!(head.starts_with("HTTP/1.1 503"), "{head}");
    let lower = head.to_ascii_lowercase();
    assert!(
        lower.contains("\r\nretry-after: "),
        "no Retry-After: {head}"
    );
    let body: Value = serde_json::from_str(head.split("\r\n\r\n").nth(1).unwrap_or_default())
        .unwrap_or_else(|err| panic!("the refusal's body is not JSON ({err}): {head}"));
    assert_eq!(body["code"], "UNAVAILABLE", "{body}");

    // New connections, with every watcher still open: answered, promptly.
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .timeout(PROMPT)
        .build()
        .unwrap();
    let started = Instant::now();
    let health = http
        .get(format!("{}/health", server.base_url))
        .send()
        .await
        .expect("/health answers with the watchers open");
    assert_eq!(health.status().as_u16(), 200);
    let invoke = http
        .post(server.url("/api/invoke"))
        .header("Authorization", server.authorization())
        .json(&json!({
            "session_id": "busy",
            "data": {"inputs": {"messages": common::user("hi")},
                     "parameters": common::config("m", "allow")},
        }))
        .send()
        .await
        .expect("an invoke answers with the watchers open");
    let (status, answer) = common::decode(invoke).await;
    assert_eq!(status, 200, "{answer}");
    assert!(started.elapsed() < PROMPT, "{:?}", started.elapsed());
    drop(open);
}

/// Descriptors left to the server over those it holds: two for connections, and room
/// for its SQLite pool to fill (8 connections, up to 3 descriptors each), which its own
/// budget reserves too (else the pool takes them and nothing is accepted again).
const SPARE: usize = 2 + 8 * gatehouse_server::limits::FDS_PER_DATABASE_CONNECTION;

/// Connections opened at once while the server has no descriptor to spare.
const OVER_THE_LIMIT: usize = SPARE + 14;

#[tokio::test]
async fn accept_failing_for_want_of_descriptors_backs_off_and_serves_again_once_they_close() {
    let server = ChildServer::spawn(&ChildServerOptions {
        entry: ENTRY.to_string(),
        wrapper: vec![
            "prlimit".to_string(),
            format!("--nofile={OPEN_FILES}:{OPEN_FILES}"),
        ],
        env: vec![("RUST_LOG".to_string(), "error".to_string())],
        ..ChildServerOptions::default()
    })
    .expect("a server under a low open-file limit");
    let address = server.base_url.trim_start_matches("http://").to_string();
    let health = format!("GET /health HTTP/1.1\r\nHost: {address}\r\n\r\n");
    let (_, head) = open_watcher(&address, &health)
        .await
        .expect("/health first");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");

    // Leave the process [`SPARE`] descriptors more than it holds: its own caps (derived
    // from 512 at start) no longer stop it before accept() fails with EMFILE.
    let pid = server.pid();
    let held = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("the child's descriptors")
        .count();
    let lowered = held + SPARE;
    let status = std::process::Command::new("prlimit")
        .args([
            "--pid",
            &pid.to_string(),
            &format!("--nofile={lowered}:{lowered}"),
        ])
        .status()
        .expect("prlimit runs");
    assert!(status.success(), "prlimit --pid {pid}: {status}");

    // Connections over the limit: the kernel completes them, the server cannot take
    // them (no descriptor), so some are never answered while the others are open.
    let mut connections = Vec::new();
    let mut answered = 0;
    for _ in 0..OVER_THE_LIMIT {
        let mut stream = TcpStream::connect(&address)
            .await
            .expect("the kernel accepts");
        stream.write_all(health.as_bytes()).await.unwrap();
        let mut buf = [0u8; 1024];
        if let Ok(Ok(n)) =
            tokio::time::timeout(Duration::from_millis(500), stream.read(&mut buf)).await
        {
            answered += usize::from(n > 0);
        }
        connections.push(stream);
    }
    assert!(
        answered < OVER_THE_LIMIT,
        "all {OVER_THE_LIMIT} connections were answered with {lowered} descriptors allowed: the limit was never reached"
    );

    // Close them all: the server takes the closed ones off its backlog as descriptors
    // come free (its accept loop backs off, at most 1 s, and goes on), then answers.
    drop(connections);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match open_watcher(&address, &health).await {
            Ok((_, head)) if head.starts_with("HTTP/1.1 200") => break,
            other => assert!(
                Instant::now() < deadline,
                "/health never answered again after the connections over the limit closed: {other:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Open a watch stream on a new connection and read its answer's head (and, for an
/// error, its body): `Err` when nothing comes within [`PROMPT`].
async fn open_watcher(address: &str, request: &str) -> Result<(TcpStream, String), String> {
    let exchange = async {
        let mut stream = TcpStream::connect(address)
            .await
            .map_err(|err| format!("connect: {err}"))?;
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|err| format!("write: {err}"))?;
        let mut answer = Vec::new();
        let mut buf = [0u8; 4096];
        // A 200 is done at its head (the stream goes on); an error answer at the end of
        // its body.
        loop {
            let n = stream
                .read(&mut buf)
                .await
                .map_err(|err| format!("read: {err}"))?;
            answer.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&answer).into_owned();
            if n == 0 || answer_complete(&text) {
                return Ok((stream, text));
            }
        }
    };
    match tokio::time::timeout(PROMPT, exchange).await {
        Ok(result) => result,
        Err(_) => Err(format!("no answer within {PROMPT:?}")),
    }
}

/// True when `text` holds a whole answer head, and for anything but a 200 its whole
/// body (`content-length`).
fn answer_complete(text: &str) -> bool {
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    if head.starts_with("HTTP/1.1 200") {
        return true;
    }
    let length = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse::<usize>().ok());
    length.is_some_and(|length| body.len() >= length)
}
