//! Upstream conformance: Gatehouse's server as a drop-in for AgentPlat's Rooms API. The
//! requests of AgentPlat's recorded exchanges (`gatehouse_fixtures`, `agentplat/`) are
//! sent to this server on AgentPlat's own root paths, and each answer must have the
//! recorded status, error code and message, and the recorded bytes but for the values
//! two runs cannot share: the same JSON keys in the same order, compact, times in
//! milliseconds, SSE frames identical but for their times (ids, timestamps and revision
//! numbers aside: this server's runs open their sessions at their own revision, and the
//! recorded ids are random).
//!
//! How a recording maps here: the recorded run is a turn parked at its approval gate (its
//! room and session stand for the recorded ones, expected revisions are shifted by the
//! session's revision when parked); the harness's checkpoint and finish controls become
//! the gate's approval (the run then reaches its checkpoints and ends); the tenant is
//! this server's project, sent in `X-Agentplat-Tenant-Id`. The recordings of AgentPlat's
//! `headerTenantAuth()` run against this server with its header-only tenant auth on and
//! no key, as recorded; on Bearer hosts the server's key stands for the token. Three
//! recorded behaviours have no counterpart and are skipped, each said in the test: room
//! participants (this server has none to check a requester against), a host without the
//! event stream, and room-state routes.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::common::Harness;
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

/// True for a time as JavaScript's `toISOString()` writes it (`2026-12-01T04:22:49.873Z`).
fn is_js_time(text: &str) -> bool {
    // `0` stands for any digit.
    const FORM: &[u8] = b"0000-00-00T00:00:00.000Z";
    text.len() == FORM.len()
        && text.bytes().zip(FORM).all(|(c, form)| match form {
            b'0' => c.is_ascii_digit(),
            _ => c == *form,
        })
}

/// A JSON document with its millisecond times blanked (`<time>`) and, unless
/// `keep_values`, every other string (`<text>`) and number too: what differs between two
/// hosts' runs. Objects keep their keys in order, arrays their length.
fn blanked(value: &Value, keep_values: bool) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| (key.clone(), blanked(value, keep_values)))
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| blanked(v, keep_values)).collect())
        }
        Value::String(text) if is_js_time(text) => json!("<time>"),
        Value::String(_) if !keep_values => json!("<text>"),
        Value::Number(_) if !keep_values => json!(0),
        other => other.clone(),
    }
}

/// `got` has exactly the keys of `want`, in its order, with values of the same kind and
/// times in the same form, all the way down: AgentPlat's JSON, nothing added.
fn same_skeleton(got: &Value, want: &Value, at: &str) -> Result<(), String> {
    let (got, want) = (blanked(got, false), blanked(want, false));
    if got == want {
        return Ok(());
    }
    Err(format!(
        "{at}: got the skeleton\n{got}\nwhere AgentPlat wrote\n{want}"
    ))
}

/// Both documents with every array cut to the length of its counterpart: after the run
/// this server's session is further along (its run ends with the recorded checkpoint)
/// or behind the recorded one, and what both hold is compared.
fn common_part(got: &Value, want: &Value) -> (Value, Value) {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            let mut got = g.clone();
            let mut want = w.clone();
            for (key, wv) in w {
                if let Some(gv) = g.get(key) {
                    let (gv, wv) = common_part(gv, wv);
                    got.insert(key.clone(), gv);
                    want.insert(key.clone(), wv);
                }
            }
            (Value::Object(got), Value::Object(want))
        }
        (Value::Array(g), Value::Array(w)) => {
            let (got, want): (Vec<Value>, Vec<Value>) = g
                .iter()
                .zip(w.iter())
                .map(|(gv, wv)| common_part(gv, wv))
                .unzip();
            (Value::Array(got), Value::Array(want))
        }
        _ => (got.clone(), want.clone()),
    }
}

