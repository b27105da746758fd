//! The live benchmarks run end to end at tiny counts and keep their invariants
//! (exactly one winner per gate). No time is asserted.

use gatehouse_bench::live::{bench_fanout, run_all, LiveConfig, Runtimes, FANOUT_SERVER_ENTRY};

/// Row 14's server child: this test binary run again on this entry (see
/// `gatehouse_server::testing::ChildServer`).
#[test]
#[ignore = "the server of a child process; row 14 starts it"]
fn fanout_server_child() {
    assert!(gatehouse_server::testing::serve_child_if_asked(
        FANOUT_SERVER_ENTRY
    ));
}

/// The PostgreSQL server the suite runs on too, if any.
fn postgres_url() -> Option<String> {
    std::env::var("GATEHOUSE_TEST_DATABASE_URL")
        .ok()
        .filter(|url| url.starts_with("postgres"))
}

#[test]
fn live_suite_runs_at_tiny_counts_with_exact_winners() {
    let config = LiveConfig {
        respond_iterations: 4,
        warmup: 1,
        approve_all_gates: 6,
        approve_all_reps: 2,
        approve_all_rtt: std::time::Duration::from_millis(2),
        approve_all_rtt_reps: 1,
        contention_requests: 12,
        contention_gates: 3,
        contention_rounds: 1,
        ffi_iterations: 4,
        floor_iterations: 4,
        python_ffi: None,
        kotlin_ffi: None,
        swift_ffi: None,
        sustained_clients: 2,
        sustained_for: std::time::Duration::from_millis(1500),
        resume_idle_samples: 3,
        scale_sizes: vec![0, 300],
        scale_samples: 3,
        fanout_watchers: 7,
        fanout_sessions: 3,
        fanout_gates: 4,
        postgres_url: postgres_url(),
    };
    let mut steps = Vec::new();
    let report = run_all(&config, |step| steps.push(step.to_string())).unwrap();
    let postgres = config.postgres_url.is_some();
    assert_eq!(steps.len(), 13 + 5 * usize::from(postgres), "{steps:?}");
    assert_eq!(report.respond.client_us.n, 4);
    assert_eq!(report.respond.bare_us.n, 4);
    assert_eq!(report.metrics_overhead.metrics_on_us.n, 4);
    assert_eq!(report.metrics_overhead.metrics_off_us.n, 4);
    assert!(report.metrics_overhead.overhead_pct.is_finite());
    assert_eq!(report.approve_all.parallel_ms.n, 2);
    assert_eq!(report.approve_all.sequential_ms.n, 2);
    assert_eq!(report.approve_all.simulated_rtt_ms, None);
    assert!(
        report.approve_all.batched,
        "approve_all batches against Gatehouse's server"
    );
    assert_eq!(report.approve_all.fanout_ms.n, 2);
    assert_eq!(report.approve_all_rtt.parallel_ms.n, 1);
    assert_eq!(report.approve_all_rtt.simulated_rtt_ms, Some(2.0));
    assert_eq!(report.contention_spread.winners, vec![3]);
    assert_eq!(report.contention_spread.losers, vec![9]);
    assert_eq!(report.contention_single.winners, vec![1]);
    assert_eq!(report.contention_single.losers, vec![11]);
    assert_eq!(report.contention_single.latency_ms.n, 12);
    assert_eq!(report.ffi.rust_us.n, 4);
    assert_eq!(
        report.ffi.not_measured.as_deref(),
        Some("no Python binding given")
    );
    assert!(report.ffi.python_us.is_none());
    assert_eq!(
        report.ffi.kotlin_not_measured.as_deref(),
        Some("no Kotlin binding given")
    );
    assert!(report.ffi.swift_us.is_none());
    assert!(report
        .ffi
        .swift_not_measured
        .as_deref()
        .is_some_and(|reason| reason.contains("Swift")));
    // Sustained load: every answered gate resumed by the end (the backlog drained).
    assert_eq!(report.sustained.len(), 1 + usize::from(postgres));
    for run in &report.sustained {
        assert!(run.responds > 0, "{run:?}");
        assert!(
            run.resumes <= run.responds + run.backlog.iter().copied().max().unwrap_or(0),
            "{run:?}"
        );
    }
    // Answer -> resume (row 12): every answer's resume left its timestamps, idle (the
    // samples after the warm-up) and under the load (every answer of the window).
    assert_eq!(report.resume_idle.len(), 1 + usize::from(postgres));
    for run in &report.resume_idle {
        let latency = &run.latency;
        assert_eq!((latency.answers, latency.missing), (3, 0), "{run:?}");
        assert_eq!(latency.to_started_ms.n, 3);
        assert_eq!(latency.to_ledger_ms.n, 3);
    }
    for run in report.sustained.iter().chain(&report.sustained_webhooks) {
        let latency = &run.resume_latency;
        assert_eq!(latency.answers as u64, run.responds, "{run:?}");
        assert_eq!(latency.missing, 0, "{run:?}");
    }
    // Gate -> webhook (row 13): only the runs with an endpoint, and every answered gate's
    // `interaction.opened` arrived at the receiver.
    assert!(report
        .sustained
        .iter()
        .all(|run| run.webhook_latency.is_none()));
    assert_eq!(report.sustained_webhooks.len(), 1 + usize::from(postgres));
    for run in &report.sustained_webhooks {
        let webhooks = run
            .webhook_latency
            .as_ref()
            .expect("a webhook run's latency");
        assert_eq!(webhooks.received as u64, run.responds, "{run:?}");
        assert_eq!(webhooks.missing, 0, "{run:?}");
        assert_eq!(webhooks.opened_to_received_ms.n as u64, run.responds);
    }
    // Scale: the history was generated into the database (counted there), and every
    // figure was measured at each size.
    assert_eq!(report.scale.len(), 1 + usize::from(postgres));
    for run in &report.scale {
        let sizes: Vec<u64> = run.points.iter().map(|p| p.gates).collect();
        assert_eq!(sizes, vec![0, 300], "{run:?}");
        // Counted before each size's 20 live gates open: the template gate, then it, the
        // first size's live gates and the 300 generated.
        assert_eq!(run.points[0].rows, 1, "{run:?}");
        assert_eq!(run.points[1].rows, 1 + 20 + 300, "{run:?}");
        for point in &run.points {
            assert_eq!(point.calls.len(), 10, "{point:?}");
            assert!(point.calls.iter().all(|(_, s)| s.n == 3), "{point:?}");
            assert!(point.rss_bytes > 0);
        }
    }
    // Fan-out (row 14): every watcher held open, every gate's event at each of its
    // session's watchers.
    assert_eq!(report.fanout.len(), 1 + usize::from(postgres));
    for run in &report.fanout {
        assert_fanout_complete(run, 7, 4);
        assert_eq!(run.respond_idle.client_us.n, 4);
        assert_eq!(run.respond_watching.client_us.n, 4);
    }
    assert_eq!(report.floor.sqlite_commit_us.n, 4);
    assert_eq!(report.floor.http_empty_us.n, 4);
    assert!(report.floor.busy_handler_commits_per_s > 0.0);
    assert!(report.floor.async_mutex_commits_per_s > 0.0);
    assert!(report.floor.sequential_respond_tx_per_s > 0.0);
}

