//! The HTTP layer over a raw TCP socket: every answer is the JSON error envelope, even
//! to bytes that are not HTTP (hyper's own answers are rewritten), bad path encodings
//! answer JSON, a slow client is cut off at the header-read timeout, and one address
//! cannot hold more connections than its cap.

use std::time::Duration;

use crate::common::Harness;
use gatehouse_server::testing::TestServerOptions;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A generous bound for reads: the server closes every connection these tests open
/// (after an error, or at the header-read timeout); this only stops a broken server from
/// hanging the suite.
const SAFETY: Duration = Duration::from_secs(60);

struct Answer {
    status: u16,
    head: String,
    body: Value,
}

/// Parse every response in `bytes` (bodies by `content-length`).
fn parse_answers(bytes: &[u8]) -> Vec<Answer> {
    let mut answers = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let split = rest
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("no complete head in {:?}", String::from_utf8_lossy(rest)));
        let head = String::from_utf8_lossy(&rest[..split]).to_string();
        let status: u16 = head.split(' ').nth(1).unwrap().parse().unwrap();
        let length: usize = head
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse().unwrap())
            })
            .unwrap_or_else(|| panic!("no content-length in {head}"));
        let body = &rest[split + 4..split + 4 + length];
        answers.push(Answer {
            status,
            head: head.to_lowercase(),
            body: serde_json::from_slice(body)
                .unwrap_or_else(|_| panic!("not JSON: {head}\n{}", String::from_utf8_lossy(body))),
        });
        rest = &rest[split + 4 + length..];
    }
    answers
}

/// Send `request` on a fresh connection and read until the server closes it.
async fn exchange(h: &Harness, request: &[u8]) -> Vec<Answer> {
    let mut stream = TcpStream::connect(h.server.server.local_addr())
        .await
        .unwrap();
    stream.write_all(request).await.unwrap();
    let mut received = Vec::new();
    tokio::time::timeout(SAFETY, stream.read_to_end(&mut received))
        .await
        .expect("the server must close the connection")
        .unwrap();
    parse_answers(&received)
}

fn assert_json_error(answer: &Answer, status: u16, envelope: &str) {
    assert_eq!(answer.status, status, "{} {}", answer.head, answer.body);
    assert!(
        answer.head.contains("content-type: application/json"),
        "{}",
        answer.head
    );
    match envelope {
        "agenta" => {
            assert!(answer.body["code"].is_string(), "{}", answer.body);
            assert!(answer.body.get("detail").is_some(), "{}", answer.body);
        }
        _ => {
            assert!(answer.body["error"]["code"].is_string(), "{}", answer.body);
            assert!(
                answer.body["error"]["message"].is_string(),
                "{}",
                answer.body
            );
        }
    }
}

#[tokio::test]
async fn bytes_that_are_not_http_get_a_json_error() {
    let h = Harness::start().await;
    let cases: [&[u8]; 7] = [
        b"GARBAGE\r\n\r\n",
        b"\xff\xfe\xfd\xfc\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nthis is not a header\r\n\r\n",
        b"GET /api/capabilities HTTP/9.9\r\nHost: x\r\n\r\n",
        b"G\x00ET /api/capabilities HTTP/1.1\r\n\r\n",
        b"GET /api/\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n",
        b"POST /api/invoke HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n",
    ];
    for request in cases {
        let answers = exchange(&h, request).await;
        assert_eq!(answers.len(), 1, "{:?}", String::from_utf8_lossy(request));
        let answer = &answers[0];
        assert!(
            (400..500).contains(&answer.status),
            "{:?}: {}",
            String::from_utf8_lossy(request),
            answer.head
        );
        assert_json_error(answer, answer.status, "agenta");
    }
    // A head over hyper's limit: 431, JSON.
    let mut huge = b"GET /api/capabilities HTTP/1.1\r\nHost: x\r\nX-Big: ".to_vec();
    huge.extend(std::iter::repeat_n(b'a', 1024 * 1024));
    huge.extend_from_slice(b"\r\n\r\n");
    let answers = exchange(&h, &huge).await;
    assert_json_error(&answers[0], 431, "agenta");
    // The server still answers.
    let (status, _) = h.get("/api/capabilities").await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_bad_request_after_a_good_one_on_the_same_connection() {
    let h = Harness::start().await;
    let request = b"GET /api/capabilities HTTP/1.1\r\nHost: x\r\n\r\nNOT HTTP AT ALL\r\n\r\n";
    let answers = exchange(&h, request).await;
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[0].status, 200);
    assert_eq!(answers[0].body["service"], "gatehouse");
    assert_json_error(&answers[1], 400, "agenta");
}

