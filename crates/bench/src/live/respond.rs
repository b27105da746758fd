//! Row 3: one respond through `gatehouse-client` vs a bare reqwest POST of the same
//! body.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::{
    bare_http, client_respond, create_gates, failed, micros, respond_post, summary, LiveConfig,
    Runtimes, Target,
};
use crate::stats::Summary;
use crate::BenchError;

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

/// One respond as a bare POST (same body, same `Authorization`, an `Idempotency-Key` as
/// the client sends, so the server does the same work); its round-trip time.
async fn bare_respond(
    http: &reqwest::Client,
    server: &Target,
    id: &str,
) -> Result<Duration, BenchError> {
    let started = Instant::now();
    let url = server.url(&format!("/api/sessions/interactions/{id}/respond"));
    let response = respond_post(http, &url, &server.authorization())
        .header("Accept", "application/json")
        .send()
        .await
        .map_err(failed("bare respond"))?;
    let status = response.status();
    let body = response
        .bytes()
        .await
        .map_err(failed("bare respond body"))?;
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
    let result = rt.driver.block_on(respond_series(
        &Target::of(&server),
        "bench-respond",
        config,
    ));
    rt.stop_server(server);
    result
}

/// Row 3's measurement against `server`: client and bare responds alternated (ABBA
/// order) on fresh gates opened in `session` first (row 14 runs it beside its watchers).
pub(super) async fn respond_series(
    server: &Target,
    session: &str,
    config: &LiveConfig,
) -> Result<RespondReport, BenchError> {
    let client = server.client()?;
    let http = bare_http()?;
    let rounds = config.respond_iterations + config.warmup;
    let gates = create_gates(&client, session, 2 * rounds).await?;
    let mut client_us = Vec::with_capacity(rounds);
    let mut bare_us = Vec::with_capacity(rounds);
    for (i, pair) in gates.chunks(2).enumerate() {
        let (c, b) = if i % 2 == 0 {
            let c = client_respond(&client, &pair[0]).await?;
            let b = bare_respond(&http, server, &pair[1]).await?;
            (c, b)
        } else {
            let b = bare_respond(&http, server, &pair[0]).await?;
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
}
