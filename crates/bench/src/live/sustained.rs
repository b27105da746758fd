//! Row 9: sustained responds against the resume workers (dispatcher on), on SQLite and,
//! when there is one, PostgreSQL; under the same load, row 12's answer -> resume
//! latency and, run again with a webhook receiver, row 13's gate -> webhook latency
//! ([`latency`](super::latency)).

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

use gatehouse_client::{Answer, Client};
use gatehouse_server::testing::TestServerOptions;

use super::database::BenchDatabase;
use super::latency::{
    resume_latency, Acknowledged, ResumeLatency, WebhookLatency, WebhookReceiver,
};
use super::parked_run::{park_a_run, sustained_parameters};
use super::{client_for, failed, millis, LiveConfig, Runtimes};
use crate::BenchError;

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
    /// Row 12 under this load: each answer of the window -> its resume.
    pub resume_latency: ResumeLatency,
    /// Whether the server had a webhook endpoint (a receiver in this process).
    pub webhooks: bool,
    /// Row 13 under this load (with a webhook endpoint): each answered gate of the
    /// window opened -> its `interaction.opened` received.
    pub webhook_latency: Option<WebhookLatency>,
}

/// Resume jobs in one state.
const RESUME_JOBS_IN: &str = "SELECT COUNT(*) FROM resume_jobs WHERE state = $1";

/// Row 9: `config.sustained_clients` clients for `config.sustained_for`, each looping
/// "a run parks at a gate, answer it", against a server with its resume workers on;
/// responds/s against resumes/s, the backlog of answered gates waiting to resume, and
/// each answer's latency to its resume. With `webhooks`, the server also has a webhook
/// endpoint (a receiver in this process), whose `interaction.opened` latency is
/// measured.
pub fn bench_sustained(
    rt: &Runtimes,
    config: &LiveConfig,
    postgres: Option<&str>,
    webhooks: bool,
) -> Result<SustainedReport, BenchError> {
    let receiver = if webhooks {
        Some(WebhookReceiver::start(rt)?)
    } else {
        None
    };
    // The default options: the resume dispatcher on, its workers are what is measured.
    let options = TestServerOptions {
        webhook_endpoints: receiver.iter().map(|r| r.endpoint.clone()).collect(),
        ..TestServerOptions::default()
    };
    let (server, url) = rt.spawn_server_on(postgres, options)?;
    let workers = server.server.state().config.resume_workers;
    let client = client_for(&server)?;
    let result = rt.driver.block_on(sustained_on(
        &client,
        &url,
        config,
        workers,
        receiver.as_ref(),
    ));
    rt.stop_server(server);
    if let Some(receiver) = receiver {
        receiver.stop();
    }
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
    receiver: Option<&WebhookReceiver>,
) -> Result<SustainedReport, BenchError> {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let queue = BenchDatabase::connect(url).await?;
    let parameters = sustained_parameters()?;
    let stop = Arc::new(AtomicBool::new(false));
    let responds = Arc::new(AtomicU64::new(0));
    let done_before = queue
        .count(RESUME_JOBS_IN, Some("done"), "counting resume jobs")
        .await?;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..config.sustained_clients {
        let client = client.clone();
        let stop = stop.clone();
        let responds = responds.clone();
        let parameters = parameters.clone();
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            let mut acks = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                n += 1;
                let gate = park_a_run(&client, &parameters, format!("sustained-{c}-{n}")).await?;
                client
                    .interactions()
                    .respond(&gate, &Answer::approve())
                    .await
                    .map_err(failed("a sustained-load respond"))?;
                let at = SystemTime::now();
                // Counted only inside the window.
                if !stop.load(Ordering::SeqCst) {
                    responds.fetch_add(1, Ordering::SeqCst);
                    acks.push(Acknowledged { gate, at });
                }
            }
            Ok::<Vec<Acknowledged>, BenchError>(acks)
        }));
    }
    let mut backlog = Vec::new();
    let window = config.sustained_for;
    while started.elapsed() < window {
        let left = window.saturating_sub(started.elapsed());
        tokio::time::sleep(left.min(Duration::from_secs(1))).await;
        backlog.push(
            queue
                .count(RESUME_JOBS_IN, Some("queued"), "counting resume jobs")
                .await?,
        );
    }
    stop.store(true, Ordering::SeqCst);
    let seconds = started.elapsed().as_secs_f64();
    let resumes = queue
        .count(RESUME_JOBS_IN, Some("done"), "counting resume jobs")
        .await?
        .saturating_sub(done_before);
    let backlog_end = queue
        .count(RESUME_JOBS_IN, Some("queued"), "counting resume jobs")
        .await?;
    let mut acks = Vec::new();
    for task in tasks {
        acks.extend(
            task.await
                .map_err(|e| BenchError::Invariant(format!("a load client panicked: {e}")))??,
        );
    }
    let drain_started = Instant::now();
    while queue
        .count(RESUME_JOBS_IN, Some("queued"), "counting resume jobs")
        .await?
        > 0
    {
        if drain_started.elapsed() > Duration::from_secs(300) {
            return Err(BenchError::Invariant(
                "the resume backlog did not drain in 300 s".into(),
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let drain_ms = millis(drain_started.elapsed());
    // Every resume is done: the server's timestamps are read now, not during the load.
    let resume_latency = resume_latency(&queue, &acks).await?;
    let webhook_latency = match receiver {
        Some(receiver) => Some(receiver.opened_latency(&queue, &acks).await?),
        None => None,
    };
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
        resume_latency,
        webhooks: receiver.is_some(),
        webhook_latency,
    })
}
