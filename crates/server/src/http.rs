//! Serving connections: the accept loop, HTTP/1.1 with hyper, and the limits that hold
//! before a request reaches the router.
//!
//! - **Header-read timeout** ([`ServerConfig::header_read_timeout`]): a client must send a
//!   request's head within it, and a kept-alive connection may sit idle between requests
//!   no longer; then the connection is closed (a slow-header client holds nothing).
//! - **Connections in all and per client address** ([`FdBudget`]: derived from the
//!   open-file limit at start, [`crate::limits`]): one more is answered
//!   `503 UNAVAILABLE` (JSON, `Retry-After`) and closed at once, so the process never
//!   runs out of descriptors and a new connection is always answered. After the answer
//!   the refused connection reads and discards what the client still sends (at most
//!   [`REFUSAL_DRAIN_BYTES`], for at most [`REFUSAL_DRAIN_TIME`]), so a client sending a
//!   body reads the 503 instead of a reset (closing a socket with unread bytes resets
//!   it); at most [`MAX_DRAINING_REFUSALS`] do so at once, the others close at once.
//! - **Accept errors back off.** An accept that fails (too many open files, a
//!   connection reset before it was taken) is logged and retried after a pause that
//!   doubles while the failures go on (up to 1 s): the loop neither ends nor spins.
//! - **Parse errors are JSON too.** hyper answers a request it cannot parse (a garbage
//!   request line, bytes that are not HTTP, a bad header, a URI or head over its limits)
//!   by itself, with a bodiless 400/414/431, before any router sees it. [`JsonErrorIo`]
//!   sits under hyper and recognizes that answer: the last thing hyper writes before it
//!   closes the connection, a response head with an error status, `content-length: 0`
//!   and no `content-type` (the router never answers so: its every error is a JSON body).
//!   It swaps it for the same status with the JSON error envelope.
//!
//! - **A request runs to its end.** Each request is handled in a task of its own, so a
//!   client that goes away mid-request does not cancel the handler half-way through a
//!   database transaction (a cancelled transaction left its pooled connection unusable
//!   for the next request). A client may half-close its side after sending a request
//!   and still read the answer.
//! - **A request waits out an unavailable database once**
//!   ([`crate::db::waiting_at_most_once`]): then it answers 503 `UNAVAILABLE`.
//!
//! Only HTTP/1.1 (and 1.0) is served: nothing here speaks cleartext HTTP/2.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use axum::Router;
use gatehouse_wire::error::{FastApiErrorBody, GatehouseCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tower::ServiceExt;

use axum::response::IntoResponse;

use crate::config::ServerConfig;
use crate::limits::{FdBudget, RETRY_AFTER_SECS};

/// The limits [`serve`] applies to connections.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// See [`ServerConfig::header_read_timeout`].
    pub header_read_timeout: Duration,
    /// [`FdBudget::max_connections_per_client`] (0: no limit but the total).
    pub max_connections_per_client: usize,
    /// Most open connections in all ([`FdBudget::max_connections`]).
    pub max_connections: usize,
}

impl ConnectionLimits {
    /// The limits of `config`, with the caps of `budget`.
    pub fn new(config: &ServerConfig, budget: &FdBudget) -> Self {
        Self {
            header_read_timeout: config.header_read_timeout,
            max_connections_per_client: budget.max_connections_per_client,
            max_connections: budget.max_connections,
        }
    }
}

/// The most a refused connection reads and discards after its 503.
pub const REFUSAL_DRAIN_BYTES: usize = 1024 * 1024;
/// The longest a refused connection waits for the client to finish sending (and close)
/// after its 503.
pub const REFUSAL_DRAIN_TIME: Duration = Duration::from_secs(2);
/// The most refused connections draining at once: each holds a descriptor over the
/// connection cap, so they stay few (the rest are closed right after their 503).
pub const MAX_DRAINING_REFUSALS: usize = 16;

/// The first pause after a failed accept; it doubles while failures go on.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);
/// The longest pause after failed accepts.
const MAX_ACCEPT_BACKOFF: Duration = Duration::from_secs(1);

