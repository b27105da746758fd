//! The HTTP surface: [`router`] mounts each area's routes and the routes of no area,
//! with the auth layer, the 404/405 fallbacks, panic catching and the request log. The
//! route registry in gatehouse_wire (`routes::OPERATIONS`) lists every route.
//!
//! | routes | where |
//! |---|---|
//! | A5 under `/api/sessions/interactions/...`, the SSE watch stream, `POST /api/invoke`, a session's turns, workflow commits | the interactions folder: [`crate::interactions::routes`] |
//! | B2 at AgentPlat's root paths `/rooms/...` and under `/api/rooms/...` | the execution folder: [`crate::execution::api`], mounted when the execution service is on |
//! | `GET /api/capabilities` (no auth) | [`capabilities`] |
//! | `GET /api/openapi.json` (no auth): the OpenAPI 3.1 document of every route | [`openapi`] |
//! | the runner tier's `POST /run` (outside `/api`) | [`runs`] |
//! | `GET /health` (no auth) | here |
//! | `GET /metrics` (no auth unless a metrics key is set; absent when metrics are off or have a listener of their own): Prometheus's text format | [`crate::metrics`] |
//!
//! [`extract`] holds the request extractors every area's routes share, [`reply`] the
//! JSON answers; neither names anything above it, so the areas use them without
//! depending on this router. Every route but capabilities, the OpenAPI document and
//! health needs an API key; every `/api` route but those two needs `?project_id=<uuid>`,
//! which the key must be bound to ([`crate::auth::authorize_project`]). Unknown routes
//! answer 404 `ROUTE_NOT_FOUND`.
//!
//! Every error answer is JSON in the route's envelope: the handlers' and extractors'
//! own ([`crate::error::ApiError`]), and, re-wrapped by [`router`]'s outer layer with
//! their status kept, any an axum extractor answers in text (a path segment that is not
//! UTF-8 or not percent-encoded right, ...). Identifiers in the path and query are held
//! to [`extract::MAX_ID_CHARS`] before routing. (What hyper answers before the router,
//! to a request it cannot parse, is made JSON in [`crate::http`].)

pub mod capabilities;
pub mod extract;
pub mod openapi;
pub mod reply;
pub mod runs;

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use gatehouse_wire::capabilities::Capability;
use gatehouse_wire::error::{messages, GatehouseCode};
use tower_http::catch_panic::CatchPanicLayer;

use crate::config::ServerConfig;
use crate::error::ApiError;
use crate::metrics::UNMATCHED_ROUTE;
use crate::AppState;
use reply::json_text;

pub use extract::{JsonBody, ProjectId};

/// What a host with `config` serves: the execution capabilities only when the
/// execution service is on (as [`router`] mounts its routes only then);
/// `durable_approvals` only when Agenta's paths speak its durable contract
/// ([`ServerConfig::agenta_contract`]), so a client never guesses which respond it gets.
pub fn capabilities_for(config: &ServerConfig) -> Vec<Capability> {
    let mut capabilities = vec![
        Capability::Interactions,
        Capability::InteractionWatch,
        Capability::Invoke,
        Capability::Runs,
        Capability::InteractionBatch,
        // Every respond (legacy, durable, batch) checks a `digest` when one is sent (C8).
        Capability::AnswerDigest,
    ];
    if config.execution {
        capabilities.extend([Capability::Execution, Capability::ExecutionEventStream]);
    }
    if config.agenta_contract.is_durable() {
        capabilities.push(Capability::DurableApprovals);
    }
    capabilities
}

