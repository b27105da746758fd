//! Metrics in Prometheus's text format at `GET /metrics` ([`METRICS_PATH`]), on unless
//! [`ServerConfig::metrics`](crate::ServerConfig::metrics) is off. Served on the API's
//! listener, or on one of its own ([`ServerConfig::metrics_bind`](crate::ServerConfig::metrics_bind),
//! [`router`]); no key, unless [`ServerConfig::metrics_key`](crate::ServerConfig::metrics_key)
//! sets one (then a scrape without it answers 401).
//!
//! Each server has a recorder of its own ([`Metrics`]), never the process-wide one of the
//! `metrics` crate, so several servers in one process (the tests) count apart. Counters
//! and histograms are recorded where the thing happens. **A scrape never touches the
//! database**: the gauges counted there (gates by status, the resume backlog) are
//! refreshed by one background task, once every
//! [`ServerConfig::metrics_refresh`](crate::ServerConfig::metrics_refresh) ([`spawn_refresh`]),
//! and a scrape renders the last values (the pool's gauges are read from the pool's own
//! counters). So a scrape costs the same at a million gates as at none, and any number of
//! scrapes at once leave every database connection to the API.
//!
//! | metric | type | labels | what |
//! |---|---|---|---|
//! | `gatehouse_http_requests_total` | counter | `method`, `route`, `status` | requests answered; `route` is the matched route template (`/api/sessions/interactions/{id}/respond`), `unmatched` for a 404 of no route |
//! | `gatehouse_http_request_duration_seconds` | histogram | `method`, `route` | time to the response head |
//! | `gatehouse_gates` | gauge | `status` | interactions in the database by status: `pending` (open gates), `responded` (answered, resume queued), `resolved` (resumed or closed), `cancelled` |
//! | `gatehouse_resumes_total` | counter | `outcome` | this instance's resume attempts: `resumed`, `retrying`, `gave_up`, `lease_lost` |
//! | `gatehouse_resume_backlog` | gauge | | answered gates waiting for their resume (every instance) |
//! | `gatehouse_admission_waits_total` | counter | `outcome` | answers that waited for the backlog: `admitted` (it shrank), `timed_out` (taken after the longest wait) |
//! | `gatehouse_admission_wait_seconds` | histogram | | how long those answers waited |
//! | `gatehouse_lease_takeovers_total` | counter | `work` | work claimed after its earlier lease expired: `resume_job` (a retried or taken-over resume), `execution_session` (a run whose hold expired) |
//! | `gatehouse_reconciler_actions_total` | counter | `action` | `paused`, `ended` |
//! | `gatehouse_webhook_deliveries_total` | counter | `outcome` | webhook delivery attempts ([`Metrics::webhook_delivery`]) |
//! | `gatehouse_db_pool_connections` | gauge | `state` | `open`, `idle`, `max` |

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use metrics::{counter, gauge, histogram, with_local_recorder};
use metrics_exporter_prometheus::{
    Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder,
};
use tokio::task::JoinHandle;

use crate::AppState;

/// Where the metrics are served.
pub const METRICS_PATH: &str = gatehouse_wire::routes::METRICS_PATH;

/// The `content-type` of Prometheus's text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Most open connections of a metrics listener of its own (a few Prometheus servers);
/// one more is answered 503 and closed. They count apart from the API's.
pub const MAX_LISTENER_CONNECTIONS: usize = 16;

/// The `route` label of a request no route matched.
pub const UNMATCHED_ROUTE: &str = "unmatched";

/// Upper bounds of the request latency buckets, in seconds.
const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Upper bounds of the admission wait buckets, in seconds (the longest wait is 5 s).
const WAIT_BUCKETS: &[f64] = &[0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// How often recorded histogram samples are folded into their buckets when nobody scrapes
/// (so they never pile up).
const UPKEEP: Duration = Duration::from_secs(5);

/// What a resume attempt came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResumeOutcome {
    /// The parked turn was resumed and its completion committed.
    Resumed,
    /// It failed; the job is retried after its lease.
    Retrying,
    /// It failed for the last time; the row says so.
    GaveUp,
    /// Another worker owns it now.
    LeaseLost,
}

impl ResumeOutcome {
    fn label(self) -> &'static str {
        match self {
            Self::Resumed => "resumed",
            Self::Retrying => "retrying",
            Self::GaveUp => "gave_up",
            Self::LeaseLost => "lease_lost",
        }
    }
}

/// Which kind of leased work was taken over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeasedWork {
    /// A resume job claimed again after its earlier lease expired.
    ResumeJob,
    /// An execution session whose run hold expired (the reconciler took it).
    ExecutionSession,
}

