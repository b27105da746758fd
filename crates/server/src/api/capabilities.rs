//! `GET /api/capabilities` (CONTRACT.md C5): what this host serves. No auth needed.

use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use gatehouse_wire::capabilities::CapabilitiesResponse;
use gatehouse_wire::JsonObject;

use super::reply::json;
use crate::AppState;

/// The capabilities route (relative to `/api`).
pub fn routes() -> Router<AppState> {
    Router::new().route("/capabilities", get(capabilities))
}

async fn capabilities(State(state): State<AppState>) -> Response {
    json(&CapabilitiesResponse {
        service: "gatehouse".to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        capabilities: state.capabilities.clone(),
        other_capabilities: Vec::new(),
        extra: JsonObject::new(),
    })
}