/// The raw text of a JSON answer is written as `JSON.stringify` writes it: compact, in
/// the order of its keys.
fn compact(text: &str, value: &Value, at: &str) {
    assert_eq!(text, serde_json::to_string(value).unwrap(), "{at}");
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

/// Our stream has AgentPlat's framing byte for byte: nothing but frames (no `retry:`),
/// each `id: stream:<n>` / `event: agentplat.<type>` / `data: <compact envelope>`, the
/// envelopes numbered from 1 per connection (the failure frame too), and each frame
/// carrying a recorded session event identical to the recorded frame but for its time.
fn check_framing(ours_text: &str, theirs: &str, at: &str) -> Vec<Value> {
    let ours = sse_frames(ours_text);
    let theirs = sse_frames(theirs);
    let rewritten: String = ours
        .iter()
        .map(|(id, event, envelope)| {
            format!(
                "id: {}\nevent: {}\ndata: {}\n\n",
                id.as_deref().unwrap_or_default(),
                event.as_deref().unwrap_or_default(),
                serde_json::to_string(envelope).unwrap()
            )
        })
        .collect();
    assert_eq!(
        ours_text, rewritten,
        "{at}: only frames, as AgentPlat writes them"
    );
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
        assert_eq!(
            id.as_deref(),
            Some(format!("stream:{}", n + 1).as_str()),
            "{at}"
        );
        if kind == "failed" {
            assert_eq!(envelope["content"], "Stream failed", "{at}");
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
            same_skeleton(ours, theirs, at).unwrap_or_else(|e| panic!("{e}"));
            // The envelope's own sequence numbers this connection's frames.
            let (mut ours, mut theirs) = (blanked(ours, true), blanked(theirs, true));
            ours["sequence"] = json!(0);
            theirs["sequence"] = json!(0);
            assert_eq!(
                serde_json::to_string(&ours).unwrap(),
                serde_json::to_string(&theirs).unwrap(),
                "{at}"
            );
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
    let no_registry = variant.starts_with("bearer-noreg");
    let h = Harness::with(TestServerOptions {
        execution: !no_execution,
        agentplat_header_auth: header_auth,
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
        // A turn parked at its gate stands for the recorded run.
        let run = h.park_run(&format!("task-{name}"), "m-dropin").await;
        Mapping {
            room: (recorded_room, run.room),
            session: (recorded_session, run.session),
            base_revision: run.revision,
            tenants: BTreeMap::new(),
            gate: run.gate,
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
        if x.status == 403 && !x.body["requestedByParticipantId"].is_null() {
            // AgentPlat refuses a requester who is not a human room participant with
            // `run.intervene`; this server has no room participants to refuse one by
            // (CONTRACT.md's differences). A request naming none is refused alike.
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
        let text = response.text().await.unwrap();
        let body: Value = serde_json::from_str(&text).unwrap();
        compact(&text, &body, &at);
        if let Some(error) = x.response.get("error") {
            assert_eq!(body["error"]["code"], error["code"], "{at}: {body}");
            assert_eq!(body["error"]["message"], error["message"], "{at}: {body}");
            // AgentPlat's error, then Gatehouse's machine code and the request's id
            // (CONTRACT.md's differences: typed conflicts, a request's log lines).
            let keys: Vec<&str> = body["error"]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(
                keys,
                ["code", "message", "gatehouseCode", "requestId"],
                "{at}: {body}"
            );
            continue;
        }
        let mut ours = body.clone();
        if no_registry {
            // A host without an agent registry binds no agent revision; this server
            // always has one (CONTRACT.md B3, opening).
            if let Some(session) = ours["data"].as_object_mut() {
                session.remove("agentRevisionId");
                session.remove("agentRevisionDigest");
            }
        }
        let (ours, theirs) = if ran {
            common_part(&ours, &x.response)
        } else {
            (ours, x.response.clone())
        };
        same_skeleton(&ours, &theirs, "body").unwrap_or_else(|e| panic!("{at}: {e}"));
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
    // A `Last-Event-ID` is ignored on the root paths, as AgentPlat ignores it: the
    // stream starts where `?after=` says, as recorded.
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
