//! The benchmarks that need a live server: each starts the reference control plane
//! (`gatehouse_server::testing`, a fresh SQLite file in WAL mode) on its own tokio runtime
//! and drives it from a second runtime, over loopback HTTP.
//!
//! The resume dispatcher is off in every server here but row 9's: gates are opened
//! directly through the interactions API (no parked turn behind them), and a respond is
//! measured alone, without a background resume competing for the two cores.
//!
//! This module is the shared harness (the config, the two runtimes, server and client
//! setup, opening gates, the statistics glue, [`run_all`]); each benchmark is a file of
//! its own: [`respond`](bench_respond) (row 3), [`approve_all`](bench_approve_all) (row 4),
//! [`contention`](bench_contention) (row 5), [`ffi`](bench_ffi) (row 6),
//! [`floor`](bench_floor) (row 8), [`sustained`](bench_sustained) (row 9, and rows 12
//! and 13 under its load), [`metrics_overhead`](bench_metrics_overhead) (row 10),
//! [`scale`](bench_scale) (row 11), [`latency`](bench_resume_idle) (row 12 idle; the
//! timestamps and the webhook receiver of rows 12 and 13) and [`fanout`](bench_fanout)
//! (row 14: thousands of watch streams on a server in a child process of its own, whose
//! memory is its own).

mod approve_all;
mod contention;
mod database;
mod fanout;
mod ffi;
mod floor;
mod latency;
mod metrics_overhead;
mod parked_run;
mod respond;
mod scale;
mod sustained;

pub use approve_all::{
    bench_approve_all, bench_approve_all_over, start_delay_proxy, ApproveAllBench,
};
pub use contention::{bench_contention, ContentionReport};
pub use fanout::{bench_fanout, FanoutReport, FANOUT_SERVER_ENTRY};
pub use ffi::{bench_ffi, FfiReport, KotlinFfi, PythonFfi, SwiftFfi};
pub use floor::{bench_floor, FloorReport};
pub use latency::{
    bench_resume_idle, Acknowledged, ResumeIdleReport, ResumeLatency, WebhookLatency,
};
pub use metrics_overhead::{bench_metrics_overhead, MetricsOverheadReport};
pub use respond::{bench_respond, RespondReport};
pub use scale::{bench_scale, ScalePoint, ScaleReport};
pub use sustained::{bench_sustained, SustainedReport};

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde::Serialize;
use serde_json::{json, Value};

use gatehouse_client::{Answer, Client};
use gatehouse_server::testing::{
    try_spawn, ChildServer, ChildServerOptions, TestServer, TestServerOptions,
};
use gatehouse_wire::interaction::CreateInteractionRequest;

use crate::stats::Summary;
use crate::BenchError;

/// How much of each live benchmark to run.
#[derive(Debug, Clone)]
pub struct LiveConfig {
    /// Measured responds per side in the client-vs-bare comparison.
    pub respond_iterations: usize,
    /// Discarded leading iterations (connection setup, caches) per measured series.
    pub warmup: usize,
    /// Gates per approve-all batch.
    pub approve_all_gates: usize,
    /// Batches per approve-all side.
    pub approve_all_reps: usize,
    /// The simulated network round trip of the approve-all variant over a delay proxy
    /// (half of it added in each direction).
    pub approve_all_rtt: Duration,
    /// Batches per side of that variant.
    pub approve_all_rtt_reps: usize,
    /// Concurrent responds per contention round.
    pub contention_requests: usize,
    /// Gates the spread contention round is spread over.
    pub contention_gates: usize,
    /// Rounds per contention scenario.
    pub contention_rounds: usize,
    /// Measured responds per side in the FFI comparison.
    pub ffi_iterations: usize,
    /// Measured iterations of each floor figure.
    pub floor_iterations: usize,
    /// The Python side of the FFI row, when it is to be measured.
    pub python_ffi: Option<PythonFfi>,
    /// The Kotlin side of the FFI row, when it is to be measured.
    pub kotlin_ffi: Option<KotlinFfi>,
    /// The Swift side of the FFI row, when it is to be measured.
    pub swift_ffi: Option<SwiftFfi>,
    /// Clients of the sustained respond load (row 9).
    pub sustained_clients: usize,
    /// How long the sustained load runs.
    pub sustained_for: Duration,
    /// Answers measured one at a time on an idle server (row 12, idle), after `warmup`.
    pub resume_idle_samples: usize,
    /// The history sizes of row 11 (gates generated into the database), ascending from 0.
    pub scale_sizes: Vec<u64>,
    /// Calls measured per figure and size in row 11.
    pub scale_samples: usize,
    /// Watch streams held open at once in row 14.
    pub fanout_watchers: usize,
    /// The sessions they watch (as many watchers on each).
    pub fanout_sessions: usize,
    /// Gates opened, one at a time and paced, in watched sessions in row 14.
    pub fanout_gates: usize,
    /// A PostgreSQL server to run the sustained load on too (`postgres://.../db`; a
    /// fresh database is created beside it), when there is one.
    pub postgres_url: Option<String>,
}