/// `GET /health`: AgentPlat's liveness answer (no auth), for its clients and probes.
async fn health() -> Response {
    json_text(r#"{"status":"ok"}"#.to_string())
}

async fn route_not_found(request: Request) -> Response {
    let path = request.uri().path();
    if path.contains("/rooms/") {
        // AgentPlat-shaped routes (execution sessions) answer in their own envelope.
        ApiError::new(GatehouseCode::RouteNotFound, messages::ROUTE_NOT_FOUND)
            .agentplat()
            .into_response()
    } else {
        ApiError::new(GatehouseCode::RouteNotFound, "Not Found").into_response()
    }
}

async fn method_not_allowed() -> Response {
    let mut response =
        ApiError::new(GatehouseCode::BadRequest, "Method Not Allowed").into_response();
    *response.status_mut() = axum::http::StatusCode::METHOD_NOT_ALLOWED;
    response
}

/// The machine code of an error status a layer answered without one.
fn code_for_status(status: axum::http::StatusCode) -> GatehouseCode {
    match status.as_u16() {
        401 => GatehouseCode::Unauthorized,
        403 => GatehouseCode::Forbidden,
        404 => GatehouseCode::NotFound,
        409 => GatehouseCode::Conflict,
        413 => GatehouseCode::PayloadTooLarge,
        422 => GatehouseCode::ValidationError,
        429 | 503 => GatehouseCode::Unavailable,
        400..=499 => GatehouseCode::BadRequest,
        _ => GatehouseCode::InternalError,
    }
}

/// Largest text error body re-wrapped as JSON (axum's rejections are one line).
const MAX_TEXT_ERROR: usize = 16 * 1024;

/// Every error answer is JSON: an error answered in text (an axum extractor's rejection)
/// is re-wrapped in the route's envelope with its status and message.
async fn json_errors(request: Request, next: Next) -> Response {
    let path = request.uri().path().to_string();
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let is_json = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    if is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, MAX_TEXT_ERROR)
        .await
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_string())
        .unwrap_or_default();
    let message = if text.is_empty() {
        status.canonical_reason().unwrap_or("Error").to_string()
    } else {
        text
    };
    let mut answer = ApiError::new(code_for_status(status), message)
        .shaped_for_path(&path)
        .into_response();
    *answer.status_mut() = status;
    for name in [axum::http::header::ALLOW, axum::http::header::RETRY_AFTER] {
        if let Some(value) = parts.headers.get(&name) {
            answer.headers_mut().insert(name, value.clone());
        }
    }
    answer
}

/// 422 for an identifier in the path or query over [`extract::MAX_ID_CHARS`], or a NUL
/// in the path or query, before any route (or the auth layer) sees it.
async fn limit_identifiers(request: Request, next: Next) -> Response {
    if let Err(err) = extract::check_uri_identifiers(request.uri()) {
        return err.shaped_for_path(request.uri().path()).into_response();
    }
    next.run(request).await
}

/// One log line per request (in the request's span, so with its request id): method,
/// path (no query string), the matched route template, status, latency; and the
/// request's metrics (by route template, never the raw path). Never headers (the API
/// key) or bodies (parameters).
async fn log_request(
    axum::extract::State(state): axum::extract::State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| UNMATCHED_ROUTE.to_string(), |m| m.as_str().to_string());
    let started = Instant::now();
    let response = next.run(request).await;
    let elapsed = started.elapsed();
    state
        .metrics
        .request(&method, &route, response.status(), elapsed);
    tracing::info!(
        %method,
        %path,
        %route,
        status = response.status().as_u16(),
        ms = elapsed.as_millis() as u64,
        "request"
    );
    response
}

fn panic_response(_panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("a request handler panicked");
    ApiError::new(
        GatehouseCode::InternalError,
        "Internal error: the request handler failed",
    )
    .into_response()
}

/// The whole application router over `state`.
pub fn router(state: AppState) -> Router {
    let auth = middleware::from_fn_with_state(state.clone(), crate::auth::require_key);
    let protected = crate::interactions::routes(&state.config)
        .merge(crate::webhooks::api::routes())
        .route_layer(auth.clone());
    let mut api = protected
        .merge(capabilities::routes())
        .merge(openapi::routes());
    let mut root = Router::new()
        .route("/health", axum::routing::get(health))
        .route(
            gatehouse_wire::health::READY_PATH,
            axum::routing::get(crate::readiness::ready),
        );
    if state.config.execution {
        // B2: present only when the execution service is enabled (own auth, AgentPlat
        // error envelope), at AgentPlat's root paths and under /api; otherwise the
        // fallback answers AgentPlat's route-not-found for both.
        api = api.merge(crate::execution::api::router(&state));
        root = root.merge(crate::execution::api::root_router(&state));
    }
    if state.metrics.is_enabled() && state.config.metrics_bind.is_none() {
        root = root.merge(crate::metrics::routes());
    }
    let cors = crate::cors::layer(&state.config.cors_origins);
    let router = Router::new()
        .nest("/api", api)
        .merge(root)
        .merge(runs::routes().route_layer(auth))
        .fallback(route_not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn(limit_identifiers))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(middleware::from_fn(json_errors));
    // CORS answers a preflight itself and adds its headers to every answer (errors
    // too), inside the request log and the request id.
    let router = match cors {
        Some(cors) => router.layer(cors),
        None => router,
    };
    router
        .layer(middleware::from_fn_with_state(state.clone(), log_request))
        .layer(middleware::from_fn(crate::request_id::assign))
        .with_state(state)
}
