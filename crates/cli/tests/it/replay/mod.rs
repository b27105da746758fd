//! AgentPlat's recorded Rooms API exchanges (`gatehouse_fixtures`, `agentplat/*.json`)
//! and a small loopback HTTP server that answers with them: each request is matched,
//! in order, against the next recorded exchange a client makes (method and path; the
//! query, the tenant and `Authorization` headers and the JSON body when the client can
//! send them as recorded), and answered with the recorded status, content type and body.
//! Setup steps (`driver`: `/_host/...` harness controls, room and agent creation) and
//! routes a client of execution sessions never calls (`/health`, room state) are not
//! expected. A stream recorded as read until the client stopped stays open after its
//! body, until the client hangs up.
#![allow(dead_code)]

pub mod agenta;

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// Which execution route a recorded request is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `GET /rooms/{room}/execution-sessions/{session}`.
    GetSession,
    /// `POST .../interventions`.
    RequestIntervention,
    /// `GET .../events`.
    ListEvents,
    /// `GET .../events/stream`.
    StreamEvents,
}

/// One recorded exchange a client of execution sessions makes.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// Its place in the file (for messages).
    pub index: usize,
    pub route: Route,
    pub room: String,
    pub session: String,
    pub method: String,
    pub path: String,
    pub query: BTreeMap<String, String>,
    /// Request headers as recorded (lowercase names).
    pub headers: BTreeMap<String, String>,
    /// The JSON body sent (`None` for no body or a raw text body).
    pub body: Option<Value>,
    /// The exact text sent when the body was recorded raw (empty, malformed, an array).
    pub raw_body: Option<String>,
    pub status: u16,
    pub content_type: String,
    /// The JSON answer, or (for a stream) the raw SSE text as a string.
    pub response: Value,
    /// `server_closed_stream` or `client_stopped_reading_after_...` (streams only).
    pub stream_end: Option<String>,
}

impl Exchange {
    /// The tenant header the request carried (a blank one, which no client of this
    /// repository sends, reads as none).
    pub fn tenant(&self) -> Option<&str> {
        self.headers
            .get("x-agentplat-tenant-id")
            .map(String::as_str)
            .filter(|t| !t.trim().is_empty())
    }

    /// The Bearer token the request carried (`None` without one or with another scheme).
    pub fn bearer(&self) -> Option<&str> {
        self.headers
            .get("authorization")
            .and_then(|a| a.strip_prefix("Bearer "))
    }

    /// The `after` query value as a number, when it is one.
    pub fn after(&self) -> Option<u64> {
        self.query.get("after").and_then(|a| a.parse().ok())
    }

    /// True when the recorded `after` is not a number a stream client can send (the
    /// event list passes any value through).
    pub fn after_unsendable(&self) -> bool {
        self.route == Route::StreamEvents
            && self.query.contains_key("after")
            && self.after().is_none()
    }

    /// The recorded body's string field `key`.
    pub fn body_str(&self, key: &str) -> Option<&str> {
        self.body.as_ref()?.get(key)?.as_str()
    }

    /// True when a client of this repository can send this request exactly as recorded.
    pub fn sendable_exactly(&self) -> bool {
        if self.after_unsendable() {
            return false;
        }
        let auth = self.headers.get("authorization");
        if auth.is_some() && self.bearer().is_none() {
            return false; // another scheme (`Basic ...`)
        }
        if self.headers.contains_key("last-event-id")
            || self
                .headers
                .get("x-agentplat-tenant-id")
                .is_some_and(|t| t.trim().is_empty())
        {
            return false;
        }
        if self.route != Route::RequestIntervention {
            return true;
        }
        let Some(Value::Object(body)) = &self.body else {
            return false; // raw text: empty, malformed, an array
        };
        body.get("expectedRevision").is_some_and(Value::is_u64)
            && ["operationId", "instruction", "checkpoint"]
                .iter()
                .all(|k| body.get(*k).is_some_and(Value::is_string))
            && body
                .get("requestedByParticipantId")
                .is_none_or(Value::is_string)
            && body.len() == 4 + usize::from(body.contains_key("requestedByParticipantId"))
    }

    /// The recorded AgentPlat error `(code, message)`, for an error answer.
    pub fn error(&self) -> Option<(&str, &str)> {
        let error = self.response.get("error")?;
        Some((
            error.get("code")?.as_str()?,
            error.get("message")?.as_str()?,
        ))
    }

    /// True for a stream the client stopped reading (it stays open after its body).
    pub fn stays_open(&self) -> bool {
        self.stream_end
            .as_deref()
            .is_some_and(|end| end.starts_with("client_stopped"))
    }
}

/// One recorded scenario file.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub file: PathBuf,
    pub exchanges: Vec<Exchange>,
}