impl LiveConfig {
    /// The full run of `cargo xtask bench`.
    pub fn full() -> Self {
        Self {
            respond_iterations: 1000,
            warmup: 50,
            approve_all_gates: 200,
            approve_all_reps: 5,
            approve_all_rtt: Duration::from_millis(20),
            approve_all_rtt_reps: 3,
            contention_requests: 1000,
            contention_gates: 100,
            contention_rounds: 5,
            ffi_iterations: 600,
            floor_iterations: 2000,
            python_ffi: None,
            kotlin_ffi: None,
            swift_ffi: None,
            sustained_clients: 16,
            sustained_for: Duration::from_secs(30),
            resume_idle_samples: 500,
            scale_sizes: vec![0, 200_000, 1_000_000],
            scale_samples: 200,
            fanout_watchers: 10_000,
            fanout_sessions: 1_000,
            fanout_gates: 200,
            postgres_url: None,
        }
    }

    /// A smoke run: tiny counts, same code paths.
    pub fn quick() -> Self {
        Self {
            respond_iterations: 20,
            warmup: 3,
            approve_all_gates: 20,
            approve_all_reps: 1,
            approve_all_rtt: Duration::from_millis(4),
            approve_all_rtt_reps: 1,
            contention_requests: 40,
            contention_gates: 4,
            contention_rounds: 1,
            ffi_iterations: 10,
            floor_iterations: 20,
            python_ffi: None,
            kotlin_ffi: None,
            swift_ffi: None,
            sustained_clients: 4,
            sustained_for: Duration::from_secs(2),
            resume_idle_samples: 10,
            scale_sizes: vec![0, 2_000],
            scale_samples: 5,
            fanout_watchers: 100,
            fanout_sessions: 10,
            fanout_gates: 10,
            postgres_url: None,
        }
    }
}

/// Everything `live` measures.
#[derive(Debug, Clone, Serialize)]
pub struct LiveReport {
    /// Row 3.
    pub respond: RespondReport,
    /// Row 4.
    pub approve_all: ApproveAllBench,
    /// Row 4 over a simulated network round trip.
    pub approve_all_rtt: ApproveAllBench,
    /// Row 5, spread over many gates.
    pub contention_spread: ContentionReport,
    /// Row 5, all on one gate.
    pub contention_single: ContentionReport,
    /// Row 6.
    pub ffi: FfiReport,
    /// Row 8.
    pub floor: FloorReport,
    /// Row 9: sustained responds against the resume workers, SQLite then Postgres (with
    /// row 12's latency under that load).
    pub sustained: Vec<SustainedReport>,
    /// Row 12, idle: answer -> resume one at a time, SQLite then Postgres.
    pub resume_idle: Vec<ResumeIdleReport>,
    /// Row 13: row 9's load again with a webhook endpoint, SQLite then Postgres.
    pub sustained_webhooks: Vec<SustainedReport>,
    /// Row 10: a respond with metrics on vs off.
    pub metrics_overhead: MetricsOverheadReport,
    /// Row 11: the API as history grows, SQLite then Postgres.
    pub scale: Vec<ScaleReport>,
    /// Row 14: many watch streams on one server, SQLite then Postgres.
    pub fanout: Vec<FanoutReport>,
}

/// The respond body both sides send (what the client serializes for `Answer::approve()`).
pub const RESPOND_BODY: &str = r#"{"answer":{"approved":true}}"#;

/// Two runtimes: the server's and the driver's, two worker threads each (the machine's
/// core count; they compete for the same cores, as they would on one host).
pub struct Runtimes {
    /// Runs the server under test.
    pub server: tokio::runtime::Runtime,
    /// Runs the clients.
    pub driver: tokio::runtime::Runtime,
}

