//! Test helpers: a scripted raw-TCP HTTP/1.1 server for hostile answers (the fake hosts of
//! `hostile`, `agenta_live`, `durable` and the others: its requests, the answers they
//! write), and a log capture for tracing output.
#![allow(dead_code)]

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gatehouse_client::{Client, ClientBuilder, RetryPolicy, Upstream};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One parsed request.
#[derive(Debug, Clone)]
pub struct Req {
    pub method: String,
    /// Path with query.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Req {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// The body as JSON (a test's own client sent it: it parses).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// Read one request (head and Content-Length body); `None` on EOF or garbage.
pub async fn read_request(stream: &mut TcpStream) -> Option<Req> {
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
            return None;
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

/// A complete response with Content-Length and `Connection: close`.
pub fn response(status: u16, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

pub fn json(status: u16, body: serde_json::Value) -> Vec<u8> {
    response(status, "application/json", body.to_string().as_bytes())
}

/// The head of an event stream that runs until the connection closes (no length).
pub const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";

/// A complete event stream of `frames` (SSE text each), then the connection closes.
pub fn sse(frames: &[String]) -> Vec<u8> {
    let body: String = frames.concat();
    response(200, "text/event-stream", body.as_bytes())
}

/// Agenta's (and Gatehouse's legacy) 409 on a respond to a gate no longer pending.
pub fn not_pending() -> Vec<u8> {
    json(
        409,
        serde_json::json!({"detail": "Interaction is no longer pending"}),
    )
}

/// A 200 `{count: 1, interaction}` of the row [`row_json`] writes: a respond's (legacy)
/// or a read's answer.
pub fn row_answer(id: &str, status: &str, resolution: serde_json::Value) -> Vec<u8> {
    json(
        200,
        serde_json::json!({"count": 1, "interaction": row_json(id, status, resolution)}),
    )
}

/// A scripted server: every connection's first request goes to `handler` with the
/// connection's index (from 0) and the stream, which the handler may answer, stall
/// or drop.
pub struct RawServer {
    pub url: String,
    pub connections: Arc<AtomicUsize>,
    pub requests: Arc<Mutex<Vec<Req>>>,
}

impl RawServer {
    pub fn connection_count(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    pub fn requests(&self) -> Vec<Req> {
        self.requests.lock().unwrap().clone()
    }

    /// The methods of the requests received, in order.
    pub fn methods(&self) -> Vec<String> {
        self.requests().iter().map(|r| r.method.clone()).collect()
    }
}

pub async fn serve<F, Fut>(handler: F) -> RawServer
where
    F: Fn(usize, Req, TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let handler = Arc::new(handler);
    {
        let connections = connections.clone();
        let requests = requests.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                let index = connections.fetch_add(1, Ordering::SeqCst);
                let handler = handler.clone();
                let requests = requests.clone();
                tokio::spawn(async move {
                    if let Some(req) = read_request(&mut stream).await {
                        requests.lock().unwrap().push(req.clone());
                        handler(index, req, stream).await;
                    }
                });
            }
        });
    }
    RawServer {
        url,
        connections,
        requests,
    }
}

/// Write `bytes` and close the connection cleanly.
pub async fn reply(mut stream: TcpStream, bytes: Vec<u8>) {
    let _ = stream.write_all(&bytes).await;
    let _ = stream.shutdown().await;
}

/// Drop the connection with a TCP reset.
pub fn reset(stream: TcpStream) {
    let _ = stream.set_zero_linger();
    drop(stream);
}

/// A fast retry policy for tests.
pub fn quick_retries(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        initial_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(20),
    }
}

pub const TEST_KEY: &str = "gh-test-key-5f2b9c1e";
pub const TEST_PROJECT: &str = "019fac94-0000-7000-8000-0000000000aa";

pub fn client(url: &str, attempts: u32) -> Client {
    client_builder(url, attempts).build().unwrap()
}

/// A client pinned to Agenta's contract before v0.121 (as [`client`] builds one
/// otherwise): for fake hosts that answer every request from one script, where the
/// capabilities request a plain respond first sends would take a scripted answer.
pub fn legacy_client(url: &str, attempts: u32) -> Client {
    client_builder(url, attempts)
        .agenta_contract(gatehouse_client::AgentaContract::Legacy)
        .build()
        .unwrap()
}

/// A client of `upstream` at `url`, as [`client`] builds one.
pub fn upstream_client(url: &str, upstream: Upstream, attempts: u32) -> Client {
    client_builder(url, attempts)
        .upstream(upstream)
        .build()
        .unwrap()
}

/// What [`client`] builds: the test key and project, a 5 s timeout, `attempts` quick
/// retries.
pub fn client_builder(url: &str, attempts: u32) -> ClientBuilder {
    Client::builder(url)
        .api_key(TEST_KEY)
        .project_id(TEST_PROJECT)
        .timeout(Duration::from_secs(5))
        .retry_policy(quick_retries(attempts))
}

