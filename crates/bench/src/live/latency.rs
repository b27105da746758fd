//! Rows 12 and 13 (issue 38): how long from a person's answer to the agent acting on it,
//! and from a gate opening to a webhook receiver hearing of it.
//!
//! Nothing is timed inside the server, and nothing polls it while a resume runs: the
//! bench notes the wall-clock time at which each respond was acknowledged (its client
//! call returned), and reads afterwards the times the server wrote itself, in the same
//! host clock (the store writes RFC 3339 text with microseconds):
//!
//! - the resumed turn started: its `execution.started` event (`session_events`, written
//!   when the resume's turn begins, before the harness's first step);
//! - the approved tool's ledger row (`tool_runs.created_at`, written, fenced by the
//!   resume's lease, just before the tool runs).
//!
//! A webhook's latency is the arrival time at a receiver in this process (a tiny axum
//! server) minus the event's own `timestamp`, which the server writes in the gate's
//! transaction.
//!
//! [`bench_resume_idle`] measures the answer's path on an idle server, one answer at a
//! time; row 9's run ([`bench_sustained`](super::bench_sustained)) measures it under its
//! load, and with a receiver, the webhook's.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

use gatehouse_client::{Answer, Client};
use gatehouse_server::testing::TestServerOptions;
use gatehouse_server::webhooks::WebhookEndpoint;

use super::database::BenchDatabase;
use super::parked_run::{park_a_run, sustained_parameters};
use super::{bind_loopback, client_for, failed, summary, LiveConfig, Runtimes};
use crate::stats::Summary;
use crate::BenchError;

/// A respond's acknowledgement: the gate it answered and when its call returned.
#[derive(Debug, Clone)]
pub struct Acknowledged {
    /// The answered gate.
    pub gate: String,
    /// When the client had the server's answer (wall clock).
    pub at: SystemTime,
}

/// From a respond's acknowledgement to the resume acting on it, as the server's own
/// timestamps say.
#[derive(Debug, Clone, Serialize)]
pub struct ResumeLatency {
    /// Answers measured.
    pub answers: usize,
    /// Answers whose resume left no timestamp (none expected: each gate of the load is
    /// approved and resumed once).
    pub missing: usize,
    /// Acknowledgement -> the resumed turn's `execution.started`, milliseconds (negative
    /// when the resume started before the acknowledgement reached the client).
    pub to_started_ms: Summary,
    /// Acknowledgement -> the approved tool's ledger row, milliseconds.
    pub to_ledger_ms: Summary,
}

/// Gate opened -> its `interaction.opened` webhook received.
#[derive(Debug, Clone, Serialize)]
pub struct WebhookLatency {
    /// Gates of the load whose `interaction.opened` the receiver had by the end.
    pub received: usize,
    /// Gates of the load whose `interaction.opened` never arrived.
    pub missing: usize,
    /// The event's `timestamp` (the gate's transaction) -> arrival, milliseconds.
    pub opened_to_received_ms: Summary,
}

/// Answer -> resume on an idle server, one backend.
#[derive(Debug, Clone, Serialize)]
pub struct ResumeIdleReport {
    /// `sqlite` or `postgres`.
    pub backend: String,
    /// The answer's path.
    pub latency: ResumeLatency,
}

/// The resumed turn's `execution.started` time for the gate `$1` (its job names the
/// resume's turn).
const STARTED_AT: &str = "SELECT e.created_at FROM resume_jobs j \
     JOIN interactions i ON i.id = j.interaction_id \
     JOIN session_events e ON e.project_id = i.project_id AND e.session_id = i.session_id \
     AND e.execution_id = j.resume_turn_id \
     WHERE j.interaction_id = $1 AND e.event_type = 'execution.started'";

/// The ledger row's time of the tool the gate `$1` approved.
const LEDGER_AT: &str = "SELECT r.created_at FROM interactions i \
     JOIN tool_runs r ON r.project_id = i.project_id AND r.session_id = i.session_id \
     AND r.interaction_id = i.id WHERE i.id = $1";

/// Whether the gate `$1`'s resume is done.
const RESUME_DONE: &str =
    "SELECT COUNT(*) FROM resume_jobs WHERE interaction_id = $1 AND state = 'done'";

