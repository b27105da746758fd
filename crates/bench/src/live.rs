//! The benchmarks that need a live server: each starts the reference control plane
//! (`gatehouse_server::testing`, a fresh SQLite file in WAL mode) on its own tokio runtime
//! and drives it from a second runtime, over loopback HTTP.
//!
//! The resume dispatcher is off in every server here: gates are opened directly through
//! the interactions API (no parked turn behind them), and a respond is measured alone,
//! without a background resume competing for the two cores.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde::Serialize;
use serde_json::{json, Value};

use gatehouse_client::{Answer, Client, Error as ClientError};
use gatehouse_server::testing::{try_spawn, TestServer, TestServerOptions};
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
            postgres_url: None,
        }
    }
}

/// Where the Kotlin binding's Maven project and the native library are.
#[derive(Debug, Clone)]
pub struct KotlinFfi {
    /// `bindings/kotlin` (its test sources hold `RespondCostBench.kt`).
    pub project_dir: PathBuf,
    /// The folder holding the release `libgatehouse_ffi.so` the jar carries.
    pub lib_dir: PathBuf,
}

/// Where the Swift binding's benchmark package and the native library are.
#[derive(Debug, Clone)]
pub struct SwiftFfi {
    /// `bench/swift` (the `RespondCostBench` executable, depending on the root package).
    pub package_dir: PathBuf,
    /// The folder holding the release `libgatehouse_ffi.so` it links.
    pub lib_dir: PathBuf,
}

/// Where the Python binding and its driver script are.
#[derive(Debug, Clone)]
pub struct PythonFfi {
    /// The Python interpreter.
    pub python: String,
    /// `bench/python/ffi_respond.py`.
    pub script: PathBuf,
    /// The directory holding the importable `gatehouse` package (with its native library).
    pub package_dir: PathBuf,
}

/// Row 3: one respond through `gatehouse-client` vs a bare reqwest POST.
#[derive(Debug, Clone, Serialize)]
pub struct RespondReport {
    /// Measured responds per side.
    pub iterations: usize,
    /// Client round trip, microseconds.
    pub client_us: Summary,
    /// Bare POST round trip, microseconds.
    pub bare_us: Summary,
    /// `client median / bare median - 1`, in percent.
    pub overhead_pct: f64,
}

/// Row 4: approve-all vs one by one.
#[derive(Debug, Clone, Serialize)]
pub struct ApproveAllBench {
    /// Gates per batch.
    pub gates: usize,
    /// The client's default bound.
    pub concurrency: usize,
    /// Batches per side.
    pub reps: usize,
    /// `approve_all` per batch, milliseconds: one batch request per 500 gates (the host
    /// advertises `interaction_batch`).
    pub parallel_ms: Summary,
    /// Sequential responds per batch, milliseconds.
    pub sequential_ms: Summary,
    /// `sequential median / parallel median`.
    pub speedup: f64,
    /// The bounded fan-out `approve_all` does against a host without batches (Agenta):
    /// one respond per gate, `concurrency` in flight, per batch, milliseconds.
    pub fanout_ms: Summary,
    /// `sequential median / fanout median`.
    pub fanout_speedup: f64,
    /// True when `approve_all` answered with batch requests (checked, not assumed).
    pub batched: bool,
    /// The simulated round trip added by a delay proxy, milliseconds (`None`: bare
    /// loopback).
    pub simulated_rtt_ms: Option<f64>,
    /// CPU time (user + system, whole process: client and server) per sequential batch,
    /// milliseconds (median; `/proc/self/stat`, 10 ms ticks). `None` off Linux.
    pub sequential_cpu_ms: Option<f64>,
    /// The same per parallel batch.
    pub parallel_cpu_ms: Option<f64>,
    /// The best any parallel schedule could do on this machine: the sequential wall time
    /// over the sequential CPU time spread across every core.
    pub cpu_bound_ceiling: Option<f64>,
}

/// Row 9: sustained responds against the resume workers, on one backend.
#[derive(Debug, Clone, Serialize)]
pub struct SustainedReport {
    /// `sqlite` or `postgres`.
    pub backend: String,
    /// Clients, each looping: a run parks at a gate, the client answers it.
    pub clients: usize,
    /// The resume workers of the server.
    pub workers: usize,
    /// How long the load ran, seconds.
    pub seconds: f64,
    /// Gates answered during the load.
    pub responds: u64,
    /// Resumes completed during the load.
    pub resumes: u64,
    /// `responds / seconds`.
    pub responds_per_s: f64,
    /// `resumes / seconds`.
    pub resumes_per_s: f64,
    /// `resumes_per_s / responds_per_s`.
    pub ratio: f64,
    /// Answered gates waiting for their resume, sampled every second of the load.
    pub backlog: Vec<u64>,
    /// The backlog when the load stopped.
    pub backlog_end: u64,
    /// How long the workers took to drain that backlog, milliseconds.
    pub drain_ms: f64,
}

/// Row 5: one contention scenario.
#[derive(Debug, Clone, Serialize)]
pub struct ContentionReport {
    /// Concurrent responds per round.
    pub requests: usize,
    /// Gates they are spread over.
    pub gates: usize,
    /// Rounds.
    pub rounds: usize,
    /// Responds per second per round (all of a round's requests over its wall time).
    pub throughput_rps: Summary,
    /// Per-request latency over every round, milliseconds.
    pub latency_ms: Summary,
    /// Winners (200) per round; each round must have exactly `gates`.
    pub winners: Vec<usize>,
    /// Losers (409 already answered) per round.
    pub losers: Vec<usize>,
}

/// Row 6: the FFI.
#[derive(Debug, Clone, Serialize)]
pub struct FfiReport {
    /// Measured responds per side.
    pub iterations: usize,
    /// Through the Rust client, microseconds.
    pub rust_us: Summary,
    /// Through the Python binding, microseconds (when measured).
    pub python_us: Option<Summary>,
    /// `python median - rust median`, microseconds (when measured).
    pub added_us: Option<f64>,
    /// CPU time of the whole Python process (its thread and the binding's runtime) per
    /// measured call, microseconds (when measured).
    pub python_cpu_us_per_call: Option<f64>,
    /// Why the Python side was not measured.
    pub not_measured: Option<String>,
    /// The Python version that ran the binding.
    pub python_version: Option<String>,
    /// Through the Kotlin binding (JVM, JNA), microseconds (when measured).
    pub kotlin_us: Option<Summary>,
    /// `kotlin median - rust median`, microseconds (when measured).
    pub kotlin_added_us: Option<f64>,
    /// CPU time of the whole JVM per measured call, microseconds (when measured).
    pub kotlin_cpu_us_per_call: Option<f64>,
    /// The JVM that ran the Kotlin binding.
    pub jvm: Option<String>,
    /// Why the Kotlin side was not measured.
    pub kotlin_not_measured: Option<String>,
    /// Through the Swift binding (release build, `async`/`await`), microseconds.
    pub swift_us: Option<Summary>,
    /// `swift median - rust median`, microseconds (when measured).
    pub swift_added_us: Option<f64>,
    /// CPU time of the whole Swift process per measured call, microseconds.
    pub swift_cpu_us_per_call: Option<f64>,
    /// The Swift toolchain that built the driver.
    pub swift_version: Option<String>,
    /// Why the Swift side was not measured.
    pub swift_not_measured: Option<String>,
}

