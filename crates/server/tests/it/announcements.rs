//! Every change is announced once: each status an interaction row reaches through the
//! public API (opened by a client or by a turn, answered one by one or in a batch, resolved
//! by its runner or by a resume, cancelled by a transition, cancel-stale or a newer turn)
//! writes exactly one outbox event per webhook endpoint and publishes exactly one watch
//! event, and the two tell the same changes. Runs on SQLite, and on PostgreSQL with
//! `GATEHOUSE_TEST_DATABASE_URL` (`cargo xtask test` does both).

use std::collections::BTreeMap;
use std::time::Duration;

use gatehouse_server::announce::BusEvent;
use gatehouse_server::config::WebhookEndpoint;
use gatehouse_server::testing::TestServerOptions;
use gatehouse_wire::interaction::WatchEvent;
use serde_json::{json, Value};

use crate::common::{config, user, Harness};

/// Two endpoints nobody listens on (the deliveries retry; the outbox rows are counted, not
/// delivered).
fn endpoints() -> Vec<WebhookEndpoint> {
    ["phone", "audit"]
        .iter()
        .map(|name| {
            WebhookEndpoint::parse(&format!(
                "{name}=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw@http://127.0.0.1:9/{name}"
            ))
            .unwrap()
        })
        .collect()
}

fn gate(session: &str, token: &str, turn: &str) -> Value {
    json!({
        "session_id": session, "turn_id": turn, "token": token, "kind": "user_approval",
        "data": {"request": {"tool": "Bash", "args": {"command": "true"}, "tool_call_id": format!("call-{token}")}}
    })
}

async fn create(h: &Harness, session: &str, token: &str, turn: &str) -> String {
    let (status, body) = h
        .post("/api/sessions/interactions", gate(session, token, turn))
        .await;
    assert_eq!(status, 200, "{body}");
    body["interaction"]["id"].as_str().unwrap().to_string()
}

async fn transition(h: &Harness, body: Value) {
    let (status, answer) = h.post("/api/sessions/interactions/transition", body).await;
    assert_eq!(status, 200, "{answer}");
}

/// Every bus event published until none came for a while.
async fn drain(bus: &mut tokio::sync::broadcast::Receiver<BusEvent>) -> Vec<BusEvent> {
    let mut events = Vec::new();
    while let Ok(Ok(event)) = tokio::time::timeout(Duration::from_millis(500), bus.recv()).await {
        events.push(event);
    }
    events
}

#[tokio::test]
async fn every_status_a_row_reaches_is_one_outbox_event_per_endpoint_and_one_watch_event() {
    let h = Harness::with(TestServerOptions {
        webhook_endpoints: endpoints(),
        ..crate::common::legacy_options()
    })
    .await;
    let state = h.server.server.state().clone();
    let mut bus = state.announce.watch().subscribe();

    // A client's gate: opened, then cancelled by its runner.
    create(&h, "ext", "cancelled", "t-1").await;
    transition(
        &h,
        json!({"session_id": "ext", "token": "cancelled", "status": "cancelled"}),
    )
    .await;
    // Resolved in band, from pending.
    create(&h, "ext", "in-band", "t-1").await;
    transition(
        &h,
        json!({"session_id": "ext", "token": "in-band", "status": "resolved",
               "resolution": {"verdict": "approved", "tool_call_id": "call-in-band"}}),
    )
    .await;
    // Answered through the API, then resolved by its (external) runner.
    let answered = create(&h, "ext", "answered", "t-1").await;
    let (status, body) = h.respond(&answered, true).await;
    assert_eq!(status, 200, "{body}");
    transition(
        &h,
        json!({"session_id": "ext", "token": "answered", "status": "resolved",
               "resolution": {"verdict": "approved", "tool_call_id": "call-answered"}}),
    )
    .await;
    // Cancelled as stale.
    create(&h, "ext", "stale", "t-old").await;
    let (status, body) = h
        .post(
            "/api/sessions/interactions/cancel-stale",
            json!({"session_id": "ext", "turn_id": "t-live"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["cancelled"], 1, "{body}");
    // Two answered in one batch.
    let first = create(&h, "batch", "b-1", "t-1").await;
    let second = create(&h, "batch", "b-2", "t-1").await;
    let (status, body) = h
        .post(
            "/api/sessions/interactions/respond-batch",
            json!({"answers": [{"id": first, "answer": {"approved": true}},
                               {"id": second, "answer": {"approved": false}}]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // A turn parks at its gate; the answer resumes it, and the resume resolves the gate.
    let parked = h.park("turns", "m-announce").await;
    let (status, body) = h.respond(&parked, true).await;
    assert_eq!(status, 200, "{body}");
    h.wait_resolved(&parked).await;
    // A newer turn of a session cancels the gate its older turn left open.
    let older = h.park("newer", "m-announce").await;
    h.invoke(json!({
        "session_id": "newer",
        "data": {"inputs": {"messages": user("again")}, "parameters": config("m-announce", "ask")}
    }))
    .await;
    assert_eq!(h.interaction(&older).await["status"], "cancelled");

    // What the watchers heard.
    let events = drain(&mut bus).await;
    let mut watched: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut records_changed: BTreeMap<String, usize> = BTreeMap::new();
    for event in &events {
        match &event.event {
            WatchEvent::Interaction {
                interaction_id: Some(id),
                status,
                ..
            } => {
                *watched
                    .entry((id.clone(), status.as_str().to_string()))
                    .or_default() += 1
            }
            WatchEvent::RecordsChanged { session_id } => {
                *records_changed.entry(session_id.clone()).or_default() += 1
            }
            _ => {}
        }
    }
    // What the webhook receivers will hear.
    let rows = state
        .deliveries
        .list_outbox(Some(&h.server.project_id), None, 1000)
        .await
        .unwrap();
    let mut outboxed: BTreeMap<(String, String), Vec<(String, String)>> = BTreeMap::new();
    for row in &rows {
        let status = match row.event_type.as_str() {
            "interaction.opened" => "pending",
            other => other.strip_prefix("interaction.").unwrap(),
        };
        outboxed
            .entry((row.subject_id.clone(), status.to_string()))
            .or_default()
            .push((row.endpoint.clone(), row.event_id.clone()));
    }

    for (change, deliveries) in &outboxed {
        let mut names: Vec<&str> = deliveries.iter().map(|(e, _)| e.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["audit", "phone"], "{change:?}: {deliveries:?}");
        assert_eq!(
            deliveries[0].1, deliveries[1].1,
            "{change:?}: one event, one webhook-id for both endpoints"
        );
    }
    for (change, count) in &watched {
        assert_eq!(*count, 1, "{change:?} was watched {count} times");
    }
    let outboxed_changes: Vec<_> = outboxed.keys().cloned().collect();
    let watched_changes: Vec<_> = watched.keys().cloned().collect();
    assert_eq!(
        outboxed_changes, watched_changes,
        "the outbox and the watch told different changes"
    );
    // Every status a row can reach was reached, by every path above.
    let count = |status: &str| watched.keys().filter(|(_, s)| s == status).count();
    assert_eq!(count("pending"), 9, "{watched:?}");
    assert_eq!(count("responded"), 4, "{watched:?}");
    assert_eq!(count("resolved"), 3, "{watched:?}");
    assert_eq!(count("cancelled"), 3, "{watched:?}");
    // And each recorded turn changed its session's records once.
    for session in ["turns", "newer"] {
        let turns = h.turns(session).await["count"].as_u64().unwrap() as usize;
        assert_eq!(
            records_changed.get(session),
            Some(&turns),
            "{records_changed:?}"
        );
    }
}
