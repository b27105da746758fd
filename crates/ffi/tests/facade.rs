//! The facade from Rust, against the reference server in-process: the watch listener's
//! delivery rules (cancel from inside a callback, a throwing listener, drop stops it), and
//! records and errors as the bindings see them.

// Test code: a broken fixture or server should fail the test loudly, here and in helpers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gatehouse_ffi::{
    AgentaContract, Checkpoint, ClientConfig, ExecutionEventType, GatehouseClient, GatehouseError,
    InteractionStatus, InterventionOutcome, InterventionState, JsonText, ListenerError,
    RespondOutcome, SessionEventUpdate, StopOutcome, ToolPermission, TurnStatus, WatchEvent,
    WatchListener, WatchUpdate,
};
use gatehouse_server::testing::{spawn, TestServer, TestServerOptions};
use tokio::sync::mpsc;

fn client_for(server: &TestServer) -> Arc<GatehouseClient> {
    GatehouseClient::new(ClientConfig {
        base_url: server.base_url.clone(),
        api_key: Some(server.api_key.clone()),
        project_id: Some(server.project_id.clone()),
        timeout: Some(std::time::Duration::from_secs(10)),
        upstream: None,
        tenant: None,
        participant_id: None,
        agenta_contract: None,
    })
    .unwrap()
}

/// Invoke the deterministic agent with `ask` permissions: it parks at one gate.
async fn open_gate(server: &TestServer, session_id: &str) -> String {
    park(server, session_id).await.1
}

/// Like [`open_gate`], also returning the run's execution session `(room, session, revision)`.
async fn park(server: &TestServer, session_id: &str) -> ((String, String, u64), String) {
    let client = gatehouse_client::Client::builder(server.base_url.clone())
        .api_key(server.api_key.clone())
        .project_id(server.project_id.clone())
        .build()
        .unwrap();
    let request = serde_json::from_value(serde_json::json!({
        "session_id": session_id,
        "data": {
            "inputs": {"messages": [{"role": "user", "content": "list files"}]},
            "parameters": {"agent": {
                "llm": {"model": "rust-model"},
                "runner": {"permissions": {"default": "ask"}}
            }}
        }
    }))
    .unwrap();
    let answer = client.service().invoke(&request).await.unwrap();
    let execution = answer
        .execution
        .map(|e| (e.room_id, e.session_id, e.revision))
        .unwrap_or_default();
    (execution, answer.interaction_ids[0].clone())
}

#[derive(Debug)]
enum Seen {
    Connected,
    Event(Box<WatchEvent>),
    Closed(Option<GatehouseError>),
}

/// Forwards every callback to a channel; optionally fails on connect (a throwing
/// foreign listener arrives in Rust as a `ListenerError`).
struct ChannelListener {
    tx: mpsc::UnboundedSender<Seen>,
    panic_on_connect: bool,
    calls: AtomicUsize,
    cancel_on_event: Mutex<Option<Arc<gatehouse_ffi::WatchHandle>>>,
}

impl WatchListener for ChannelListener {
    fn on_connected(&self) -> Result<(), ListenerError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let _ = self.tx.send(Seen::Connected);
        if self.panic_on_connect {
            return Err(ListenerError::Failed {
                reason: "listener threw".into(),
            });
        }
        Ok(())
    }

    fn on_event(&self, event: WatchEvent) -> Result<(), ListenerError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let gate_opened = matches!(
            event,
            WatchEvent::Interaction {
                status: InteractionStatus::Pending,
                ..
            }
        );
        if gate_opened {
            if let Some(handle) = self.cancel_on_event.lock().unwrap().take() {
                // Cancelling from inside a callback must not deadlock.
                handle.cancel().unwrap();
            }
        }
        let _ = self.tx.send(Seen::Event(Box::new(event)));
        Ok(())
    }

    fn on_reconnecting(&self, _attempt: i32, _error: GatehouseError) -> Result<(), ListenerError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn on_closed(&self, error: Option<GatehouseError>) -> Result<(), ListenerError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let _ = self.tx.send(Seen::Closed(error));
        Ok(())
    }
}