/// Row 8: the physical floor.
#[derive(Debug, Clone, Serialize)]
pub struct FloorReport {
    /// Iterations per figure.
    pub iterations: usize,
    /// A loopback POST of the respond body to an empty axum handler, microseconds.
    pub http_empty_us: Summary,
    /// One `BEGIN IMMEDIATE; INSERT; COMMIT` on SQLite (WAL, synchronous=NORMAL),
    /// microseconds.
    pub sqlite_commit_us: Summary,
    /// Diagnostic: concurrent writers in the two figures below.
    pub concurrent_writers: usize,
    /// Diagnostic: transactions per concurrent series.
    pub concurrent_commits: usize,
    /// Respond-shaped transactions per second (`BEGIN IMMEDIATE`, a read, an update,
    /// two inserts, `COMMIT`, each statement its own await as in the server's store)
    /// when `concurrent_writers` tasks run them at once through the pool, queueing on
    /// SQLite's busy handler (the server's setup).
    pub busy_handler_commits_per_s: f64,
    /// The same load with the writers queued on an async mutex before `BEGIN IMMEDIATE`.
    pub async_mutex_commits_per_s: f64,
    /// The same transactions from one writer, one after the other.
    pub sequential_respond_tx_per_s: f64,
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
    /// Row 9: sustained responds against the resume workers, SQLite then Postgres.
    pub sustained: Vec<SustainedReport>,
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
        let options = TestServerOptions {
            run_dispatcher: false,
            ..TestServerOptions::default()
        };
        self.server
            .block_on(try_spawn(options))
            .map_err(|e| BenchError::Server(e.to_string()))
    }

    /// Stop a test server.
    pub fn stop_server(&self, server: TestServer) {
        self.server.block_on(server.shutdown());
    }
}

/// A client for `server` with the library's defaults.
pub fn client_for(server: &TestServer) -> Result<Client, BenchError> {
    Client::builder(server.base_url.clone())
        .api_key(server.api_key.clone())
        .project_id(server.project_id.clone())
        .build()
        .map_err(|e| BenchError::Request {
            what: "building the client".into(),
            reason: e.to_string(),
        })
}

/// A plain reqwest client, as a caller without `gatehouse-client` would build it.
pub fn bare_http() -> Result<reqwest::Client, BenchError> {
    reqwest::Client::builder()
        .build()
        .map_err(|e| BenchError::Request {
            what: "building the reqwest client".into(),
            reason: e.to_string(),
        })
}

/// Open `n` pending approval gates in `session`, one after the other (not timed; one at
/// a time is the fastest way on SQLite, see row 4 of BENCHMARKS.md); their ids in order.
pub async fn create_gates(
    client: &Client,
    session: &str,
    n: usize,
) -> Result<Vec<String>, BenchError> {
    let blob = crate::inputs::gate_parameters();
    let requests: Vec<CreateInteractionRequest> = (0..n)
        .map(|i| {
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
        })
        .collect::<Result<_, _>>()?;
    let rows: Vec<Result<String, BenchError>> =
        futures::stream::iter(requests)
            .map(|request| async move {
                let row = client.interactions().create(&request).await.map_err(|e| {
                    BenchError::Request {
                        what: "opening a gate".into(),
                        reason: e.to_string(),
                    }
                })?;
                row.id
                    .ok_or_else(|| BenchError::Invariant("a created gate has no id".into()))
            })
            .buffered(1)
            .collect()
            .await;
    rows.into_iter().collect()
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
        .map_err(|e| BenchError::Request {
            what: "client respond".into(),
            reason: e.to_string(),
        })?;
    Ok(started.elapsed())
}

/// One respond as a bare POST (same body, same `Authorization`, an `Idempotency-Key` as
/// the client sends, so the server does the same work); its round-trip time.
async fn bare_respond(
    http: &reqwest::Client,
    server: &TestServer,
    id: &str,
) -> Result<Duration, BenchError> {
    let started = Instant::now();
    let url = server.url(&format!("/api/sessions/interactions/{id}/respond"));
    let response = http
        .post(url)
        .header("Authorization", server.authorization())
        .header("Content-Type", "application/json")
        .header("Accept", "application/json")
        .header("Idempotency-Key", uuid::Uuid::new_v4().to_string())
        .timeout(Duration::from_secs(30))
        .body(RESPOND_BODY)
        .send()
        .await
        .map_err(|e| BenchError::Request {
            what: "bare respond".into(),
            reason: e.to_string(),
        })?;
    let status = response.status();
    let body = response.bytes().await.map_err(|e| BenchError::Request {
        what: "bare respond body".into(),
        reason: e.to_string(),
    })?;
    if status != reqwest::StatusCode::OK || body.is_empty() {
        return Err(BenchError::Request {
            what: "bare respond".into(),
            reason: format!("status {status}"),
        });
    }
    Ok(started.elapsed())
}

/// Row 3: alternate client and bare responds (ABBA order) on fresh gates.
pub fn bench_respond(rt: &Runtimes, config: &LiveConfig) -> Result<RespondReport, BenchError> {
    let server = rt.spawn_server()?;
    let client = client_for(&server)?;
    let http = bare_http()?;
    let rounds = config.respond_iterations + config.warmup;
    let result = rt.driver.block_on(async {
        let gates = create_gates(&client, "bench-respond", 2 * rounds).await?;
        let mut client_us = Vec::with_capacity(rounds);
        let mut bare_us = Vec::with_capacity(rounds);
        for (i, pair) in gates.chunks(2).enumerate() {
            let (c, b) = if i % 2 == 0 {
                let c = client_respond(&client, &pair[0]).await?;
                let b = bare_respond(&http, &server, &pair[1]).await?;
                (c, b)
            } else {
                let b = bare_respond(&http, &server, &pair[0]).await?;
                let c = client_respond(&client, &pair[1]).await?;
                (c, b)
            };
            if i >= config.warmup {
                client_us.push(micros(c));
                bare_us.push(micros(b));
            }
        }
        let client_us = summary(&client_us, "client respond")?;
        let bare_us = summary(&bare_us, "bare respond")?;
        Ok(RespondReport {
            iterations: config.respond_iterations,
            client_us,
            bare_us,
            overhead_pct: (client_us.median / bare_us.median - 1.0) * 100.0,
        })
    });
    rt.stop_server(server);
    result
}

