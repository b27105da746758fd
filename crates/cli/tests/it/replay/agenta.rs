//! Agenta's API recorded live (`gatehouse_fixtures`, `agenta/live/recorded/*.json`, see
//! its PROVENANCE.md) and a loopback fake host built from a recording: each request is
//! matched against the first exchange not yet answered with the same method and path
//! (so two watchers or a watcher's re-list may interleave), checked as sent (the query,
//! the `Authorization` scheme and the secret's length, the JSON body, an
//! `Idempotency-Key` on a respond), and answered with what the client got: the recorded
//! status and body, or the recording proxy's 502 where it injected one (`proxy_fault`).
//! A recorded event stream is written at once and then held open until the client hangs
//! up (as Agenta's, which only the client ends). Setup steps sent by the recording's
//! driver are not expected.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

use super::{read_request, string_map, Received};

/// The recording proxy's answer in place of Agenta's where it injected a fault.
pub const PROXY_FAULT_BODY: &str = r#"{"detail":"proxy fault injected: bad gateway"}"#;

/// The recording's folder under the Agenta fixtures.
const RECORDED: &str = "live/recorded";

/// One recorded exchange.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// Its place in the file (for messages).
    pub index: usize,
    /// `gatehouse CLI` or `driver (raw httpx)`.
    pub sent_by: String,
    /// What the recorder was doing (a CLI exchange's note is its step).
    pub note: String,
    pub method: String,
    pub path: String,
    pub query: BTreeMap<String, String>,
    /// Request headers as recorded (lowercase names; `authorization` as
    /// `<scheme> <redacted N chars>`).
    pub headers: BTreeMap<String, String>,
    /// The JSON body sent, if any.
    pub body: Option<Value>,
    /// Agenta's status.
    pub status: u16,
    pub content_type: String,
    /// Agenta's JSON answer, or (for a stream) its frames' text in order.
    pub response: Value,
    /// True when the client got the recording proxy's 502 instead of Agenta's answer.
    pub proxy_fault: bool,
    /// True for an event stream.
    pub stream: bool,
}

impl Exchange {
    /// The status and body the client got.
    pub fn client_saw(&self) -> (u16, String) {
        if self.proxy_fault {
            return (502, PROXY_FAULT_BODY.to_string());
        }
        match &self.response {
            Value::String(text) if self.stream => (self.status, text.clone()),
            other => (self.status, other.to_string()),
        }
    }

    /// The recorded `Authorization` as (scheme, secret length), when it was sent.
    pub fn authorization(&self) -> Option<(String, usize)> {
        let auth = self.headers.get("authorization")?;
        let (scheme, rest) = auth.split_once(' ')?;
        let length = rest
            .strip_prefix("<redacted ")?
            .strip_suffix(" chars>")?
            .parse()
            .ok()?;
        Some((scheme.to_string(), length))
    }

    /// The recorded `?project_id=`, if any.
    pub fn project(&self) -> Option<&str> {
        self.query.get("project_id").map(String::as_str)
    }
}

/// One step of the recorded CLI run: the command, its environment and what it printed.
#[derive(Debug, Clone)]
pub struct CliStep {
    pub step: String,
    /// The arguments after the program name.
    pub args: Vec<String>,
    /// Environment changes from the run's base (`None`: unset).
    pub env: BTreeMap<String, Option<String>>,
    pub exit: i32,
    pub stdout: String,
    pub stderr: String,
}

/// One recorded scenario file.
#[derive(Debug, Clone)]
pub struct Recording {
    pub name: String,
    pub file: PathBuf,
    pub exchanges: Vec<Exchange>,
    pub cli: Vec<CliStep>,
    /// The whole document (for what only some scenarios carry: `cli_watchers`).
    pub doc: Value,
}

impl Recording {
    /// The exchanges the CLI made in `step`.
    pub fn step_exchanges(&self, step: &str) -> Vec<Exchange> {
        self.exchanges
            .iter()
            .filter(|x| x.sent_by == "gatehouse CLI" && x.note == step)
            .cloned()
            .collect()
    }