/// Webhook events not yet delivered (nor given up).
const WEBHOOKS_PENDING: &str = "SELECT COUNT(*) FROM webhook_outbox WHERE state = 'pending'";

/// A store timestamp (RFC 3339) as a wall-clock time.
pub(super) fn store_time(text: &str) -> Result<SystemTime, BenchError> {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(SystemTime::from)
        .map_err(|e| BenchError::Invariant(format!("the store time {text:?}: {e}")))
}

/// `to - from` in milliseconds, negative when `to` is earlier.
pub(super) fn signed_ms(from: SystemTime, to: SystemTime) -> f64 {
    match to.duration_since(from) {
        Ok(later) => later.as_secs_f64() * 1e3,
        Err(earlier) => -earlier.duration().as_secs_f64() * 1e3,
    }
}

/// The first time `sql` gives for `gate`, if any.
async fn time_of(
    db: &BenchDatabase,
    sql: &str,
    gate: &str,
    what: &'static str,
) -> Result<Option<SystemTime>, BenchError> {
    match db.texts(sql, gate, what).await?.first() {
        Some(text) => Ok(Some(store_time(text)?)),
        None => Ok(None),
    }
}

/// Read the server's timestamps of each acknowledged answer's resume (after the fact:
/// every resume is done) and summarize the delays.
pub(super) async fn resume_latency(
    db: &BenchDatabase,
    acks: &[Acknowledged],
) -> Result<ResumeLatency, BenchError> {
    let mut to_started = Vec::with_capacity(acks.len());
    let mut to_ledger = Vec::with_capacity(acks.len());
    let mut missing = 0;
    for ack in acks {
        let started = time_of(db, STARTED_AT, &ack.gate, "reading a resume's start").await?;
        let ledger = time_of(db, LEDGER_AT, &ack.gate, "reading a tool's ledger row").await?;
        match (started, ledger) {
            (Some(started), Some(ledger)) => {
                to_started.push(signed_ms(ack.at, started));
                to_ledger.push(signed_ms(ack.at, ledger));
            }
            _ => missing += 1,
        }
    }
    Ok(ResumeLatency {
        answers: to_started.len(),
        missing,
        to_started_ms: summary(&to_started, "answer -> resume started")?,
        to_ledger_ms: summary(&to_ledger, "answer -> ledger row")?,
    })
}

/// Wait until `gate`'s resume is done (checked every 5 ms, after a first 5 ms: the
/// figures are taken early in the resume, so the checks mostly land after them).
async fn wait_resumed(db: &BenchDatabase, gate: &str) -> Result<(), BenchError> {
    let started = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(5)).await;
        if db
            .count(RESUME_DONE, Some(gate), "reading a resume job")
            .await?
            > 0
        {
            return Ok(());
        }
        if started.elapsed() > Duration::from_secs(60) {
            return Err(BenchError::Invariant(format!(
                "the gate {gate} was not resumed in 60 s"
            )));
        }
    }
}

/// Row 12, idle: one answer at a time on a fresh server (SQLite, or a fresh PostgreSQL
/// database beside `postgres`) with its resume workers on: a run parks at a gate, the
/// client approves it, the bench waits for the resume to finish; `config.warmup` first
/// answers are not counted.
pub fn bench_resume_idle(
    rt: &Runtimes,
    config: &LiveConfig,
    postgres: Option<&str>,
) -> Result<ResumeIdleReport, BenchError> {
    let (server, url) = rt.spawn_server_on(postgres, TestServerOptions::default())?;
    let client = client_for(&server)?;
    let result = rt.driver.block_on(async {
        let db = BenchDatabase::connect(&url).await?;
        let measured = idle_answers(&client, &db, config).await;
        let latency = match measured {
            Ok(acks) => resume_latency(&db, &acks).await,
            Err(err) => Err(err),
        };
        db.close().await;
        latency
    });
    rt.stop_server(server);
    Ok(ResumeIdleReport {
        backend: if postgres.is_some() {
            "postgres"
        } else {
            "sqlite"
        }
        .to_string(),
        latency: result?,
    })
}

