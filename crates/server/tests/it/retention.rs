//! Issue 37, item 6: the history rows are pruned. Finished webhook events and
//! idempotency keys past their retention are deleted in batches, by one instance at a
//! time under a lease; pending events, and what a setting keeps, stay.

use std::time::Duration;

use gatehouse_server::config::{RetentionSettings, WebhookEndpoint, WebhookSettings};
use gatehouse_server::testing::TestServerOptions;
use serde_json::json;

use crate::common::db::Db;
use crate::common::{legacy_options, wait_until, Harness};

/// An endpoint nobody listens on: with one attempt, every event is `failed` at once.
fn unreachable_endpoint() -> Vec<WebhookEndpoint> {
    vec![WebhookEndpoint::parse(
        "phone=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw@http://127.0.0.1:9/phone",
    )
    .unwrap()]
}

async fn count(db: &Db, sql: &str) -> u64 {
    db.text(&format!("SELECT CAST(COUNT(*) AS TEXT) {sql}"), &[])
        .await
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn finished_events_and_old_idempotency_keys_are_pruned_in_batches() {
    let h = Harness::with(TestServerOptions {
        webhook_endpoints: unreachable_endpoint(),
        // One attempt each and no circuit: every event fails at once (an open circuit
        // would keep the rest pending, which is never pruned).
        webhook_settings: Some(WebhookSettings {
            max_attempts: 1,
            circuit_failures: 0,
            ..WebhookSettings::default()
        }),
        retention: Some(RetentionSettings {
            delivered_events: None,
            failed_events: Some(Duration::from_millis(1)),
            idempotency_keys: Some(Duration::from_millis(1)),
            interval: Duration::from_millis(200),
            batch: 2,
        }),
        ..legacy_options()
    })
    .await;
    let db = Db::open(&h.server).await;
    // History written before this version pruned anything: a delivered event (kept: its
    // retention is off) and a pending one (never pruned), both years old.
    for (id, state) in [("old-delivered", "delivered"), ("old-pending", "pending")] {
        db.execute(
            "INSERT INTO webhook_outbox (id, event_id, endpoint, project_id, event_type, \
             subject_id, payload, state, next_attempt_ms, created_at) \
             VALUES ($1, $1, 'elsewhere', 'p', 'interaction.opened', 'x', '{}', $2, \
             4102444800000, '2001-01-01T00:00:00.000000Z')",
            &[id, state],
        )
        .await;
    }
    // Five gates (five events), three answered with an Idempotency-Key.
    for i in 0..5 {
        let (status, body) = h
            .post(
                "/api/sessions/interactions/",
                json!({"session_id": "s", "token": format!("t{i}"), "kind": "user_approval"}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        if i < 3 {
            let id = body["interaction"]["id"].as_str().unwrap();
            let (status, body) = h
                .post_with_key(
                    &format!("/api/sessions/interactions/{id}/respond"),
                    json!({"answer": {"approved": true}}),
                    &format!("key-{i}"),
                )
                .await;
            assert_eq!(status, 200, "{body}");
        }
    }
    let pruned = wait_until(Duration::from_secs(30), || async {
        count(&db, "FROM webhook_outbox WHERE endpoint = 'phone'").await == 0
            && count(&db, "FROM idempotency_keys").await == 0
    })
    .await;
    assert!(
        pruned,
        "outbox: {} events, idempotency keys: {}",
        count(&db, "FROM webhook_outbox WHERE endpoint = 'phone'").await,
        count(&db, "FROM idempotency_keys").await
    );
    assert_eq!(
        count(&db, "FROM webhook_outbox WHERE endpoint = 'elsewhere'").await,
        2,
        "the pending event and the delivered one (its retention off) stay"
    );
    // The gates themselves are history a project keeps.
    assert_eq!(count(&db, "FROM interactions").await, 5);
}

#[tokio::test]
async fn one_instance_at_a_time_holds_the_pruning_lease() {
    let h = Harness::with(TestServerOptions {
        retention: Some(RetentionSettings {
            interval: Duration::from_millis(200),
            ..RetentionSettings::default()
        }),
        ..legacy_options()
    })
    .await;
    let state = h.server.server.state().clone();
    let long = Duration::from_secs(60);
    // The server's own pass holds the lease for one interval; then it is free.
    let taken = wait_until(Duration::from_secs(10), || async {
        gatehouse_server::retention::take_lease(&state.db, "test", long)
            .await
            .unwrap()
    })
    .await;
    assert!(taken, "the lease never came free");
    assert!(
        !gatehouse_server::retention::take_lease(&state.db, "another", long)
            .await
            .unwrap(),
        "a held lease was taken again"
    );
    // While it is held, the instance's pass prunes nothing.
    assert_eq!(
        gatehouse_server::retention::prune_once(&state)
            .await
            .unwrap(),
        None
    );
}
