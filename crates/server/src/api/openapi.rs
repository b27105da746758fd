//! `GET /api/openapi.json`: the OpenAPI 3.1 document of this server, as
//! [`gatehouse_wire::openapi::document`] generates it from the route registry and the
//! wire types (the same document `schema/openapi.json` commits). No auth needed.
//!
//! A new route is one entry in `gatehouse_wire::routes::OPERATIONS`; the server test
//! `tests/it/openapi.rs` fails when the router and the registry disagree.

use std::sync::OnceLock;

use axum::response::Response;
use axum::routing::get;
use axum::Router;

use super::reply::json_text;
use crate::AppState;

/// The document route (relative to `/api`).
pub fn routes() -> Router<AppState> {
    Router::new().route("/openapi.json", get(openapi))
}

async fn openapi() -> Response {
    // Generated once per process: the registry and the types cannot change at run time.
    static DOCUMENT: OnceLock<String> = OnceLock::new();
    let text = DOCUMENT.get_or_init(|| {
        serde_json::to_string(&gatehouse_wire::openapi::document()).unwrap_or_default()
    });
    json_text(text.clone())
}