/// Split `/rooms/{room}/execution-sessions/{session}[/rest]`; `None` for another path.
fn execution_route(method: &str, path: &str) -> Option<(Route, String, String)> {
    let rest = path.strip_prefix("/rooms/")?;
    let mut parts = rest.splitn(4, '/');
    let room = parts.next()?;
    if parts.next()? != "execution-sessions" {
        return None;
    }
    let session = parts.next()?;
    let route = match (method, parts.next()) {
        ("GET", None) => Route::GetSession,
        ("POST", Some("interventions")) => Route::RequestIntervention,
        ("GET", Some("events")) => Route::ListEvents,
        ("GET", Some("events/stream")) => Route::StreamEvents,
        _ => return None,
    };
    Some((route, decode(room), decode(session)))
}

/// Percent-decoding of one path segment.
fn decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
            if let Ok(byte) = u8::from_str_radix(hex, 16) {
                out.push(byte);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn string_map(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .map(|map| {
            map.iter()
                .map(|(k, v)| {
                    let text = v
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| v.to_string());
                    (k.to_ascii_lowercase(), text)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Read one scenario file: the exchanges a client of execution sessions makes.
pub fn load(file: &Path) -> Scenario {
    let text = std::fs::read_to_string(file).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let mut exchanges = Vec::new();
    for (index, exchange) in doc["exchanges"].as_array().unwrap().iter().enumerate() {
        if exchange["driver"].as_bool() == Some(true) {
            continue;
        }
        let request = &exchange["request"];
        let response = &exchange["response"];
        let method = request["method"].as_str().unwrap().to_string();
        let path = request["path"].as_str().unwrap().to_string();
        let Some((route, room, session)) = execution_route(&method, &path) else {
            continue;
        };
        let raw = request["body_is_raw_text"].as_bool() == Some(true);
        exchanges.push(Exchange {
            index,
            route,
            room,
            session,
            method,
            path,
            query: string_map(request.get("query")),
            headers: string_map(request.get("headers")),
            body: if raw || request["body"].is_null() {
                None
            } else {
                Some(request["body"].clone())
            },
            raw_body: raw.then(|| request["body"].as_str().unwrap_or_default().to_string()),
            status: response["status"].as_u64().unwrap() as u16,
            content_type: response["headers"]["content-type"]
                .as_str()
                .unwrap_or("application/json")
                .to_string(),
            response: response["body"].clone(),
            stream_end: response["stream_end"].as_str().map(str::to_string),
        });
    }
    Scenario {
        name: doc["scenario"].as_str().unwrap_or("?").to_string(),
        file: file.to_path_buf(),
        exchanges,
    }
}

/// Every scenario file of the folder, by name.
pub fn scenarios(dir: &Path) -> Vec<Scenario> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files.iter().map(|f| load(f)).collect()
}

/// One parsed SSE frame of a recorded (or received) stream body.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: Value,
}

/// The frames with data of an SSE text (comments and data-less frames skipped).
pub fn frames(text: &str) -> Vec<Frame> {
    let normalized = text.replace("\r\n", "\n");
    normalized
        .split("\n\n")
        .filter_map(|block| {
            let mut id = None;
            let mut event = None;
            let mut data = Vec::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    id = Some(v.trim_start().to_string());
                } else if let Some(v) = line.strip_prefix("event:") {
                    event = Some(v.trim_start().to_string());
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push(v.strip_prefix(' ').unwrap_or(v).to_string());
                }
            }
            if data.is_empty() {
                return None;
            }
            Some(Frame {
                id,
                event,
                data: serde_json::from_str(&data.join("\n")).unwrap_or(Value::Null),
            })
        })
        .collect()
}

/// What the replay server saw.
#[derive(Debug, Default)]
pub struct Log {
    /// One line per request that did not match the next expected exchange.
    pub mismatches: Vec<String>,
    /// Exchanges answered so far.
    pub answered: usize,
}

/// A loopback server answering with a scenario's exchanges, in order.
pub struct Replay {
    pub url: String,
    pub log: Arc<Mutex<Log>>,
    expected: Arc<Mutex<VecDeque<Exchange>>>,
    /// Notified after every answered request.
    pub served: Arc<Notify>,
}

impl Replay {
    /// Serve `scenario`'s exchanges.
    pub async fn start(scenario: &Scenario) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let expected = Arc::new(Mutex::new(scenario.exchanges.iter().cloned().collect()));
        let log = Arc::new(Mutex::new(Log::default()));
        let served = Arc::new(Notify::new());
        let (queue, seen, notify) = (expected.clone(), log.clone(), served.clone());
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (queue, seen, notify) = (queue.clone(), seen.clone(), notify.clone());
                tokio::spawn(async move { answer(socket, queue, seen, notify).await });
            }
        });
        Self {
            url,
            log,
            expected,
            served,
        }
    }

    /// Exchanges not asked for yet.
    pub fn remaining(&self) -> usize {
        self.expected.lock().unwrap().len()
    }

    /// How many exchanges were answered.
    pub fn answered(&self) -> usize {
        self.log.lock().unwrap().answered
    }

    /// Wait until `count` exchanges were answered.
    pub async fn wait_answered(&self, count: usize) {
        loop {
            let notified = self.served.notified();
            if self.answered() >= count {
                return;
            }
            notified.await;
        }
    }

    /// The mismatches seen so far.
    pub fn mismatches(&self) -> Vec<String> {
        self.log.lock().unwrap().mismatches.clone()
    }
}

