//! `GET /metrics`: Prometheus's text format; requests counted by route template, never
//! by raw path; gates, resumes, admission waits and lease takeovers counted; off with
//! `metrics: false`; a scrape takes no database connection; a listener of its own and a
//! key. A real Prometheus scraping it, and `promtool check metrics`, are in
//! `tests/real_tools.rs`.

use std::time::{Duration, Instant};

use gatehouse_server::testing::TestServerOptions;
use serde_json::Value;

use crate::common::Harness;

/// The value of the sample whose line starts with `prefix` (name and labels).
fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|line| line.starts_with(prefix))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
}

/// The longest a test waits for the gauges to show a change.
const SAFETY: Duration = Duration::from_secs(30);

/// The text of the first scrape `ready` accepts: the gauges read from the database are
/// refreshed off the request path (every `metrics_refresh`), so a change shows within
/// one refresh, not at once.
async fn scrape_until(h: &Harness, ready: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + SAFETY;
    loop {
        let (status, _, text) = h.scrape_metrics().await;
        assert_eq!(status, 200, "{text}");
        if ready(&text) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "the gauges never showed it: {text}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Issue 37, item 1: a scrape reads gauges kept off the request path and never takes a
/// database connection, so scrapes cost the same however many gates there are, and
/// any number of them at once leave the pool to the API. Proven with every connection of
/// the pool held: 32 concurrent scrapes still answer, with the gauges.
#[tokio::test]
async fn scrapes_answer_with_every_database_connection_held() {
    let h = Harness::with(TestServerOptions {
        // A scrape that waited for a connection would wait far past the test's bound.
        db_acquire_timeout: Some(Duration::from_secs(300)),
        ..crate::common::legacy_options()
    })
    .await;
    let gate = h.park("scrape-pool", "m-scrape").await;
    scrape_until(&h, |text| {
        sample(text, r#"gatehouse_gates{status="pending"}"#) == Some(1.0)
    })
    .await;

    let held = h
        .server
        .server
        .state()
        .db
        .hold_every_connection()
        .await
        .expect("every pooled connection");
    let scrapes = (0..32).map(|_| async {
        tokio::time::timeout(SAFETY, h.scrape_metrics())
            .await
            .expect("a scrape must not wait for a database connection")
    });
    for (status, _, text) in futures::future::join_all(scrapes).await {
        assert_eq!(status, 200, "{text}");
        assert_eq!(
            sample(&text, r#"gatehouse_gates{status="pending"}"#),
            Some(1.0),
            "{text}"
        );
        assert!(
            sample(&text, r#"gatehouse_db_pool_connections{state="idle"}"#) == Some(0.0),
            "{text}"
        );
    }
    drop(held);

    // The gauges go on following the database once it is free again.
    let (status, body) = h.respond(&gate, true).await;
    assert_eq!(status, 200, "{body}");
    h.wait_resolved(&gate).await;
    scrape_until(&h, |text| {
        sample(text, r#"gatehouse_gates{status="resolved"}"#) == Some(1.0)
            && sample(text, r#"gatehouse_gates{status="pending"}"#) == Some(0.0)
    })
    .await;
    h.server.shutdown().await;
}

#[tokio::test]
async fn requests_are_counted_by_route_template_and_gates_by_status() {
    let h = Harness::legacy().await;
    let gate = h.park("metrics-session", "m-metrics").await;
    let (status, body) = h.respond(&gate, true).await;
    assert_eq!(status, 200, "{body}");
    h.wait_resolved(&gate).await;
    let (status, _) = h.get("/api/sessions/interactions/not-a-uuid-at-all").await;
    assert!(status >= 400);
    let (status, _) = h.get("/no/such/route").await;
    assert_eq!(status, 404);

    let (status, content_type, text) = h.scrape_metrics().await;
    assert_eq!(status, 200, "{text}");
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    let text = scrape_until(&h, |text| {
        sample(text, r#"gatehouse_gates{status="resolved"}"#) == Some(1.0)
    })
    .await;
    let respond = r#"gatehouse_http_requests_total{method="POST",route="/api/sessions/interactions/{id}/respond",status="200"}"#;
    assert_eq!(sample(&text, respond), Some(1.0), "{text}");
    assert!(
        !text.contains(&gate),
        "no raw path (with an id) is a label: {text}"
    );
    assert!(
        text.contains(r#"route="unmatched""#),
        "a 404 of no route: {text}"
    );
    assert!(text.contains("# TYPE gatehouse_http_request_duration_seconds histogram"));
    assert!(text.contains(r#"gatehouse_http_request_duration_seconds_bucket{method="POST",route="/api/sessions/interactions/{id}/respond",le="#));
    assert_eq!(
        sample(&text, r#"gatehouse_gates{status="resolved"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"gatehouse_gates{status="pending"}"#),
        Some(0.0)
    );
    assert_eq!(
        sample(&text, r#"gatehouse_resumes_total{outcome="resumed"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(sample(&text, "gatehouse_resume_backlog"), Some(0.0));
    assert!(
        sample(&text, r#"gatehouse_db_pool_connections{state="max"}"#).unwrap() >= 1.0,
        "{text}"
    );
    for name in [
        "gatehouse_webhook_deliveries_total",
        "gatehouse_lease_takeovers_total",
    ] {
        assert!(
            text.contains(&format!("# TYPE {name} counter")),
            "{name}: {text}"
        );
    }
    h.server.shutdown().await;
}

#[tokio::test]
async fn metrics_off_records_nothing_and_answers_404() {
    let h = Harness::with(TestServerOptions {
        metrics: false,
        ..crate::common::legacy_options()
    })
    .await;
    let (status, _, text) = h.scrape_metrics().await;
    assert_eq!(status, 404, "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["code"], "ROUTE_NOT_FOUND");
    h.server.shutdown().await;
}

#[tokio::test]
async fn admission_waits_and_lease_takeovers_are_counted() {
    // No resume workers: answered gates stay queued, and the backlog limit is 1. The
    // database outlives this server (a file of the test's own, or its Postgres database).
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::with(TestServerOptions {
        database_path: Some(dir.path().join("takeover.db")),
        run_dispatcher: false,
        max_resume_backlog: Some(1),
        backlog_wait: Some(Duration::from_millis(200)),
        ..crate::common::legacy_options()
    })
    .await;
    let first = h.park("waits-1", "m-wait").await;
    let second = h.park("waits-2", "m-wait").await;
    assert_eq!(h.respond(&first, true).await.0, 200);
    // The backlog is at its limit: this answer waits the longest wait, then is taken.
    assert_eq!(h.respond(&second, true).await.0, 200);
    let text = scrape_until(&h, |text| {
        sample(text, "gatehouse_resume_backlog") == Some(2.0)
    })
    .await;
    assert_eq!(
        sample(
            &text,
            r#"gatehouse_admission_waits_total{outcome="timed_out"}"#
        ),
        Some(1.0),
        "{text}"
    );
    assert!(
        text.contains("gatehouse_admission_wait_seconds_bucket"),
        "{text}"
    );
    assert_eq!(
        sample(&text, "gatehouse_resume_backlog"),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"gatehouse_gates{status="responded"}"#),
        Some(2.0)
    );

    // The first job as a worker that died holding it left it: claimed once, its lease
    // expired. A server with workers takes it over.
    let db = crate::common::db::Db::open(&h.server).await;
    let changed = db
        .execute(
            "UPDATE resume_jobs SET attempts = 1, lease_owner = 'a-dead-worker', \
             lease_expires_ms = 0 WHERE interaction_id = $1",
            &[&first],
        )
        .await;
    assert_eq!(changed, 1);
    db.close().await;
    let options = TestServerOptions {
        run_dispatcher: true,
        ..h.server.options.clone()
    };
    h.server.shutdown().await;
    let h = Harness::with(options).await;
    h.wait_resolved(&first).await;
    h.wait_resolved(&second).await;
    let (_, _, text) = h.scrape_metrics().await;
    assert_eq!(
        sample(
            &text,
            r#"gatehouse_lease_takeovers_total{work="resume_job"}"#
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"gatehouse_resumes_total{outcome="resumed"}"#),
        Some(2.0),
        "{text}"
    );
    h.server.shutdown().await;
}

/// `GET {base}/metrics` with `authorization` (if any): status and body.
async fn scrape_at(base: &str, authorization: Option<&str>) -> (u16, String) {
    let mut request = reqwest::Client::new().get(format!("{base}/metrics"));
    if let Some(value) = authorization {
        request = request.header("Authorization", value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// Issue 37, item 1: an operator can put the metrics on a listener of their own (the
/// API's answers 404 there) and behind a key (401 without it or with another, and the
/// key is never echoed).
#[tokio::test]
async fn metrics_on_a_listener_of_their_own_and_behind_a_key() {
    let secret = "scrape-secret-37";
    let h = Harness::with(TestServerOptions {
        metrics_bind: Some("127.0.0.1:0".parse().unwrap()),
        metrics_key: Some(secret.to_string()),
        ..crate::common::legacy_options()
    })
    .await;
    let metrics_base = format!(
        "http://{}",
        h.server.server.metrics_addr().expect("a metrics listener")
    );
    let (status, _, text) = h.scrape_metrics().await;
    assert_eq!(status, 404, "not on the API's listener: {text}");

    for authorization in [
        None,
        Some("Bearer wrong-key".to_string()),
        Some(format!("Basic {secret}")),
    ] {
        let (status, text) = scrape_at(&metrics_base, authorization.as_deref()).await;
        assert_eq!(status, 401, "{authorization:?}: {text}");
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(body["code"], "UNAUTHORIZED", "{body}");
        assert!(!text.contains(secret), "{text}");
    }
    let (status, text) = scrape_at(&metrics_base, Some(&format!("Bearer {secret}"))).await;
    assert_eq!(status, 200, "{text}");
    assert!(
        text.contains("# TYPE gatehouse_db_pool_connections gauge"),
        "{text}"
    );
    // As the API takes its keys: `ApiKey` too, or the bare key.
    for authorization in [format!("ApiKey {secret}"), secret.to_string()] {
        let (status, text) = scrape_at(&metrics_base, Some(&authorization)).await;
        assert_eq!(status, 200, "{text}");
    }
    // That listener serves nothing else; the API's serves the rest.
    let health = reqwest::get(format!("{metrics_base}/health"))
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 404);
    let (status, _) = h.get("/api/capabilities").await;
    assert_eq!(status, 200);
    h.server.shutdown().await;

    // A key on the API's own listener.
    let h = Harness::with(TestServerOptions {
        metrics_key: Some(secret.to_string()),
        ..crate::common::legacy_options()
    })
    .await;
    assert_eq!(h.server.server.metrics_addr(), None);
    let (status, _, text) = h.scrape_metrics().await;
    assert_eq!(status, 401, "{text}");
    let (status, text) = scrape_at(&h.server.base_url, Some(&format!("Bearer {secret}"))).await;
    assert_eq!(status, 200, "{text}");
    h.server.shutdown().await;
}