/// A webhook delivery attempt's outcome, for [`Metrics::webhook_delivery`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookOutcome {
    /// The endpoint answered 2xx.
    Delivered,
    /// The endpoint failed or did not answer; the delivery is retried.
    Failed,
    /// The delivery was given up after its last attempt.
    GaveUp,
}

impl WebhookOutcome {
    fn label(self) -> &'static str {
        match self {
            Self::Delivered => "delivered",
            Self::Failed => "failed",
            Self::GaveUp => "gave_up",
        }
    }
}

/// One server's metrics; every recording method does nothing when metrics are off.
/// Cheap to clone.
#[derive(Clone, Default)]
pub struct Metrics(Option<Arc<Recording>>);

struct Recording {
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("enabled", &self.is_enabled())
            .finish()
    }
}

impl Metrics {
    /// Metrics that record (`enabled`) or that do nothing.
    pub fn new(enabled: bool) -> Self {
        if !enabled {
            return Self(None);
        }
        let builder = PrometheusBuilder::new();
        // Histograms as true Prometheus histograms (not summaries), with our buckets.
        let builder = builder
            .set_buckets_for_metric(
                Matcher::Full("gatehouse_http_request_duration_seconds".to_string()),
                LATENCY_BUCKETS,
            )
            .and_then(|b| {
                b.set_buckets_for_metric(
                    Matcher::Full("gatehouse_admission_wait_seconds".to_string()),
                    WAIT_BUCKETS,
                )
            });
        let builder = match builder {
            Ok(builder) => builder,
            // Only an empty bucket list fails, and ours are constants.
            Err(err) => {
                tracing::error!(error = %err, "metrics buckets refused; metrics are off");
                return Self(None);
            }
        };
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        let metrics = Self(Some(Arc::new(Recording { recorder, handle })));
        metrics.describe();
        metrics
    }

    /// Whether metrics are recorded and served.
    pub fn is_enabled(&self) -> bool {
        self.0.is_some()
    }

    fn with(&self, record: impl FnOnce()) {
        if let Some(recording) = &self.0 {
            with_local_recorder(&recording.recorder, record);
        }
    }

    fn describe(&self) {
        self.with(|| {
            metrics::describe_counter!(
                "gatehouse_http_requests_total",
                "HTTP requests answered, by method, matched route template and status"
            );
            metrics::describe_histogram!(
                "gatehouse_http_request_duration_seconds",
                metrics::Unit::Seconds,
                "Time from a request to its response head, by method and matched route template"
            );
            metrics::describe_gauge!(
                "gatehouse_gates",
                "Interactions (gates) in the database by status: pending, responded (answered, resume queued), resolved, cancelled"
            );
            metrics::describe_counter!(
                "gatehouse_resumes_total",
                "Resume attempts of answered gates on this instance, by outcome"
            );
            metrics::describe_gauge!(
                "gatehouse_resume_backlog",
                "Answered gates waiting for their resume, on every instance of the database"
            );
            metrics::describe_counter!(
                "gatehouse_admission_waits_total",
                "Answers that waited for the resume backlog to shrink, by outcome (admitted, timed_out)"
            );
            metrics::describe_histogram!(
                "gatehouse_admission_wait_seconds",
                metrics::Unit::Seconds,
                "How long answers waited for the resume backlog"
            );
            metrics::describe_counter!(
                "gatehouse_lease_takeovers_total",
                "Leased work claimed after its earlier lease expired, by kind of work"
            );
            metrics::describe_counter!(
                "gatehouse_reconciler_actions_total",
                "What the reconciler did to execution sessions, by action (paused, ended)"
            );
            metrics::describe_counter!(
                "gatehouse_webhook_deliveries_total",
                "Webhook delivery attempts, by outcome (delivered, failed, gave_up)"
            );
            metrics::describe_gauge!(
                "gatehouse_db_pool_connections",
                "Database pool connections: open, idle, max"
            );
            // Present from the first scrape, at zero, so a rate over them is defined.
            for outcome in [WebhookOutcome::Delivered, WebhookOutcome::Failed, WebhookOutcome::GaveUp] {
                counter!("gatehouse_webhook_deliveries_total", "outcome" => outcome.label())
                    .absolute(0);
            }
            for work in [LeasedWork::ResumeJob, LeasedWork::ExecutionSession] {
                counter!("gatehouse_lease_takeovers_total", "work" => work_label(work)).absolute(0);
            }
        });
    }

