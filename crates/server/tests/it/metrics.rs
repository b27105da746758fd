//! `GET /metrics`: Prometheus's text format; requests counted by route template, never
//! by raw path; gates, resumes, admission waits and lease takeovers counted; off with
//! `metrics: false`. A real Prometheus scraping it, and `promtool check metrics`, are in
//! `tests/real_tools.rs`.

use std::time::Duration;

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
    let (_, _, text) = h.scrape_metrics().await;
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