/// A loopback TCP proxy to `upstream` that delivers every chunk `one_way` after it
/// arrived, in both directions: a network round trip of `2 * one_way` on top of
/// loopback. Chunks are in flight together (a reader stamps each with its arrival and a
/// writer releases it at arrival + `one_way`), as on a real link: a response read in ten
/// chunks pays the delay once, not ten times. Bandwidth and TCP slow start are not
/// modelled. Runs until the runtime it was started on stops.
pub async fn start_delay_proxy(
    upstream: std::net::SocketAddr,
    one_way: Duration,
) -> Result<std::net::SocketAddr, BenchError> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|source| BenchError::Io {
            what: "binding the delay proxy".into(),
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| BenchError::Io {
        what: "reading the delay proxy's address".into(),
        source,
    })?;
    async fn pump(
        mut from: tokio::net::tcp::OwnedReadHalf,
        mut to: tokio::net::tcp::OwnedWriteHalf,
        one_way: Duration,
    ) {
        let (in_flight, mut arriving) =
            tokio::sync::mpsc::unbounded_channel::<(tokio::time::Instant, Vec<u8>)>();
        let writer = tokio::spawn(async move {
            while let Some((due, chunk)) = arriving.recv().await {
                tokio::time::sleep_until(due).await;
                if to.write_all(&chunk).await.is_err() {
                    return;
                }
            }
            let _ = to.shutdown().await;
        });
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match from.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let due = tokio::time::Instant::now() + one_way;
                    if in_flight.send((due, buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
            }
        }
        // Closing the channel lets the writer deliver what is in flight, then shut down.
        drop(in_flight);
        let _ = writer.await;
    }
    tokio::spawn(async move {
        while let Ok((inbound, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Ok(outbound) = tokio::net::TcpStream::connect(upstream).await else {
                    return;
                };
                let _ = inbound.set_nodelay(true);
                let _ = outbound.set_nodelay(true);
                let (in_read, in_write) = inbound.into_split();
                let (out_read, out_write) = outbound.into_split();
                tokio::spawn(pump(in_read, out_write, one_way));
                tokio::spawn(pump(out_read, in_write, one_way));
            });
        }
    });
    Ok(addr)
}

/// Row 4: `approve_all` (default bound) vs one respond after the other, each batch on
/// fresh gates, sides alternating, over bare loopback.
pub fn bench_approve_all(
    rt: &Runtimes,
    config: &LiveConfig,
) -> Result<ApproveAllBench, BenchError> {
    bench_approve_all_over(rt, config, None)
}

/// Row 4 with the answering client behind a delay proxy adding `rtt` to every round trip
/// (`None`: bare loopback). Gates are opened directly, without the delay.
pub fn bench_approve_all_over(
    rt: &Runtimes,
    config: &LiveConfig,
    rtt: Option<Duration>,
) -> Result<ApproveAllBench, BenchError> {
    let server = rt.spawn_server()?;
    let result = approve_all_on(rt, config, rtt, &server);
    rt.stop_server(server);
    result
}

fn approve_all_on(
    rt: &Runtimes,
    config: &LiveConfig,
    rtt: Option<Duration>,
    server: &TestServer,
) -> Result<ApproveAllBench, BenchError> {
    let opener = client_for(server)?;
    let base = match rtt {
        None => server.base_url.clone(),
        Some(rtt) => {
            let upstream = server
                .base_url
                .trim_start_matches("http://")
                .parse::<std::net::SocketAddr>()
                .map_err(|e| BenchError::Invalid(format!("server address: {e}")))?;
            let proxy = rt.server.block_on(start_delay_proxy(upstream, rtt / 2))?;
            format!("http://{proxy}")
        }
    };
    let answering = |upstream: gatehouse_client::Upstream| {
        Client::builder(base.clone())
            .upstream(upstream)
            .api_key(server.api_key.clone())
            .project_id(server.project_id.clone())
            .build()
            .map_err(|e| BenchError::Request {
                what: "building the answering client".into(),
                reason: e.to_string(),
            })
    };
    // The phone's client (batches), and the same client as it answers Agenta (fan-out).
    let client = answering(gatehouse_client::Upstream::Gatehouse)?;
    let fanout_client = answering(gatehouse_client::Upstream::Agenta)?;
    let reps = if rtt.is_some() {
        config.approve_all_rtt_reps
    } else {
        config.approve_all_reps
    };
    let n = config.approve_all_gates;
    rt.driver.block_on(async {
        // A warm-up batch of each kind, not measured.
        let w = config.warmup.max(1);
        let warm = create_gates(&opener, "bench-approve-warm", 3 * w).await?;
        let _ = client
            .interactions()
            .approve_all(&warm[..w], &Answer::approve())
            .await;
        let _ = fanout_client
            .interactions()
            .approve_all(&warm[w..2 * w], &Answer::approve())
            .await;
        for id in &warm[2 * w..] {
            client_respond(&client, id).await?;
        }
        let batched = client
            .capabilities()
            .known(gatehouse_wire::capabilities::Capability::InteractionBatch)
            == Some(true);
        let mut parallel_ms = Vec::new();
        let mut sequential_ms = Vec::new();
        let mut fanout_ms = Vec::new();
        let mut parallel_cpu = Vec::new();
        let mut sequential_cpu = Vec::new();
        for rep in 0..reps {
            let session = format!("bench-approve-{rep}");
            let gates = create_gates(&opener, &session, 3 * n).await?;
            let (first, rest) = gates.split_at(n);
            let (second, third) = rest.split_at(n);
            let (parallel_ids, sequential_ids) = if rep % 2 == 0 {
                (first, second)
            } else {
                (second, first)
            };
            let started = Instant::now();
            let report = fanout_client
                .interactions()
                .approve_all(third, &Answer::approve())
                .await;
            fanout_ms.push(millis(started.elapsed()));
            if report.answered.len() != n {
                return Err(BenchError::Invariant(format!(
                    "the fan-out answered {} of {n} fresh gates",
                    report.answered.len()
                )));
            }
            let run_parallel = || async {
                let cpu = process_cpu_seconds();
                let started = Instant::now();
                let report = client
                    .interactions()
                    .approve_all(parallel_ids, &Answer::approve())
                    .await;
                let elapsed = started.elapsed();
                if report.answered.len() != n {
                    return Err(BenchError::Invariant(format!(
                        "approve_all answered {} of {n} fresh gates ({} already answered, {} failed{})",
                        report.answered.len(),
                        report.already_answered.len(),
                        report.failed.len(),
                        report
                            .failed
                            .first()
                            .map(|(id, e)| format!("; first: {id}: {e}"))
                            .unwrap_or_default()
                    )));
                }
                let cpu = cpu.zip(process_cpu_seconds()).map(|(a, b)| (b - a) * 1e3);
                Ok((millis(elapsed), cpu))
            };
            let run_sequential = || async {
                let cpu = process_cpu_seconds();
                let started = Instant::now();
                for id in sequential_ids {
                    client_respond(&client, id).await?;
                }
                let elapsed = started.elapsed();
                let cpu = cpu.zip(process_cpu_seconds()).map(|(a, b)| (b - a) * 1e3);
                Ok::<_, BenchError>((millis(elapsed), cpu))
            };
            let (parallel, sequential) = if rep % 2 == 0 {
                let p = run_parallel().await?;
                (p, run_sequential().await?)
            } else {
                let q = run_sequential().await?;
                (run_parallel().await?, q)
            };
            parallel_ms.push(parallel.0);
            sequential_ms.push(sequential.0);
            parallel_cpu.extend(parallel.1);
            sequential_cpu.extend(sequential.1);
        }
        let parallel_ms = summary(&parallel_ms, "approve-all")?;
        let sequential_ms = summary(&sequential_ms, "sequential responds")?;
        let fanout_ms = summary(&fanout_ms, "approve-all fan-out")?;
        let sequential_cpu_ms = Summary::of(&sequential_cpu).map(|s| s.median);
        let parallel_cpu_ms = Summary::of(&parallel_cpu).map(|s| s.median);
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1) as f64;
        let cpu_bound_ceiling = sequential_cpu_ms
            .filter(|cpu| *cpu > 0.0)
            .map(|cpu| sequential_ms.median / (cpu / cores));
        Ok(ApproveAllBench {
            sequential_cpu_ms,
            parallel_cpu_ms,
            cpu_bound_ceiling,
            gates: n,
            concurrency: gatehouse_client::DEFAULT_APPROVE_ALL_CONCURRENCY,
            reps,
            speedup: sequential_ms.median / parallel_ms.median,
            fanout_speedup: sequential_ms.median / fanout_ms.median,
            fanout_ms,
            batched,
            simulated_rtt_ms: rtt.map(millis),
            parallel_ms,
            sequential_ms,
        })
    })
}

