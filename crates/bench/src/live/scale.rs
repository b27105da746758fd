//! Row 11: the same server as its history grows. Gates are generated straight into the
//! server's database (a real gate, opened through the API, copied with new ids, sessions,
//! turns and statuses, as history would leave them), then the API is measured at each
//! size: respond, the pending list, each filter the query offers, a metrics scrape, the
//! pending-deliveries list, and the process's resident memory.
//!
//! History is answered gates (resolved, every tenth cancelled) over sessions of 20 gates
//! and turns of 4, half of them delivered by webhook, each with one delivered outbox row
//! (the outbox inside its retention window). Idempotency keys are not generated: they
//! live only for their window and are pruned after it.

use std::time::{Duration, Instant};

use serde::Serialize;

use gatehouse_client::Client;
use gatehouse_server::testing::TestServerOptions;
use gatehouse_wire::interaction::{
    InteractionKind, InteractionQuery, InteractionQueryFlags, InteractionStatus, Windowing,
};

use super::database::BenchDatabase;
use super::{client_for, client_respond, create_gates, failed, micros, summary, Runtimes};
use crate::stats::Summary;
use crate::BenchError;

/// Gates generated per statement (one short transaction each).
const GENERATE_BATCH: u64 = 50_000;

/// What one history size measured.
#[derive(Debug, Clone, Serialize)]
pub struct ScalePoint {
    /// Gates in the database's history when this was measured.
    pub gates: u64,
    /// How long generating the gates added at this size took, seconds.
    pub generate_s: f64,
    /// Each measured call, microseconds: `(name, summary)`.
    pub calls: Vec<(String, Summary)>,
    /// Rows in the interactions table once generated (history, the template gate and the
    /// live gates of earlier sizes), counted, not assumed.
    pub rows: u64,
    /// The bench process's resident memory (the server runs in it), bytes.
    pub rss_bytes: u64,
}

/// Row 11 on one backend.
#[derive(Debug, Clone, Serialize)]
pub struct ScaleReport {
    /// `sqlite` or `postgres`.
    pub backend: String,
    /// Calls measured per figure.
    pub samples: usize,
    /// One point per history size, the empty database first.
    pub points: Vec<ScalePoint>,
}

/// The rows numbered `from..to` (1-based) of history, copied from gate `template`:
/// gates, then their delivered outbox rows.
async fn generate_history(
    db: &BenchDatabase,
    template: &str,
    from: u64,
    to: u64,
) -> Result<(), BenchError> {
    let postgres = db.is_postgres();
    // The numbers `from..to`, and how each backend spells hex and a time.
    let (series, hex12, time) = if postgres {
        (
            format!("generate_series({from}, {}) AS n(i)", to - 1),
            "lpad(to_hex(n.i), 12, '0')",
            "to_char(to_timestamp(1767225600 + n.i) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS') || '.000000Z'",
        )
    } else {
        (
            format!("(WITH RECURSIVE s(i) AS (SELECT {from} UNION ALL SELECT i + 1 FROM s WHERE i < {}) SELECT i FROM s) AS n", to - 1),
            "printf('%012x', n.i)",
            "strftime('%Y-%m-%dT%H:%M:%S', 1767225600 + n.i, 'unixepoch') || '.000000Z'",
        )
    };
    let id = format!("'00000000-0000-7000-8000-' || {hex12}");
    let session = "'scale-s-' || (n.i / 20)";
    let delivered_webhook = if postgres {
        "CASE WHEN n.i % 2 = 0 THEN 1 ELSE 0 END"
    } else {
        "(n.i % 2 = 0)"
    };
    db.execute(
        &format!(
            "INSERT INTO interactions (id, project_id, session_id, turn_id, token, kind, status, \
         data, resolution, flags, delivered_in_band, delivered_webhook, created_at, updated_at) \
         SELECT {id}, t.project_id, {session}, 'scale-t-' || (n.i / 4), 'scale-' || n.i, \
         CASE WHEN n.i % 3 = 0 THEN 'user_input' ELSE t.kind END, \
         CASE WHEN n.i % 10 = 0 THEN 'cancelled' ELSE 'resolved' END, \
         t.data, '{{\"approved\":true}}', \
         CASE WHEN n.i % 2 = 0 THEN '{{\"delivered_in_band\":true,\"delivered_webhook\":true}}' \
              ELSE '{{\"delivered_in_band\":true,\"delivered_webhook\":false}}' END, \
         1, {delivered_webhook}, {time}, {time} \
         FROM interactions t, {series} WHERE t.id = '{template}'"
        ),
        "generating history",
    )
    .await?;
    db.execute(
        &format!(
            "INSERT INTO webhook_outbox (id, event_id, endpoint, project_id, event_type, \
         subject_id, interaction_id, payload, state, attempts, next_attempt_ms, created_at, \
         delivered_at) \
         SELECT {id}, {id}, 'scale', t.project_id, 'interaction.resolved', {id}, {id}, '{{}}', \
         'delivered', 1, 0, {time}, {time} \
         FROM interactions t, {series} WHERE t.id = '{template}'"
        ),
        "generating history",
    )
    .await?;
    if postgres {
        // What autovacuum would have done for a table that grew this much.
        db.execute("ANALYZE", "generating history").await?;
    } else {
        // A server writing its history a gate at a time checkpoints as it goes; a
        // bulk insert leaves a WAL of every page, whose index every reader maps.
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)", "generating history")
            .await?;
    }
    Ok(())
}