async fn idle_answers(
    client: &Client,
    db: &BenchDatabase,
    config: &LiveConfig,
) -> Result<Vec<Acknowledged>, BenchError> {
    let parameters = sustained_parameters()?;
    let mut acks = Vec::with_capacity(config.resume_idle_samples);
    for i in 0..config.warmup + config.resume_idle_samples {
        let gate = park_a_run(client, &parameters, format!("idle-{i}")).await?;
        client
            .interactions()
            .respond(&gate, &Answer::approve())
            .await
            .map_err(failed("an idle respond"))?;
        let at = SystemTime::now();
        wait_resumed(db, &gate).await?;
        if i >= config.warmup {
            acks.push(Acknowledged { gate, at });
        }
    }
    Ok(acks)
}

/// A webhook receiver in this process: it answers 204 at once and keeps each body with
/// its arrival time, read after the load.
pub(super) struct WebhookReceiver {
    /// The endpoint to configure the server with.
    pub(super) endpoint: WebhookEndpoint,
    arrivals: Arc<Mutex<Vec<(SystemTime, axum::body::Bytes)>>>,
    served: tokio::task::JoinHandle<()>,
}

/// A test secret (24 bytes): the receiver does not verify signatures.
const RECEIVER_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

impl WebhookReceiver {
    /// Start one on the driver runtime (the server's receiver is not the server).
    pub(super) fn start(rt: &Runtimes) -> Result<Self, BenchError> {
        let (listener, addr) = rt.driver.block_on(bind_loopback("the webhook receiver"))?;
        let arrivals: Arc<Mutex<Vec<(SystemTime, axum::body::Bytes)>>> = Arc::default();
        let log = arrivals.clone();
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |body: axum::body::Bytes| {
                let at = SystemTime::now();
                let log = log.clone();
                async move {
                    if let Ok(mut arrivals) = log.lock() {
                        arrivals.push((at, body));
                    }
                    axum::http::StatusCode::NO_CONTENT
                }
            }),
        );
        let served = rt.driver.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let endpoint =
            WebhookEndpoint::parse(&format!("bench={RECEIVER_SECRET}@http://{addr}/hook"))
                .map_err(|e| BenchError::Invalid(e.to_string()))?;
        Ok(Self {
            endpoint,
            arrivals,
            served,
        })
    }

    /// Wait (up to 120 s) until the server has no webhook event left to deliver, then
    /// the latency of each gate's `interaction.opened` among `gates`.
    pub(super) async fn opened_latency(
        &self,
        db: &BenchDatabase,
        gates: &[Acknowledged],
    ) -> Result<WebhookLatency, BenchError> {
        let started = Instant::now();
        while db
            .count(WEBHOOKS_PENDING, None, "counting pending webhooks")
            .await?
            > 0
        {
            if started.elapsed() > Duration::from_secs(120) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let arrivals = self
            .arrivals
            .lock()
            .map_err(|_| BenchError::Invariant("the receiver's log is poisoned".into()))?
            .clone();
        let mut opened = std::collections::HashMap::new();
        for (at, body) in &arrivals {
            let event: serde_json::Value =
                serde_json::from_slice(body).map_err(|source| BenchError::Json {
                    what: "reading a webhook event".into(),
                    source,
                })?;
            if event["type"] != "interaction.opened" {
                continue;
            }
            let (Some(gate), Some(written)) = (
                event["data"]["interaction_id"].as_str(),
                event["timestamp"].as_str(),
            ) else {
                return Err(BenchError::Invariant(format!(
                    "a webhook event without its gate or time: {event}"
                )));
            };
            // At least once: a repeat keeps the first arrival.
            opened
                .entry(gate.to_string())
                .or_insert(signed_ms(store_time(written)?, *at));
        }
        let samples: Vec<f64> = gates
            .iter()
            .filter_map(|g| opened.get(&g.gate).copied())
            .collect();
        Ok(WebhookLatency {
            received: samples.len(),
            missing: gates.len() - samples.len(),
            opened_to_received_ms: summary(&samples, "gate opened -> webhook received")?,
        })
    }

    pub(super) fn stop(self) {
        self.served.abort();
    }
}