/// What one concurrent respond came back with.
enum Outcome {
    Won,
    AlreadyAnswered,
    Failed(String),
}

/// One round: `requests` responds released at once over `gates` fresh gates (request `k`
/// answers gate `k % gates`). Returns (wall time, latencies, winners, losers); fails
/// unless every gate has exactly one winner and every other request got 409.
async fn contention_round(
    client: &Client,
    session: &str,
    requests: usize,
    gates: usize,
) -> Result<(Duration, Vec<f64>, usize, usize), BenchError> {
    let ids = create_gates(client, session, gates).await?;
    let barrier = Arc::new(tokio::sync::Barrier::new(requests + 1));
    let mut tasks = Vec::with_capacity(requests);
    for k in 0..requests {
        let client = client.clone();
        let id = ids[k % gates].clone();
        let barrier = barrier.clone();
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let started = Instant::now();
            let outcome = match client.interactions().respond(&id, &Answer::approve()).await {
                Ok(_) => Outcome::Won,
                Err(ClientError::AlreadyAnswered { .. }) => Outcome::AlreadyAnswered,
                Err(other) => Outcome::Failed(other.to_string()),
            };
            (k % gates, started.elapsed(), outcome)
        }));
    }
    barrier.wait().await;
    let started = Instant::now();
    let mut latencies = Vec::with_capacity(requests);
    let mut winners_per_gate = vec![0usize; gates];
    let mut losers = 0;
    let mut failures = Vec::new();
    for task in tasks {
        let (gate, latency, outcome) = task
            .await
            .map_err(|e| BenchError::Invariant(format!("a responder task died: {e}")))?;
        latencies.push(millis(latency));
        match outcome {
            Outcome::Won => winners_per_gate[gate] += 1,
            Outcome::AlreadyAnswered => losers += 1,
            Outcome::Failed(reason) => failures.push(reason),
        }
    }
    let wall = started.elapsed();
    if let Some(first) = failures.first() {
        return Err(BenchError::Invariant(format!(
            "{} of {requests} concurrent responds failed (neither 200 nor 409); first: {first}",
            failures.len()
        )));
    }
    if let Some((gate, count)) = winners_per_gate.iter().enumerate().find(|(_, c)| **c != 1) {
        return Err(BenchError::Invariant(format!(
            "gate {gate} had {count} winners, not exactly 1"
        )));
    }
    let winners: usize = winners_per_gate.iter().sum();
    if winners + losers != requests {
        return Err(BenchError::Invariant(format!(
            "{winners} winners + {losers} losers != {requests} requests"
        )));
    }
    Ok((wall, latencies, winners, losers))
}

/// Row 5: `requests` concurrent responds over `gates` gates, `rounds` times, each round
/// on a fresh server.
pub fn bench_contention(
    rt: &Runtimes,
    config: &LiveConfig,
    gates: usize,
) -> Result<ContentionReport, BenchError> {
    let requests = config.contention_requests;
    let mut throughput = Vec::new();
    let mut latencies = Vec::new();
    let mut winners = Vec::new();
    let mut losers = Vec::new();
    for round in 0..config.contention_rounds {
        let server = rt.spawn_server()?;
        let client = client_for(&server)?;
        let result = rt.driver.block_on(async {
            // Warm the pool and the server with a small untimed round.
            let warm_gates = gates.min(4);
            contention_round(&client, "bench-warm", warm_gates * 2, warm_gates).await?;
            contention_round(
                &client,
                &format!("bench-contention-{round}"),
                requests,
                gates,
            )
            .await
        });
        rt.stop_server(server);
        let (wall, round_latencies, won, lost) = result?;
        throughput.push(requests as f64 / wall.as_secs_f64());
        latencies.extend(round_latencies);
        winners.push(won);
        losers.push(lost);
    }
    Ok(ContentionReport {
        requests,
        gates,
        rounds: config.contention_rounds,
        throughput_rps: summary(&throughput, "contention throughput")?,
        latency_ms: summary(&latencies, "contention latency")?,
        winners,
        losers,
    })
}

/// The Python driver's answer.
#[derive(Debug, serde::Deserialize)]
struct PythonSamples {
    samples_ns: Vec<f64>,
    process_cpu_ns_per_call: Option<f64>,
    python: Option<String>,
}