#[tokio::test]
async fn bad_path_encodings_answer_json() {
    let h = Harness::start().await;
    let auth = h.server.authorization();
    let project = h.server.project_id.clone();
    for (path, envelope) in [
        ("/api/sessions/interactions/%FF%FE", "agenta"),
        ("/api/sessions/interactions/%FF%FE/respond", "agenta"),
        ("/api/sessions/%C3%28/turns", "agenta"),
        ("/api/sessions/interactions/%zz", "agenta"),
        ("/api/rooms/%FF/execution-sessions/%FE", "agentplat"),
        ("/api/rooms/r/execution-sessions/%FF%FE/events", "agentplat"),
        ("/api/nothing/%FF", "agenta"),
    ] {
        for authorization in [Some(auth.as_str()), None] {
            let method = if path.ends_with("respond") {
                "POST"
            } else {
                "GET"
            };
            let mut request = format!(
                "{method} {path}?project_id={project} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n"
            );
            if let Some(authorization) = authorization {
                request.push_str(&format!("Authorization: {authorization}\r\n"));
            }
            request.push_str("\r\n");
            let answers = exchange(&h, request.as_bytes()).await;
            let answer = &answers[0];
            assert!(answer.status >= 400, "{path}: {}", answer.head);
            assert_json_error(answer, answer.status, envelope);
        }
    }
    // A query value that is not UTF-8 once decoded is refused by its own check.
    let response = h
        .http
        .post(format!(
            "{}/api/sessions/interactions/query?project_id=%FF",
            h.server.base_url
        ))
        .header("Authorization", h.server.authorization())
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    let (status, body) = crate::common::decode(response).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["detail"][0]["loc"],
        serde_json::json!(["query", "project_id"])
    );
}