    /// The CLI step named `step`.
    pub fn step(&self, step: &str) -> &CliStep {
        self.cli
            .iter()
            .find(|s| s.step == step)
            .unwrap_or_else(|| panic!("{}: no CLI step {step:?}", self.name))
    }

    /// The project the recorded CLI asked for by default (`GATEHOUSE_PROJECT`): the
    /// `?project_id=` of its first request that sent one.
    pub fn default_project(&self) -> String {
        self.exchanges
            .iter()
            .filter(|x| x.sent_by == "gatehouse CLI")
            .find_map(|x| x.project().map(str::to_string))
            .unwrap_or_else(|| panic!("{}: no CLI request with a project", self.name))
    }
}

/// The recorded scenario `name` (`cli_respond_fault_502`), or `None` (the suite is
/// skipped, said once; required under `CI=true`).
pub fn load(suite: &str, name: &str) -> Option<Recording> {
    let file = gatehouse_fixtures::require_file(
        gatehouse_fixtures::Upstream::Agenta,
        suite,
        &format!("{RECORDED}/{name}.json"),
    )?;
    let text = std::fs::read_to_string(&file).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let exchanges = doc["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(index, x)| exchange(index, x))
        .collect();
    let cli = doc["cli"]
        .as_array()
        .map(|steps| steps.iter().map(cli_step).collect())
        .unwrap_or_default();
    Some(Recording {
        name: doc["scenario"].as_str().unwrap_or(name).to_string(),
        file,
        exchanges,
        cli,
        doc,
    })
}

fn exchange(index: usize, x: &Value) -> Exchange {
    let request = &x["request"];
    let response = &x["response"];
    let stream = response.get("stream").and_then(Value::as_array);
    Exchange {
        index,
        sent_by: x["sent_by"].as_str().unwrap_or_default().to_string(),
        note: x["note"].as_str().unwrap_or_default().to_string(),
        method: request["method"].as_str().unwrap().to_string(),
        path: request["path"].as_str().unwrap().to_string(),
        query: string_map(request.get("query")),
        headers: string_map(request.get("headers")),
        body: Some(request["body"].clone()).filter(|b| !b.is_null()),
        status: response["status"].as_u64().unwrap() as u16,
        content_type: response["headers"]["content-type"]
            .as_str()
            .unwrap_or("application/json")
            .to_string(),
        response: match stream {
            Some(chunks) => Value::String(
                chunks
                    .iter()
                    .filter_map(|c| c["data"].as_str())
                    .collect::<String>(),
            ),
            None => response["body"].clone(),
        },
        proxy_fault: x.get("proxy_fault").is_some_and(|f| !f.is_null()),
        stream: stream.is_some(),
    }
}

fn cli_step(step: &Value) -> CliStep {
    let argv: Vec<String> = step["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let env = step["env_changes"]
        .as_object()
        .map(|changes| {
            changes
                .iter()
                .map(|(k, v)| {
                    let value = v.as_str().filter(|v| *v != "<unset>").map(str::to_string);
                    (k.clone(), value)
                })
                .collect()
        })
        .unwrap_or_default();
    CliStep {
        step: step["step"].as_str().unwrap().to_string(),
        args: argv.into_iter().skip(1).collect(),
        env,
        exit: step["exit"].as_i64().unwrap() as i32,
        stdout: step["stdout"].as_str().unwrap_or_default().to_string(),
        stderr: step["stderr"].as_str().unwrap_or_default().to_string(),
    }
}

/// A request the fake host received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: BTreeMap<String, String>,
    /// The recorded exchange it was answered with, if any.
    pub exchange: Option<usize>,
}

#[derive(Debug, Default)]
struct State {
    /// Exchanges not answered yet, in recorded order.
    expected: Vec<Exchange>,
    /// One line per request that differs from its exchange (or has none).
    mismatches: Vec<String>,
    seen: Vec<Seen>,
}

/// A loopback host answering with recorded exchanges.
pub struct FakeHost {
    pub url: String,
    state: Arc<Mutex<State>>,
    /// Notified after every answered request.
    served: Arc<Notify>,
}

impl FakeHost {
    /// Serve `exchanges`.
    pub async fn start(exchanges: Vec<Exchange>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State {
            expected: exchanges,
            ..State::default()
        }));
        let served = Arc::new(Notify::new());
        let (shared, notify) = (state.clone(), served.clone());
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (shared, notify) = (shared.clone(), notify.clone());
                tokio::spawn(async move { answer(socket, shared, notify).await });
            }
        });
        Self { url, state, served }
    }

    /// Exchanges not asked for yet.
    pub fn remaining(&self) -> Vec<String> {
        self.state
            .lock()
            .unwrap()
            .expected
            .iter()
            .map(|x| format!("#{} {} {}", x.index, x.method, x.path))
            .collect()
    }

    /// The requests differing from their exchange (or without one).
    pub fn mismatches(&self) -> Vec<String> {
        self.state.lock().unwrap().mismatches.clone()
    }

    /// Every request received, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    /// Wait until `count` requests were answered.
    pub async fn wait_seen(&self, count: usize) {
        loop {
            let notified = self.served.notified();
            if self.seen().len() >= count {
                return;
            }
            notified.await;
        }
    }
}

