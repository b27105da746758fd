//! Upstream conformance: Gatehouse's server as a drop-in for AgentPlat's Rooms API. The
//! requests of AgentPlat's recorded exchanges (`gatehouse_fixtures`, `agentplat/`) are
//! sent to this server on AgentPlat's own root paths, and each answer must have the
//! recorded status, error code and message, body shape and SSE framing (ids, timestamps
//! and revision numbers aside: this server's runs open their sessions at their own
//! revision, and the recorded ids are random).
//!
//! How a recording maps here: the recorded run is a turn parked at its approval gate (its
//! room and session stand for the recorded ones, expected revisions are shifted by the
//! session's revision when parked); the harness's checkpoint and finish controls become
//! the gate's approval (the run then reaches its checkpoints and ends); the tenant is
//! this server's project, sent in `X-Agentplat-Tenant-Id`; an API key is sent as this
//! server requires one, except where the recording authenticates with none (Bearer
//! hosts). Three recorded behaviours have no counterpart and are skipped, each said in
//! the test: room participants (this server's requester is the API key's actor), a host
//! without the event stream, and room-state routes.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::common::{config, Harness};
use gatehouse_server::testing::TestServerOptions;
use serde_json::{json, Value};

const SUITE: &str = "AgentPlat recorded exchanges (server drop-in)";

/// One recorded exchange, as read from the file.
struct Recorded {
    index: usize,
    driver: bool,
    method: String,
    path: String,
    query: BTreeMap<String, String>,
    headers: BTreeMap<String, String>,
    body: Value,
    raw_body: Option<String>,
    status: u16,
    content_type: String,
    response: Value,
    stream_end: Option<String>,
    note: String,
}

fn recorded(exchange: &Value, index: usize) -> Recorded {
    let map = |v: &Value| -> BTreeMap<String, String> {
        v.as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        (
                            k.to_ascii_lowercase(),
                            v.as_str().unwrap_or_default().to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let request = &exchange["request"];
    let response = &exchange["response"];
    let raw = request["body_is_raw_text"].as_bool() == Some(true);
    Recorded {
        index,
        driver: exchange["driver"].as_bool() == Some(true),
        method: request["method"].as_str().unwrap().to_string(),
        path: request["path"].as_str().unwrap().to_string(),
        query: map(&request["query"]),
        headers: map(&request["headers"]),
        body: request["body"].clone(),
        raw_body: raw.then(|| request["body"].as_str().unwrap_or_default().to_string()),
        status: response["status"].as_u64().unwrap() as u16,
        content_type: response["headers"]["content-type"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        response: response["body"].clone(),
        stream_end: response["stream_end"].as_str().map(str::to_string),
        note: exchange["note"].as_str().unwrap_or_default().to_string(),
    }
}

/// True for AgentPlat's execution routes (`/rooms/{r}/execution-sessions/{s}[...]`).
fn is_execution_route(path: &str) -> bool {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    parts.len() >= 4 && parts[0] == "rooms" && parts[2] == "execution-sessions"
}

/// Every key of `want` is in `got` with a value of the same JSON kind, recursively (the
/// first element of arrays alike); this server may add keys.
fn same_shape(got: &Value, want: &Value, at: &str) -> Result<(), String> {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            for (key, wv) in w {
                let gv = g.get(key).ok_or_else(|| {
                    format!(
                        "{at}.{key} is missing (got keys {:?})",
                        g.keys().collect::<Vec<_>>()
                    )
                })?;
                same_shape(gv, wv, &format!("{at}.{key}"))?;
            }
            Ok(())
        }
        (Value::Array(g), Value::Array(w)) => match (g.first(), w.first()) {
            (Some(gv), Some(wv)) => same_shape(gv, wv, &format!("{at}[0]")),
            (None, Some(_)) => Err(format!("{at} is empty, the recording is not")),
            _ => Ok(()),
        },
        (Value::Number(_), Value::Number(_))
        | (Value::String(_), Value::String(_))
        | (Value::Bool(_), Value::Bool(_))
        | (Value::Null, Value::Null) => Ok(()),
        _ => Err(format!("{at}: {got} is not shaped like {want}")),
    }
}

/// The data frames of an SSE body: (id, event name, envelope).
fn sse_frames(text: &str) -> Vec<(Option<String>, Option<String>, Value)> {
    text.replace("\r\n", "\n")
        .split("\n\n")
        .filter_map(|block| {
            let (mut id, mut event, mut data) = (None, None, Vec::new());
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    id = Some(v.to_string());
                } else if let Some(v) = line.strip_prefix("event: ") {
                    event = Some(v.to_string());
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data.push(v.to_string());
                }
            }
            (!data.is_empty()).then(|| (id, event, serde_json::from_str(&data.join("\n")).unwrap()))
        })
        .collect()
}