#[tokio::test]
async fn a_slow_client_is_cut_off_at_the_header_read_timeout() {
    let h = Harness::with(TestServerOptions {
        header_read_timeout: Some(Duration::from_secs(1)),
        ..Default::default()
    })
    .await;
    let mut slow = TcpStream::connect(h.server.server.local_addr())
        .await
        .unwrap();
    slow.write_all(b"GET /api/capabilities HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    // Another client is served meanwhile.
    let (status, _) = h.get("/api/capabilities").await;
    assert_eq!(status, 200);
    // The slow one never finishes its head: the server closes the connection.
    let mut buffer = Vec::new();
    let read = tokio::time::timeout(SAFETY, slow.read_to_end(&mut buffer))
        .await
        .expect("the server must close a connection whose head never completes");
    assert!(read.is_err() || buffer.is_empty() || buffer.starts_with(b"HTTP/1.1 4"));
    // A client that connects and sends nothing is cut off the same way.
    let mut silent = TcpStream::connect(h.server.server.local_addr())
        .await
        .unwrap();
    let mut buffer = Vec::new();
    let read = tokio::time::timeout(SAFETY, silent.read_to_end(&mut buffer))
        .await
        .expect("the server must close a silent connection");
    assert!(read.is_err() || buffer.is_empty(), "{buffer:?}");
}

#[tokio::test]
async fn one_address_cannot_hold_more_connections_than_its_cap() {
    let h = Harness::with(TestServerOptions {
        max_connections_per_client: Some(3),
        ..Default::default()
    })
    .await;
    let addr = h.server.server.local_addr();
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        // A complete request proves the connection is accepted and served.
        stream
            .write_all(b"GET /api/capabilities HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut first = [0u8; 12];
        stream.read_exact(&mut first).await.unwrap();
        assert_eq!(&first, b"HTTP/1.1 200");
        held.push(stream);
    }
    let over = exchange(&h, b"GET /api/capabilities HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert_json_error(&over[0], 503, "agenta");
    assert_eq!(over[0].body["code"], "UNAVAILABLE");
    assert!(over[0].body["detail"].as_str().unwrap().contains('3'));

    // Closing one frees its slot (once the server sees the close).
    drop(held.pop());
    let served = crate::common::wait_until(SAFETY, || async {
        let answers = exchange(
            &h,
            b"GET /api/capabilities HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .await;
        answers[0].status == 200
    })
    .await;
    assert!(served, "a freed slot must be usable again");
}

/// Issue 37, item 5: by default one address may hold a quarter of the connections, so
/// one holding its whole share (and trying for every connection) with slow request heads
/// leaves room for everyone else: `/health` from another loopback address answers.
#[tokio::test]
async fn one_address_cannot_take_every_connection_by_default() {
    const TOTAL: usize = 16;
    let h = Harness::with(TestServerOptions {
        max_connections: Some(TOTAL),
        ..Default::default()
    })
    .await;
    let addr = h.server.server.local_addr();
    // As many slow heads from 127.0.0.1 as the server has connections in all.
    let mut slow = Vec::new();
    for _ in 0..TOTAL {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        slow.push(stream);
    }
    // Connections are taken in the order they were made, so all of those are counted
    // before this one.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
    let mut other = socket.connect(addr).await.unwrap();
    other
        .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(SAFETY, other.read_to_end(&mut answer))
        .await
        .expect("/health from another address must answer")
        .expect("/health from another address must answer, not reset");
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 200"),
        "/health from 127.0.0.2 while 127.0.0.1 holds its share: {answer}"
    );
    // The slow ones over the share (a quarter) were refused with a typed 503.
    let share = TOTAL / 4;
    for mut refused in slow.split_off(share) {
        let mut bytes = Vec::new();
        let _ = tokio::time::timeout(SAFETY, refused.read_to_end(&mut bytes)).await;
        let answers = parse_answers(&bytes);
        assert_json_error(&answers[0], 503, "agenta");
        assert!(
            answers[0].body["detail"]
                .as_str()
                .unwrap()
                .contains("from this address"),
            "{}",
            answers[0].body
        );
    }
    drop(slow);
}

/// Issue 37, item 10: a client over the connection cap that sends a body reads the 503
/// (the server reads and discards a bounded amount before it closes) instead of a reset.
#[tokio::test]
async fn a_refused_client_sending_a_body_reads_the_503() {
    let h = Harness::with(TestServerOptions {
        max_connections_per_client: Some(1),
        ..Default::default()
    })
    .await;
    let addr = h.server.server.local_addr();
    let mut held = TcpStream::connect(addr).await.unwrap();
    held.write_all(b"GET /api/capabilities HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut first = [0u8; 12];
    held.read_exact(&mut first).await.unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");

    let body = vec![b' '; 256 * 1024];
    let head = format!(
        "POST /api/sessions/interactions/query?project_id={} HTTP/1.1\r\nHost: x\r\n\
         Authorization: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        h.server.project_id,
        h.server.authorization(),
        body.len()
    );
    let mut over = TcpStream::connect(addr).await.unwrap();
    over.write_all(head.as_bytes()).await.unwrap();
    // Give the server time to answer and (before the fix) close, so what follows runs
    // into the closed socket; any order is right after the fix.
    tokio::time::sleep(Duration::from_millis(200)).await;
    over.write_all(&body)
        .await
        .expect("writing the body of a refused request must not break the pipe");
    let mut bytes = Vec::new();
    tokio::time::timeout(SAFETY, over.read_to_end(&mut bytes))
        .await
        .expect("the refused connection must end")
        .expect("the refused client must read the 503, not a reset");
    let answers = parse_answers(&bytes);
    assert_json_error(&answers[0], 503, "agenta");
    assert_eq!(answers[0].body["code"], "UNAVAILABLE");
    drop(held);
}

/// A client that sends a request and goes away at once does not cancel it half-way: the
/// turn it asked for is recorded, and no database connection is left mid-transaction for
/// the requests after it (each would have answered 500).
#[tokio::test]
async fn a_request_runs_to_its_end_when_the_client_goes_away() {
    let h = Harness::start().await;
    let addr = h.server.server.local_addr();
    for i in 0..40 {
        let body = serde_json::json!({
            "session_id": format!("gone-{i}"),
            "data": {"inputs": {"messages": crate::common::user("go")}, "parameters": crate::common::config("m", "ask")}
        })
        .to_string();
        let request = format!(
            "POST /api/invoke?project_id={} HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            h.server.project_id,
            h.server.authorization(),
            body.len()
        );
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        if i % 2 == 0 {
            stream.shutdown().await.unwrap();
        }
        drop(stream);
    }
    for i in 0..40 {
        let session = format!("gone-{i}");
        let recorded = crate::common::wait_until(SAFETY, || async {
            h.get(&format!("/api/sessions/{session}/turns")).await.0 == 200
        })
        .await;
        assert!(recorded, "the turn of {session} was not recorded");
        let (status, body) = h
            .post(
                "/api/sessions/interactions/query",
                serde_json::json!({"query": {"session_id": session}}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["count"], 1, "{body}");
    }
}
