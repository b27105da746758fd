//! The HTTP surface: one router per area, assembled by [`router`] with the auth layer,
//! the 404/405 fallbacks, panic catching and the request log. The crate docs list
//! every route with its handler.
//!
//! | area | routes |
//! |---|---|
//! | [`interactions`] | A5 under `/api/sessions/interactions/...` and the SSE watch stream |
//! | [`invoke`] | `POST /api/invoke`, `GET /api/sessions/{session_id}/turns`, `POST /api/workflows/revisions/commit` |
//! | [`capabilities`] | `GET /api/capabilities` (no auth) |
//! | [`openapi`] | `GET /api/openapi.json` (no auth): the OpenAPI 3.1 document of every route |
//! | [`runs`] | the runner tier's `POST /run` (outside `/api`) |
//! | [`crate::execution::api`] | B2 under `/api/rooms/...`: not here but in the execution folder; [`router`] mounts it when the execution service is on |
//!
//! [`extract`] holds the request extractors every area shares (the execution routes
//! too). Every route but capabilities needs an API key; every `/api` route but
//! capabilities needs `?project_id=<uuid>`. Unknown routes answer 404 `ROUTE_NOT_FOUND`.

pub mod capabilities;
pub mod extract;
pub mod interactions;
pub mod invoke;
pub mod openapi;
pub mod runs;

use std::time::Instant;

use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use gatehouse_wire::capabilities::Capability;
use gatehouse_wire::error::{messages, GatehouseCode};
use tower_http::catch_panic::CatchPanicLayer;

use crate::config::ServerConfig;
use crate::error::ApiError;
use crate::AppState;

pub use extract::{JsonBody, ProjectId};

/// What a host with `config` serves: the execution capabilities only when the
/// execution service is on (as [`router`] mounts its routes only then).
pub fn capabilities_for(config: &ServerConfig) -> Vec<Capability> {
    let mut capabilities = vec![
        Capability::Interactions,
        Capability::InteractionWatch,
        Capability::Invoke,
        Capability::Runs,
    ];
    if config.execution {
        capabilities.extend([Capability::Execution, Capability::ExecutionEventStream]);
    }
    capabilities
}

/// A 200 response with a JSON text body.
pub(crate) fn json_text(body: String) -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

/// A 200 response with `value` as JSON.
pub(crate) fn json<T: serde::Serialize>(value: &T) -> Response {
    match serde_json::to_string(value) {
        Ok(body) => json_text(body),
        Err(err) => ApiError::internal("encoding the response", &err).into_response(),
    }
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

/// One log line per request: method, path (no query string), status, latency. Never
/// headers (the API key) or bodies (parameters).
async fn log_request(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let started = Instant::now();
    let response = next.run(request).await;
    tracing::info!(
        %method,
        %path,
        status = response.status().as_u16(),
        ms = started.elapsed().as_millis() as u64,
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
    let protected = interactions::routes()
        .merge(invoke::routes())
        .route_layer(auth.clone());
    let mut api = protected
        .merge(capabilities::routes())
        .merge(openapi::routes());
    if state.config.execution {
        // B2: present only when the execution service is enabled (own auth, AgentPlat
        // error envelope); otherwise the fallback answers AgentPlat's route-not-found
        // for /api/rooms/...
        api = api.merge(crate::execution::api::router(&state));
    }
    Router::new()
        .nest("/api", api)
        .merge(runs::routes().route_layer(auth))
        .fallback(route_not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(middleware::from_fn(log_request))
        .with_state(state)
}