/// Row 11: one server, its history grown through `sizes` (ascending, the first 0), each
/// figure measured `samples` times at each size.
pub fn bench_scale(
    rt: &Runtimes,
    sizes: &[u64],
    samples: usize,
    postgres: Option<&str>,
) -> Result<ScaleReport, BenchError> {
    let (server, url) = rt.spawn_server_on(
        postgres,
        TestServerOptions {
            run_dispatcher: false,
            metrics: true,
            ..TestServerOptions::default()
        },
    )?;
    let metrics_url = server.url("/metrics");
    let deliveries_url = server.url("/api/webhooks/deliveries?state=pending");
    let authorization = server.authorization();
    let client = client_for(&server)?;
    let result = rt.driver.block_on(async {
        let template = create_gates(&client, "scale-template", 1)
            .await?
            .pop()
            .ok_or_else(|| BenchError::Invariant("no template gate".into()))?;
        let http = super::bare_http()?;
        let mut points = Vec::new();
        let mut generated = 0u64;
        for &size in sizes {
            let started = Instant::now();
            // Connected for this size only: what the generator used is freed before the
            // server's memory is read.
            let history = BenchDatabase::connect(&url).await?;
            while generated < size {
                let next = (generated + GENERATE_BATCH).min(size);
                generate_history(&history, &template, generated + 1, next + 1).await?;
                generated = next;
            }
            let generate_s = started.elapsed().as_secs_f64();
            let rows = history
                .count("SELECT COUNT(*) FROM interactions", None, "counting gates")
                .await?;
            history.close().await;
            let calls = measure(
                &client,
                &http,
                &metrics_url,
                &deliveries_url,
                &authorization,
                size,
                samples,
            )
            .await?;
            points.push(ScalePoint {
                gates: size,
                generate_s,
                rows,
                calls,
                rss_bytes: {
                    return_freed_memory();
                    super::proc_kib("self", "status", &["VmRSS:"]).map_or(0, |kib| kib * 1024)
                },
            });
        }
        Ok(ScaleReport {
            backend: if postgres.is_some() {
                "postgres"
            } else {
                "sqlite"
            }
            .to_string(),
            samples,
            points,
        })
    });
    rt.stop_server(server);
    result
}

/// Every figure of one size, `samples` calls each, one after the other.
async fn measure(
    client: &Client,
    http: &reqwest::Client,
    metrics_url: &str,
    deliveries_url: &str,
    authorization: &str,
    size: u64,
    samples: usize,
) -> Result<Vec<(String, Summary)>, BenchError> {
    // Live gates on top of the history: what the pending list shows, what respond
    // answers, and what each filter matches, so every query returns a full page at
    // every size (history rows match the kind and flag filters too).
    let session = format!("scale-live-{size}");
    let gates = create_gates(client, &session, samples.max(20)).await?;
    let page = Windowing {
        limit: Some(20),
        ..Windowing::default()
    };
    let queries: Vec<(&str, InteractionQuery)> = vec![
        (
            "list pending (first page)",
            InteractionQuery {
                actionable_only: true,
                ..Default::default()
            },
        ),
        ("first page, no filter", InteractionQuery::default()),
        (
            "filter session_id",
            InteractionQuery {
                session_id: Some(session.clone()),
                ..Default::default()
            },
        ),
        (
            "filter turn_id",
            InteractionQuery {
                turn_id: Some("t-0".into()),
                ..Default::default()
            },
        ),
        (
            "filter kind",
            InteractionQuery {
                kind: Some(InteractionKind::UserApproval),
                ..Default::default()
            },
        ),
        (
            "filter status",
            InteractionQuery {
                status: Some(InteractionStatus::Pending),
                ..Default::default()
            },
        ),
        (
            "filter flags.delivered_webhook",
            InteractionQuery {
                flags: Some(InteractionQueryFlags {
                    delivered_webhook: Some(false),
                    ..Default::default()
                }),
                ..Default::default()
            },
        ),
    ];
    let mut calls = Vec::new();
    for (name, query) in &queries {
        let mut us = Vec::with_capacity(samples);
        for _ in 0..samples {
            let started = Instant::now();
            client
                .interactions()
                .query(query, Some(&page))
                .await
                .map_err(failed("querying gates"))?;
            us.push(micros(started.elapsed()));
        }
        calls.push((name.to_string(), summary(&us, name)?));
    }
    for (name, url, key) in [
        ("metrics scrape", metrics_url, None),
        ("pending deliveries", deliveries_url, Some(authorization)),
    ] {
        let mut us = Vec::with_capacity(samples);
        for _ in 0..samples {
            let mut request = http.get(url).timeout(Duration::from_secs(30));
            if let Some(key) = key {
                request = request.header("Authorization", key);
            }
            let started = Instant::now();
            let request_failed = |e: reqwest::Error| BenchError::Request {
                what: name.to_string(),
                reason: e.to_string(),
            };
            let response = request.send().await.map_err(request_failed)?;
            let status = response.status();
            response.bytes().await.map_err(request_failed)?;
            if !status.is_success() {
                return Err(BenchError::Invariant(format!("{name} answered {status}")));
            }
            us.push(micros(started.elapsed()));
        }
        calls.push((name.to_string(), summary(&us, name)?));
    }
    let mut us = Vec::with_capacity(samples);
    for gate in gates.iter().take(samples) {
        us.push(micros(client_respond(client, gate).await?));
    }
    calls.push(("respond".to_string(), summary(&us, "respond")?));
    Ok(calls)
}

/// Hand memory the allocator holds free back to the system, so that the resident size
/// read next is what is in use (the generator's freed buffers not counted), at every
/// size alike.
fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim takes no pointer and only releases free heap memory.
        #[allow(unsafe_code)]
        unsafe {
            libc::malloc_trim(0);
        }
    }
}
