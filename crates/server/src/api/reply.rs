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

/// A 200 response with `value` as Agenta's API writes it (pydantic-core through FastAPI:
/// compact, floats spelled `0.00001` / `1e-7` / `1e+16`; see
/// `gatehouse_wire::agenta_api_json`): for the bodies that carry interaction rows.
pub fn agenta_api_json<T: serde::Serialize>(value: &T) -> Response {
    match gatehouse_wire::agenta_api_json::to_agenta_api_json(value) {
        Ok(body) => json_text(body),
        Err(err) => ApiError::internal("encoding the response", &err).into_response(),
    }
}
