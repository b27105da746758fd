//! Request extractors whose rejections are JSON errors naming the offending field, and
//! the request limits they enforce: bodies within `max_body_bytes` (413), identifiers
//! within [`MAX_ID_CHARS`] (422, wherever they appear: body, path, query), and no NUL
//! character (U+0000) in any text of a request (422: a JSON body's strings and keys at
//! any depth, a path segment, a query key or value). PostgreSQL's text columns cannot
//! hold NUL, and SQLite can: refusing it here, before any handler, answers the same on
//! both backends, and a handler never has to think of it.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use futures::StreamExt;
use gatehouse_wire::error::GatehouseCode;
use gatehouse_wire::pyjson::{self, Dialect, PyValue};
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
            // Agenta takes the project from the key: a key bound to exactly one project
            // names it. Any other key must say which project it acts in.
            None => match parts
                .extensions
                .get::<crate::auth::Caller>()
                .map(|caller| &caller.projects)
            {
                Some(crate::config::KeyProjects::Only(projects)) if projects.len() == 1 => {
                    Ok(ProjectId(projects[0].clone()))
                }
                _ => Err(ApiError::validation(
                    &["query", "project_id"],
                    "Field required: project_id",
                    "missing",
                )),
            },
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

/// The deepest nesting a body read by an upstream's parser may reach before the typed
/// readers (which recurse per level on a worker thread's stack) take it: serde_json's own
/// bound, the one every other body of this API has.
pub const TYPED_MAX_DEPTH: usize = 128;

/// Decode a JSON body as `T`, reading the text as an upstream's own parser does
/// (`dialect`, [`gatehouse_wire::pyjson`]): a lone surrogate escape and duplicate keys (the
/// last wins) are read, not refused; under [`Dialect::Python`] `NaN` and the infinities too.
/// Returns the typed value, its JSON and the tolerant value (which keeps a lone surrogate
/// the typed value holds as U+FFFD). 400 for a text the upstream refuses, 422 as
/// [`decode_json`] for the wrong shape, and 422 for a value no JSON type can hold (`NaN`,
/// nesting past [`TYPED_MAX_DEPTH`]).
pub fn decode_json_as<T: DeserializeOwned>(
    body: &[u8],
    dialect: Dialect,
) -> Result<(T, serde_json::Value, PyValue), ApiError> {
    let text = std::str::from_utf8(body).map_err(|err| {
        ApiError::new(
            GatehouseCode::BadRequest,
            format!("Malformed JSON body: not UTF-8 text: {err}"),
        )
    })?;
    if text.trim_matches([' ', '\t', '\n', '\r']).is_empty() {
        return Err(ApiError::new(
            GatehouseCode::BadRequest,
            "Malformed JSON body: the body is empty",
        ));
    }
    let read = pyjson::read(text, dialect).map_err(|err| {
        ApiError::new(
            GatehouseCode::BadRequest,
            format!("Malformed JSON body: {err}"),
        )
    })?;
    if !matches!(read, PyValue::Dict(_)) {
        return Err(ApiError::validation(
            &["body"],
            "Input should be a valid dictionary or object to extract fields from",
            "model_attributes_type",
        ));
    }
    let value = read
        .to_json_lossy(TYPED_MAX_DEPTH)
        .map_err(|err| ApiError::validation(&["body"], err.to_string(), "value_error"))?;
    check_identifiers(&value)?;
    let typed = gatehouse_wire::from_json_value::<T>(value.clone())
        .map_err(|err| ApiError::from_decode(&err))?;
    Ok((typed, value, read))
}

/// A JSON body read as Agenta's runner reads it (JavaScript's `JSON.parse`, see
/// [`decode_json_as`]), decoded as `T`.
#[derive(Debug, Clone)]
pub struct RunnerJsonBody<T> {
    /// The decoded body.
    pub value: T,
    /// The body as the runner's parser reads it (a lone surrogate kept).
    pub read: PyValue,
}

impl<T: DeserializeOwned + Send> FromRequest<AppState> for RunnerJsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let bytes = read_body(request, state.config.max_body_bytes).await?;
        let (value, _, read) = decode_json_as::<T>(&bytes, Dialect::JavaScript)?;
        Ok(Self { value, read })
    }
}

/// A JSON body read as Agenta's API reads it (Python's `json.loads`, see
/// [`decode_json_as`]), decoded as `T`.
#[derive(Debug, Clone)]
pub struct PythonJsonBody<T> {
    /// The decoded body.
    pub value: T,
    /// The body as Python's parser reads it (a lone surrogate, `NaN` kept).
    pub read: PyValue,
}

impl<T: DeserializeOwned + Send> FromRequest<AppState> for PythonJsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let bytes = read_body(request, state.config.max_body_bytes).await?;
        let (value, _, read) = decode_json_as::<T>(&bytes, Dialect::Python)?;
        Ok(Self { value, read })
    }
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
/// look inside (the NUL rule does, and the body limit bounds them).
const OPAQUE_SUBTREES: [&str; 6] = [
    "parameters",
    "revision",
    "effectiveParameters",
    "args",
    "tags",
    "meta",
];

