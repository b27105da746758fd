//! Admission control (`ServerConfig::max_resume_backlog`): while the resume backlog is at
//! its limit an answer waits, at most `backlog_wait`, and is then taken anyway; an
//! answer is never refused for load, and answers flow again as the workers drain.

use std::time::{Duration, Instant};

use crate::common::Harness;
use gatehouse_server::testing::TestServerOptions;
use serde_json::json;

#[tokio::test]
async fn a_full_backlog_delays_answers_but_never_refuses_them() {
    let wait = Duration::from_millis(300);
    // No workers: nothing drains the queue, so the backlog stays at its limit of 1.
    let h = Harness::with(TestServerOptions {
        run_dispatcher: false,
        max_resume_backlog: Some(1),
        backlog_wait: Some(wait),
        ..crate::common::legacy_options()
    })
    .await;
    let first = h.park("admission-1", "m-admission").await;
    let second = h.park("admission-2", "m-admission").await;
    let third = h.park("admission-3", "m-admission").await;

    let (status, body) = h.respond(&first, true).await;
    assert_eq!(status, 200, "{body}");

    let started = Instant::now();
    let (status, body) = h.respond(&second, true).await;
    assert_eq!(status, 200, "{body}");
    assert!(started.elapsed() >= wait, "{:?}", started.elapsed());
    assert_eq!(body["interaction"]["status"], "responded", "{body}");

    let started = Instant::now();
    let (status, body) = h
        .post(
            "/api/sessions/interactions/respond-batch",
            json!({"answers": [{"id": third, "answer": {"approved": true}}]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(started.elapsed() >= wait, "{:?}", started.elapsed());
    assert_eq!(body["results"][0]["outcome"], "answered", "{body}");
}

#[tokio::test]
async fn answers_are_admitted_as_the_workers_drain_the_backlog() {
    let h = Harness::with(TestServerOptions {
        resume_workers: Some(1),
        max_resume_backlog: Some(1),
        // Longer than the test: an answer admitted here was admitted because the
        // backlog shrank, not because it waited too long.
        backlog_wait: Some(Duration::from_secs(120)),
        dispatch_poll: Some(Duration::from_millis(20)),
        ..crate::common::legacy_options()
    })
    .await;
    let mut ids = Vec::new();
    for i in 0..6 {
        ids.push(h.park(&format!("drain-{i}"), "m-admission").await);
    }
    let answers = ids.iter().map(|id| h.respond(id, true));
    for (status, body) in futures::future::join_all(answers).await {
        assert_eq!(status, 200, "{body}");
    }
    for id in &ids {
        let row = h.wait_resolved(id).await;
        assert_eq!(row["data"]["resolution"]["verdict"], "approved", "{row}");
    }
}