/// Our stream has AgentPlat's framing: event names, version-1 envelopes numbered from 1
/// per connection, `stream:` ids (the failure frame has none: a reconnecting
/// EventSource keeps its last event), payloads shaped as recorded.
fn check_framing(ours: &str, theirs: &str, at: &str) -> Vec<Value> {
    let ours = sse_frames(ours);
    let theirs = sse_frames(theirs);
    for (n, (id, event, envelope)) in ours.iter().enumerate() {
        let kind = envelope["type"].as_str().unwrap();
        assert_eq!(envelope["version"], 1, "{at}");
        assert_eq!(
            envelope["sequence"],
            n as u64 + 1,
            "{at}: frames numbered per connection"
        );
        assert_eq!(
            event.as_deref(),
            Some(format!("agentplat.{kind}").as_str()),
            "{at}"
        );
        match kind {
            "failed" => {
                assert!(id.is_none(), "{at}");
                assert_eq!(envelope["content"], "Stream failed", "{at}");
            }
            _ => {
                let sequence = envelope["payload"]["sequence"].as_u64().unwrap();
                assert_eq!(
                    id.as_deref(),
                    Some(format!("stream:{sequence}").as_str()),
                    "{at}"
                );
            }
        }
    }
    // Each of our frames is shaped as the recorded frame carrying the same session event
    // (or the recorded failure frame).
    let mut paired = 0;
    for (_, our_event, ours) in &ours {
        let counterpart = theirs.iter().find(|(_, _, theirs)| {
            theirs["type"] == ours["type"]
                && theirs["payload"]["sequence"] == ours["payload"]["sequence"]
        });
        if let Some((_, their_event, theirs)) = counterpart {
            assert_eq!(our_event, their_event, "{at}");
            same_shape(ours, theirs, at).unwrap_or_else(|e| panic!("{e}"));
            paired += 1;
        }
    }
    assert!(
        ours.is_empty() || theirs.is_empty() || paired > 0,
        "{at}: no frame of ours carries a recorded event"
    );
    ours.into_iter().map(|(_, _, envelope)| envelope).collect()
}

/// How the recorded ids and revisions map onto this server's.
struct Mapping {
    /// The recorded room and session of the run, and ours.
    room: (String, String),
    session: (String, String),
    /// Our session's revision when the recording's was 0.
    base_revision: u64,
    /// Recorded tenants and our projects.
    tenants: BTreeMap<String, String>,
    gate: String,
}

impl Mapping {
    fn path(&self, path: &str) -> String {
        let parts: Vec<String> = path
            .split('/')
            .map(|p| {
                if p == self.room.0 {
                    self.room.1.clone()
                } else if p == self.session.0 {
                    self.session.1.clone()
                } else {
                    p.to_string()
                }
            })
            .collect();
        parts.join("/")
    }

    fn tenant(&mut self, recorded: &str, ours: &str) -> String {
        if recorded.trim().is_empty() {
            return recorded.to_string();
        }
        if self.tenants.is_empty() {
            self.tenants.insert(recorded.to_string(), ours.to_string());
        }
        self.tenants
            .entry(recorded.to_string())
            .or_insert_with(|| uuid::Uuid::new_v4().to_string())
            .clone()
    }
}

