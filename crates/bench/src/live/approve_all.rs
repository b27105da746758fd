//! Row 4: `approve_all` vs one respond after the other (and the bounded fan-out it does
//! against a host without batches), over bare loopback or behind a delay proxy that adds
//! a network round trip.

use std::time::{Duration, Instant};

use serde::Serialize;

use gatehouse_client::{Answer, Client};
use gatehouse_server::testing::TestServer;

use super::{
    bind_loopback, client_for, client_respond, create_gates, failed, millis, process_cpu_seconds,
    summary, LiveConfig, Runtimes,
};
use crate::stats::Summary;
use crate::BenchError;

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
    let (listener, addr) = bind_loopback("the delay proxy").await?;
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
            .map_err(failed("building the answering client"))
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