    /// One answered request: `route` is the matched route template (never a raw path).
    pub fn request(&self, method: &Method, route: &str, status: StatusCode, elapsed: Duration) {
        self.with(|| {
            let method = method_label(method);
            counter!(
                "gatehouse_http_requests_total",
                "method" => method,
                "route" => route.to_string(),
                "status" => status_label(status),
            )
            .increment(1);
            histogram!(
                "gatehouse_http_request_duration_seconds",
                "method" => method,
                "route" => route.to_string(),
            )
            .record(elapsed.as_secs_f64());
        });
    }

    /// One resume attempt's outcome.
    pub fn resume(&self, outcome: ResumeOutcome) {
        self.with(|| {
            counter!("gatehouse_resumes_total", "outcome" => outcome.label()).increment(1);
        });
    }

    /// An answer that waited `waited` for the resume backlog; `admitted` when the backlog
    /// shrank in time, false when it was taken after the longest wait.
    pub fn admission_wait(&self, admitted: bool, waited: Duration) {
        self.with(|| {
            let outcome = if admitted { "admitted" } else { "timed_out" };
            counter!("gatehouse_admission_waits_total", "outcome" => outcome).increment(1);
            histogram!("gatehouse_admission_wait_seconds").record(waited.as_secs_f64());
        });
    }

    /// Leased work claimed after its earlier lease expired.
    pub fn lease_takeover(&self, work: LeasedWork) {
        self.with(|| {
            counter!("gatehouse_lease_takeovers_total", "work" => work_label(work)).increment(1);
        });
    }

    /// What one reconciler pass did.
    pub fn reconciler_pass(&self, paused: usize, ended: usize) {
        if paused == 0 && ended == 0 {
            return;
        }
        self.with(|| {
            counter!("gatehouse_reconciler_actions_total", "action" => "paused")
                .increment(paused as u64);
            counter!("gatehouse_reconciler_actions_total", "action" => "ended")
                .increment(ended as u64);
        });
    }

    /// One webhook delivery attempt (`gatehouse_webhook_deliveries_total{outcome}`): the
    /// webhook sender calls this after each POST to an endpoint.
    pub fn webhook_delivery(&self, outcome: WebhookOutcome) {
        self.with(|| {
            counter!("gatehouse_webhook_deliveries_total", "outcome" => outcome.label())
                .increment(1);
        });
    }

    /// Fold recorded histogram samples into their buckets.
    fn upkeep(&self) {
        if let Some(recording) = &self.0 {
            recording.handle.run_upkeep();
        }
    }

    /// Read the gauges counted in the database (gates by status, the resume backlog):
    /// the refresh task's work ([`spawn_refresh`]), never a scrape's. A failed read
    /// leaves the last values.
    async fn refresh_gauges(&self, state: &AppState) {
        if self.0.is_none() {
            return;
        }
        let gates = state.interactions.gates_by_status().await;
        let backlog = state.interactions.queued_jobs().await;
        self.with(|| {
            match gates {
                Ok(counts) => {
                    for status in ["pending", "responded", "resolved", "cancelled"] {
                        let n = counts
                            .iter()
                            .find(|(s, _)| s == status)
                            .map_or(0, |(_, n)| *n);
                        gauge!("gatehouse_gates", "status" => status).set(n as f64);
                    }
                }
                Err(err) => tracing::warn!(error = %err, "metrics: counting gates failed; the gauges keep their last values"),
            }
            match backlog {
                Ok(n) => gauge!("gatehouse_resume_backlog").set(n as f64),
                Err(err) => tracing::warn!(error = %err, "metrics: reading the backlog failed; the gauge keeps its last value"),
            }
        });
    }

    /// The text exposition of everything: the recorded values, the gauges as last
    /// refreshed, and the pool's gauges read from the pool's counters (no connection is
    /// taken).
    fn scrape(&self, state: &AppState) -> Option<String> {
        let recording = self.0.as_ref()?;
        let pool = state.db.pool_use();
        self.with(|| {
            gauge!("gatehouse_db_pool_connections", "state" => "open").set(pool.open as f64);
            gauge!("gatehouse_db_pool_connections", "state" => "idle").set(pool.idle as f64);
            gauge!("gatehouse_db_pool_connections", "state" => "max").set(pool.max as f64);
        });
        Some(recording.handle.render())
    }
}

fn work_label(work: LeasedWork) -> &'static str {
    match work {
        LeasedWork::ResumeJob => "resume_job",
        LeasedWork::ExecutionSession => "execution_session",
    }
}

/// The method as a label: the standard ones by name, anything else `other` (a bounded
/// label set whatever clients send).
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

