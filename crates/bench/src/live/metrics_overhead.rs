//! Row 10: one respond round trip through `gatehouse-client` to a server recording
//! metrics (the default) vs one with metrics off, side by side.

use serde::Serialize;

use gatehouse_server::testing::TestServerOptions;

use super::{client_for, client_respond, create_gates, micros, summary, LiveConfig, Runtimes};
use crate::stats::Summary;
use crate::BenchError;

/// Row 10: what recording metrics adds to a respond.
#[derive(Debug, Clone, Serialize)]
pub struct MetricsOverheadReport {
    /// Measured responds per side.
    pub iterations: usize,
    /// Round trip to the server with metrics on, microseconds.
    pub metrics_on_us: Summary,
    /// Round trip to the server with metrics off, microseconds.
    pub metrics_off_us: Summary,
    /// `on median / off median - 1`, in percent.
    pub overhead_pct: f64,
}

/// Row 10: two servers in the same runtime, one with metrics and one without; responds
/// alternate between them (ABBA order) on fresh gates.
pub fn bench_metrics_overhead(
    rt: &Runtimes,
    config: &LiveConfig,
) -> Result<MetricsOverheadReport, BenchError> {
    let server_with = |metrics: bool| {
        rt.spawn_server_with(TestServerOptions {
            run_dispatcher: false,
            metrics,
            ..TestServerOptions::default()
        })
    };
    let on = server_with(true)?;
    let off = server_with(false)?;
    let rounds = config.respond_iterations + config.warmup;
    let result = rt.driver.block_on(async {
        let on_client = client_for(&on)?;
        let off_client = client_for(&off)?;
        let on_gates = create_gates(&on_client, "bench-metrics-on", rounds).await?;
        let off_gates = create_gates(&off_client, "bench-metrics-off", rounds).await?;
        let mut on_us = Vec::with_capacity(rounds);
        let mut off_us = Vec::with_capacity(rounds);
        for (i, (on_gate, off_gate)) in on_gates.iter().zip(&off_gates).enumerate() {
            let (with, without) = if i % 2 == 0 {
                let with = client_respond(&on_client, on_gate).await?;
                let without = client_respond(&off_client, off_gate).await?;
                (with, without)
            } else {
                let without = client_respond(&off_client, off_gate).await?;
                let with = client_respond(&on_client, on_gate).await?;
                (with, without)
            };
            if i >= config.warmup {
                on_us.push(micros(with));
                off_us.push(micros(without));
            }
        }
        let metrics_on_us = summary(&on_us, "respond, metrics on")?;
        let metrics_off_us = summary(&off_us, "respond, metrics off")?;
        Ok(MetricsOverheadReport {
            iterations: config.respond_iterations,
            metrics_on_us,
            metrics_off_us,
            overhead_pct: (metrics_on_us.median / metrics_off_us.median - 1.0) * 100.0,
        })
    });
    rt.stop_server(on);
    rt.stop_server(off);
    result
}