/// A binding driver's config file (the server to answer, the gates, the warm-up count,
/// and `extra` keys), in a temp dir that lives as long as the returned guard.
fn driver_config(
    driver: &str,
    server: &TestServer,
    ids: &[String],
    warmup: usize,
    extra: serde_json::Map<String, Value>,
) -> Result<(tempfile::TempDir, PathBuf), BenchError> {
    let dir = tempfile::tempdir().map_err(|source| BenchError::Io {
        what: format!("creating a temp dir for the {driver} driver"),
        source,
    })?;
    let path = dir.path().join("driver_config.json");
    let mut config = json!({
        "base_url": server.base_url,
        "api_key": server.api_key,
        "project_id": server.project_id,
        "ids": ids,
        "warmup": warmup,
    });
    if let Value::Object(map) = &mut config {
        map.extend(extra);
    }
    std::fs::write(&path, config.to_string()).map_err(|source| BenchError::Io {
        what: format!("writing {}", path.display()),
        source,
    })?;
    Ok((dir, path))
}

/// Responds the Kotlin driver makes before it measures (the JIT's warm-up).
const KOTLIN_JIT_WARMUP: usize = 1500;

/// The Kotlin binding's timed responds (`RespondCostBench.kt`, run by Maven on the test
/// classpath against the release library).
fn kotlin_responds(
    kotlin: &KotlinFfi,
    server: &TestServer,
    ids: &[String],
    warmup: usize,
) -> Result<BindingRun, BenchError> {
    let (_dir, config_path) = driver_config("Kotlin", server, ids, warmup, Default::default())?;
    let output = Command::new("mvn")
        .current_dir(&kotlin.project_dir)
        .args(["-B", "-q", "--no-transfer-progress"])
        .arg(format!("-Dgatehouse.lib.dir={}", kotlin.lib_dir.display()))
        .args([
            "test-compile",
            "org.codehaus.mojo:exec-maven-plugin:3.5.0:java",
            "-Dexec.classpathScope=test",
            "-Dexec.mainClass=dev.gatehouse.RespondCostBenchKt",
        ])
        .arg(format!("-Dexec.args={}", config_path.display()))
        .output()
        .map_err(|e| BenchError::Kotlin(format!("cannot start mvn: {e}")))?;
    if !output.status.success() {
        let text = String::from_utf8_lossy(&output.stdout).to_string()
            + &String::from_utf8_lossy(&output.stderr);
        let last = text
            .trim()
            .lines()
            .last()
            .unwrap_or("no output")
            .to_string();
        return Err(BenchError::Kotlin(format!(
            "the Kotlin driver exited with {}: {last}",
            output.status
        )));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .rev()
        // Maven writes colour resets around a program's output even when piped: the
        // JSON is what lies between the first `{"` and the last `}` of its line.
        .find_map(|l| l.get(l.find("{\"")?..=l.rfind('}')?))
        .ok_or_else(|| BenchError::Kotlin("the Kotlin driver printed no JSON".into()))?;
    let parsed: KotlinSamples = serde_json::from_str(line).map_err(|source| BenchError::Json {
        what: "reading the Kotlin driver's output".into(),
        source,
    })?;
    Ok(BindingRun {
        samples_us: parsed.samples_ns.iter().map(|ns| ns / 1000.0).collect(),
        cpu_us_per_call: parsed.process_cpu_ns_per_call.map(|ns| ns / 1000.0),
        version: parsed.jvm,
    })
}

#[derive(serde::Deserialize)]
struct KotlinSamples {
    samples_ns: Vec<f64>,
    process_cpu_ns_per_call: Option<f64>,
    jvm: Option<String>,
}

/// The Swift binding's timed responds (`bench/swift`'s `RespondCostBench`, built in
/// release mode against the release library).
fn swift_responds(
    swift: &SwiftFfi,
    server: &TestServer,
    ids: &[String],
    warmup: usize,
) -> Result<BindingRun, BenchError> {
    let failed = |what: &str, output: &std::process::Output| {
        let text = String::from_utf8_lossy(&output.stdout).to_string()
            + &String::from_utf8_lossy(&output.stderr);
        let last = text
            .trim()
            .lines()
            .last()
            .unwrap_or("no output")
            .to_string();
        BenchError::Swift(format!("{what} exited with {}: {last}", output.status))
    };
    let build = Command::new("swift")
        .current_dir(&swift.package_dir)
        .env("GATEHOUSE_FFI_LIB_DIR", &swift.lib_dir)
        .args(["build", "-c", "release", "--product", "RespondCostBench"])
        .output()
        .map_err(|e| BenchError::Swift(format!("cannot start swift: {e}")))?;
    if !build.status.success() {
        return Err(failed("swift build", &build));
    }
    let (_dir, config_path) = driver_config("Swift", server, ids, warmup, Default::default())?;
    // The library folder first on the loader's path: under `cargo run` (and so
    // `cargo xtask bench`) cargo's debug folders are there, whose libgatehouse_ffi.so
    // would win over the driver's runpath and may be a build of other sources.
    let mut library_path = std::ffi::OsString::from(&swift.lib_dir);
    if let Some(inherited) = std::env::var_os("LD_LIBRARY_PATH") {
        library_path.push(":");
        library_path.push(inherited);
    }
    let output = Command::new(swift.package_dir.join(".build/release/RespondCostBench"))
        .env("LD_LIBRARY_PATH", library_path)
        .arg(&config_path)
        .output()
        .map_err(|e| BenchError::Swift(format!("cannot start RespondCostBench: {e}")))?;
    if !output.status.success() {
        return Err(failed("RespondCostBench", &output));
    }
    let parsed: SwiftSamples =
        serde_json::from_slice(&output.stdout).map_err(|source| BenchError::Json {
            what: "reading the Swift driver's output".into(),
            source,
        })?;
    let version = Command::new("swift")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            let text = String::from_utf8_lossy(&o.stdout).to_string()
                + &String::from_utf8_lossy(&o.stderr);
            text.lines()
                .find(|l| l.contains("Swift version"))
                .map(|l| l.trim().to_string())
        });
    Ok(BindingRun {
        samples_us: parsed.samples_ns.iter().map(|ns| ns / 1000.0).collect(),
        cpu_us_per_call: parsed.process_cpu_ns_per_call.map(|ns| ns / 1000.0),
        version,
    })
}

#[derive(serde::Deserialize)]
struct SwiftSamples {
    samples_ns: Vec<f64>,
    process_cpu_ns_per_call: Option<f64>,
}

/// What a binding driver measured.
struct BindingRun {
    samples_us: Vec<f64>,
    cpu_us_per_call: Option<f64>,
    version: Option<String>,
}

