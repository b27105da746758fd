//! `gatehouse demo` passes and narrates every step (its speed is a benchmark concern, not a test).

use std::process::Command;

use crate::common::BIN;

#[test]
fn demo_passes_and_narrates_every_step() {
    let out = Command::new(BIN).arg("demo").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    for needle in [
        "the turn parked at an approval gate",
        "the MCP connection's headers were stripped",
        "the secret appears nowhere in the row",
        "HEAD of support-agent.default is now v2",
        "the resumed turn ran under anthropic/claude-sonnet-4-5",
        "AlreadyAnswered",
        "the client reports it as requested, not applied",
        "applied, on the persisted intervention_applied event",
        "the instruction shows in the run's next step",
        "RevisionConflict",
        "the session is unchanged",
        "GET /api/capabilities lists interactions but not execution",
        "CapabilityUnavailable",
        "the host lists durable_approvals",
        "reported as requested: the 202 records a pending command",
        "stopped, on the session's execution.stopped event naming this Stop's command",
        "the turn did not run to its end",
        "neither late Stop is called stopped",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    assert!(!stdout.contains("sk-demo-0000-never-stored"));
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("All ") && last.contains(" steps passed in "),
        "{last}"
    );
}