impl Runtimes {
    /// Start both.
    pub fn new() -> Result<Self, BenchError> {
        let build = |name: &str| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name(name)
                .enable_all()
                .build()
                .map_err(|source| BenchError::Io {
                    what: format!("starting the {name} runtime"),
                    source,
                })
        };
        Ok(Self {
            server: build("bench-server")?,
            driver: build("bench-driver")?,
        })
    }

    /// Start a fresh test server (dispatcher off) on the server runtime.
    pub fn spawn_server(&self) -> Result<TestServer, BenchError> {
        self.spawn_server_with(TestServerOptions {
            run_dispatcher: false,
            ..TestServerOptions::default()
        })
    }

    /// Start a fresh test server with `options` on the server runtime.
    pub fn spawn_server_with(&self, options: TestServerOptions) -> Result<TestServer, BenchError> {
        // The rows of BENCHMARKS.md measure A5's respond (its 200 row, its 409 loser), as
        // before Agenta's durable contract; the durable respond is another path, with costs
        // of its own, not measured yet.
        let options = TestServerOptions {
            agenta_contract: gatehouse_server::config::AgentaContract::Legacy,
            ..options
        };
        self.server
            .block_on(try_spawn(options))
            .map_err(|e| BenchError::Server(e.to_string()))
    }

    /// Start a test server with `options` on a fresh SQLite file or, given a PostgreSQL
    /// server's URL, a fresh database beside it; the server and its database's URL.
    pub fn spawn_server_on(
        &self,
        postgres: Option<&str>,
        options: TestServerOptions,
    ) -> Result<(TestServer, String), BenchError> {
        let database_url = self.fresh_database(postgres)?;
        let server = self.spawn_server_with(TestServerOptions {
            database_url: database_url.clone(),
            ..options
        })?;
        let url =
            database_url.unwrap_or_else(|| format!("sqlite://{}", server.database_path.display()));
        Ok((server, url))
    }

    /// Start a server in a child process (this executable again, on its `entry`: see
    /// [`ChildServer`]) with `options`, on a SQLite file of its own or, given a
    /// PostgreSQL server's URL, a fresh database beside it. The child inherits this
    /// process's open-file limit.
    pub fn spawn_child_server_on(
        &self,
        postgres: Option<&str>,
        options: ChildServerOptions,
    ) -> Result<ChildServer, BenchError> {
        let database_url = self.fresh_database(postgres)?;
        // A5's respond, as every bench server (see `spawn_server_with`).
        ChildServer::spawn(&ChildServerOptions {
            database_url,
            agenta_contract: gatehouse_server::config::AgentaContract::Legacy,
            ..options
        })
        .map_err(|source| BenchError::Io {
            what: "starting the child server".into(),
            source,
        })
    }

    /// A fresh database beside the PostgreSQL server at `postgres`, if given (`None`:
    /// the server makes its own SQLite file).
    fn fresh_database(&self, postgres: Option<&str>) -> Result<Option<String>, BenchError> {
        match postgres {
            Some(url) => Ok(Some(
                self.driver
                    .block_on(gatehouse_server::testing::fresh_postgres_database(url))
                    .map_err(failed("creating the bench database"))?,
            )),
            None => Ok(None),
        }
    }

    /// Stop a test server.
    pub fn stop_server(&self, server: TestServer) {
        self.server.block_on(server.shutdown());
    }
}

/// A client for `server` with the library's defaults.
pub fn client_for(server: &TestServer) -> Result<Client, BenchError> {
    Target::of(server).client()
}

/// Where a server under test answers (in this process or a child) and how to ask it.
#[derive(Debug, Clone)]
pub struct Target {
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    /// A valid API key.
    pub api_key: String,
    /// The project requests name.
    pub project_id: String,
}

impl Target {
    /// A server in this process.
    pub fn of(server: &TestServer) -> Self {
        Self {
            base_url: server.base_url.clone(),
            api_key: server.api_key.clone(),
            project_id: server.project_id.clone(),
        }
    }

    /// A server in a child process.
    pub fn of_child(server: &ChildServer) -> Self {
        Self {
            base_url: server.base_url.clone(),
            api_key: server.api_key.clone(),
            project_id: server.project_id.clone(),
        }
    }