/// The Python binding's timed responds over `ids`; its per-call samples in microseconds.
fn python_responds(
    python: &PythonFfi,
    server: &TestServer,
    ids: &[String],
    warmup: usize,
) -> Result<BindingRun, BenchError> {
    let mut extra = serde_json::Map::new();
    extra.insert("package_dir".into(), json!(python.package_dir));
    let (_dir, config_path) = driver_config("Python", server, ids, warmup, extra)?;
    let output = Command::new(&python.python)
        .arg(&python.script)
        .arg(&config_path)
        .output()
        .map_err(|e| BenchError::Python(format!("cannot start {}: {e}", python.python)))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr
            .trim()
            .lines()
            .last()
            .unwrap_or("no output")
            .to_string();
        return Err(BenchError::Python(format!(
            "{} exited with {}: {last}",
            python.script.display(),
            output.status
        )));
    }
    let parsed: PythonSamples =
        serde_json::from_slice(&output.stdout).map_err(|source| BenchError::Json {
            what: "reading the FFI driver's output".into(),
            source,
        })?;
    Ok(BindingRun {
        samples_us: parsed.samples_ns.iter().map(|ns| ns / 1000.0).collect(),
        cpu_us_per_call: parsed.process_cpu_ns_per_call.map(|ns| ns / 1000.0),
        version: parsed.python,
    })
}

/// One binding's share of row 6: its summary and added time, or why it was not measured.
struct Figures {
    us: Option<Summary>,
    added_us: Option<f64>,
    cpu_us_per_call: Option<f64>,
    version: Option<String>,
    not_measured: Option<String>,
}

fn figures(
    run: Result<BindingRun, String>,
    rust_median: f64,
    what: &str,
) -> Result<Figures, BenchError> {
    Ok(match run {
        Ok(run) => {
            let us = summary(&run.samples_us, what)?;
            Figures {
                added_us: Some(us.median - rust_median),
                us: Some(us),
                cpu_us_per_call: run.cpu_us_per_call,
                version: run.version,
                not_measured: None,
            }
        }
        Err(reason) => Figures {
            us: None,
            added_us: None,
            cpu_us_per_call: None,
            version: None,
            not_measured: Some(reason),
        },
    })
}

/// Row 6: respond through the Rust client, then through the Python binding, then the
/// Rust client again, then the Kotlin and Swift bindings, each on fresh gates of the same
/// server.
pub fn bench_ffi(rt: &Runtimes, config: &LiveConfig) -> Result<FfiReport, BenchError> {
    let server = rt.spawn_server()?;
    let client = client_for(&server)?;
    let n = config.ffi_iterations;
    let half = n / 2;
    let warm = config.warmup;
    let result = (|| {
        // The JVM's JIT needs a much longer warm-up than the others: profiled (perf, JFR),
        // C1/C2 compile on the two cores through the first ~1000 responds (the first 250
        // cost 6.7 ms of JVM CPU each, calls 1000 to 1250 under 1 ms), so a short warm-up
        // measures the compiler, not the binding.
        let kotlin_warm = (warm * 4).max(KOTLIN_JIT_WARMUP);
        let (rust_ids, python_ids, kotlin_ids, swift_ids) = rt.driver.block_on(async {
            let rust = create_gates(&client, "bench-ffi-rust", n + 2 * warm).await?;
            let python = create_gates(&client, "bench-ffi-python", n + warm).await?;
            let kotlin = if config.kotlin_ffi.is_some() {
                create_gates(&client, "bench-ffi-kotlin", n + kotlin_warm).await?
            } else {
                Vec::new()
            };
            let swift = if config.swift_ffi.is_some() {
                create_gates(&client, "bench-ffi-swift", n + warm).await?
            } else {
                Vec::new()
            };
            Ok::<_, BenchError>((rust, python, kotlin, swift))
        })?;
        let measure_rust = |ids: &[String]| {
            rt.driver.block_on(async {
                let mut samples = Vec::new();
                for (i, id) in ids.iter().enumerate() {
                    let elapsed = client_respond(&client, id).await?;
                    if i >= warm {
                        samples.push(micros(elapsed));
                    }
                }
                Ok::<_, BenchError>(samples)
            })
        };
        let mut rust_us = measure_rust(&rust_ids[..half + warm])?;
        let python = match &config.python_ffi {
            None => Err("no Python binding given".to_string()),
            Some(python) => {
                python_responds(python, &server, &python_ids, warm).map_err(|e| e.to_string())
            }
        };
        rust_us.extend(measure_rust(&rust_ids[half + warm..])?);
        let kotlin = match &config.kotlin_ffi {
            None => Err("no Kotlin binding given".to_string()),
            Some(kotlin) => kotlin_responds(kotlin, &server, &kotlin_ids, kotlin_warm)
                .map_err(|e| e.to_string()),
        };
        let swift = match &config.swift_ffi {
            None => Err("no Swift toolchain (the swift machine kind has one)".to_string()),
            Some(swift) => {
                swift_responds(swift, &server, &swift_ids, warm).map_err(|e| e.to_string())
            }
        };
        let rust_us = summary(&rust_us, "rust respond")?;
        let mut report = FfiReport {
            iterations: n,
            rust_us,
            python_us: None,
            python_cpu_us_per_call: None,
            added_us: None,
            not_measured: None,
            python_version: None,
            kotlin_us: None,
            kotlin_added_us: None,
            kotlin_cpu_us_per_call: None,
            jvm: None,
            kotlin_not_measured: None,
            swift_us: None,
            swift_added_us: None,
            swift_cpu_us_per_call: None,
            swift_version: None,
            swift_not_measured: None,
        };
        let rust_median = report.rust_us.median;
        let python = figures(python, rust_median, "python respond")?;
        (
            report.python_us,
            report.added_us,
            report.python_cpu_us_per_call,
        ) = (python.us, python.added_us, python.cpu_us_per_call);
        (report.python_version, report.not_measured) = (python.version, python.not_measured);
        let kotlin = figures(kotlin, rust_median, "kotlin respond")?;
        (
            report.kotlin_us,
            report.kotlin_added_us,
            report.kotlin_cpu_us_per_call,
        ) = (kotlin.us, kotlin.added_us, kotlin.cpu_us_per_call);
        (report.jvm, report.kotlin_not_measured) = (kotlin.version, kotlin.not_measured);
        let swift = figures(swift, rust_median, "swift respond")?;
        (
            report.swift_us,
            report.swift_added_us,
            report.swift_cpu_us_per_call,
        ) = (swift.us, swift.added_us, swift.cpu_us_per_call);
        (report.swift_version, report.swift_not_measured) = (swift.version, swift.not_measured);
        Ok::<_, BenchError>(report)
    })();
    rt.stop_server(server);
    result
}

