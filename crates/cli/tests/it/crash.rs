//! Crash tests with real processes: `gatehouse serve` as a child process, killed with
//! SIGKILL at seeded random points of intervention dispatch and resume, then restarted
//! on the same database; and (with `GATEHOUSE_TEST_DATABASE_URL=postgres://...`, which
//! `cargo xtask test` sets for its PostgreSQL pass) two instances on one database, one
//! of them killed or stopped with SIGSTOP mid-resume. And a durable respond
//! (`--agenta-contract durable`) killed exactly between its commit and the delivery of its
//! continuation (the test-only fault point `GATEHOUSE_TEST_FAULT=continuation_committed`),
//! restarted on SQLite and on PostgreSQL: the continuation is delivered once.
//!
//! Every round asserts what the contract promises, read back over HTTP:
//! - every approved tool ran exactly once (the tool-run ledger of the session's turns),
//!   or not at all when a `stop` applied at `pre_action` halted the run before it;
//! - every intervention ended `applied` (and its effect is in the run's output) or
//!   `rejected` with a reason that is true of the run;
//! - no execution session is left `active` or `paused` once the answered gate is
//!   resolved.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use gatehouse_server::interactions::durable::{FAULT_CONTINUATION_COMMITTED, FAULT_ENV};

use crate::common::BIN;

const KEY: &str = "crash-test-key";
const PROJECT: &str = "019fac94-0000-7000-8000-00000000c4a5";
/// The lease of jobs and session holds in these tests: a dead or stopped instance's work
/// is taken over within it.
const LEASE_MS: u64 = 600;

/// A small seeded generator (xorshift64*): the same seed gives the same kill points.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A `gatehouse serve` child process.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    /// A server whose responds are the legacy contract's (200 `{count, interaction}`).
    fn start(database_url: &str) -> Self {
        Self::spawn(database_url, "legacy", None)
    }

    /// A server speaking Agenta's `contract` on its session paths; with `fault`, the
    /// test-only fault point it kills itself at (`GATEHOUSE_TEST_FAULT`).
    fn spawn(database_url: &str, contract: &str, fault: Option<&str>) -> Self {
        let mut command = Command::new(BIN);
        command
            .args([
                "serve",
                "--bind",
                "127.0.0.1:0",
                "--database-url",
                database_url,
                "--api-key",
                &format!("tester={KEY}@*"),
                "--lease-ms",
                &LEASE_MS.to_string(),
                "--agenta-contract",
                contract,
            ])
            .env("RUST_LOG", "warn")
            .env_remove(FAULT_ENV)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(point) = fault {
            command.env(FAULT_ENV, point);
        }
        let mut child = command.spawn().expect("gatehouse serve starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("gatehouse serve printed its listening line")
                .expect("stdout readable");
            if let Some(url) = line.strip_prefix("listening on ") {
                break url.trim().to_string();
            }
        };
        // Keep draining stdout so the child never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Self { child, url }
    }

    fn pid(&self) -> String {
        self.child.id().to_string()
    }

    /// Wait (at most 20 s) for the process to end by itself; how it ended.
    fn wait_ended(mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().expect("the child can be waited for") {
                return status;
            }
            assert!(Instant::now() < deadline, "the server did not end");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL, and reap.
    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.pid()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill {signal} failed");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Api {
    http: reqwest::Client,
}

impl Api {
    fn new() -> Self {
        Self {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(20))
                .build()
                .unwrap(),
        }
    }

    fn url(server: &Server, path: &str) -> String {
        let sep = if path.contains('?') { '&' } else { '?' };
        format!("{}{path}{sep}project_id={PROJECT}", server.url)
    }

    async fn post(&self, server: &Server, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .http
            .post(Self::url(server, path))
            .header("Authorization", format!("ApiKey {KEY}"))
            .json(&body)
            .send()
            .await
            .expect("request sent");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// A POST under an `Idempotency-Key`; `Err` when no answer came (the server died).
    async fn post_keyed(
        &self,
        server: &Server,
        path: &str,
        key: &str,
        body: &Value,
    ) -> Result<(u16, Value), reqwest::Error> {
        let response = self
            .http
            .post(Self::url(server, path))
            .header("Authorization", format!("ApiKey {KEY}"))
            .header("Idempotency-Key", key)
            .json(body)
            .send()
            .await?;
        let status = response.status().as_u16();
        Ok((status, response.json().await.unwrap_or(Value::Null)))
    }

    async fn get(&self, server: &Server, path: &str) -> (u16, Value) {
        let response = self
            .http
            .get(Self::url(server, path))
            .header("Authorization", format!("ApiKey {KEY}"))
            .send()
            .await
            .expect("request sent");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }
}