fn status_label(status: StatusCode) -> &'static str {
    // Static strings for the statuses the server answers; any other by its class.
    const ANSWERED: &[(u16, &str)] = &[
        (200, "200"),
        (201, "201"),
        (202, "202"),
        (204, "204"),
        (400, "400"),
        (401, "401"),
        (403, "403"),
        (404, "404"),
        (405, "405"),
        (409, "409"),
        (413, "413"),
        (414, "414"),
        (422, "422"),
        (429, "429"),
        (431, "431"),
        (500, "500"),
        (503, "503"),
    ];
    let code = status.as_u16();
    if let Some((_, label)) = ANSWERED.iter().find(|(answered, _)| *answered == code) {
        return label;
    }
    match code {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    }
}

/// `GET /metrics`, for the API's router when metrics are on and have no listener of
/// their own.
pub fn routes() -> Router<AppState> {
    Router::new().route(METRICS_PATH, get(serve_metrics))
}

/// The whole router of a metrics listener of its own
/// ([`ServerConfig::metrics_bind`](crate::ServerConfig::metrics_bind)): `GET /metrics`
/// and a JSON 404 for anything else.
pub fn router(state: AppState) -> Router {
    routes()
        .fallback(|| async {
            crate::error::ApiError::new(
                gatehouse_wire::error::GatehouseCode::RouteNotFound,
                "Not Found: this listener serves GET /metrics only",
            )
            .into_response()
        })
        .layer(axum::middleware::from_fn(crate::request_id::assign))
        .with_state(state)
}

async fn serve_metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(key) = &state.config.metrics_key {
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(crate::auth::parse_authorization);
        if !presented.is_some_and(|secret| key.admits(secret)) {
            return crate::error::ApiError::new(
                gatehouse_wire::error::GatehouseCode::Unauthorized,
                "Missing or wrong metrics key: send Authorization: Bearer <key>",
            )
            .into_response();
        }
    }
    match state.metrics.scrape(&state) {
        Some(text) => {
            let mut response = text.into_response();
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
            response
        }
        None => crate::error::ApiError::new(
            gatehouse_wire::error::GatehouseCode::RouteNotFound,
            "Not Found",
        )
        .into_response(),
    }
}

/// Until the server shuts down (when metrics are on): refresh the database's gauges
/// at once and then every [`ServerConfig::metrics_refresh`](crate::ServerConfig::metrics_refresh),
/// and fold histogram samples every few seconds.
pub fn spawn_refresh(state: AppState) -> Option<JoinHandle<()>> {
    if !state.metrics.is_enabled() {
        return None;
    }
    Some(tokio::spawn(async move {
        let mut shutdown = state.shutdown.clone();
        let mut refresh = tokio::time::interval(state.config.metrics_refresh);
        refresh.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut upkeep = tokio::time::interval(UPKEEP);
        loop {
            let refresh_now = tokio::select! {
                _ = refresh.tick() => true,
                _ = upkeep.tick() => false,
                _ = shutdown.wait_for(|stop| *stop) => return,
            };
            if !refresh_now {
                state.metrics.upkeep();
                continue;
            }
            tokio::select! {
                _ = state.metrics.refresh_gauges(&state) => {}
                _ = shutdown.wait_for(|stop| *stop) => return,
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_records_nothing_and_on_renders_prometheus_text() {
        let off = Metrics::new(false);
        off.request(
            &Method::GET,
            "/health",
            StatusCode::OK,
            Duration::from_millis(1),
        );
        assert!(!off.is_enabled());

        let on = Metrics::new(true);
        on.request(
            &Method::POST,
            "/api/sessions/interactions/{id}/respond",
            StatusCode::OK,
            Duration::from_millis(3),
        );
        on.webhook_delivery(WebhookOutcome::Delivered);
        let text = on.0.as_ref().unwrap().handle.render();
        assert!(
            text.contains("# TYPE gatehouse_http_request_duration_seconds histogram"),
            "{text}"
        );
        assert!(text.contains(
            r#"gatehouse_http_requests_total{method="POST",route="/api/sessions/interactions/{id}/respond",status="200"} 1"#
        ), "{text}");
        assert!(
            text.contains(r#"gatehouse_webhook_deliveries_total{outcome="delivered"} 1"#),
            "{text}"
        );
    }

    #[test]
    fn labels_are_bounded() {
        assert_eq!(method_label(&Method::from_bytes(b"BREW").unwrap()), "other");
        assert_eq!(status_label(StatusCode::from_u16(418).unwrap()), "4xx");
        assert_eq!(status_label(StatusCode::from_u16(599).unwrap()), "5xx");
    }
}