fn listener(panic_on_connect: bool) -> (Arc<ChannelListener>, mpsc::UnboundedReceiver<Seen>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (
        Arc::new(ChannelListener {
            tx,
            panic_on_connect,
            calls: AtomicUsize::new(0),
            cancel_on_event: Mutex::new(None),
        }),
        rx,
    )
}

async fn next(rx: &mut mpsc::UnboundedReceiver<Seen>) -> Seen {
    tokio::time::timeout(Duration::from_secs(15), rx.recv())
        .await
        .expect("a callback within 15 s")
        .expect("the listener is alive")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throwing_listener_keeps_the_watch_alive_and_cancel_from_a_callback_stops_it() {
    let server = spawn(TestServerOptions::default()).await;
    let client = client_for(&server);
    let session = uuid_like();
    let (listener, mut rx) = listener(true);
    let handle = client
        .watch_session(session.clone(), listener.clone())
        .unwrap();
    *listener.cancel_on_event.lock().unwrap() = Some(handle.clone());

    assert!(matches!(next(&mut rx).await, Seen::Connected));
    let gate = open_gate(&server, &session).await;
    // The watch survived the panic in on_connected; the gate's event cancels from inside.
    let mut saw_gate = false;
    while !saw_gate {
        match next(&mut rx).await {
            Seen::Event(event) => {
                if let WatchEvent::Interaction {
                    session_id, status, ..
                } = *event
                {
                    assert_eq!(session_id, session);
                    saw_gate = status == InteractionStatus::Pending;
                }
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(handle.is_finished().unwrap());
    let calls = listener.calls.load(Ordering::SeqCst);
    client
        .respond_to_interaction(gate, true, None, None, None)
        .await
        .unwrap();
    assert_eq!(
        listener.calls.load(Ordering::SeqCst),
        calls,
        "a callback after cancel"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_handle_stops_the_watch() {
    let server = spawn(TestServerOptions::default()).await;
    let client = client_for(&server);
    let session = uuid_like();
    let (listener, mut rx) = listener(false);
    let handle = client
        .watch_session(session.clone(), listener.clone())
        .unwrap();
    assert!(matches!(next(&mut rx).await, Seen::Connected));
    drop(handle);
    let calls = listener.calls.load(Ordering::SeqCst);
    // A live witness watch on the same session proves the gate's event was sent.
    let (witness, mut witness_rx) = self::listener(false);
    let witness_handle = client.watch_session(session.clone(), witness).unwrap();
    assert!(matches!(next(&mut witness_rx).await, Seen::Connected));
    open_gate(&server, &session).await;
    loop {
        if let Seen::Event(event) = next(&mut witness_rx).await {
            if let WatchEvent::Interaction {
                status: InteractionStatus::Pending,
                ..
            } = *event
            {
                break;
            }
        }
    }
    witness_handle.cancel().unwrap();
    // Nothing reached the dropped watch.
    assert_eq!(listener.calls.load(Ordering::SeqCst), calls);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pull_watch_connects_on_first_next_hears_a_gate_and_cancel_ends_a_pending_next() {
    let server = spawn(TestServerOptions::default()).await;
    let client = client_for(&server);
    let session = uuid_like();
    let watch = client.open_session_watch(session.clone()).unwrap();
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(10), watch.next())
            .await
            .unwrap()
            .unwrap(),
        Some(WatchUpdate::Connected)
    );
    open_gate(&server, &session).await;
    loop {
        let update = tokio::time::timeout(Duration::from_secs(10), watch.next())
            .await
            .expect("an update within 10 s")
            .unwrap();
        if let Some(WatchUpdate::Event {
            event:
                WatchEvent::Interaction {
                    status: InteractionStatus::Pending,
                    ..
                },
        }) = update
        {
            break;
        }
        assert!(update.is_some(), "the watch ended before the gate opened");
    }
    watch.cancel();
    assert_eq!(watch.next().await.unwrap(), None);
    // A next() waiting on a quiet stream returns None as soon as cancel() is called.
    let watch = client.open_session_watch(uuid_like()).unwrap();
    assert_eq!(watch.next().await.unwrap(), Some(WatchUpdate::Connected));
    assert!(matches!(
        watch.next().await.unwrap(),
        Some(WatchUpdate::Event {
            event: WatchEvent::Ready { .. }
        })
    ));
    let watch_for_task = Arc::clone(&watch);
    let pending = tokio::spawn(async move { watch_for_task.next().await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    watch.cancel();
    let ended = tokio::time::timeout(Duration::from_secs(5), pending)
        .await
        .expect("cancel ends the pending next()")
        .unwrap()
        .unwrap();
    assert_eq!(ended, None);
    assert_eq!(watch.next().await.unwrap(), None);
    server.shutdown().await;
}

/// A gate opened through the facade's own `invoke_tool` arrives on the watch with its
/// record (tool, arguments, a `SystemTime`, a status), so showing it takes no second call;
/// `invoke_tool` also opens no gate when the permission allows the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_event_carries_the_gate_invoke_tool_opened() {
    let server = spawn(TestServerOptions::default()).await;
    let client = client_for(&server);
    let session = uuid_like();
    let watch = client.open_session_watch(session.clone()).unwrap();
    assert_eq!(watch.next().await.unwrap(), Some(WatchUpdate::Connected));
    let opened = client
        .invoke_tool(
            "clean up".to_string(),
            "Bash".to_string(),
            Some(JsonText(r#"{"command":"rm -rf /tmp/cache"}"#.to_string())),
            None,
            Some(session.clone()),
        )
        .await
        .unwrap();
    assert_eq!(opened.status, TurnStatus::Parked);
    assert_eq!(opened.session_id, session);
    assert_eq!(opened.interaction_ids.len(), 1);
    let gate = loop {
        let update = tokio::time::timeout(Duration::from_secs(10), watch.next())
            .await
            .expect("an update within 10 s")
            .unwrap()
            .expect("the watch goes on");
        if let WatchUpdate::Event {
            event:
                WatchEvent::Interaction {
                    status: InteractionStatus::Pending,
                    interaction,
                    ..
                },
        } = update
        {
            break interaction.expect("the event carries its gate");
        }
    };
    assert_eq!(gate.id, opened.interaction_ids[0]);
    assert_eq!(gate.status, InteractionStatus::Pending);
    let request = gate.request.expect("the gate says what it asks");
    assert_eq!(request.tool.as_deref(), Some("Bash"));
    let args: serde_json::Value = serde_json::from_str(&request.args.unwrap().0).unwrap();
    assert_eq!(args, serde_json::json!({"command": "rm -rf /tmp/cache"}));
    let created = gate.created_at.expect("a creation time");
    let age = std::time::SystemTime::now()
        .duration_since(created)
        .unwrap_or_default();
    assert!(age < Duration::from_secs(3600), "created {age:?} ago");
    watch.cancel();

    let allowed = client
        .invoke_tool(
            "list".to_string(),
            "Bash".to_string(),
            None,
            Some(ToolPermission::Allow),
            None,
        )
        .await
        .unwrap();
    assert_eq!(allowed.status, TurnStatus::Completed);
    assert!(allowed.interaction_ids.is_empty());
    assert_ne!(allowed.session_id, session);
    server.shutdown().await;
}

/// ESTABLISHED loopback TCP connections with an end on `port` (both the client's and the
/// server's ends are listed).
fn established_connections(port: u16) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    let port = format!(":{port:04X}");
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            fields.len() > 3
                && fields[3] == "01"
                && (fields[1].ends_with(&port) || fields[2].ends_with(&port))
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_right_after_an_abandoned_next_still_closes_the_connection() {
    // A caller's cancelled coroutine or task frees its pending next() (the future is
    // dropped) while that next() still holds the source; a cancel() at that moment must
    // still close the connection. Its own server, so the connection count is this test's.
    let server = spawn(TestServerOptions::default()).await;
    let port = server
        .base_url
        .rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches('/').parse::<u16>().ok())
        .unwrap();
    let client = client_for(&server);
    for round in 0..20 {
        let watch = client.open_session_watch(uuid_like()).unwrap();
        assert_eq!(watch.next().await.unwrap(), Some(WatchUpdate::Connected));
        let pending = {
            let watch = Arc::clone(&watch);
            tokio::spawn(async move { watch.next().await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        pending.abort();
        watch.cancel();
        let mut closed = false;
        for _ in 0..250 {
            if established_connections(port) == 0 {
                closed = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            closed,
            "round {round}: the watch's connection outlived cancel()"
        );
        assert_eq!(watch.next().await.unwrap(), None);
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_watch_the_server_refuses_throws_once_then_ends() {
    let server = spawn(TestServerOptions::default()).await;
    let client = GatehouseClient::new(ClientConfig {
        base_url: server.base_url.clone(),
        api_key: Some("not-the-key".to_string()),
        project_id: Some(server.project_id.clone()),
        timeout: Some(Duration::from_secs(10)),
        upstream: None,
        tenant: None,
        participant_id: None,
        agenta_contract: None,
    })
    .unwrap();
    let watch = client.open_session_watch(uuid_like()).unwrap();
    let error = watch.next().await.unwrap_err();
    assert!(
        matches!(error, GatehouseError::Unauthorized { .. }),
        "{error:?}"
    );
    assert_eq!(watch.next().await.unwrap(), None);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_execution_event_stream_ends_after_the_session_is_reconciled() {
    let server = spawn(TestServerOptions::default()).await;
    let client = client_for(&server);
    let ((room, session, _), gate) = park(&server, &uuid_like()).await;
    let events = client
        .open_execution_events(room.clone(), session.clone(), None)
        .unwrap();
    client
        .respond_to_interaction(gate, true, None, None, None)
        .await
        .unwrap();
    let mut seen = Vec::new();
    while let Some(event) = tokio::time::timeout(Duration::from_secs(20), events.next())
        .await
        .expect("the stream moves or ends within 20 s")
        .unwrap()
    {
        seen.push(event);
    }
    let sequences: Vec<i64> = seen.iter().map(|e| e.sequence).collect();
    let mut sorted = sequences.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sequences, sorted, "each event once, in order");
    assert_eq!(
        seen.last().map(|e| e.event_type.clone()),
        Some(ExecutionEventType::SessionReconciled)
    );
    // Resuming after an event skips it and what came before.
    let first = sequences[0];
    let rest = client
        .open_execution_events(room, session, Some(first))
        .unwrap();
    let next = rest.next().await.unwrap().expect("a later event");
    assert!(next.sequence > first, "{next:?}");
    assert!(client
        .open_execution_events("r".into(), "s".into(), Some(-1))
        .is_err());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_the_server_refuses_ends_with_a_typed_error() {
    let server = spawn(TestServerOptions::default()).await;
    let client = GatehouseClient::new(ClientConfig {
        base_url: server.base_url.clone(),
        api_key: Some("not-the-key".to_string()),
        project_id: Some(server.project_id.clone()),
        timeout: Some(std::time::Duration::from_secs(10)),
        upstream: None,
        tenant: None,
        participant_id: None,
        agenta_contract: None,
    })
    .unwrap();
    let (listener, mut rx) = listener(false);
    let handle = client.watch_session(uuid_like(), listener).unwrap();
    match next(&mut rx).await {
        Seen::Closed(Some(GatehouseError::Unauthorized { msg, .. })) => {
            assert!(msg.contains("unauthorized"), "{msg}")
        }
        other => panic!("expected a close with Unauthorized, got {other:?}"),
    }
    assert!(handle.is_finished().unwrap());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_carry_json_text_and_errors_keep_their_kind() {
    let server = spawn(TestServerOptions::default()).await;
    let client = client_for(&server);
    let session = uuid_like();
    let gate = open_gate(&server, &session).await;

    let row = client.get_interaction(gate.clone()).await.unwrap();
    let args: serde_json::Value =
        serde_json::from_str(&row.request.as_ref().unwrap().args.as_ref().unwrap().0).unwrap();
    assert_eq!(args, serde_json::json!({"command": "echo hi"}));
    let parameters: serde_json::Value =
        serde_json::from_str(&row.parameters.as_ref().unwrap().0).unwrap();
    assert_eq!(parameters["agent"]["llm"]["model"], "rust-model");

    let missing = client
        .get_interaction("not-a-uuid".to_string())
        .await
        .unwrap_err();
    assert!(
        matches!(
            missing,
            GatehouseError::Validation { .. }
                | GatehouseError::Invalid { .. }
                | GatehouseError::NotFound { .. }
        ),
        "{missing:?}"
    );
    assert!(!missing.is_retryable());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_intervention_goes_from_requested_to_applied_with_evidence() {
    let server = spawn(TestServerOptions::default()).await;
    let client = client_for(&server);
    let ((room, session, revision), gate) = park(&server, &uuid_like()).await;

    let seen = client
        .get_execution_session(room.clone(), session.clone())
        .await
        .unwrap();
    assert_eq!(seen.revision, i64::try_from(revision).unwrap());
    let requested = client
        .request_intervention(
            room.clone(),
            session.clone(),
            seen.revision,
            "stop".to_string(),
            Checkpoint::PreAction,
            None,
            None,
        )
        .await
        .unwrap();
    assert_eq!(requested.state, InterventionState::Requested);
    // Parked at the gate: nothing is applied yet, and waiting says so.
    let early = client
        .wait_for_intervention(
            room.clone(),
            session.clone(),
            requested.operation_id.clone(),
            std::time::Duration::from_millis(50),
        )
        .await
        .unwrap();
    assert_eq!(early, InterventionOutcome::TimedOut);
    // A stale revision is a typed conflict.
    let stale = client
        .request_intervention(
            room.clone(),
            session.clone(),
            seen.revision,
            "be brief".to_string(),
            Checkpoint::PreStep,
            None,
            None,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(stale, GatehouseError::RevisionConflict { .. }),
        "{stale:?}"
    );

    client
        .respond_to_interaction(gate, true, None, None, None)
        .await
        .unwrap();
    let outcome = client
        .wait_for_intervention(
            room.clone(),
            session.clone(),
            requested.operation_id.clone(),
            std::time::Duration::from_secs(10),
        )
        .await
        .unwrap();
    let InterventionOutcome::Applied { evidence } = outcome else {
        panic!("not applied: {outcome:?}");
    };
    assert_eq!(evidence.event_type, ExecutionEventType::InterventionApplied);
    assert_eq!(
        evidence.operation_id.as_deref(),
        Some(requested.operation_id.as_str())
    );
    assert_eq!(evidence.checkpoint, Some(Checkpoint::PreAction));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn execution_calls_on_a_host_without_execution_are_capability_unavailable() {
    let server = spawn(TestServerOptions {
        execution: false,
        ..TestServerOptions::default()
    })
    .await;
    let client = client_for(&server);
    for _ in 0..2 {
        let error = client
            .get_execution_session("room-1".to_string(), "es-1".to_string())
            .await
            .unwrap_err();
        assert!(
            matches!(error, GatehouseError::CapabilityUnavailable { .. }),
            "{error:?}"
        );
        assert!(!error.is_retryable());
    }
    server.shutdown().await;
}

fn uuid_like() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    format!(
        "{:08x}-0000-7000-8000-{:012x}",
        (nanos & 0xffff_ffff) as u32,
        n as u64 + (nanos as u64 >> 32)
    )
}

/// A scripted durable host: each request answered by `answer(method, path)` (status,
/// content type, body), one connection per request.
async fn durable_host(answer: fn(&str, &str) -> (u16, &'static str, String)) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let head_end = loop {
                    if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break pos;
                    }
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
                let mut line = head.split(' ');
                let method = line.next().unwrap_or_default().to_string();
                let target = line.next().unwrap_or_default();
                let path = target.split('?').next().unwrap_or_default().to_string();
                let length: usize = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse().ok())?
                    })
                    .unwrap_or(0);
                while buf.len() < head_end + 4 + length {
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let (status, content_type, body) = answer(&method, &path);
                let reply = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    url
}

fn durable_client(url: String) -> Arc<GatehouseClient> {
    GatehouseClient::new(ClientConfig {
        base_url: url,
        api_key: Some("k".to_string()),
        project_id: Some("019fac94-0000-7000-8000-0000000000aa".to_string()),
        timeout: Some(Duration::from_secs(5)),
        upstream: Some(gatehouse_ffi::Upstream::Agenta),
        tenant: None,
        participant_id: None,
        agenta_contract: Some(AgentaContract::Durable),
    })
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_durable_contract_crosses_the_facade() {
    let url = durable_host(|method, path| {
        let row = serde_json::json!({
            "id": "i1", "session_id": "s1", "turn_id": "t1", "token": "tok",
            "kind": "user_approval", "status": "responded"
        });
        match (method, path) {
            ("POST", "/api/sessions/interactions/i1/respond") => (
                202,
                "application/json",
                serde_json::json!({"interaction": row, "command": {"id": "c1", "state": "pending"},
                                   "execution": {"id": "e2", "state": "pending_delivery"}})
                .to_string(),
            ),
            ("POST", "/api/sessions/interactions/i2/respond") => (
                409,
                "application/json",
                serde_json::json!({"code": "execution_mismatch", "message": "The interaction belongs to a different execution.",
                                   "retryable": false, "details": {"current_execution_id": "t9"}})
                .to_string(),
            ),
            ("POST", "/api/sessions/s1/cancel") => (
                200,
                "application/json",
                serde_json::json!({"command": {"id": "c2", "state": "obsolete"},
                                   "execution": {"id": null, "state": "idle"}})
                .to_string(),
            ),
            ("GET", "/api/sessions/s1") => (
                200,
                "application/json",
                serde_json::json!({"execution_state": {"state": "idle"},
                                   "pending": {"inputs": [], "interactions": [row]},
                                   "read": {"latest_sequence": 7, "history_complete": true},
                                   "capabilities": {"durable_approvals": true}})
                .to_string(),
            ),
            ("GET", "/api/sessions/s1/events") => (
                200,
                "text/event-stream",
                "data: {\"kind\":\"event\",\"session_id\":\"s1\",\"execution_id\":\"t1\",\"frame_or_event_id\":\"v\",\"entity_id\":\"t1\",\"sequence\":8,\"created_at\":\"t\",\"type\":\"execution.started\",\"payload\":{\"started_at\":\"t\"}}\n\nevent: ready\ndata: {}\n\nevent: relay-close\ndata: {\"reason\": \"authorization_revoked\", \"reconnect\": false}\n\n".to_string(),
            ),
            _ => (404, "application/json", "{\"detail\":\"Not Found\"}".to_string()),
        }
    })
    .await;
    let client = durable_client(url);
    assert_eq!(
        client.agenta_contract().unwrap(),
        Some(AgentaContract::Durable)
    );
    let outcome = client
        .respond_with_outcome("i1".into(), true, None, None, None, Some("t1".into()), None)
        .await
        .unwrap();
    assert!(
        matches!(&outcome, RespondOutcome::Continued { command_id, execution_state, .. } if command_id == "c1" && execution_state == "pending_delivery"),
        "{outcome:?}"
    );
    let error = client
        .respond_with_outcome("i2".into(), true, None, None, None, Some("t1".into()), None)
        .await
        .unwrap_err();
    assert!(
        matches!(error, GatehouseError::StaleExecution { .. }),
        "{error:?}"
    );

    let stop = client.stop_session("s1".into(), None, None).await.unwrap();
    assert!(!stop.is_stopping);
    let settled = client
        .wait_for_stop("s1".into(), stop, Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!(settled, StopOutcome::NotRunning);

    let snapshot = client.session_snapshot("s1".into()).await.unwrap();
    assert_eq!(snapshot.latest_sequence, Some(7));
    assert_eq!(snapshot.pending_interactions.len(), 1);

    let events = client.open_session_events("s1".into(), 7).unwrap();
    let mut seen = Vec::new();
    while let Some(update) = events.next().await.unwrap() {
        seen.push(update);
    }
    assert!(matches!(
        seen[0],
        SessionEventUpdate::Connected { after: 7 }
    ));
    assert!(
        matches!(&seen[1], SessionEventUpdate::Event { event } if event.sequence == Some(8) && event.event_type == "execution.started")
    );
    assert_eq!(seen[2], SessionEventUpdate::Ready);
    assert!(
        matches!(&seen[3], SessionEventUpdate::Closed { reason } if reason == "authorization_revoked")
    );
    assert_eq!(seen.len(), 4);
}