/// A request as the replay server read it.
struct Received {
    method: String,
    path: String,
    query: BTreeMap<String, String>,
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
}

async fn read_request(socket: &mut TcpStream) -> Option<Received> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split_whitespace();
    let method = first.next()?.to_string();
    let target = first.next()?.to_string();
    let headers: BTreeMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let (path, query) = match target.split_once('?') {
        Some((path, query)) => (path.to_string(), query.to_string()),
        None => (target, String::new()),
    };
    let query = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(pair), String::new()),
        })
        .collect();
    Some(Received {
        method,
        path,
        query,
        headers,
        body,
    })
}

/// What differs between a received request and the exchange it should be.
fn differences(got: &Received, want: &Exchange) -> Vec<String> {
    let mut out = Vec::new();
    if got.method != want.method || got.path != want.path {
        out.push(format!(
            "{} {} instead of {} {}",
            got.method, got.path, want.method, want.path
        ));
        return out;
    }
    let exact = want.sendable_exactly();
    if exact && got.query != want.query {
        out.push(format!("query {:?} instead of {:?}", got.query, want.query));
    }
    let got_tenant = got.headers.get("x-agentplat-tenant-id").map(String::as_str);
    if got_tenant != want.tenant() {
        out.push(format!(
            "tenant header {got_tenant:?} instead of {:?}",
            want.tenant()
        ));
    }
    if exact {
        let got_auth = got.headers.get("authorization").map(String::as_str);
        let want_auth = want.bearer().map(|t| format!("Bearer {t}"));
        if got_auth != want_auth.as_deref() {
            out.push(format!(
                "authorization {got_auth:?} instead of {want_auth:?}"
            ));
        }
        if want.route == Route::RequestIntervention {
            let body: Option<Value> = serde_json::from_slice(&got.body).ok();
            if body != want.body {
                out.push(format!(
                    "body {} instead of {}",
                    String::from_utf8_lossy(&got.body),
                    want.body.as_ref().map(Value::to_string).unwrap_or_default()
                ));
            }
        }
    }
    if want.route == Route::StreamEvents
        && got.headers.get("accept").map(String::as_str) != Some("text/event-stream")
    {
        out.push("a stream request without Accept: text/event-stream".to_string());
    }
    out
}

async fn answer(
    mut socket: TcpStream,
    queue: Arc<Mutex<VecDeque<Exchange>>>,
    log: Arc<Mutex<Log>>,
    served: Arc<Notify>,
) {
    let Some(got) = read_request(&mut socket).await else {
        return;
    };
    let next = queue.lock().unwrap().pop_front();
    let Some(want) = next else {
        log.lock().unwrap().mismatches.push(format!(
            "unexpected extra request {} {}",
            got.method, got.path
        ));
        let _ = socket
            .write_all(b"HTTP/1.1 599 Unexpected\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await;
        served.notify_waiters();
        return;
    };
    let problems = differences(&got, &want);
    {
        let mut log = log.lock().unwrap();
        for problem in problems {
            log.mismatches
                .push(format!("exchange #{}: {problem}", want.index));
        }
        log.answered += 1;
    }
    let body = match &want.response {
        Value::String(text) if want.content_type.starts_with("text/event-stream") => text.clone(),
        other => other.to_string(),
    };
    let reason = match want.status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        _ => "Status",
    };
    let head = if want.content_type.starts_with("text/event-stream") {
        format!(
            "HTTP/1.1 {} {reason}\r\ncontent-type: {}\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n",
            want.status, want.content_type
        )
    } else {
        format!(
            "HTTP/1.1 {} {reason}\r\ncontent-type: {}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            want.status,
            want.content_type,
            body.len()
        )
    };
    let _ = socket.write_all(head.as_bytes()).await;
    let _ = socket.write_all(body.as_bytes()).await;
    let _ = socket.flush().await;
    served.notify_waiters();
    if want.stays_open() {
        // Recorded as read until the client stopped: wait for the client to hang up.
        let mut sink = [0u8; 256];
        while let Ok(n) = socket.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    } else {
        let _ = socket.shutdown().await;
    }
}