    /// `base_url + path`, with `project_id=` in the query string.
    pub fn url(&self, path: &str) -> String {
        gatehouse_server::testing::project_url(&self.base_url, &self.project_id, path)
    }

    /// The `Authorization` header value.
    pub fn authorization(&self) -> String {
        format!("ApiKey {}", self.api_key)
    }

    /// A client with the library's defaults.
    pub fn client(&self) -> Result<Client, BenchError> {
        Client::builder(self.base_url.clone())
            .api_key(self.api_key.clone())
            .project_id(self.project_id.clone())
            .build()
            .map_err(failed("building the client"))
    }
}

/// A plain reqwest client, as a caller without `gatehouse-client` would build it.
pub fn bare_http() -> Result<reqwest::Client, BenchError> {
    reqwest::Client::builder()
        .build()
        .map_err(failed("building the reqwest client"))
}

/// A listener on a free loopback port (of the runtime this runs on) and its address;
/// `what` names it in an error.
async fn bind_loopback(
    what: &str,
) -> Result<(tokio::net::TcpListener, std::net::SocketAddr), BenchError> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|source| BenchError::Io {
            what: format!("binding {what}"),
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| BenchError::Io {
        what: format!("reading {what}'s address"),
        source,
    })?;
    Ok((listener, addr))
}

/// A bare POST of [`RESPOND_BODY`] to `url` with the headers the client sends (JSON,
/// `authorization`, a fresh `Idempotency-Key`) and its 30 s timeout, ready to send.
fn respond_post(http: &reqwest::Client, url: &str, authorization: &str) -> reqwest::RequestBuilder {
    http.post(url)
        .header("Authorization", authorization)
        .header("Content-Type", "application/json")
        .header("Idempotency-Key", uuid::Uuid::new_v4().to_string())
        .timeout(Duration::from_secs(30))
        .body(RESPOND_BODY)
}

/// Open `n` pending approval gates in `session`, one after the other (not timed; one at
/// a time is the fastest way on SQLite, see row 4 of BENCHMARKS.md); their ids in order.
pub async fn create_gates(
    client: &Client,
    session: &str,
    n: usize,
) -> Result<Vec<String>, BenchError> {
    let requests: Vec<CreateInteractionRequest> = (0..n)
        .map(|i| gate_request(session, i))
        .collect::<Result<_, _>>()?;
    let rows: Vec<Result<String, BenchError>> = futures::stream::iter(requests)
        .map(|request| async move {
            let row = client
                .interactions()
                .create(&request)
                .await
                .map_err(failed("opening a gate"))?;
            row.id
                .ok_or_else(|| BenchError::Invariant("a created gate has no id".into()))
        })
        .buffered(1)
        .collect()
        .await;
    rows.into_iter().collect()
}

/// The request that opens the `i`th pending approval gate of `session`.
fn gate_request(session: &str, i: usize) -> Result<CreateInteractionRequest, BenchError> {
    let blob = crate::inputs::gate_parameters();
    serde_json::from_value(json!({
                "session_id": session,
                "turn_id": format!("t-{}", i / 10),
                "token": uuid::Uuid::new_v4().to_string(),
                "kind": "user_approval",
                "data": {
                    "request": {"tool": "Bash", "args": {"command": format!("echo {i}")}, "tool_call_id": format!("toolu_{i:05}")},
                    "references": {"workflow": {"slug": "harness-agent"}, "workflow_variant": {"slug": "harness-agent.default"}},
                    "parameters": blob,
                },
                "flags": {"delivered_in_band": true, "delivered_webhook": false}
            }))
            .map_err(|source| BenchError::Json {
                what: "building a create-interaction request".into(),
                source,
            })
}

/// CPU seconds (user + system) this process has used so far, from `/proc/self/stat`
/// (Linux reports it in USER_HZ = 100 ticks per second). `None` where it is unreadable.
pub fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) start at field 3 (`state`).
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// The sum of the `fields` (kB figures: `VmRSS:`, `Private_Dirty:`) of
/// `/proc/{process}/{file}` (`process`: `self` or a pid; `file`: `status`,
/// `smaps_rollup`), in KiB. `None` where it is unreadable or names none of them.
pub(crate) fn proc_kib(process: &str, file: &str, fields: &[&str]) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{process}/{file}")).ok()?;
    let mut found = None;
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if let (Some(name), Some(kib)) = (words.next(), words.next()) {
            if fields.contains(&name) {
                *found.get_or_insert(0) += kib.parse::<u64>().ok()?;
            }
        }
    }
    found
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn summary(samples: &[f64], what: &str) -> Result<Summary, BenchError> {
    Summary::of(samples).ok_or_else(|| BenchError::Invariant(format!("no samples for {what}")))
}