/// A minimal row as a server would render it.
pub fn row_json(id: &str, status: &str, resolution: serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "id": id, "project_id": TEST_PROJECT, "session_id": "s-1", "turn_id": "t-1",
        "token": format!("tok-{id}"), "kind": "user_approval", "status": status,
        "data": {"request": {"tool": "Bash", "args": {"command": "echo hi"}, "tool_call_id": "toolu_01"},
                 "references": null, "selector": null, "resolution": resolution},
        "flags": {"delivered_in_band": false, "delivered_webhook": false},
        "tags": null, "meta": null, "created_at": "2026-07-29T06:34:12Z", "updated_at": null,
        "deleted_at": null, "created_by_id": null, "updated_by_id": null, "deleted_by_id": null
    })
}

/// Captured tracing output.
#[derive(Clone, Default)]
pub struct LogBuffer(pub Arc<Mutex<Vec<u8>>>);

impl LogBuffer {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogBuffer {
    type Writer = LogBuffer;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// A subscriber that records every span close and event at TRACE into `buffer`.
pub fn capture_subscriber(buffer: LogBuffer) -> impl tracing::Subscriber + Send + Sync {
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_ansi(false)
        .with_writer(buffer)
        .finish()
}

// ---------------------------------------------------------------------------------
// The reference server.
// ---------------------------------------------------------------------------------

use gatehouse_server::testing::{self, TestServer, TestServerOptions};

pub async fn reference_server() -> TestServer {
    testing::spawn(TestServerOptions::default()).await
}

pub async fn reference_server_with(opts: TestServerOptions) -> TestServer {
    testing::spawn(opts).await
}

/// A SQLite file (`None`), and a fresh PostgreSQL database when
/// `GATEHOUSE_TEST_DATABASE_URL=postgres://...` is set: the databases a test runs on.
pub async fn databases() -> Vec<Option<String>> {
    let mut urls = vec![None];
    if let Some(base) = std::env::var("GATEHOUSE_TEST_DATABASE_URL")
        .ok()
        .filter(|url| url.starts_with("postgres"))
    {
        let url = testing::fresh_postgres_database(&base)
            .await
            .expect("a fresh Postgres database");
        urls.push(Some(url));
    }
    urls
}

pub fn client_for(server: &TestServer) -> Client {
    client_via(server, &server.base_url)
}

/// A client for `server`'s key and project that talks to `url` (e.g. a proxy).
pub fn client_via(server: &TestServer, url: &str) -> Client {
    Client::builder(url)
        .api_key(&server.api_key)
        .project_id(&server.project_id)
        .timeout(Duration::from_secs(10))
        .retry_policy(quick_retries(3))
        .build()
        .unwrap()
}

/// Invoke a turn whose config asks before `Bash`, and return the gate's id.
pub async fn open_gate(server: &TestServer, session_id: &str, model: &str) -> String {
    open_gate_with(
        server,
        session_id,
        serde_json::json!({"agent": {
            "llm": {"model": model},
            "runner": {"permissions": {"default": "ask"}},
            "script": [{"tool": "Bash", "args": {"command": "ls"}}, {"say": "done"}]
        }}),
    )
    .await
}

pub async fn open_gate_with(
    server: &TestServer,
    session_id: &str,
    parameters: serde_json::Value,
) -> String {
    let response = reqwest::Client::new()
        .post(server.url("/api/invoke"))
        .header("Authorization", server.authorization())
        .json(&serde_json::json!({
            "session_id": session_id,
            "data": {"inputs": {"messages": [{"role": "user", "content": "list files"}]}, "parameters": parameters}
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: gatehouse_wire::invoke::InvokeResponse = response.json().await.unwrap();
    assert_eq!(
        body.status,
        gatehouse_wire::invoke::TurnStatus::Parked,
        "{body:?}"
    );
    body.interaction_ids[0].clone()
}

/// What a proxy does with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyAction {
    /// Forward and relay the answer.
    Forward,
    /// Forward, wait for the server's answer, then drop the client connection
    /// without replying: the request landed, the client cannot know.
    ForwardThenDrop,
    /// Forward without the `Idempotency-Key` header (a host that ignores it).
    ForwardWithoutIdempotencyKey,
}

/// A one-request-per-connection HTTP proxy in front of `upstream` (http://host:port).
pub async fn proxy<F>(upstream: &str, decide: F) -> RawServer
where
    F: Fn(&Req) -> ProxyAction + Send + Sync + 'static,
{
    let upstream = upstream.trim_start_matches("http://").to_string();
    let decide = Arc::new(decide);
    serve(move |_, req, mut client_stream| {
        let upstream = upstream.clone();
        let decide = decide.clone();
        async move {
            let action = decide(&req);
            let mut head = format!("{} {} HTTP/1.1\r\n", req.method, req.target);
            for (name, value) in &req.headers {
                if name.eq_ignore_ascii_case("connection")
                    || (action == ProxyAction::ForwardWithoutIdempotencyKey
                        && name.eq_ignore_ascii_case("idempotency-key"))
                {
                    continue;
                }
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("connection: close\r\n\r\n");
            let mut upstream_stream = TcpStream::connect(&upstream).await.unwrap();
            upstream_stream.write_all(head.as_bytes()).await.unwrap();
            upstream_stream.write_all(&req.body).await.unwrap();
            let mut answer = Vec::new();
            upstream_stream.read_to_end(&mut answer).await.unwrap();
            if action == ProxyAction::ForwardThenDrop {
                drop(client_stream);
                return;
            }
            let _ = client_stream.write_all(&answer).await;
            let _ = client_stream.shutdown().await;
        }
    })
    .await
}
