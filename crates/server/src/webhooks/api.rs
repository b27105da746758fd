//! `GET /api/webhooks/deliveries` (`listWebhookDeliveries`): the outbox of a project,
//! newest first, for an operator (`gatehouse webhooks list`).

use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use gatehouse_wire::webhooks::WebhookDeliveriesResponse;

use crate::api::extract::ProjectId;
use crate::api::reply::json;
use crate::error::{ApiError, ApiResult};
use crate::AppState;

/// The default and the largest `?limit=`.
pub const DEFAULT_LIMIT: u32 = 100;
/// See [`DEFAULT_LIMIT`].
pub const MAX_LIMIT: u32 = 1000;

/// The webhook routes (relative to `/api`; behind the key).
pub fn routes() -> Router<AppState> {
    Router::new().route("/webhooks/deliveries", get(deliveries))
}

async fn deliveries(
    State(state): State<AppState>,
    ProjectId(project_id): ProjectId,
    uri: axum::http::Uri,
) -> ApiResult<Response> {
    let mut wanted_state = None;
    let mut limit = DEFAULT_LIMIT;
    for (key, value) in crate::uri::form_pairs(uri.query().unwrap_or("")) {
        match key.as_str() {
            "state" => {
                if !matches!(value.as_str(), "pending" | "delivered" | "failed") {
                    return Err(ApiError::validation(
                        &["query", "state"],
                        "Input should be 'pending', 'delivered' or 'failed'",
                        "enum",
                    ));
                }
                wanted_state = Some(value);
            }
            "limit" => {
                limit = value
                    .trim()
                    .parse::<u32>()
                    .map_err(|_| {
                        ApiError::validation(
                            &["query", "limit"],
                            "Input should be a valid integer",
                            "int_parsing",
                        )
                    })?
                    .clamp(1, MAX_LIMIT);
            }
            // The project may be named in the query string (`crate::auth`).
            "project_id" => {}
            // A misspelt filter must not list every row (issue 37).
            _ => {
                return Err(ApiError::validation(
                    &["query", key.as_str()],
                    "Extra inputs are not permitted",
                    "extra_forbidden",
                ))
            }
        }
    }
    let deliveries = state
        .deliveries
        .list_outbox(Some(&project_id), wanted_state.as_deref(), limit)
        .await?;
    Ok(json(&WebhookDeliveriesResponse {
        count: deliveries.len() as u64,
        deliveries,
    }))
}