/// One respond through the client; its round-trip time.
async fn client_respond(client: &Client, id: &str) -> Result<Duration, BenchError> {
    let started = Instant::now();
    client
        .interactions()
        .respond(id, &Answer::approve())
        .await
        .map_err(failed("client respond"))?;
    Ok(started.elapsed())
}

/// A request (HTTP or SQL) that failed where the benchmark needs it to succeed, as a
/// `map_err` argument: `.map_err(failed("client respond"))`.
fn failed<E: std::fmt::Display>(what: &'static str) -> impl Fn(E) -> BenchError {
    move |e| BenchError::Request {
        what: what.to_string(),
        reason: e.to_string(),
    }
}

/// Run every live benchmark, in order: floor, respond, approve-all, contention (spread,
/// single), FFI. `progress` hears what is starting.
pub fn run_all(
    config: &LiveConfig,
    mut progress: impl FnMut(&str),
) -> Result<LiveReport, BenchError> {
    let rt = Runtimes::new()?;
    progress("floor: empty loopback handler, SQLite WAL commit");
    let floor = bench_floor(&rt, config)?;
    progress("respond: client vs bare POST");
    let respond = bench_respond(&rt, config)?;
    progress("respond: metrics on vs off");
    let metrics_overhead = bench_metrics_overhead(&rt, config)?;
    progress("approve-all vs one by one");
    let approve_all = bench_approve_all(&rt, config)?;
    progress("approve-all vs one by one, over a simulated round trip");
    let approve_all_rtt = bench_approve_all_over(&rt, config, Some(config.approve_all_rtt))?;
    progress("contention: spread over many gates");
    let contention_spread = bench_contention(&rt, config, config.contention_gates)?;
    progress("contention: a single gate");
    let contention_single = bench_contention(&rt, config, 1)?;
    progress("ffi: Rust client vs Python binding");
    let ffi = bench_ffi(&rt, config)?;
    let mut sustained = Vec::new();
    let mut resume_idle = Vec::new();
    let mut sustained_webhooks = Vec::new();
    let mut fanout = Vec::new();
    let mut backends = vec![("SQLite", None)];
    if let Some(url) = &config.postgres_url {
        backends.push(("PostgreSQL", Some(url.as_str())));
    }
    for (name, postgres) in backends {
        progress(&format!("answer -> resume, idle, {name}"));
        resume_idle.push(bench_resume_idle(&rt, config, postgres)?);
        progress(&format!(
            "sustained responds against the resume workers, {name}"
        ));
        sustained.push(bench_sustained(&rt, config, postgres, false)?);
        progress(&format!(
            "sustained responds with a webhook endpoint, {name}"
        ));
        sustained_webhooks.push(bench_sustained(&rt, config, postgres, true)?);
        progress(&format!(
            "fan-out: {} watchers over {} sessions, {name}",
            config.fanout_watchers, config.fanout_sessions
        ));
        fanout.push(bench_fanout(&rt, config, postgres)?);
    }
    progress("scale: the API as history grows, SQLite");
    let mut scale = vec![bench_scale(
        &rt,
        &config.scale_sizes,
        config.scale_samples,
        None,
    )?];
    if let Some(url) = &config.postgres_url {
        progress("scale: the API as history grows, PostgreSQL");
        scale.push(bench_scale(
            &rt,
            &config.scale_sizes,
            config.scale_samples,
            Some(url),
        )?);
    }
    Ok(LiveReport {
        fanout,
        scale,
        sustained,
        resume_idle,
        sustained_webhooks,
        metrics_overhead,
        respond,
        approve_all,
        approve_all_rtt,
        contention_spread,
        contention_single,
        ffi,
        floor,
    })
}

/// `Value` of a report, for writing.
pub fn report_json(report: &LiveReport) -> Result<Value, BenchError> {
    serde_json::to_value(report).map_err(|source| BenchError::Json {
        what: "serializing the live report".into(),
        source,
    })
}
