//! Clock skew between instances on one PostgreSQL (issue 23, item 5): leases and
//! execution holds expire by the database's clock, so an instance whose own clock is
//! ahead or behind never fails, nor takes over, another instance's live work.
//!
//! Two real server processes share one database: one on the host's clock, one under
//! Debian's `faketime` at +8 s (the default lease is 10 s), +60 s and -60 s. Each runs
//! gated turns that work for seconds before their gate and after it (so their leases are
//! renewed mid-run), answered and resumed while the other instance's reconciler and
//! resume workers run. Every turn must park, every resume must run once (its job claimed
//! once, its approved tool recorded once) and every execution session must complete.
//!
//! Needs PostgreSQL: `GATEHOUSE_TEST_DATABASE_URL=postgres://...`, which `cargo xtask
//! test` sets for its PostgreSQL pass (without it the test says so in one line). Needs
//! `faketime`, installed when missing and running as root; without it the test says so in
//! one line and passes, except under `CI=true`, where it fails.

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use gatehouse_server::testing::{ChildServer, ChildServerOptions};
use serde_json::{json, Value};
use sqlx::Row;

/// The entry test a child server process runs (see [`ChildServer`]).
const ENTRY: &str = "clock_skew_child_server";

/// Gated turns per instance and skew.
const TURNS_PER_INSTANCE: usize = 6;

/// How long a turn works (before its gate, or after it in its resume): longer than the
/// part of a 10 s lease an +8 s skew leaves (2 s), shorter than a renewal period (3.3 s).
const WORK_MS: u64 = 3000;

