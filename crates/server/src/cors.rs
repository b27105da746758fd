//! CORS, for pages in a browser: off unless origins are configured
//! ([`ServerConfig::cors_origins`](crate::ServerConfig::cors_origins)). With origins, a
//! request from one of them (and its preflight) is answered with
//! `Access-Control-Allow-Origin` naming it, any method and request header the API takes,
//! and `X-Request-Id` / `Retry-After` readable by the page; any other origin gets no CORS
//! headers, so the browser keeps its page from reading the answer. No credentials mode:
//! a page sends its API key in `Authorization` itself.

use std::time::Duration;

use axum::http::{header, HeaderValue, Method};
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};

use crate::request_id::REQUEST_ID_HEADER;

/// How long a browser may cache a preflight answer.
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(600);

/// Why an origin was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid CORS origin {0:?}: expected scheme://host[:port] (e.g. https://app.example.com), no path")]
pub struct OriginError(pub String);

/// An origin as browsers send it: `http` or `https`, a host, an optional port, no path,
/// query or trailing slash; compared as written, so give it in lowercase.
pub fn parse_origin(text: &str) -> Result<String, OriginError> {
    let text = text.trim();
    let refuse = || OriginError(text.to_string());
    let rest = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"))
        .ok_or_else(refuse)?;
    let valid = !rest.is_empty()
        && rest.chars().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '-' | ':' | '[' | ']')
        });
    if !valid {
        return Err(refuse());
    }
    Ok(text.to_string())
}

/// The CORS layer for `origins`, or `None` when there are none (CORS off).
pub fn layer(origins: &[String]) -> Option<CorsLayer> {
    let allowed: Vec<HeaderValue> = origins
        .iter()
        .filter_map(|origin| match HeaderValue::from_str(origin) {
            Ok(value) => Some(value),
            Err(_) => {
                tracing::warn!(origin = %origin, "ignored a CORS origin that is not a header value");
                None
            }
        })
        .collect();
    if allowed.is_empty() {
        return None;
    }
    Some(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(allowed))
            .allow_methods([
                Method::GET,
                Method::POST,
                Method::PUT,
                Method::PATCH,
                Method::DELETE,
            ])
            // Authorization, Content-Type, Idempotency-Key, X-Request-Id,
            // Last-Event-ID, X-Agentplat-Tenant-Id, ...: whatever the page asks for,
            // for an allowed origin only.
            .allow_headers(AllowHeaders::mirror_request())
            .expose_headers([REQUEST_ID_HEADER, header::RETRY_AFTER])
            .max_age(PREFLIGHT_MAX_AGE),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_scheme_host_and_port_only() {
        for good in [
            "https://app.example.com",
            "http://127.0.0.1:5173",
            "http://[::1]:8080",
        ] {
            assert_eq!(parse_origin(good).as_deref(), Ok(good));
        }
        for bad in [
            "",
            "app.example.com",
            "https://",
            "https://app.example.com/",
            "https://app.example.com/path",
            "ftp://x",
            "https://App.example.com",
            "https://a b",
            "*",
        ] {
            assert!(parse_origin(bad).is_err(), "{bad}");
        }
        assert!(layer(&[]).is_none());
        assert!(layer(&["http://127.0.0.1:1".to_string()]).is_some());
    }
}