/// Row 8: an empty loopback handler and one SQLite WAL commit.
pub fn bench_floor(rt: &Runtimes, config: &LiveConfig) -> Result<FloorReport, BenchError> {
    // The empty handler, served on the server runtime like the real server.
    let listener = rt
        .server
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .map_err(|source| BenchError::Io {
            what: "binding the empty handler".into(),
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| BenchError::Io {
        what: "reading the empty handler's address".into(),
        source,
    })?;
    let app = axum::Router::new().route("/empty", axum::routing::post(|| async {}));
    let served = rt
        .server
        .spawn(async move { axum::serve(listener, app).await });
    let http = bare_http()?;
    let url = format!("http://{addr}/empty");
    let total = config.floor_iterations + config.warmup;
    let http_result = rt.driver.block_on(async {
        let mut samples = Vec::with_capacity(total);
        for i in 0..total {
            let started = Instant::now();
            let response = http
                .post(&url)
                .header("Authorization", "ApiKey floor")
                .header("Content-Type", "application/json")
                .header("Idempotency-Key", uuid::Uuid::new_v4().to_string())
                .timeout(Duration::from_secs(30))
                .body(RESPOND_BODY)
                .send()
                .await
                .map_err(|e| BenchError::Request {
                    what: "empty-handler POST".into(),
                    reason: e.to_string(),
                })?;
            let status = response.status();
            response.bytes().await.map_err(|e| BenchError::Request {
                what: "empty-handler body".into(),
                reason: e.to_string(),
            })?;
            if !status.is_success() {
                return Err(BenchError::Request {
                    what: "empty-handler POST".into(),
                    reason: format!("status {status}"),
                });
            }
            if i >= config.warmup {
                samples.push(micros(started.elapsed()));
            }
        }
        summary(&samples, "empty handler")
    });
    served.abort();
    let http_empty_us = http_result?;
    let sqlite = rt.driver.block_on(sqlite_commits(config))?;
    Ok(FloorReport {
        iterations: config.floor_iterations,
        http_empty_us,
        sqlite_commit_us: sqlite.sequential_us,
        concurrent_writers: sqlite.writers,
        concurrent_commits: sqlite.commits,
        busy_handler_commits_per_s: sqlite.busy_handler_per_s,
        async_mutex_commits_per_s: sqlite.async_mutex_per_s,
        sequential_respond_tx_per_s: sqlite.one_writer_per_s,
    })
}

struct SqliteFloor {
    sequential_us: Summary,
    writers: usize,
    commits: usize,
    busy_handler_per_s: f64,
    async_mutex_per_s: f64,
    one_writer_per_s: f64,
}

fn db_error(what: &'static str) -> impl Fn(sqlx::Error) -> BenchError {
    move |e| BenchError::Request {
        what: what.to_string(),
        reason: e.to_string(),
    }
}

/// One `BEGIN IMMEDIATE; INSERT; COMMIT`.
async fn commit_one(pool: &sqlx::SqlitePool) -> Result<(), BenchError> {
    let mut tx = pool
        .begin_with("BEGIN IMMEDIATE")
        .await
        .map_err(db_error("BEGIN IMMEDIATE"))?;
    sqlx::query("INSERT INTO floor (body) VALUES ($1)")
        .bind(RESPOND_BODY)
        .execute(&mut *tx)
        .await
        .map_err(db_error("INSERT"))?;
    tx.commit().await.map_err(db_error("COMMIT"))
}

/// A transaction shaped like the server's respond: take the write lock, read a row,
/// update it, insert two rows, commit; each statement a separate await.
async fn respond_shaped_tx(pool: &sqlx::SqlitePool) -> Result<(), BenchError> {
    let mut tx = pool
        .begin_with("BEGIN IMMEDIATE")
        .await
        .map_err(db_error("BEGIN IMMEDIATE"))?;
    sqlx::query("SELECT id FROM floor WHERE id = 1")
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_error("SELECT"))?;
    sqlx::query("UPDATE floor SET body = $1 WHERE id = 1")
        .bind(RESPOND_BODY)
        .execute(&mut *tx)
        .await
        .map_err(db_error("UPDATE"))?;
    for _ in 0..2 {
        sqlx::query("INSERT INTO floor (body) VALUES ($1)")
            .bind(RESPOND_BODY)
            .execute(&mut *tx)
            .await
            .map_err(db_error("INSERT"))?;
    }
    tx.commit().await.map_err(db_error("COMMIT"))
}

/// `writers` tasks run `per_writer` respond-shaped transactions each, at once;
/// transactions per second. With `lock`, each first takes the async mutex.
async fn concurrent_commits(
    pool: &sqlx::SqlitePool,
    writers: usize,
    per_writer: usize,
    lock: Option<Arc<tokio::sync::Mutex<()>>>,
) -> Result<f64, BenchError> {
    let started = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|_| {
            let pool = pool.clone();
            let lock = lock.clone();
            tokio::spawn(async move {
                for _ in 0..per_writer {
                    let _guard = match &lock {
                        Some(lock) => Some(lock.lock().await),
                        None => None,
                    };
                    respond_shaped_tx(&pool).await?;
                }
                Ok::<(), BenchError>(())
            })
        })
        .collect();
    for task in tasks {
        task.await
            .map_err(|e| BenchError::Invariant(format!("a writer task died: {e}")))??;
    }
    Ok((writers * per_writer) as f64 / started.elapsed().as_secs_f64())
}

async fn sqlite_commits(config: &LiveConfig) -> Result<SqliteFloor, BenchError> {
    use sqlx::sqlite::{
        SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
    };
    use std::str::FromStr;
    let dir = tempfile::tempdir().map_err(|source| BenchError::Io {
        what: "creating a temp dir for SQLite".into(),
        source,
    })?;
    let url = format!("sqlite://{}", dir.path().join("floor.db").display());
    // The same connection settings as the server's store.
    let options = SqliteConnectOptions::from_str(&url)
        .map_err(db_error("parsing the SQLite URL"))?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(30))
        .foreign_keys(true);
    let pool = SqlitePoolOptions::new()
        .max_connections(8)
        .connect_with(options)
        .await
        .map_err(db_error("opening SQLite"))?;
    sqlx::query("CREATE TABLE floor (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        .execute(&pool)
        .await
        .map_err(db_error("creating the table"))?;
    let total = config.floor_iterations + config.warmup;
    let mut samples = Vec::with_capacity(total);
    for i in 0..total {
        let started = Instant::now();
        commit_one(&pool).await?;
        if i >= config.warmup {
            samples.push(micros(started.elapsed()));
        }
    }
    let sequential_us = summary(&samples, "sqlite commit")?;
    // Diagnostic for the concurrent figures: the same commits from 8 writers at once.
    let writers = gatehouse_client::DEFAULT_APPROVE_ALL_CONCURRENCY;
    let per_writer = (config.floor_iterations / 40).max(2);
    let one_writer = concurrent_commits(&pool, 1, writers * per_writer, None).await?;
    let busy_handler_per_s = concurrent_commits(&pool, writers, per_writer, None).await?;
    let lock = Arc::new(tokio::sync::Mutex::new(()));
    let async_mutex_per_s = concurrent_commits(&pool, writers, per_writer, Some(lock)).await?;
    pool.close().await;
    Ok(SqliteFloor {
        sequential_us,
        writers,
        commits: writers * per_writer,
        busy_handler_per_s,
        async_mutex_per_s,
        one_writer_per_s: one_writer,
    })
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
    progress("sustained responds against the resume workers, SQLite");
    let mut sustained = vec![bench_sustained(&rt, config, None)?];
    if let Some(url) = &config.postgres_url {
        progress("sustained responds against the resume workers, PostgreSQL");
        sustained.push(bench_sustained(&rt, config, Some(url))?);
    }
    Ok(LiveReport {
        sustained,
        respond,
        approve_all,
        approve_all_rtt,
        contention_spread,
        contention_single,
        ffi,
        floor,
    })
}