/// 422 naming the first identifier in a JSON body longer than [`MAX_ID_CHARS`], or the
/// first string or key anywhere in it (free-form subtrees included) holding a NUL.
pub fn check_identifiers(value: &serde_json::Value) -> Result<(), ApiError> {
    let mut loc = vec![serde_json::Value::String("body".to_string())];
    walk_body_text(value, &mut loc, true)
}

/// 422 naming the first string or key of a JSON body holding a NUL: for a body a route
/// reads itself instead of through [`decode_json`].
pub fn check_no_nul(value: &serde_json::Value) -> Result<(), ApiError> {
    let mut loc = vec![serde_json::Value::String("body".to_string())];
    walk_body_text(value, &mut loc, false)
}

fn too_long(loc: Vec<serde_json::Value>, chars: usize) -> ApiError {
    ApiError::validation_at(
        loc,
        format!("String should have at most {MAX_ID_CHARS} characters (got {chars})"),
        "string_too_long",
    )
}

/// The message of a NUL refusal (AgentPlat's routes answer it as their 400's message).
pub const NUL_MESSAGE: &str = "String must not contain the NUL character (U+0000)";

/// 422 at `loc` when `text` holds a NUL.
fn refuse_nul(text: &str, loc: &[serde_json::Value]) -> Result<(), ApiError> {
    if text.contains('\0') {
        return Err(ApiError::validation_at(
            loc.to_vec(),
            NUL_MESSAGE,
            "string_contains_nul",
        ));
    }
    Ok(())
}

/// Walk a body: every string and key is checked for NUL; while `limit_identifiers`
/// (outside [`OPAQUE_SUBTREES`]), an identifier key's string, or list of strings, is
/// held to [`MAX_ID_CHARS`].
fn walk_body_text(
    value: &serde_json::Value,
    loc: &mut Vec<serde_json::Value>,
    limit_identifiers: bool,
) -> Result<(), ApiError> {
    match value {
        serde_json::Value::String(text) => refuse_nul(text, loc),
        serde_json::Value::Object(map) => {
            for (key, child) in map {
                loc.push(serde_json::Value::String(key.clone()));
                refuse_nul(key, loc)?;
                if limit_identifiers && is_identifier_key(key) {
                    check_identifier_length(child, loc)?;
                }
                let inside_limited = limit_identifiers && !OPAQUE_SUBTREES.contains(&key.as_str());
                walk_body_text(child, loc, inside_limited)?;
                loc.pop();
            }
            Ok(())
        }
        serde_json::Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                loc.push(serde_json::Value::from(index));
                walk_body_text(item, loc, limit_identifiers)?;
                loc.pop();
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// 422 when an identifier (a string, or a list's string items) at `loc` is longer than
/// [`MAX_ID_CHARS`].
fn check_identifier_length(
    value: &serde_json::Value,
    loc: &[serde_json::Value],
) -> Result<(), ApiError> {
    match value {
        serde_json::Value::String(text) => {
            let chars = text.chars().count();
            if chars > MAX_ID_CHARS {
                return Err(too_long(loc.to_vec(), chars));
            }
        }
        serde_json::Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                if let serde_json::Value::String(text) = item {
                    let chars = text.chars().count();
                    if chars > MAX_ID_CHARS {
                        let mut at = loc.to_vec();
                        at.push(serde_json::Value::from(index));
                        return Err(too_long(at, chars));
                    }
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// 422 when a path segment (percent-decoded) or an identifier in the query string
/// ([`is_identifier_key`]) is longer than [`MAX_ID_CHARS`], or a path segment, query key
/// or query value holds a NUL. Run before routing, so it covers every route.
pub fn check_uri_identifiers(uri: &axum::http::Uri) -> Result<(), ApiError> {
    let path_loc = [serde_json::Value::String("path".to_string())];
    for segment in uri.path().split('/') {
        let decoded = String::from_utf8_lossy(&percent_decode(segment)).into_owned();
        refuse_nul(&decoded, &path_loc)?;
        let chars = decoded.chars().count();
        if chars > MAX_ID_CHARS {
            return Err(too_long(path_loc.to_vec(), chars));
        }
    }
    if let Some(query) = uri.query() {
        for (key, value) in form_pairs(query) {
            let loc = [
                serde_json::Value::String("query".to_string()),
                serde_json::Value::String(key.clone()),
            ];
            refuse_nul(&key, &loc)?;
            refuse_nul(&value, &loc)?;
            if is_identifier_key(&key) {
                let chars = value.chars().count();
                if chars > MAX_ID_CHARS {
                    return Err(too_long(loc.to_vec(), chars));
                }
            }
        }
    }
    Ok(())
}