/// Serve `router` on `listener` until `shutdown` turns true; then stop accepting and
/// wait for every open connection to finish its request in flight (idle ones close).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    mut shutdown: watch::Receiver<bool>,
) {
    let graceful = GracefulShutdown::new();
    let counts = ClientCounts::default();
    let draining = Arc::new(Semaphore::new(MAX_DRAINING_REFUSALS));
    let mut backoff = ACCEPT_BACKOFF;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.wait_for(|stop| *stop) => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => {
                backoff = ACCEPT_BACKOFF;
                accepted
            }
            Err(err) => {
                // Per-connection failures (reset before accept) and resource exhaustion
                // (too many open files) alike: log, wait (longer while it goes on, so
                // the loop never spins), go on.
                tracing::warn!(error = %err, pause_ms = backoff.as_millis() as u64, "accepting a connection failed");
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = shutdown.wait_for(|stop| *stop) => break,
                }
                backoff = (backoff * 2).min(MAX_ACCEPT_BACKOFF);
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let slot = match counts.acquire(peer.ip(), &limits) {
            Ok(slot) => slot,
            Err(refusal) => {
                let drain = draining.clone().try_acquire_owned().ok();
                tokio::spawn(refuse_over_limit(stream, peer, refusal, drain));
                continue;
            }
        };
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout)
            .half_close(true);
        let service = detached_service(router.clone());
        let io = TokioIo::new(JsonErrorIo::new(stream));
        let connection = graceful.watch(builder.serve_connection(io, service));
        tokio::spawn(async move {
            let _slot = slot;
            if let Err(err) = connection.await {
                if err.is_timeout() {
                    tracing::debug!(%peer, "closed a connection: no request head within the header-read timeout");
                } else if err.is_parse() || err.is_parse_too_large() || err.is_parse_status() {
                    tracing::info!(%peer, error = %err, "refused a request hyper could not parse");
                } else {
                    tracing::debug!(%peer, error = %err, "connection ended with an error");
                }
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// `router` as a hyper service whose every request runs in a task of its own: dropping
/// the answer (the client went away) leaves the handler to finish.
fn detached_service(
    router: Router,
) -> impl hyper::service::Service<
    hyper::Request<hyper::body::Incoming>,
    Response = axum::response::Response,
    Error = std::convert::Infallible,
    Future = impl std::future::Future<
        Output = Result<axum::response::Response, std::convert::Infallible>,
    > + Send,
> + Clone {
    hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
        let router = router.clone();
        async move {
            let request = request.map(axum::body::Body::new);
            // One request waits out an unavailable database at most once.
            let handled =
                tokio::spawn(crate::db::waiting_at_most_once(router.oneshot(request))).await;
            Ok(match handled {
                Ok(Ok(response)) => response,
                Ok(Err(never)) => match never {},
                Err(err) => {
                    tracing::error!(error = %err, "a request task failed");
                    crate::error::ApiError::new(
                        GatehouseCode::InternalError,
                        "Internal error: the request handler failed",
                    )
                    .into_response()
                }
            })
        }
    })
}

/// Open connections, in all and per client address.
#[derive(Debug, Clone, Default)]
struct ClientCounts(Arc<Mutex<OpenConnections>>);

/// The counts behind [`ClientCounts`].
#[derive(Debug, Default)]
struct OpenConnections {
    total: usize,
    per_client: HashMap<IpAddr, usize>,
}

/// Why a connection was refused: which cap it met, and the cap.
#[derive(Debug, Clone, Copy)]
enum Refusal {
    /// The connections of one client address.
    PerClient(usize),
    /// The connections in all.
    Total(usize),
}

/// One open connection of a client address; dropping it frees the slot.
struct ClientSlot {
    counts: ClientCounts,
    ip: IpAddr,
}

impl ClientCounts {
    fn lock(&self) -> std::sync::MutexGuard<'_, OpenConnections> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A slot for `ip`, unless the connections in all or `ip`'s are at their cap.
    fn acquire(&self, ip: IpAddr, limits: &ConnectionLimits) -> Result<ClientSlot, Refusal> {
        let mut counts = self.lock();
        if counts.total >= limits.max_connections {
            return Err(Refusal::Total(limits.max_connections));
        }
        let max = limits.max_connections_per_client;
        let open = counts.per_client.entry(ip).or_insert(0);
        if max > 0 && *open >= max {
            return Err(Refusal::PerClient(max));
        }
        *open += 1;
        counts.total += 1;
        Ok(ClientSlot {
            counts: self.clone(),
            ip,
        })
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut counts = self.counts.lock();
        counts.total = counts.total.saturating_sub(1);
        if let Some(open) = counts.per_client.get_mut(&self.ip) {
            *open = open.saturating_sub(1);
            if *open == 0 {
                counts.per_client.remove(&self.ip);
            }
        }
    }
}

/// Answer a connection over a connection cap with a JSON 503 (and `Retry-After`) and
/// close it; with a `drain` permit, only after reading what the client still sends
/// (bounded), so that a client sending a body is not reset before it reads the answer.
async fn refuse_over_limit(
    mut stream: TcpStream,
    peer: SocketAddr,
    refusal: Refusal,
    drain: Option<OwnedSemaphorePermit>,
) {
    let message = match refusal {
        Refusal::PerClient(max) => {
            tracing::warn!(%peer, max, "refused a connection: too many open connections from this address");
            format!("Too many open connections from this address (the limit is {max}); close some and retry")
        }
        Refusal::Total(max) => {
            tracing::warn!(%peer, max, "refused a connection: the server's open connections are at their cap");
            format!("Too many open connections (the server's cap is {max}); retry in {RETRY_AFTER_SECS} s")
        }
    };
    let retry_after = format!("retry-after: {RETRY_AFTER_SECS}\r\n");
    let response =
        json_error_response_with_headers(503, GatehouseCode::Unavailable, &message, &retry_after);
    let write = async {
        stream.write_all(&response).await?;
        stream.shutdown().await
    };
    if !matches!(
        tokio::time::timeout(Duration::from_secs(5), write).await,
        Ok(Ok(()))
    ) {
        return;
    }
    if let Some(_permit) = drain {
        let _ = tokio::time::timeout(REFUSAL_DRAIN_TIME, discard_until_eof(&mut stream)).await;
    }
}

/// Read and discard until the client closes, or [`REFUSAL_DRAIN_BYTES`] were read.
async fn discard_until_eof(stream: &mut TcpStream) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut read = 0;
    while read < REFUSAL_DRAIN_BYTES {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => read += n,
        }
    }
}

