//! Request extractors whose rejections are JSON errors naming the offending field, and
//! the request limits they enforce: bodies within `max_body_bytes` (413), identifiers
//! within [`MAX_ID_CHARS`] (422, wherever they appear: body, path, query).

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use futures::StreamExt;
use gatehouse_wire::error::GatehouseCode;
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::uri::{form_pairs, percent_decode, query_map};
use crate::AppState;

/// Longest accepted identifier, in characters: ids, tokens, slugs, kinds, versions and
/// cursors in a JSON body ([`is_identifier_key`]), a path segment, an identifier in the
/// query string. Longer answers 422 naming the field (ids are stored and indexed: an
/// unbounded one would bloat the tables or overflow an index entry).
pub const MAX_ID_CHARS: usize = 256;

/// The `?project_id=<uuid>` every `/api` route (but capabilities) requires, normalized
/// to the lowercase hyphenated form, and authorised for the caller's key
/// ([`crate::auth::authorize_project`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectId(pub String);

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
            Some(value) => {
                let project = parse_uuid(value, &["query", "project_id"])?;
                crate::auth::authorize_project(parts, &project)?;
                Ok(ProjectId(project))
            }
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
            .get::<crate::auth::Caller>()
            .map(|caller| ActorName(caller.actor.clone()))
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
    check_identifiers(&value)?;
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

/// True for a JSON key whose string value (or list of strings) is an identifier:
/// `id`, `token(s)`, `slug`, `version`, `kind`, `next`, `status`, and any key ending in
/// `_id`, `_ids`, `Id` or `Ids` (`session_id`, `tool_call_id`, `operationId`, ...).
pub fn is_identifier_key(key: &str) -> bool {
    matches!(
        key,
        "id" | "token" | "tokens" | "slug" | "version" | "kind" | "next" | "status"
    ) || key.ends_with("_id")
        || key.ends_with("_ids")
        || key.ends_with("Id")
        || key.ends_with("Ids")
}

/// Subtrees that are the caller's own documents (a config, tool arguments, tags and
/// meta): their keys are not the API's identifiers, so the identifier limit does not
/// look inside (the body limit still bounds them).
const OPAQUE_SUBTREES: [&str; 6] = [
    "parameters",
    "revision",
    "effectiveParameters",
    "args",
    "tags",
    "meta",
];

/// 422 naming the first identifier in a JSON body longer than [`MAX_ID_CHARS`].
pub fn check_identifiers(value: &serde_json::Value) -> Result<(), ApiError> {
    let mut loc = vec![serde_json::Value::String("body".to_string())];
    walk_identifiers(value, &mut loc)
}

fn too_long(loc: Vec<serde_json::Value>, chars: usize) -> ApiError {
    ApiError::validation_at(
        loc,
        format!("String should have at most {MAX_ID_CHARS} characters (got {chars})"),
        "string_too_long",
    )
}

fn walk_identifiers(
    value: &serde_json::Value,
    loc: &mut Vec<serde_json::Value>,
) -> Result<(), ApiError> {
    match value {
        serde_json::Value::Object(map) => {
            for (key, child) in map {
                if OPAQUE_SUBTREES.contains(&key.as_str()) {
                    continue;
                }
                loc.push(serde_json::Value::String(key.clone()));
                if is_identifier_key(key) {
                    match child {
                        serde_json::Value::String(text) => {
                            let chars = text.chars().count();
                            if chars > MAX_ID_CHARS {
                                return Err(too_long(loc.clone(), chars));
                            }
                        }
                        serde_json::Value::Array(items) => {
                            for (index, item) in items.iter().enumerate() {
                                if let serde_json::Value::String(text) = item {
                                    let chars = text.chars().count();
                                    if chars > MAX_ID_CHARS {
                                        let mut at = loc.clone();
                                        at.push(serde_json::Value::from(index));
                                        return Err(too_long(at, chars));
                                    }
                                }
                            }
                        }
                        _ => {}
                    }
                }
                walk_identifiers(child, loc)?;
                loc.pop();
            }
            Ok(())
        }
        serde_json::Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                loc.push(serde_json::Value::from(index));
                walk_identifiers(item, loc)?;
                loc.pop();
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// 422 when a path segment (percent-decoded) or an identifier in the query string
/// ([`is_identifier_key`]) is longer than [`MAX_ID_CHARS`]. Run before routing, so it
/// covers every route.
pub fn check_uri_identifiers(uri: &axum::http::Uri) -> Result<(), ApiError> {
    for segment in uri.path().split('/') {
        let decoded = percent_decoded_chars(segment);
        if decoded > MAX_ID_CHARS {
            return Err(too_long(
                vec![serde_json::Value::String("path".to_string())],
                decoded,
            ));
        }
    }
    if let Some(query) = uri.query() {
        for (key, value) in form_pairs(query) {
            if is_identifier_key(&key) {
                let chars = value.chars().count();
                if chars > MAX_ID_CHARS {
                    return Err(too_long(
                        vec![
                            serde_json::Value::String("query".to_string()),
                            serde_json::Value::String(key),
                        ],
                        chars,
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The character count of a percent-encoded segment once decoded (bytes that do not
/// decode to UTF-8 count one each; their rejection is the route's).
fn percent_decoded_chars(segment: &str) -> usize {
    String::from_utf8_lossy(&percent_decode(segment))
        .chars()
        .count()
}
