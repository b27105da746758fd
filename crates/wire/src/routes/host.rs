//! The host's own routes, outside `/api`: liveness, readiness and metrics.

use super::operation::{Body, Failure, Family, Method, Operation, Reply};
use crate::error::GatehouseCode;

/// `GET /health` (`health`).
pub const HEALTH: Operation = Operation {
    id: "health",
    method: Method::Get,
    path: "/health",
    family: Family::Gatehouse,
    summary: "Liveness",
    description: "Answers `{\"status\":\"ok\"}` as AgentPlat's own host does, for its clients and probes. No key needed.",
    auth: false,
    project: false,
    params: &[],
    request: None,
    replies: &[Reply {
        status: 200,
        description: "`{\"status\": \"ok\"}`",
        bodies: &[],
    }],
    failures: &[],
};

/// `GET /health/ready` (`readiness`).
pub const READINESS: Operation = Operation {
    id: "readiness",
    method: Method::Get,
    path: crate::health::READY_PATH,
    family: Family::Gatehouse,
    summary: "Readiness",
    description: "Whether this instance can do its work now (`/health` stays a pure liveness answer): the database takes a real write within 2 s and no write was refused for an unavailable database in the last 5 s, every embedded migration is applied, the resume workers, the reconciler and the webhook workers (when endpoints are configured) are alive. 200 when every check passes, else 503; the body names each check either way. No key needed.",
    auth: false,
    project: false,
    params: &[],
    request: None,
    replies: &[Reply {
        status: 200,
        description: "every check passed (`status: ok`)",
        bodies: &[Body::Json("ReadinessResponse")],
    }],
    failures: &[Failure {
        code: GatehouseCode::Unavailable,
        when: "a check failed, with `Retry-After`: the body is also a `ReadinessResponse` (`status: unavailable`, every check named) beside `detail` (the failing checks) and `code`",
    }],
};

/// The path of the metrics.
pub const METRICS_PATH: &str = "/metrics";

/// `GET /metrics` (`metrics`).
pub const METRICS: Operation = Operation {
    id: "metrics",
    method: Method::Get,
    path: METRICS_PATH,
    family: Family::Gatehouse,
    summary: "Metrics (Prometheus text format)",
    description: "This instance's metrics in Prometheus's text exposition format, for a Prometheus scrape: requests by method, matched route template and status (`gatehouse_http_requests_total`), their latency (`gatehouse_http_request_duration_seconds`), gates by status (`gatehouse_gates`), resume attempts (`gatehouse_resumes_total`), the resume backlog (`gatehouse_resume_backlog`), admission waits (`gatehouse_admission_waits_total`, `gatehouse_admission_wait_seconds`), lease takeovers (`gatehouse_lease_takeovers_total`), reconciler actions (`gatehouse_reconciler_actions_total`), webhook deliveries (`gatehouse_webhook_deliveries_total`), database pool use (`gatehouse_db_pool_connections`). The gauges counted in the database (gates, the resume backlog) are as of their last refresh (`gatehouse serve --metrics-refresh`, default 10 s): a scrape never touches the database. No key needed, unless the server sets one (`--metrics-key`): then a scrape without `Authorization: Bearer <key>` answers 401 `UNAUTHORIZED`. Served unless the server runs with metrics off (`--metrics false`) or on a listener of their own (`--metrics-bind`), when it answers 404 `ROUTE_NOT_FOUND`.",
    auth: false,
    project: false,
    params: &[],
    request: None,
    replies: &[Reply {
        status: 200,
        description: "the metrics, `text/plain; version=0.0.4`",
        bodies: &[Body::PrometheusText],
    }],
    failures: &[],
};