/// The run a recording starts: its `/_host/start-run` answer names the room and session.
fn recorded_run(exchanges: &[Recorded]) -> Option<(String, String)> {
    exchanges
        .iter()
        .find(|x| x.driver && x.path == "/_host/start-run")
        .map(|x| {
            (
                x.response["session"]["roomId"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                x.response["session"]["sessionId"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
}

/// Park a turn at its gate: our stand-in for the recorded run.
async fn park(h: &Harness, task: &str) -> (String, String, u64, String) {
    let answer = h
        .invoke(json!({
            "session_id": task,
            "data": {"inputs": {"messages": crate::common::user("go")}, "parameters": config("m-dropin", "ask")}
        }))
        .await;
    assert_eq!(answer["status"], "parked", "{answer}");
    let ex = &answer["execution"];
    (
        ex["room_id"].as_str().unwrap().to_string(),
        ex["session_id"].as_str().unwrap().to_string(),
        ex["revision"].as_u64().unwrap(),
        answer["interaction_ids"][0].as_str().unwrap().to_string(),
    )
}

/// Approve the parked turn's gate and wait for its session to end (the recorded host's
/// checkpoint and finish controls).
async fn run_to_the_end(h: &Harness, mapping: &Mapping) {
    let (status, body) = h.respond(&mapping.gate, true).await;
    assert_eq!(status, 200, "{body}");
    let path = format!(
        "/api/rooms/{}/execution-sessions/{}",
        mapping.room.1, mapping.session.1
    );
    let ended = crate::common::wait_until(Duration::from_secs(10), || async {
        let (_, doc) = h.get(&path).await;
        matches!(
            doc["data"]["status"].as_str(),
            Some("completed" | "failed" | "canceled")
        )
    })
    .await;
    assert!(ended, "the run never ended");
}

async fn replay_scenario(file: &std::path::Path) {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let name = doc["scenario"].as_str().unwrap_or("?").to_string();
    let variant = doc["host_variant"].as_str().unwrap_or_default().to_string();
    let exchanges: Vec<Recorded> = doc["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, x)| recorded(x, i))
        .collect();
    let header_auth = variant.starts_with("header");
    let no_execution = variant.starts_with("bearer-noexec");
    let no_stream = variant.starts_with("bearer-nostream");
    let h = Harness::with(TestServerOptions {
        execution: !no_execution,
        ..Default::default()
    })
    .await;
    let (recorded_room, recorded_session) =
        recorded_run(&exchanges).unwrap_or_else(|| ("room".into(), "session".into()));
    let mut mapping = if no_execution {
        Mapping {
            room: (recorded_room.clone(), recorded_room),
            session: (recorded_session.clone(), recorded_session),
            base_revision: 0,
            tenants: BTreeMap::new(),
            gate: String::new(),
        }
    } else {
        let (room, session, revision, gate) = park(&h, &format!("task-{name}")).await;
        Mapping {
            room: (recorded_room, room),
            session: (recorded_session, session),
            base_revision: revision,
            tenants: BTreeMap::new(),
            gate,
        }
    };
    let project = h.server.project_id.clone();
    let mut ran = false;
    let mut open_streams: Vec<(usize, tokio::task::JoinHandle<String>, String)> = Vec::new();
    let mut checked = 0;
    for x in &exchanges {
        let at = format!("{name} #{} {} {}", x.index, x.method, x.path);
        if x.driver {
            if x.path.starts_with("/_host/runs/") && !ran && !no_execution {
                run_to_the_end(&h, &mapping).await;
                ran = true;
            }
            continue;
        }
        if x.path == "/health" {
            let response = h
                .http
                .get(format!("{}/health", h.server.base_url))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status().as_u16(), x.status, "{at}");
            let body: Value = response.json().await.unwrap();
            assert_eq!(body, x.response, "{at}");
            checked += 1;
            continue;
        }
        if !is_execution_route(&x.path) {
            // Room state and other Rooms API routes are not served here.
            continue;
        }
        if x.status == 403 {
            // AgentPlat refuses a requester who is not a human room participant with
            // `run.intervene`; this server's requester is the API key's actor, always
            // allowed (CONTRACT.md B3): there are no room participants to refuse.
            continue;
        }
        if no_stream && x.path.ends_with("/events/stream") {
            // This server always serves the stream when it serves execution.
            continue;
        }
        // The request, mapped.
        let path = mapping.path(&x.path);
        let mut url = format!("{}{path}", h.server.base_url);
        if !x.query.is_empty() {
            let query: Vec<String> = x.query.iter().map(|(k, v)| format!("{k}={v}")).collect();
            url = format!("{url}?{}", query.join("&"));
        }
        let mut request = h.http.request(x.method.parse().unwrap(), url);
        let authorization = x.headers.get("authorization");
        match authorization {
            Some(a) if a.starts_with("Bearer ") => {
                request = request.header("Authorization", format!("Bearer {}", h.server.api_key))
            }
            Some(other) => request = request.header("Authorization", other.clone()),
            None if header_auth => {
                request = request.header("Authorization", format!("Bearer {}", h.server.api_key))
            }
            None => {}
        }
        match x.headers.get("x-agentplat-tenant-id") {
            Some(tenant) => {
                let ours = mapping.tenant(tenant, &project);
                request = request.header("X-Agentplat-Tenant-Id", ours);
            }
            // A Bearer host resolves the tenant from the token; here it is the header.
            None if !header_auth => {
                request = request.header("X-Agentplat-Tenant-Id", project.clone())
            }
            None => {}
        }
        for name in ["accept", "last-event-id", "content-type"] {
            if let Some(value) = x.headers.get(name) {
                request = request.header(name, value.clone());
            }
        }
        if let Some(raw) = &x.raw_body {
            request = request.body(raw.clone());
        } else if !x.body.is_null() {
            let mut body = x.body.clone();
            if let Some(revision) = body.get("expectedRevision").and_then(Value::as_u64) {
                body["expectedRevision"] = json!(revision + mapping.base_revision);
            }
            request = request.body(body.to_string());
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status().as_u16(), x.status, "{at}");
        let content_type = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_string();
        assert_eq!(content_type, x.content_type, "{at}");
        checked += 1;
        if x.content_type.starts_with("text/event-stream") {
            let stays_open = x
                .stream_end
                .as_deref()
                .is_some_and(|end| end.starts_with("client_stopped"));
            let theirs = x.response.as_str().unwrap_or_default().to_string();
            let wanted = sse_frames(&theirs).len();
            let reader = tokio::spawn(read_stream(response, stays_open.then_some(wanted)));
            if x.note.contains("concurrently") {
                open_streams.push((x.index, reader, theirs));
            } else {
                let ours = reader.await.unwrap();
                check_stream(&ours, &theirs, x, &at);
            }
            continue;
        }
        let body: Value = response.json().await.unwrap();
        if let Some(error) = x.response.get("error") {
            assert_eq!(body["error"]["code"], error["code"], "{at}: {body}");
            assert_eq!(body["error"]["message"], error["message"], "{at}: {body}");
            continue;
        }
        same_shape(&body, &x.response, "body").unwrap_or_else(|e| panic!("{at}: {e}"));
        if !ran {
            check_values(&body["data"], &x.response["data"], &mapping, &at);
        }
    }
    if !ran && !no_execution && !open_streams.is_empty() {
        run_to_the_end(&h, &mapping).await;
    }
    for (index, reader, theirs) in open_streams {
        let ours = reader.await.unwrap();
        let x = exchanges.iter().find(|x| x.index == index).unwrap();
        check_stream(
            &ours,
            &theirs,
            x,
            &format!("{name} #{index} (read concurrently)"),
        );
    }
    assert!(checked > 0, "{name}: nothing was compared");
    h.server.shutdown().await;
}

/// Before the run resumes, this server's session holds what AgentPlat's did: the same
/// interventions and events, the revision shifted by where our session started.
fn check_values(ours: &Value, theirs: &Value, mapping: &Mapping, at: &str) {
    let keys = |events: &Value| -> Vec<(u64, String)> {
        events
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|e| {
                        (
                            e["sequence"].as_u64().unwrap(),
                            e["type"].as_str().unwrap().to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    if theirs.is_array() {
        assert_eq!(keys(ours), keys(theirs), "{at}");
        return;
    }
    if let Some(revision) = theirs["revision"].as_u64() {
        assert_eq!(
            ours["revision"].as_u64(),
            Some(revision + mapping.base_revision),
            "{at}"
        );
    }
    assert_eq!(keys(&ours["events"]), keys(&theirs["events"]), "{at}");
    let interventions = |doc: &Value| -> Vec<(String, String, String, String)> {
        doc["interventions"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|i| {
                        let field = |k: &str| i[k].as_str().unwrap_or_default().to_string();
                        (
                            field("operationId"),
                            field("instruction"),
                            field("checkpoint"),
                            field("status"),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(interventions(ours), interventions(theirs), "{at}");
}

/// Read a stream: `Some(n)` frames with data (then hang up), or to its end.
async fn read_stream(response: reqwest::Response, frames: Option<usize>) -> String {
    use futures::StreamExt;
    let mut body = response.bytes_stream();
    let mut text = String::new();
    loop {
        if frames.is_some_and(|n| sse_frames(&text).len() >= n) {
            return text;
        }
        match tokio::time::timeout(Duration::from_secs(10), body.next()).await {
            Ok(Some(Ok(chunk))) => text.push_str(&String::from_utf8_lossy(&chunk)),
            Ok(_) => return text,
            Err(_) => panic!("the stream stalled after {text:?}"),
        }
    }
}

fn check_stream(ours: &str, theirs: &str, x: &Recorded, at: &str) {
    let envelopes = check_framing(ours, theirs, at);
    let ours_seq: Vec<u64> = envelopes
        .iter()
        .filter_map(|e| e["payload"]["sequence"].as_u64())
        .collect();
    let theirs_seq: Vec<u64> = sse_frames(theirs)
        .iter()
        .filter_map(|(_, _, e)| e["payload"]["sequence"].as_u64())
        .collect();
    if let Some(last) = x.headers.get("last-event-id") {
        // A deliberate departure: AgentPlat ignores Last-Event-ID (it replays from the
        // first event); this server resumes after it, as the SSE standard asks.
        let after: u64 = last.rsplit(':').next().unwrap().parse().unwrap();
        assert_eq!(
            ours_seq.first().copied(),
            theirs_seq.iter().copied().find(|s| *s > after),
            "{at}"
        );
        return;
    }
    let failed = |frames: &[Value]| frames.iter().any(|e| e["type"] == "failed");
    assert_eq!(
        failed(&envelopes),
        sse_frames(theirs)
            .iter()
            .any(|(_, _, e)| e["type"] == "failed"),
        "{at}"
    );
    // The same session events, from the same place (the recorded run and ours log the
    // same events when one intervention is applied and the run ends).
    assert_eq!(ours_seq.first(), theirs_seq.first(), "{at}");
    if x.stream_end.as_deref() == Some("server_closed_stream") {
        let last_type = |frames: &[Value]| {
            frames
                .iter()
                .rev()
                .find_map(|e| e["payload"]["type"].as_str().map(str::to_string))
        };
        let theirs_frames: Vec<Value> = sse_frames(theirs).into_iter().map(|(_, _, e)| e).collect();
        assert_eq!(last_type(&envelopes), last_type(&theirs_frames), "{at}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_answers_agentplat_requests_as_agentplat_does() {
    let Some(dir) = gatehouse_fixtures::require(gatehouse_fixtures::Upstream::AgentPlat, SUITE)
    else {
        return;
    };
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for file in files {
        replay_scenario(&file).await;
    }
}
