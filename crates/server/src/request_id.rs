//! A request id on every request the router answers: the client's `X-Request-Id` when it
//! is usable (1 to [`MAX_REQUEST_ID_LEN`] characters of [`usable`]'s set), a new UUID
//! otherwise. It is answered in the `X-Request-Id` header, is a field of the `request`
//! tracing span every log line of the request is written in, and is the `request_id`
//! of every error body ([`current`], read by [`crate::error::ApiError`]).

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

/// The request id header, in and out.
pub const REQUEST_ID_HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// Longest request id taken from a client.
pub const MAX_REQUEST_ID_LEN: usize = 128;

tokio::task_local! {
    static REQUEST_ID: String;
}

/// The id of the request being answered on this task, if any.
pub fn current() -> Option<String> {
    REQUEST_ID.try_with(Clone::clone).ok()
}

/// The client's id when it is 1 to [`MAX_REQUEST_ID_LEN`] ASCII letters, digits and
/// `-_.:/+@`, else `None`. Nothing else is taken: text-format logs write the id bare
/// inside the `request{request_id=...}` span, where spaces, quotes, `{`, `}`, `=`, `,`
/// or control characters could forge span structure or fields (`x}:forged{request_id=evil`).
pub fn usable(sent: &HeaderValue) -> Option<String> {
    let bytes = sent.as_bytes();
    let plain = !bytes.is_empty()
        && bytes.len() <= MAX_REQUEST_ID_LEN
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:/+@".contains(b));
    plain.then(|| String::from_utf8_lossy(bytes).into_owned())
}

/// Give the request its id, answer it, and run the rest inside the `request` span.
pub async fn assign(request: Request, next: Next) -> Response {
    let id = request
        .headers()
        .get(&REQUEST_ID_HEADER)
        .and_then(usable)
        .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string());
    let span = tracing::info_span!("request", request_id = %id);
    let mut response = REQUEST_ID
        .scope(id.clone(), next.run(request).instrument(span))
        .await;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_short_plain_ids_are_taken() {
        let take = |s: &str| usable(&HeaderValue::from_str(s).unwrap());
        assert_eq!(take("abc-123_X.y").as_deref(), Some("abc-123_X.y"));
        assert_eq!(
            take("trace:1/span+2@host").as_deref(),
            Some("trace:1/span+2@host")
        );
        assert_eq!(take(""), None);
        assert_eq!(take("has space"), None);
        assert_eq!(
            take(&"a".repeat(MAX_REQUEST_ID_LEN)).map(|s| s.len()),
            Some(128)
        );
        assert_eq!(take(&"a".repeat(MAX_REQUEST_ID_LEN + 1)), None);
        let latin1 = HeaderValue::from_bytes(b"caf\xe9").unwrap();
        assert_eq!(usable(&latin1), None);
        let tab = HeaderValue::from_bytes(b"a\tb").unwrap();
        assert_eq!(usable(&tab), None);
    }

    /// Issue 37, item 9: what text-format logs could read as span structure or a field.
    #[test]
    fn ids_that_could_forge_log_structure_are_replaced() {
        let take = |s: &str| usable(&HeaderValue::from_str(s).unwrap());
        for forged in [
            "x}:forged{request_id=evil",
            "a{b",
            "a}b",
            "k=v",
            "a\"b",
            "a,b",
            "a;b",
        ] {
            assert_eq!(take(forged), None, "{forged:?}");
        }
    }
}