/// The config of a round: `Read` needs approval, the rest is allowed; the resume works
/// for `wait_ms` before `Bash`.
fn config(model: &str, wait_ms: u64) -> Value {
    json!({"agent": {
        "llm": {"model": model},
        "runner": {"permissions": {"default": "allow", "rules": [{"pattern": "Read", "permission": "ask"}]}},
        "script": [
            {"tool": "Read", "args": {"path": "/etc/hostname"}},
            {"wait_ms": wait_ms},
            {"tool": "Bash", "args": {"command": "make release"}},
            {"say": "done"}
        ]
    }})
}

/// A gate to answer: `(agent session, room, execution session, gate id)`.
struct Gate {
    task: String,
    room: String,
    session: String,
    id: String,
}

async fn park(api: &Api, server: &Server, task: &str, wait_ms: u64) -> Gate {
    let (status, answer) = api
        .post(
            server,
            "/api/invoke",
            json!({"session_id": task, "data": {"inputs": {"messages": [{"role": "user", "content": "release"}]},
                   "parameters": config("m-crash", wait_ms)}}),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["status"], "parked", "{answer}");
    Gate {
        task: task.to_string(),
        room: answer["execution"]["room_id"].as_str().unwrap().to_string(),
        session: answer["execution"]["session_id"]
            .as_str()
            .unwrap()
            .to_string(),
        id: answer["interaction_ids"][0].as_str().unwrap().to_string(),
    }
}

