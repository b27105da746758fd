//! Row 5: many concurrent responds over a few gates (or one): exactly one winner per
//! gate, every other request told "already answered".

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use gatehouse_client::{Answer, Client, Error as ClientError};

use super::{client_for, create_gates, millis, summary, LiveConfig, Runtimes};
use crate::stats::Summary;
use crate::BenchError;

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
