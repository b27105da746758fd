//! The live benchmarks run end to end at tiny counts and keep their invariants
//! (exactly one winner per gate). No time is asserted.

use gatehouse_bench::live::{run_all, LiveConfig};

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
    };
    let mut steps = Vec::new();
    let report = run_all(&config, |step| steps.push(step.to_string())).unwrap();
    assert_eq!(steps.len(), 7, "{steps:?}");
    assert_eq!(report.respond.client_us.n, 4);
    assert_eq!(report.respond.bare_us.n, 4);
    assert_eq!(report.approve_all.parallel_ms.n, 2);
    assert_eq!(report.approve_all.sequential_ms.n, 2);
    assert_eq!(report.approve_all.simulated_rtt_ms, None);
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
    assert_eq!(report.floor.sqlite_commit_us.n, 4);
    assert_eq!(report.floor.http_empty_us.n, 4);
    assert!(report.floor.busy_handler_commits_per_s > 0.0);
    assert!(report.floor.async_mutex_commits_per_s > 0.0);
    assert!(report.floor.sequential_respond_tx_per_s > 0.0);
}