/// Request `instruction` at `checkpoint` on the gate's (paused) session.
async fn intervene(
    api: &Api,
    server: &Server,
    gate: &Gate,
    op: &str,
    instruction: &str,
    checkpoint: &str,
) {
    let path = format!(
        "/api/rooms/{}/execution-sessions/{}",
        gate.room, gate.session
    );
    let (status, doc) = api.get(server, &path).await;
    assert_eq!(status, 200, "{doc}");
    let (status, body) = api
        .post(
            server,
            &format!("{path}/interventions"),
            json!({"expectedRevision": doc["data"]["revision"], "operationId": op,
                   "instruction": instruction, "checkpoint": checkpoint}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
}

/// Poll (through whichever server is up) until `done` holds, up to `limit`.
async fn eventually<F, Fut>(limit: Duration, what: &str, mut done: F) -> Value
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<Value>>,
{
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = done().await {
            return value;
        }
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Wait until the gate's row is resolved and its execution session is terminal; then
/// check every promise. `stop_at` is the checkpoint of the round's stop, if it had one.
async fn check_round(api: &Api, server: &Server, gate: &Gate, stop_at: Option<&str>, label: &str) {
    let limit = Duration::from_millis(LEASE_MS * 30 + 15_000);
    eventually(limit, &format!("{label}: the gate resolves"), || async {
        let (status, body) = api
            .get(server, &format!("/api/sessions/interactions/{}", gate.id))
            .await;
        (status == 200 && body["interaction"]["status"] == "resolved").then_some(body)
    })
    .await;
    let path = format!(
        "/api/rooms/{}/execution-sessions/{}",
        gate.room, gate.session
    );
    let doc = eventually(limit, &format!("{label}: the session ends"), || async {
        let (status, body) = api.get(server, &path).await;
        let ended = status == 200
            && matches!(
                body["data"]["status"].as_str(),
                Some("completed" | "failed" | "canceled")
            );
        ended.then(|| body["data"].clone())
    })
    .await;
    let (status, turns) = api
        .get(server, &format!("/api/sessions/{}/turns", gate.task))
        .await;
    assert_eq!(status, 200, "{turns}");
    let runs = |tool: &str| {
        turns["tool_runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["tool"] == tool)
            .count()
    };
    let outputs: String = turns["turns"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["output"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let ran_in_outputs = |tool: &str| outputs.matches(&format!("ran {tool} ")).count();

    let stopped_before_read = stop_at == Some("pre_action")
        && doc["interventions"][0]["status"] == "applied"
        && doc["interventions"][0]["resolutionReason"]
            .as_str()
            .is_some_and(|r| r.contains("halted"));
    // The approved tool: exactly once, unless the stop was applied right before it.
    let expected_read = usize::from(!stopped_before_read);
    assert_eq!(
        runs("Read"),
        expected_read,
        "{label}: Read ledger\n{turns}\n{doc}"
    );
    assert_eq!(
        ran_in_outputs("Read"),
        expected_read,
        "{label}: Read in the recorded turns\n{outputs}"
    );
    // Bash: at most once, and once exactly when the run completed.
    let completed = doc["status"] == "completed";
    assert!(runs("Bash") <= 1, "{label}: Bash ran twice\n{turns}");
    if completed {
        assert_eq!(runs("Bash"), 1, "{label}: completed without Bash\n{turns}");
        assert_eq!(ran_in_outputs("Bash"), 1, "{label}\n{outputs}");
    }
    for intervention in doc["interventions"].as_array().unwrap() {
        let reason = intervention["resolutionReason"].as_str().unwrap_or("");
        match intervention["status"].as_str() {
            Some("applied") => {
                let effect = if intervention["instruction"] == "stop" {
                    "halted at"
                } else {
                    "(instruction: "
                };
                assert!(
                    outputs.contains(effect),
                    "{label}: applied but not in effect: {intervention}\n{outputs}"
                );
            }
            Some("rejected") => {
                assert!(
                    !reason.is_empty(),
                    "{label}: rejected without a reason: {intervention}"
                );
                // A rejection for an unreached checkpoint is true of the run: it ended.
                assert_ne!(doc["status"], "active", "{label}");
            }
            other => panic!("{label}: intervention left {other:?}: {intervention}\n{doc}"),
        }
    }
}

fn sqlite_url(dir: &Path) -> String {
    format!("sqlite://{}", dir.join("gatehouse.db").display())
}

/// A few dozen rounds: park a gate, maybe request a stop or an instruction, answer it,
/// SIGKILL the server at a seeded random moment of the resume and of the intervention's
/// dispatch, restart it on the same SQLite file, and check every promise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_points_of_resume_and_dispatch_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(dir.path());
    let api = Api::new();
    let mut rng = Rng(0x5eed_2026_1201);
    let rounds = 24;
    let mut retried = 0;
    let mut server = Server::start(&url);
    for round in 0..rounds {
        let label = format!("round {round}");
        let wait_ms = 100 + rng.below(300);
        let gate = park(&api, &server, &format!("task-kill-{round}"), wait_ms).await;
        let stop_at = match rng.below(4) {
            0 => {
                intervene(&api, &server, &gate, "op-1", "stop", "pre_action").await;
                Some("pre_action")
            }
            1 => {
                intervene(&api, &server, &gate, "op-1", "stop", "pre_step").await;
                Some("pre_step")
            }
            2 => {
                intervene(&api, &server, &gate, "op-1", "be brief", "post_output").await;
                None
            }
            _ => None,
        };
        let (status, body) = api
            .post(
                &server,
                &format!("/api/sessions/interactions/{}/respond", gate.id),
                json!({"answer": {"approved": true}}),
            )
            .await;
        assert_eq!(status, 200, "{label}: {body}");
        // Somewhere in the resume: before it is claimed, at its checkpoints, during its
        // work, at its commit, or after.
        tokio::time::sleep(Duration::from_millis(rng.below(wait_ms + 150))).await;
        server.kill();
        server = Server::start(&url);
        check_round(&api, &server, &gate, stop_at, &label).await;
        let attempts = resume_attempts(&url, &gate.id).await;
        if attempts > 1 {
            retried += 1;
        }
    }
    server.kill();
    eprintln!("crash.rs: {rounds} rounds, {retried} resumes killed mid-flight and retried");
    // The kill points are seeded; at least some of them land inside a resume (else the
    // test would prove nothing about crashes mid-resume).
    assert!(
        retried >= 3,
        "only {retried} of {rounds} kills landed inside a resume"
    );
}

/// How many times the gate's resume job was claimed (1: it ran once, uninterrupted).
async fn resume_attempts(url: &str, interaction_id: &str) -> i64 {
    let pool = sqlx::SqlitePool::connect(url).await.unwrap();
    let attempts: i64 =
        sqlx::query_scalar("SELECT attempts FROM resume_jobs WHERE interaction_id = $1")
            .bind(interaction_id)
            .fetch_one(&pool)
            .await
            .unwrap();
    pool.close().await;
    attempts
}

fn postgres_url() -> Option<String> {
    let url = std::env::var("GATEHOUSE_TEST_DATABASE_URL").ok()?;
    url.starts_with("postgres").then_some(url)
}

/// Two instances on one PostgreSQL database answer and resume gates together; one of
/// them is stopped (SIGSTOP) for several leases mid-resume, then continued; later the
/// other is killed (SIGKILL) mid-resume. Every approved tool runs once, every session
/// ends, every gate resolves: no owner process, no SQLite-only path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_on_postgres_one_stopped_then_one_killed_mid_resume() {
    let Some(base) = postgres_url() else {
        eprintln!(
            "crash.rs: two-instance test skipped (set GATEHOUSE_TEST_DATABASE_URL=postgres://...; \
             cargo xtask test runs it on its own PostgreSQL cluster)"
        );
        return;
    };
    let url = gatehouse_server::testing::fresh_postgres_database(&base)
        .await
        .expect("a fresh Postgres database");
    let api = Api::new();
    let a = Server::start(&url);
    let b = Server::start(&url);
    let mut rng = Rng(0xb0b_2026);

    // Phase 1: gates answered through both; A is stopped while the resumes run.
    let mut gates = Vec::new();
    for i in 0..8 {
        let via = if i % 2 == 0 { &a } else { &b };
        let gate = park(&api, via, &format!("task-pg-{i}"), 400 + rng.below(400)).await;
        if i % 3 == 0 {
            intervene(&api, via, &gate, "op-1", "stop", "pre_step").await;
        }
        gates.push(gate);
    }
    for (i, gate) in gates.iter().enumerate() {
        let via = if i % 2 == 0 { &b } else { &a };
        let (status, body) = api
            .post(
                via,
                &format!("/api/sessions/interactions/{}/respond", gate.id),
                json!({"answer": {"approved": true}}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    tokio::time::sleep(Duration::from_millis(150)).await;
    a.signal("-STOP");
    tokio::time::sleep(Duration::from_millis(LEASE_MS * 4)).await;
    a.signal("-CONT");
    for (i, gate) in gates.iter().enumerate() {
        let stop = (i % 3 == 0).then_some("pre_step");
        check_round(&api, &b, gate, stop, &format!("phase 1, gate {i}")).await;
    }

    // Phase 2: B is killed while resumes run; A (and a restarted B) finish them.
    let mut gates = Vec::new();
    for i in 0..6 {
        let gate = park(&api, &a, &format!("task-pg2-{i}"), 300 + rng.below(300)).await;
        let (status, _) = api
            .post(
                &b,
                &format!("/api/sessions/interactions/{}/respond", gate.id),
                json!({"answer": {"approved": true}}),
            )
            .await;
        assert_eq!(status, 200);
        gates.push(gate);
    }
    tokio::time::sleep(Duration::from_millis(100 + rng.below(300))).await;
    b.kill();
    let b = Server::start(&url);
    for (i, gate) in gates.iter().enumerate() {
        check_round(&api, &a, gate, None, &format!("phase 2, gate {i}")).await;
    }
    drop(b);
    drop(a);
}

// ---- kill -9 between a durable respond's commit and its delivery ----------------------

/// A second connection to a server's database, to read what is stored (what a crash left).
enum Stored {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
}

impl Stored {
    async fn open(url: &str) -> Self {
        if url.starts_with("postgres") {
            Stored::Postgres(sqlx::PgPool::connect(url).await.unwrap())
        } else {
            Stored::Sqlite(sqlx::SqlitePool::connect(url).await.unwrap())
        }
    }

    /// The first column of every row of `sql` (text parameters), as text.
    async fn texts(&self, sql: &str, params: &[&str]) -> Vec<Option<String>> {
        use sqlx::Row;
        match self {
            Stored::Sqlite(pool) => {
                let mut query = sqlx::query(sql);
                for p in params {
                    query = query.bind(*p);
                }
                let rows = query.fetch_all(pool).await.unwrap();
                rows.iter().map(|r| r.get::<Option<String>, _>(0)).collect()
            }
            Stored::Postgres(pool) => {
                let mut query = sqlx::query(sql);
                for p in params {
                    query = query.bind(*p);
                }
                let rows = query.fetch_all(pool).await.unwrap();
                rows.iter().map(|r| r.get::<Option<String>, _>(0)).collect()
            }
        }
    }

    async fn close(self) {
        match self {
            Stored::Sqlite(pool) => pool.close().await,
            Stored::Postgres(pool) => pool.close().await,
        }
    }
}

/// The source turn's continuation commands: `state/outcome` each.
async fn continuations(db: &Stored, turn: &str) -> Vec<String> {
    db.texts(
        "SELECT state || '/' || COALESCE(outcome, '-') FROM session_commands \
         WHERE target_execution_id = $1 AND kind = 'continue'",
        &[turn],
    )
    .await
    .into_iter()
    .flatten()
    .collect()
}

/// A durable respond (`--agenta-contract durable`) commits the answer, the source turn's
/// settlement and the continuation command in one transaction, then writes the resume job
/// that delivers it. The server is killed with SIGKILL exactly between the two (the
/// test-only fault point `continuation_committed`, which makes the process `kill -9`
/// itself there), restarted on the same database, and the continuation is delivered
/// once: by the restarted dispatcher's first pass (nothing else asks), the approved tool
/// ran once, one resume turn (the continuation's execution), the command `applied`. The
/// same respond re-sent after the restart under the same key replays the command (202,
/// same id), never a second continuation.
async fn kill_between_commit_and_delivery(url: &str, label: &str) {
    let api = Api::new();
    let server = Server::spawn(url, "durable", Some(FAULT_CONTINUATION_COMMITTED));
    let task = format!("task-durable-kill-{label}");
    let gate = park(&api, &server, &task, 20).await;
    let (status, row) = api
        .get(&server, &format!("/api/sessions/interactions/{}", gate.id))
        .await;
    assert_eq!(status, 200, "{row}");
    let turn = row["interaction"]["turn_id"].as_str().unwrap().to_string();
    let respond = format!("/api/sessions/interactions/{}/respond", gate.id);
    let body = json!({"answer": {"approved": true}, "expected_execution_id": turn});
    let key = format!("crash-{label}");

    // The respond: the server dies at the fault point, after the commit, before it
    // answers (and before it delivers).
    let sent = api.post_keyed(&server, &respond, &key, &body).await;
    assert!(
        sent.is_err(),
        "{label}: the server answered instead of dying: {sent:?}"
    );
    let ended = server.wait_ended();
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            ended.signal(),
            Some(9),
            "{label}: the server ended by SIGKILL at the fault point ({ended:?})"
        );
    }

    // What the kill left: the commit, and no delivery.
    let db = Stored::open(url).await;
    assert_eq!(
        continuations(&db, &turn).await,
        ["pending/-"],
        "{label}: the continuation was committed, pending"
    );
    let settled = db
        .texts(
            "SELECT state FROM session_executions WHERE execution_id = $1",
            &[&turn],
        )
        .await;
    assert_eq!(settled, [Some("continued".to_string())], "{label}");
    let status_of_gate = db
        .texts("SELECT status FROM interactions WHERE id = $1", &[&gate.id])
        .await;
    assert_eq!(status_of_gate, [Some("responded".to_string())], "{label}");
    let jobs = db
        .texts(
            "SELECT state FROM resume_jobs WHERE interaction_id = $1",
            &[&gate.id],
        )
        .await;
    assert!(
        jobs.is_empty(),
        "{label}: delivered before the kill: {jobs:?}"
    );
    let command_id = db
        .texts(
            "SELECT id FROM session_commands WHERE target_execution_id = $1",
            &[&turn],
        )
        .await
        .remove(0)
        .unwrap();
    let continuation = db
        .texts(
            "SELECT continuation_execution_id FROM session_commands WHERE id = $1",
            &[&command_id],
        )
        .await
        .remove(0)
        .unwrap();

    // Restarted on the same database, without the fault point.
    let server = Server::spawn(url, "durable", None);
    // The same respond under the same key: the stored command, replayed.
    let (status, replay) = api
        .post_keyed(&server, &respond, &key, &body)
        .await
        .expect("the restarted server answers");
    assert_eq!(status, 202, "{label}: {replay}");
    assert_eq!(replay["command"]["id"], command_id.as_str(), "{label}");
    assert_eq!(replay["execution"]["id"], continuation.as_str(), "{label}");

    // Delivered by the restarted server: the gate resolves once its resume ran.
    let limit = Duration::from_millis(LEASE_MS * 30 + 15_000);
    eventually(limit, &format!("{label}: the gate resolves"), || async {
        let (status, body) = api
            .get(&server, &format!("/api/sessions/interactions/{}", gate.id))
            .await;
        (status == 200 && body["interaction"]["status"] == "resolved").then_some(body)
    })
    .await;
    // The command is applied once its resume turn is recorded.
    let replay = eventually(limit, &format!("{label}: the command applies"), || async {
        let (status, replay) = api
            .post_keyed(&server, &respond, &key, &body)
            .await
            .expect("the server answers");
        assert_eq!(status, 202, "{label}: {replay}");
        (replay["command"]["state"] == "applied").then_some(replay)
    })
    .await;
    assert_eq!(replay["command"]["id"], command_id.as_str(), "{label}");
    assert_eq!(replay["execution"]["id"], continuation.as_str(), "{label}");

    // Exactly once: the approved tool ran once, one resume turn (the continuation's),
    // one continuation command, applied; the resume job claimed once.
    let (status, turns) = api
        .get(&server, &format!("/api/sessions/{}/turns", gate.task))
        .await;
    assert_eq!(status, 200, "{turns}");
    let runs = |tool: &str| {
        turns["tool_runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["tool"] == tool)
            .count()
    };
    assert_eq!(runs("Read"), 1, "{label}: the approved tool\n{turns}");
    assert_eq!(runs("Bash"), 1, "{label}\n{turns}");
    let resumes: Vec<&Value> = turns["turns"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["resumed"] == true)
        .collect();
    assert_eq!(resumes.len(), 1, "{label}: one resume turn\n{turns}");
    assert_eq!(
        resumes[0]["turn_id"],
        continuation.as_str(),
        "{label}: the resume is the continuation's execution\n{turns}"
    );
    let outputs: String = turns["turns"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["output"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(
        outputs.matches("ran Read ").count(),
        1,
        "{label}\n{outputs}"
    );
    assert_eq!(
        continuations(&db, &turn).await,
        ["applied/started"],
        "{label}"
    );
    let attempts = db
        .texts(
            "SELECT CAST(attempts AS TEXT) FROM resume_jobs WHERE interaction_id = $1",
            &[&gate.id],
        )
        .await;
    assert_eq!(
        attempts,
        [Some("1".to_string())],
        "{label}: one delivery, one claim"
    );
    // Nothing is left to redeliver.
    let (status, resumed) = api
        .post(
            &server,
            &format!("/api/sessions/{}/continuations/resume", gate.task),
            json!({}),
        )
        .await;
    assert_eq!(
        (status, resumed),
        (200, json!({"resumed": false})),
        "{label}"
    );
    db.close().await;
    server.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_between_a_durable_commit_and_its_delivery_delivers_once_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    kill_between_commit_and_delivery(&sqlite_url(dir.path()), "sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_between_a_durable_commit_and_its_delivery_delivers_once_on_postgres() {
    let Some(base) = postgres_url() else {
        eprintln!(
            "crash.rs: the durable kill test on PostgreSQL skipped (set \
             GATEHOUSE_TEST_DATABASE_URL=postgres://...; cargo xtask test runs it)"
        );
        return;
    };
    let url = gatehouse_server::testing::fresh_postgres_database(&base)
        .await
        .expect("a fresh Postgres database");
    kill_between_commit_and_delivery(&url, "postgres").await;
}