/// Every watcher of a fan-out run was held open, and every gate reached each of its
/// session's watchers.
fn assert_fanout_complete(
    run: &gatehouse_bench::live::FanoutReport,
    watchers: usize,
    gates: usize,
) {
    assert_eq!((run.watchers, run.refused), (watchers, 0), "{run:?}");
    assert_eq!((run.gates, run.missing), (gates, 0), "{run:?}");
    assert_eq!(run.to_first_watcher_ms.n, gates, "{run:?}");
    assert_eq!(run.to_last_watcher_ms.n, gates, "{run:?}");
    assert!(run.to_first_watcher_ms.median <= run.to_last_watcher_ms.median);
    assert!(run.rss_watching_bytes > 0 && run.private_watching_bytes > 0);
}

/// Row 14 alone at tiny counts, on each database: a server child, watchers spread over
/// sessions unevenly (7 over 3), each gate heard by all of its session's watchers.
#[test]
fn fanout_reaches_every_watcher_of_each_gates_session() {
    let config = LiveConfig {
        respond_iterations: 3,
        warmup: 1,
        fanout_watchers: 7,
        fanout_sessions: 3,
        fanout_gates: 5,
        ..LiveConfig::quick()
    };
    let rt = Runtimes::new().unwrap();
    let mut backends = vec![None];
    backends.extend(postgres_url().map(Some));
    for postgres in backends {
        let run = bench_fanout(&rt, &config, postgres.as_deref()).unwrap();
        assert_fanout_complete(&run, 7, 5);
        assert_eq!(
            run.backend,
            if postgres.is_some() {
                "postgres"
            } else {
                "sqlite"
            }
        );
        assert_eq!(run.respond_watching.client_us.n, 3);
    }
}