/// What differs between a received request and the exchange it answers.
fn differences(got: &Received, want: &Exchange) -> Vec<String> {
    let mut out = Vec::new();
    if got.query != want.query {
        out.push(format!("query {:?} instead of {:?}", got.query, want.query));
    }
    let got_auth = got.headers.get("authorization").and_then(|a| {
        let (scheme, secret) = a.split_once(' ')?;
        Some((scheme.to_string(), secret.len()))
    });
    if got_auth != want.authorization() {
        out.push(format!(
            "authorization {got_auth:?} instead of {:?}",
            want.authorization()
        ));
    }
    if want.method == "POST" {
        let body: Option<Value> = serde_json::from_slice(&got.body).ok();
        if body != want.body {
            out.push(format!(
                "body {} instead of {}",
                String::from_utf8_lossy(&got.body),
                want.body.as_ref().map(Value::to_string).unwrap_or_default()
            ));
        }
    }
    if want.headers.contains_key("idempotency-key")
        && got
            .headers
            .get("idempotency-key")
            .is_none_or(|k| k.is_empty())
    {
        out.push("a respond without Idempotency-Key".to_string());
    }
    if want.stream && got.headers.get("accept").map(String::as_str) != Some("text/event-stream") {
        out.push("a stream request without Accept: text/event-stream".to_string());
    }
    out
}

async fn answer(mut socket: TcpStream, state: Arc<Mutex<State>>, served: Arc<Notify>) {
    let Some(got) = read_request(&mut socket).await else {
        return;
    };
    let want = {
        let mut state = state.lock().unwrap();
        let at = state
            .expected
            .iter()
            .position(|x| x.method == got.method && x.path == got.path);
        let want = at.map(|at| state.expected.remove(at));
        match &want {
            Some(want) => {
                for problem in differences(&got, want) {
                    state
                        .mismatches
                        .push(format!("exchange #{}: {problem}", want.index));
                }
            }
            None => state
                .mismatches
                .push(format!("unexpected request {} {}", got.method, got.path)),
        }
        state.seen.push(Seen {
            method: got.method.clone(),
            path: got.path.clone(),
            headers: got.headers.clone(),
            exchange: want.as_ref().map(|x| x.index),
        });
        want
    };
    let Some(want) = want else {
        let _ = socket
            .write_all(b"HTTP/1.1 599 Unexpected\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await;
        served.notify_waiters();
        return;
    };
    let (status, body) = want.client_saw();
    let content_type = if want.proxy_fault {
        "application/json"
    } else {
        want.content_type.as_str()
    };
    let head = if want.stream && !want.proxy_fault {
        format!(
            "HTTP/1.1 {status} OK\r\ncontent-type: {content_type}\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n"
        )
    } else {
        format!(
            "HTTP/1.1 {status} Status\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        )
    };
    let _ = socket.write_all(head.as_bytes()).await;
    let _ = socket.write_all(body.as_bytes()).await;
    let _ = socket.flush().await;
    served.notify_waiters();
    if want.stream {
        // Agenta's stream stays open (heartbeats) until the client hangs up.
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
