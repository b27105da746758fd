//! Reading a request's URI: percent-decoding and the query string. Below both the auth
//! layer (which reads `?project_id=`) and the extractors (which read it again and hold
//! identifiers to their limit), so neither needs the other for it.

use std::collections::HashMap;

use axum::http::request::Parts;

/// The query string as a map (last value wins; invalid UTF-8 decodes lossily, so a bad
/// value is refused by its own check instead of vanishing).
pub fn query_map(parts: &Parts) -> HashMap<String, String> {
    parts
        .uri
        .query()
        .map(|query| form_pairs(query).into_iter().collect())
        .unwrap_or_default()
}

/// `application/x-www-form-urlencoded` pairs of a query string (lossy on bad UTF-8).
pub fn form_pairs(query: &str) -> Vec<(String, String)> {
    let decode =
        |text: &str| String::from_utf8_lossy(&percent_decode(&text.replace('+', " "))).into_owned();
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(key), decode(value))
        })
        .collect()
}

/// Percent-decode `text` (a `%` not followed by two hex digits is kept as is).
pub fn percent_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(byte) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                decoded.push(byte);
                i += 3;
                continue;
            }
        }
        decoded.push(bytes[i]);
        i += 1;
    }
    decoded
}
