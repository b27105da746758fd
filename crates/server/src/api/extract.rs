//! Request extractors whose rejections are JSON errors naming the offending field.

use std::collections::HashMap;

use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use futures::StreamExt;
use gatehouse_wire::error::GatehouseCode;
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::AppState;

/// The `?project_id=<uuid>` every `/api` route (but capabilities) requires, normalized
/// to the lowercase hyphenated form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectId(pub String);

/// The query string as a map (last value wins).
pub fn query_map(parts: &Parts) -> HashMap<String, String> {
    Query::<HashMap<String, String>>::try_from_uri(&parts.uri)
        .map(|q| q.0)
        .unwrap_or_default()
}

/// Parse `value` as a UUID, or a 422 naming `loc`.
pub fn parse_uuid(value: &str, loc: &[&str]) -> Result<String, ApiError> {
    uuid::Uuid::parse_str(value.trim())
        .map(|u| u.to_string())
        .map_err(|err| {
            ApiError::validation(
                loc,
                format!("invalid UUID {value:?}: {err}"),
                "uuid_parsing",
            )
        })
}

impl<S: Send + Sync> FromRequestParts<S> for ProjectId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = query_map(parts);
        match query.get("project_id") {
            None => Err(ApiError::validation(
                &["query", "project_id"],
                "Field required: project_id",
                "missing",
            )),
            Some(value) => parse_uuid(value, &["query", "project_id"]).map(ProjectId),
        }
    }
}

/// The authenticated actor (set by the auth layer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActorName(pub String);

impl<S: Send + Sync> FromRequestParts<S> for ActorName {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        parts
            .extensions
            .get::<crate::auth::Actor>()
            .map(|a| ActorName(a.0.clone()))
            .ok_or_else(|| ApiError::new(GatehouseCode::Unauthorized, "Missing credentials"))
    }
}

/// Read a whole body, answering 413 past `limit` bytes.
pub async fn read_body(request: Request, limit: usize) -> Result<bytes::Bytes, ApiError> {
    let too_large = || {
        ApiError::new(
            GatehouseCode::PayloadTooLarge,
            format!("Request body is larger than {limit} bytes"),
        )
    };
    if let Some(length) = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
    {
        if length > limit as u64 {
            return Err(too_large());
        }
    }
    let mut stream = request.into_body().into_data_stream();
    let mut buffer = bytes::BytesMut::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|err| {
            ApiError::new(
                GatehouseCode::BadRequest,
                format!("Cannot read the request body: {err}"),
            )
        })?;
        if buffer.len() + chunk.len() > limit {
            return Err(too_large());
        }
        buffer.extend_from_slice(&chunk);
    }
    Ok(buffer.freeze())
}

/// Decode a JSON body as `T`: 400 for malformed JSON, 422 naming the field path for the
/// wrong shape. `empty_as` decodes an empty body as that document instead.
pub fn decode_json<T: DeserializeOwned>(
    body: &[u8],
    empty_as: Option<&str>,
) -> Result<(T, serde_json::Value), ApiError> {
    let text: &[u8] = if body.iter().all(u8::is_ascii_whitespace) {
        match empty_as {
            Some(doc) => doc.as_bytes(),
            None => {
                return Err(ApiError::new(
                    GatehouseCode::BadRequest,
                    "Malformed JSON body: the body is empty",
                ))
            }
        }
    } else {
        body
    };
    let value: serde_json::Value = serde_json::from_slice(text).map_err(|err| {
        ApiError::new(
            GatehouseCode::BadRequest,
            format!("Malformed JSON body: {err}"),
        )
    })?;
    // serde reads a struct from a JSON array too (fields by position); every body of
    // this API is an object, as FastAPI requires (found by schemathesis).
    if !value.is_object() {
        return Err(ApiError::validation(
            &["body"],
            "Input should be a valid dictionary or object to extract fields from",
            "model_attributes_type",
        ));
    }
    let typed = gatehouse_wire::from_json_value::<T>(value.clone())
        .map_err(|err| ApiError::from_decode(&err))?;
    Ok((typed, value))
}

/// A JSON body decoded as `T` (with the raw value kept), within the configured size.
#[derive(Debug, Clone)]
pub struct JsonBody<T> {
    /// The decoded body.
    pub value: T,
    /// The body as parsed JSON (for hashing a request).
    pub raw: serde_json::Value,
}

impl<T: DeserializeOwned + Send> FromRequest<AppState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let bytes = read_body(request, state.config.max_body_bytes).await?;
        let (value, raw) = decode_json::<T>(&bytes, None)?;
        Ok(Self { value, raw })
    }
}

/// Like [`JsonBody`], but an empty body decodes as `{}`.
#[derive(Debug, Clone)]
pub struct OptionalJsonBody<T>(pub T);

impl<T: DeserializeOwned + Send> FromRequest<AppState> for OptionalJsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let bytes = read_body(request, state.config.max_body_bytes).await?;
        let (value, _) = decode_json::<T>(&bytes, Some("{}"))?;
        Ok(Self(value))
    }
}
