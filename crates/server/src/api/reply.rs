//! The 200 answers the routes build: a JSON body from a value, or from JSON text kept
//! verbatim (an interaction row's stored answer, the OpenAPI document). Errors answer
//! through [`ApiError`] instead.

use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// A 200 response with a JSON text body.
pub fn json_text(body: String) -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

/// A 200 response with `value` as JSON.
pub fn json<T: serde::Serialize>(value: &T) -> Response {
    match serde_json::to_string(value) {
        Ok(body) => json_text(body),
        Err(err) => ApiError::internal("encoding the response", &err).into_response(),
    }
}