/// A complete HTTP/1.1 response carrying the JSON error envelope, closing the connection.
pub fn json_error_response(status: u16, code: GatehouseCode, message: &str) -> Vec<u8> {
    json_error_response_with_headers(status, code, message, "")
}

/// [`json_error_response`] with `extra_headers` (whole header lines, each ending in
/// CRLF) among its headers.
fn json_error_response_with_headers(
    status: u16,
    code: GatehouseCode,
    message: &str,
    extra_headers: &str,
) -> Vec<u8> {
    let body = serde_json::to_vec(&FastApiErrorBody {
        detail: serde_json::Value::String(message.to_string()),
        code: Some(code),
        request_id: None,
        extra: Default::default(),
    })
    .unwrap_or_else(|_| br#"{"detail":"Bad Request","code":"BAD_REQUEST"}"#.to_vec());
    let reason = axum::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Error");
    // A 503 says when to come back, as every `UNAVAILABLE` answer does.
    let retry_after =
        if status == 503 && !extra_headers.to_ascii_lowercase().contains("retry-after") {
            format!("retry-after: {}\r\n", crate::error::RETRY_AFTER_SECS)
        } else {
            String::new()
        };
    let mut response = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n{retry_after}\
         content-length: {}\r\n{extra_headers}connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    response.extend_from_slice(&body);
    response
}

/// The JSON answer that replaces hyper's own bodiless answer to a request it could not
/// parse, by status.
fn parse_error_response(status: u16) -> Vec<u8> {
    let message = match status {
        414 => "URI Too Long: the request target is over the server's limit",
        431 => "Request Header Fields Too Large: the request head is over the server's limit",
        _ => "Bad Request: the request could not be parsed as HTTP/1.1 (request line, header names and values must be valid HTTP tokens and text)",
    };
    json_error_response(status, GatehouseCode::BadRequest, message)
}

/// The longest answer hyper writes by itself (status line, `connection`,
/// `content-length` and `date` headers): where to look for it at the end of a write.
const MAX_AUTO_HEAD: usize = 512;

/// Where, in `buf`, hyper's own error answer starts, when `buf` ends with one: a complete
/// response head with a 4xx/5xx status, `content-length: 0` and no `content-type`.
pub fn auto_error_head_start(buf: &[u8]) -> Option<(usize, u16)> {
    if !buf.ends_with(b"\r\n\r\n") {
        return None;
    }
    let window_start = buf.len().saturating_sub(MAX_AUTO_HEAD);
    let window = &buf[window_start..];
    let mut search_end = window.len();
    while let Some(at) = find_last(&window[..search_end], b"HTTP/1.") {
        let head = &window[at..];
        if let Some(status) = bodiless_error_head(head) {
            return Some((window_start + at, status));
        }
        search_end = at;
    }
    None
}

fn find_last(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if haystack.len() < needle.len() {
        return None;
    }
    (0..=haystack.len() - needle.len())
        .rev()
        .find(|&i| &haystack[i..i + needle.len()] == needle)
}

/// The status of `head` when it is exactly one bodiless error response head.
fn bodiless_error_head(head: &[u8]) -> Option<u16> {
    let mut headers = [httparse::EMPTY_HEADER; 16];
    let mut response = httparse::Response::new(&mut headers);
    let httparse::Status::Complete(length) = response.parse(head).ok()? else {
        return None;
    };
    if length != head.len() {
        return None;
    }
    let status = response.code?;
    if status < 400 {
        return None;
    }
    let mut zero_length = false;
    for header in response.headers.iter() {
        if header.name.eq_ignore_ascii_case("content-type") {
            return None;
        }
        if header.name.eq_ignore_ascii_case("content-length") {
            zero_length = header.value == b"0";
        }
    }
    zero_length.then_some(status)
}

/// A connection's stream as hyper sees it. Writes pass through, except hyper's own
/// bodiless error answer ([`auto_error_head_start`]): held back, and at the close that
/// always follows it replaced by the same status with a JSON body. Should anything be
/// written after a held answer, the held bytes go out first, unchanged (it was not the
/// last word after all).
#[derive(Debug)]
pub struct JsonErrorIo<T> {
    inner: T,
    /// A held error answer: its status and bytes.
    held: Option<(u16, Vec<u8>)>,
    /// Bytes still to write before anything else (a released or replacement answer).
    pending: Vec<u8>,
}

impl<T> JsonErrorIo<T> {
    /// Wrap `inner`.
    pub fn new(inner: T) -> Self {
        Self {
            inner,
            held: None,
            pending: Vec::new(),
        }
    }
}

impl<T: AsyncWrite + Unpin> JsonErrorIo<T> {
    /// Write out `pending` completely.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.pending.is_empty() {
            let written = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending))?;
            if written == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.pending.drain(..written);
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for JsonErrorIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for JsonErrorIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if let Some((_, bytes)) = this.held.take() {
            this.pending.extend_from_slice(&bytes);
        }
        ready!(this.poll_pending(cx))?;
        match auto_error_head_start(buf) {
            Some((0, status)) => {
                this.held = Some((status, buf.to_vec()));
                Poll::Ready(Ok(buf.len()))
            }
            Some((start, _)) => Pin::new(&mut this.inner).poll_write(cx, &buf[..start]),
            None => Pin::new(&mut this.inner).poll_write(cx, buf),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        ready!(this.poll_pending(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if let Some((status, _)) = this.held.take() {
            this.pending
                .extend_from_slice(&parse_error_response(status));
        }
        ready!(this.poll_pending(cx))?;
        ready!(Pin::new(&mut this.inner).poll_flush(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        // One contiguous buffer per write, so hyper's own answer is seen whole.
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognizes_only_bodiless_error_heads() {
        let auto = b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\ndate: Mon, 01 Dec 2025 07:08:00 GMT\r\n\r\n";
        assert_eq!(auto_error_head_start(auto), Some((0, 400)));
        let mut after_body = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}".to_vec();
        after_body.extend_from_slice(auto);
        assert_eq!(
            auto_error_head_start(&after_body),
            Some((after_body.len() - auto.len(), 400))
        );
        let json = b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(auto_error_head_start(json), None);
        let ok = b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(auto_error_head_start(ok), None);
        let chunk_end = b"5\r\nhello\r\n0\r\n\r\n";
        assert_eq!(auto_error_head_start(chunk_end), None);
        let text_in_body = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1c\r\nHTTP/1.1 400 Bad Request\r\n\r\n\r\n0\r\n\r\n";
        assert_eq!(auto_error_head_start(text_in_body), None);
    }

    #[test]
    fn replacement_is_json() {
        let response = parse_error_response(431);
        let text = String::from_utf8(response).unwrap();
        assert!(text.starts_with("HTTP/1.1 431 "));
        let body = text.split("\r\n\r\n").nth(1).unwrap();
        let value: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(value["code"], "BAD_REQUEST");
    }
}