/// Counts of the resume queue, read straight from the server's database.
enum Queue {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
}

impl Queue {
    async fn connect(url: &str) -> Result<Self, BenchError> {
        Ok(if url.starts_with("postgres") {
            Self::Postgres(
                sqlx::PgPool::connect(url)
                    .await
                    .map_err(db_error("opening the Postgres queue"))?,
            )
        } else {
            Self::Sqlite(
                sqlx::SqlitePool::connect(url)
                    .await
                    .map_err(db_error("opening the SQLite queue"))?,
            )
        })
    }

    async fn count(&self, state: &str) -> Result<u64, BenchError> {
        let sql = "SELECT COUNT(*) FROM resume_jobs WHERE state = $1";
        let n: i64 = match self {
            Self::Sqlite(pool) => sqlx::query_scalar(sql).bind(state).fetch_one(pool).await,
            Self::Postgres(pool) => sqlx::query_scalar(sql).bind(state).fetch_one(pool).await,
        }
        .map_err(db_error("counting resume jobs"))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn close(self) {
        match self {
            Self::Sqlite(pool) => pool.close().await,
            Self::Postgres(pool) => pool.close().await,
        }
    }
}

/// Row 9: `config.sustained_clients` clients for `config.sustained_for`, each looping
/// "a run parks at a gate, answer it", against a server with its resume workers on;
/// responds/s against resumes/s, and the backlog of answered gates waiting to resume.
pub fn bench_sustained(
    rt: &Runtimes,
    config: &LiveConfig,
    postgres: Option<&str>,
) -> Result<SustainedReport, BenchError> {
    let database_url = match postgres {
        Some(url) => Some(
            rt.driver
                .block_on(gatehouse_server::testing::fresh_postgres_database(url))
                .map_err(db_error("creating the bench database"))?,
        ),
        None => None,
    };
    let options = TestServerOptions {
        database_url: database_url.clone(),
        ..TestServerOptions::default()
    };
    let server = rt
        .server
        .block_on(try_spawn(options))
        .map_err(|e| BenchError::Server(e.to_string()))?;
    let url = database_url
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", server.database_path.display()));
    let workers = server.server.state().config.resume_workers;
    let client = client_for(&server)?;
    let result = rt
        .driver
        .block_on(sustained_on(&client, &url, config, workers));
    rt.stop_server(server);
    result.map(|mut report| {
        report.backend = if postgres.is_some() {
            "postgres"
        } else {
            "sqlite"
        }
        .to_string();
        report
    })
}

async fn sustained_on(
    client: &Client,
    url: &str,
    config: &LiveConfig,
    workers: usize,
) -> Result<SustainedReport, BenchError> {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let queue = Queue::connect(url).await?;
    let parameters: gatehouse_wire::JsonObject = match json!({"agent": {
        "llm": {"model": "m-sustained"},
        "runner": {"permissions": {"default": "ask"}},
        "script": [{"tool": "Bash", "args": {"command": "make"}}, {"say": "done"}]
    }}) {
        Value::Object(map) => map,
        _ => return Err(BenchError::Invalid("the sustained config".into())),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let responds = Arc::new(AtomicU64::new(0));
    let done_before = queue.count("done").await?;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..config.sustained_clients {
        let client = client.clone();
        let stop = stop.clone();
        let responds = responds.clone();
        let parameters = parameters.clone();
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while !stop.load(Ordering::SeqCst) {
                n += 1;
                let request = gatehouse_wire::invoke::InvokeRequest {
                    session_id: Some(format!("sustained-{c}-{n}")),
                    references: None,
                    data: gatehouse_wire::invoke::InvokeData {
                        parameters: Some(parameters.clone()),
                        ..Default::default()
                    },
                };
                let parked =
                    client
                        .service()
                        .invoke(&request)
                        .await
                        .map_err(|e| BenchError::Request {
                            what: "a sustained-load run".into(),
                            reason: e.to_string(),
                        })?;
                let Some(gate) = parked.interaction_ids.first() else {
                    return Err(BenchError::Invariant(
                        "a sustained-load run did not park".into(),
                    ));
                };
                client
                    .interactions()
                    .respond(gate, &Answer::approve())
                    .await
                    .map_err(|e| BenchError::Request {
                        what: "a sustained-load respond".into(),
                        reason: e.to_string(),
                    })?;
                // Counted only inside the window.
                if !stop.load(Ordering::SeqCst) {
                    responds.fetch_add(1, Ordering::SeqCst);
                }
            }
            Ok::<(), BenchError>(())
        }));
    }
    let mut backlog = Vec::new();
    let window = config.sustained_for;
    while started.elapsed() < window {
        let left = window.saturating_sub(started.elapsed());
        tokio::time::sleep(left.min(Duration::from_secs(1))).await;
        backlog.push(queue.count("queued").await?);
    }
    stop.store(true, Ordering::SeqCst);
    let seconds = started.elapsed().as_secs_f64();
    let resumes = queue.count("done").await?.saturating_sub(done_before);
    let backlog_end = queue.count("queued").await?;
    for task in tasks {
        task.await
            .map_err(|e| BenchError::Invariant(format!("a load client panicked: {e}")))??;
    }
    let drain_started = Instant::now();
    while queue.count("queued").await? > 0 {
        if drain_started.elapsed() > Duration::from_secs(300) {
            return Err(BenchError::Invariant(
                "the resume backlog did not drain in 300 s".into(),
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let drain_ms = millis(drain_started.elapsed());
    queue.close().await;
    let responds = responds.load(Ordering::SeqCst);
    let responds_per_s = responds as f64 / seconds;
    let resumes_per_s = resumes as f64 / seconds;
    Ok(SustainedReport {
        backend: String::new(),
        clients: config.sustained_clients,
        workers,
        seconds,
        responds,
        resumes,
        responds_per_s,
        resumes_per_s,
        ratio: if responds_per_s > 0.0 {
            resumes_per_s / responds_per_s
        } else {
            0.0
        },
        backlog,
        backlog_end,
        drain_ms,
    })
}

/// `Value` of a report, for writing.
pub fn report_json(report: &LiveReport) -> Result<Value, BenchError> {
    serde_json::to_value(report).map_err(|source| BenchError::Json {
        what: "serializing the live report".into(),
        source,
    })
}