#[test]
#[ignore = "the server of a child process; the clock-skew test starts it"]
fn clock_skew_child_server() {
    gatehouse_server::testing::serve_child_if_asked(ENTRY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_skewed_instance_clock_never_fails_another_instances_work() {
    let Some(base) = std::env::var("GATEHOUSE_TEST_DATABASE_URL")
        .ok()
        .filter(|url| url.starts_with("postgres"))
    else {
        eprintln!(
            "clock_skew.rs: skipped (set GATEHOUSE_TEST_DATABASE_URL=postgres://...; \
             cargo xtask test runs it on its own PostgreSQL cluster)"
        );
        return;
    };
    let Some(()) = require_faketime() else {
        return;
    };
    let mut reports = Vec::new();
    for skew in ["+8s", "+60s", "-60s"] {
        let url = common::fresh_postgres_database(&base).await;
        reports.push(run_with_skew(&url, skew).await);
    }
    for report in &reports {
        eprintln!("{report}");
    }
    let failed: Vec<&String> = reports.iter().filter(|r| r.contains("FAILED")).collect();
    assert!(
        failed.is_empty(),
        "work failed under clock skew: {failed:#?}"
    );
}

/// One instance on the host's clock and one `skew` away from it, on `url`: each runs
/// [`TURNS_PER_INSTANCE`] gated turns at once. The report names what failed.
async fn run_with_skew(url: &str, skew: &str) -> String {
    let project_id = uuid::Uuid::new_v4().to_string();
    let options = |wrapper: Vec<String>| ChildServerOptions {
        entry: ENTRY.to_string(),
        wrapper,
        database_url: Some(url.to_string()),
        project_id: Some(project_id.clone()),
        env: vec![
            // Only the wall clock is skewed; timers keep the true monotonic clock.
            ("FAKETIME_DONT_FAKE_MONOTONIC".to_string(), "1".to_string()),
            ("RUST_LOG".to_string(), "warn".to_string()),
        ],
        // Its responds are the legacy contract's (200 `{count, interaction}`).
        agenta_contract: gatehouse_server::AgentaContract::Legacy,
        ..ChildServerOptions::default()
    };
    let correct = ChildServer::spawn(&options(Vec::new())).expect("the correct-clock server");
    let skewed = ChildServer::spawn(&options(vec![
        "faketime".to_string(),
        "-f".to_string(),
        skew.to_string(),
    ]))
    .expect("the skewed server");
    let http = reqwest::Client::new();
    check_skew(&http, &correct, &skewed, skew).await;

    let mut turns = Vec::new();
    for (label, server) in [("correct", &correct), ("skewed", &skewed)] {
        for n in 0..TURNS_PER_INSTANCE {
            let session_id = format!("{label}-{skew}-{n}");
            // Half the turns work before their gate too; the others only in their
            // resume (so that a resume runs however the invokes fare).
            let work_before_gate = if n % 2 == 0 { WORK_MS } else { 0 };
            turns.push(run_gated_turn(
                http.clone(),
                server,
                session_id,
                work_before_gate,
            ));
        }
    }
    let outcomes = futures::future::join_all(turns).await;
    let db = sqlx::PgPool::connect(url).await.expect("the test database");
    let mut correct_tally = Tally::default();
    let mut skewed_tally = Tally::default();
    for (session_id, outcome) in outcomes {
        let tally = if session_id.starts_with("correct") {
            &mut correct_tally
        } else {
            &mut skewed_tally
        };
        tally.add(&db, &session_id, outcome).await;
    }
    db.close().await;
    format!(
        "skew {skew}: correct-clock instance {}; skewed instance {}",
        correct_tally.summary(),
        skewed_tally.summary()
    )
}

/// The skewed server's clock is off by about `skew` (its `Date` header), so the test
/// never passes because `faketime` did nothing.
async fn check_skew(
    http: &reqwest::Client,
    correct: &ChildServer,
    skewed: &ChildServer,
    skew: &str,
) {
    let seconds: i64 = skew
        .trim_end_matches('s')
        .parse()
        .expect("a skew in seconds");
    let date_of = |server: &ChildServer| {
        let request = http.get(format!("{}/health", server.base_url));
        async move {
            let response = request.send().await.expect("/health answers");
            let date = response.headers()["date"].to_str().unwrap().to_string();
            chrono::DateTime::parse_from_rfc2822(&date)
                .expect("an HTTP date")
                .timestamp()
        }
    };
    let off = date_of(skewed).await - date_of(correct).await;
    assert!(
        (off - seconds).abs() <= 2,
        "the skewed server's clock is {off} s off, not {seconds} s: faketime did not take"
    );
}

/// How one gated turn went, as its client saw it.
#[derive(Debug, Default)]
struct TurnOutcome {
    /// What went wrong on the way (a failed invoke or answer, a resume that never
    /// resolved or resolved with an error).
    failure: Option<String>,
    /// The gate, when the turn parked at one.
    gate: Option<String>,
}

/// Invoke a turn that works for `work_before_gate` ms, parks at its `Bash` gate, is
/// approved, and works for [`WORK_MS`] in its resume; wait until the gate is resolved.
async fn run_gated_turn(
    http: reqwest::Client,
    server: &ChildServer,
    session_id: String,
    work_before_gate: u64,
) -> (String, TurnOutcome) {
    let script = json!([
        {"say": "starting"},
        {"wait_ms": work_before_gate},
        {"tool": "Bash", "args": {"command": "echo hi"}},
        {"wait_ms": WORK_MS},
        {"say": "done"},
    ]);
    let body = json!({
        "session_id": session_id,
        "data": {
            "inputs": {"messages": [{"role": "user", "content": "go"}]},
            "parameters": {"agent": {
                "llm": {"model": "m"},
                "runner": {"permissions": {"default": "ask"}},
                "script": script,
            }},
        },
    });
    let mut outcome = TurnOutcome::default();
    let (status, answer) = post(&http, server, "/api/invoke", &body).await;
    if status != 200 || answer["status"] != "parked" {
        outcome.failure = Some(format!("invoke {status} {}", code_of(&answer)));
        return (session_id, outcome);
    }
    let Some(gate) = answer["interaction_ids"][0].as_str().map(str::to_string) else {
        outcome.failure = Some(format!("invoke parked without a gate: {answer}"));
        return (session_id, outcome);
    };
    outcome.gate = Some(gate.clone());
    let path = format!("/api/sessions/interactions/{gate}/respond");
    let (status, answer) = post(&http, server, &path, &json!({"answer": {"approved": true}})).await;
    if status != 200 {
        outcome.failure = Some(format!("respond {status} {}", code_of(&answer)));
        return (session_id, outcome);
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let response = http
            .get(server.url(&format!("/api/sessions/interactions/{gate}")))
            .header("Authorization", server.authorization())
            .send()
            .await
            .expect("the server answers");
        let (_, body) = common::decode(response).await;
        let interaction = &body["interaction"];
        if interaction["status"] == "resolved" {
            if let Some(error) = interaction["resolution"].get("error") {
                outcome.failure = Some(format!("resume resolved with {error}"));
            }
            return (session_id, outcome);
        }
        if Instant::now() > deadline {
            outcome.failure = Some(format!("never resolved: {interaction}"));
            return (session_id, outcome);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn post(
    http: &reqwest::Client,
    server: &ChildServer,
    path: &str,
    body: &Value,
) -> (u16, Value) {
    let response = http
        .post(server.url(path))
        .header("Authorization", server.authorization())
        .json(body)
        .send()
        .await
        .expect("the server answers");
    common::decode(response).await
}

fn code_of(answer: &Value) -> String {
    answer["code"]
        .as_str()
        .or_else(|| answer["error"]["gatehouseCode"].as_str())
        .unwrap_or("")
        .to_string()
}

/// What one instance's turns came to.
#[derive(Debug, Default)]
struct Tally {
    turns: usize,
    /// Failures the client saw, one line each.
    failures: Vec<String>,
    /// Resume jobs claimed more than once (taken over from a live owner: nothing dies
    /// in this test).
    taken_over: usize,
    /// Execution sessions that did not end `completed`.
    not_completed: usize,
    /// Sessions whose approved tool is not recorded exactly once.
    ledger_wrong: usize,
}

impl Tally {
    async fn add(&mut self, db: &sqlx::PgPool, session_id: &str, outcome: TurnOutcome) {
        self.turns += 1;
        if let Some(failure) = outcome.failure {
            self.failures.push(failure);
        }
        if let Some(gate) = &outcome.gate {
            let attempts: Option<i64> =
                sqlx::query("SELECT attempts FROM resume_jobs WHERE interaction_id = $1")
                    .bind(gate)
                    .fetch_optional(db)
                    .await
                    .expect("reading the resume job")
                    .map(|row| row.get(0));
            if attempts.unwrap_or(0) > 1 {
                self.taken_over += 1;
            }
        }
        let statuses: Vec<String> =
            sqlx::query("SELECT status FROM execution_sessions WHERE task_id = $1")
                .bind(session_id)
                .fetch_all(db)
                .await
                .expect("reading the execution sessions")
                .iter()
                .map(|row| row.get(0))
                .collect();
        if statuses != ["completed"] {
            self.not_completed += 1;
        }
        let tool_runs: i64 = sqlx::query("SELECT COUNT(*) FROM tool_runs WHERE session_id = $1")
            .bind(session_id)
            .fetch_one(db)
            .await
            .expect("reading the tool-run ledger")
            .get(0);
        if tool_runs != 1 {
            self.ledger_wrong += 1;
        }
    }

    fn summary(&self) -> String {
        let clean = self.failures.is_empty()
            && self.taken_over == 0
            && self.not_completed == 0
            && self.ledger_wrong == 0;
        format!(
            "{}: {} turns, {} failed {:?}, {} resumes taken over mid-run, {} sessions not completed, {} tool ledgers not exactly one run",
            if clean { "ok" } else { "FAILED" },
            self.turns,
            self.failures.len(),
            self.failures,
            self.taken_over,
            self.not_completed,
            self.ledger_wrong
        )
    }
}

/// `Some(())` when `faketime` runs; installed first when missing and running as root.
/// Otherwise one line says the test is skipped (a failure under `CI=true`).
fn require_faketime() -> Option<()> {
    let works = || {
        Command::new("faketime")
            .args(["-f", "+1s", "true"])
            .status()
            .is_ok_and(|status| status.success())
    };
    if works() {
        return Some(());
    }
    if is_root() {
        let install = |args: &[&str]| {
            Command::new("apt-get")
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive")
                .status()
                .is_ok_and(|status| status.success())
        };
        if !install(&["install", "-y", "-q", "faketime"]) {
            install(&["update", "-q"]);
            install(&["install", "-y", "-q", "faketime"]);
        }
        if works() {
            return Some(());
        }
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "the clock-skew test needs faketime under CI (apt-get install faketime)"
    );
    eprintln!("clock_skew.rs: skipped (faketime is not installed: apt-get install faketime)");
    None
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}
