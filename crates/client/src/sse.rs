//! Server-Sent Events, shared by the interaction watch and the execution event
//! stream: a small incremental parser (the WHATWG event-stream format) and
//! [`ReconnectingSse`], the connect / read / backoff / reconnect loop both streams run,
//! with an [`SsePolicy`] saying what is specific to each.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{Stream, StreamExt};

use crate::client::Client;
use crate::error::{Error, Operation, Result};
use crate::retry::RetryPolicy;
use crate::transport::{AnswerBody, Call, Replay};

/// One dispatched SSE event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` name (`message` when none was given).
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The last `id:` seen.
    pub id: Option<String>,
}

/// Longest line kept; a longer one is dropped (a hostile or broken server).
const MAX_LINE_BYTES: usize = 1024 * 1024;

/// The data of one event grew past the parser's bound before the event ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventTooLarge {
    /// The bound, in bytes.
    pub limit: usize,
}

/// Feeds bytes in, takes events out. Handles `\n`, `\r\n` and `\r` line ends split
/// anywhere across chunks, comments, and multi-line data. Memory is bounded: one line
/// ([`MAX_LINE_BYTES`]; longer ones are dropped) and one event's data
/// (`max_event_bytes`; more is an [`EventTooLarge`]).
#[derive(Debug)]
pub(crate) struct SseParser {
    max_event_bytes: usize,
    /// The bytes of the current event's data lines so far.
    event_bytes: usize,
    line: Vec<u8>,
    skipping_long_line: bool,
    last_was_cr: bool,
    event: Option<String>,
    data: Vec<String>,
    has_data: bool,
    last_id: Option<String>,
    retry_ms: Option<u64>,
}

impl SseParser {
    /// A parser whose events' data may hold at most `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> Self {
        Self {
            max_event_bytes,
            event_bytes: 0,
            line: Vec::new(),
            skipping_long_line: false,
            last_was_cr: false,
            event: None,
            data: Vec::new(),
            has_data: false,
            last_id: None,
            retry_ms: None,
        }
    }

    /// Parse `chunk`, returning every event completed by it, or [`EventTooLarge`] as
    /// soon as the event being read outgrows the bound (the parser is then spent: the
    /// stream must end).
    pub fn feed(&mut self, chunk: &[u8]) -> std::result::Result<Vec<SseEvent>, EventTooLarge> {
        let mut out = Vec::new();
        for &byte in chunk {
            match byte {
                b'\n' if self.last_was_cr => {
                    // The `\n` of a `\r\n` pair: the line already ended at `\r`.
                    self.last_was_cr = false;
                }
                b'\n' | b'\r' => {
                    self.last_was_cr = byte == b'\r';
                    self.end_line(&mut out);
                    if self.event_bytes > self.max_event_bytes {
                        self.data.clear();
                        return Err(EventTooLarge {
                            limit: self.max_event_bytes,
                        });
                    }
                }
                _ => {
                    self.last_was_cr = false;
                    if self.skipping_long_line {
                        continue;
                    }
                    if self.line.len() >= MAX_LINE_BYTES {
                        tracing::warn!("SSE line longer than {MAX_LINE_BYTES} bytes dropped");
                        self.line.clear();
                        self.skipping_long_line = true;
                        continue;
                    }
                    self.line.push(byte);
                }
            }
        }
        Ok(out)
    }

    /// The last `retry:` value the server sent, in milliseconds.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        if self.skipping_long_line {
            self.skipping_long_line = false;
            self.line.clear();
            return;
        }
        let line = String::from_utf8_lossy(&self.line).into_owned();
        self.line.clear();
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            return; // comment (heartbeat)
        }
        let (field, value) = match line.find(':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (line.as_str(), ""),
        };
        match field {
            "event" => self.event = Some(value.to_string()),
            "data" => {
                self.event_bytes = self.event_bytes.saturating_add(value.len() + 1);
                if self.event_bytes <= self.max_event_bytes {
                    self.data.push(value.to_string());
                }
                self.has_data = true;
            }
            "id" if !value.contains('\0') => self.last_id = Some(value.to_string()),
            "retry" => {
                if let Ok(ms) = value.parse::<u64>() {
                    self.retry_ms = Some(ms);
                }
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if !self.has_data && event.is_none() {
            self.data.clear();
            self.event_bytes = 0;
            return;
        }
        out.push(SseEvent {
            event: event
                .filter(|e| !e.is_empty())
                .unwrap_or_else(|| "message".to_string()),
            data: self.data.join("\n"),
            id: self.last_id.clone(),
        });
        self.data.clear();
        self.has_data = false;
        self.event_bytes = 0;
    }
}

/// The bytes of one open SSE response.
type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// When a stream's count of consecutive failures starts again from zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailuresReset {
    /// When the server accepts a (re)connect.
    OnConnect,
    /// When a chunk of bytes arrives (heartbeats included).
    OnData,
    /// When a connection that lasted this long is lost: a server (or a proxy) that
    /// accepts the stream and closes it at once is backed off from like one that refuses
    /// it, instead of being asked again at the first backoff every time.
    AfterLasting(Duration),
}

/// What is specific to one reconnecting SSE stream; [`ReconnectingSse`] does the rest.
pub(crate) trait SsePolicy: Send + 'static {
    /// What the stream yields.
    type Item: Send + 'static;
    /// The operation the requests, errors and logs are named after.
    const OPERATION: Operation;
    /// When the count of consecutive failures starts again.
    const FAILURES_RESET: FailuresReset;
    /// The debug log line of a lost or failed connection.
    const DISCONNECTED_LOG: &'static str;
    /// The error detail when the server ends the stream.
    const CLOSED_DETAIL: &'static str;
    /// The message of the end-of-file source error when the server ends the stream.
    const CLOSED_SOURCE: &'static str;

    /// The `GET` to (re)connect with; [`ReconnectingSse`] makes it an unreplayed
    /// streaming `text/event-stream` request.
    fn request(&self) -> Call;

    /// The wait before reconnecting after `failures` (at least 1) consecutive
    /// failures; `retry_hint` is the last `retry:` of the previous connection.
    fn reconnect_delay(
        &self,
        retry: RetryPolicy,
        failures: u32,
        retry_hint: Option<Duration>,
    ) -> Duration;

    /// The server accepted a (re)connect.
    fn connected(&mut self, queue: &mut VecDeque<Self::Item>);

    /// One SSE event arrived. An `Err` ends the stream with it (the rest of the chunk
    /// is not read).
    fn event(
        &mut self,
        client: &Client,
        event: &SseEvent,
        queue: &mut VecDeque<Self::Item>,
    ) -> Result<()>;

    /// A retryable failure, the `attempt`-th in a row; the connection is gone. An
    /// `Err` ends the stream with it; `Ok` reconnects (after the backoff).
    fn disconnected(
        &mut self,
        retry: RetryPolicy,
        attempt: u32,
        error: Error,
        queue: &mut VecDeque<Self::Item>,
    ) -> Result<()>;

    /// True when the stream is complete: it ends once its queued items are yielded.
    fn is_complete(&self) -> bool;
}

/// A reconnecting SSE stream: connects with the policy's request, reads with the
/// client's stream idle timeout, hands every parsed event to the policy, and on a
/// retryable failure (transport error, 5xx, idle timeout, server close) waits the
/// policy's backoff and reconnects. A non-retryable connect failure, or an `Err` from
/// the policy, is yielded once and ends the stream. Queued items are always yielded
/// before anything else.
pub(crate) struct ReconnectingSse<P: SsePolicy> {
    client: Client,
    policy: P,
    connection: Option<ByteStream>,
    parser: SseParser,
    queue: VecDeque<P::Item>,
    /// The error that ends the stream, yielded once the queued items are.
    ending: Option<Error>,
    failures: u32,
    /// When the open connection was accepted.
    connected_at: Option<Instant>,
    finished: bool,
}

impl<P: SsePolicy> ReconnectingSse<P> {
    /// The stream; nothing is sent before it is first polled.
    pub(crate) fn stream(
        client: Client,
        policy: P,
    ) -> Pin<Box<dyn Stream<Item = Result<P::Item>> + Send>> {
        let parser = SseParser::new(client.transport().max_stream_event_bytes());
        let state = Self {
            client,
            policy,
            connection: None,
            parser,
            queue: VecDeque::new(),
            ending: None,
            failures: 0,
            connected_at: None,
            finished: false,
        };
        Box::pin(futures::stream::unfold(state, Self::next_item))
    }

    async fn next_item(mut self) -> Option<(Result<P::Item>, Self)> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                return Some((Ok(item), self));
            }
            if let Some(err) = self.ending.take() {
                return Some((Err(err), self));
            }
            if self.finished || self.policy.is_complete() {
                return None;
            }
            let step = match self.connection.as_mut() {
                None => self.connect().await,
                Some(connection) => {
                    let idle = self.client.transport().stream_idle_timeout();
                    match tokio::time::timeout(idle, connection.next()).await {
                        Ok(read) => self.on_read(read),
                        Err(_) => self.fail(Error::Timeout {
                            operation: P::OPERATION,
                            after: idle,
                        }),
                    }
                }
            };
            if let Err(err) = step {
                // Items the same read queued before the error come first.
                self.finished = true;
                self.connection = None;
                self.ending = Some(err);
            }
        }
    }

    /// (Re)connect, after the backoff when the last attempt failed.
    async fn connect(&mut self) -> Result<()> {
        if self.failures > 0 {
            let hint = self.parser.retry_ms().map(Duration::from_millis);
            let delay = self.policy.reconnect_delay(
                self.client.transport().retry_policy(),
                self.failures,
                hint,
            );
            tokio::time::sleep(delay).await;
        }
        let mut call = self.policy.request();
        call.accept = "text/event-stream";
        call.streaming = true;
        call.replay = Replay::Never; // the stream reconnects itself
        match self.client.send(&call).await {
            Ok(answered) => {
                self.connection = Some(match answered.body {
                    AnswerBody::Stream(response) => Box::pin(response.bytes_stream()),
                    AnswerBody::Full(bytes) => Box::pin(futures::stream::iter([Ok(bytes)])),
                });
                self.parser = SseParser::new(self.client.transport().max_stream_event_bytes());
                if P::FAILURES_RESET == FailuresReset::OnConnect {
                    self.failures = 0;
                }
                self.connected_at = Some(Instant::now());
                self.policy.connected(&mut self.queue);
                Ok(())
            }
            Err(err) if err.is_retryable() => self.fail(err),
            Err(err) => Err(err),
        }
    }

    /// Handle what the open connection gave (within the idle timeout).
    fn on_read(&mut self, read: Option<reqwest::Result<Bytes>>) -> Result<()> {
        match read {
            Some(Ok(chunk)) => {
                if P::FAILURES_RESET == FailuresReset::OnData {
                    self.failures = 0;
                }
                let events = self
                    .parser
                    .feed(&chunk)
                    .map_err(|too_large| Error::Decode {
                        operation: P::OPERATION,
                        status: 200,
                        path: "event-stream".to_string(),
                        reason: format!(
                            "a server-sent event's data grew past {} bytes before the event ended \
                         (the client's max_stream_event_bytes); the stream is closed",
                            too_large.limit
                        ),
                        snippet: String::new(),
                    })?;
                for event in events {
                    self.policy.event(&self.client, &event, &mut self.queue)?;
                }
                Ok(())
            }
            Some(Err(err)) => {
                let err = self.client.transport().stream_error(P::OPERATION, err);
                self.fail(err)
            }
            None => self.fail(Error::Transport {
                operation: P::OPERATION,
                detail: P::CLOSED_DETAIL.to_string(),
                source: Arc::new(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    P::CLOSED_SOURCE,
                )),
            }),
        }
    }

    /// Drop the connection and count a retryable failure; `Err` when the policy gives up.
    fn fail(&mut self, err: Error) -> Result<()> {
        self.connection = None;
        if let (FailuresReset::AfterLasting(stable), Some(since)) =
            (P::FAILURES_RESET, self.connected_at.take())
        {
            if since.elapsed() >= stable {
                self.failures = 0;
            }
        }
        self.failures = self.failures.saturating_add(1);
        tracing::debug!(
            operation = %P::OPERATION,
            attempt = self.failures,
            error = err.kind().as_str(),
            "{}",
            P::DISCONNECTED_LOG
        );
        let retry = self.client.transport().retry_policy();
        self.policy
            .disconnected(retry, self.failures, err, &mut self.queue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    use gatehouse_wire::execution::{ExecutionEvent, EVENT_STREAM_EVENT_NAME};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use crate::WatchUpdate;

    /// A parser with the client's default event bound (the tests' default; a stream's
    /// parser takes the configured bound).
    impl Default for SseParser {
        fn default() -> Self {
            Self::new(crate::DEFAULT_MAX_STREAM_EVENT_BYTES)
        }
    }

    #[test]
    fn parses_events_split_across_chunks_and_line_ends() {
        let mut p = SseParser::default();
        let mut events = Vec::new();
        let stream = b"retry: 1500\r\n\r\n: heartbeat\n\nevent: ready\ndata: {\"type\":\"ready\"}\r\n\r\nevent: interaction\rdata: {\"a\":\rdata: 1}\r\r";
        for chunk in stream.chunks(3) {
            events.extend(p.feed(chunk).unwrap());
        }
        assert_eq!(p.retry_ms(), Some(1500));
        assert_eq!(events.len(), 2, "{events:?}");
        assert_eq!(events[0].event, "ready");
        assert_eq!(events[0].data, "{\"type\":\"ready\"}");
        assert_eq!(events[1].event, "interaction");
        assert_eq!(events[1].data, "{\"a\":\n1}");
    }

    #[test]
    fn data_without_event_name_is_a_message() {
        let mut p = SseParser::default();
        let events = p.feed(b"id: 7\ndata:x\n\n").unwrap();
        assert_eq!(
            events,
            vec![SseEvent {
                event: "message".into(),
                data: "x".into(),
                id: Some("7".into())
            }]
        );
    }

    /// A loopback server answering connection `i` with a 200 `text/event-stream`
    /// carrying `bodies[i]` (the last body for every later one), then closing it.
    /// Returns its base URL and the request targets it saw.
    async fn scripted(bodies: Vec<String>) -> (String, Arc<Mutex<Vec<String>>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let targets = Arc::new(Mutex::new(Vec::new()));
        let seen = targets.clone();
        tokio::spawn(async move {
            let mut index = 0;
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let target = head.split_whitespace().nth(1).unwrap_or("").to_string();
                seen.lock().unwrap().push(target);
                let body = &bodies[index.min(bodies.len() - 1)];
                index += 1;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{body}"
                );
                let _ = socket.write_all(answer.as_bytes()).await;
                let _ = socket.shutdown().await;
            }
        });
        (url, targets)
    }

    fn client(url: &str, max_attempts: u32) -> Client {
        Client::builder(url)
            .retry_policy(RetryPolicy {
                max_attempts,
                initial_backoff: Duration::from_millis(1),
                max_backoff: Duration::from_millis(1),
            })
            .build()
            .unwrap()
    }

    fn execution_event(sequence: u64, kind: &str) -> String {
        format!(
            "event: {EVENT_STREAM_EVENT_NAME}\ndata: {{\"sequence\":{sequence},\"type\":\"{kind}\",\"occurredAt\":\"2026-01-01T00:00:00Z\"}}\n\n"
        )
    }

    async fn collect_events(client: &Client) -> Vec<Result<ExecutionEvent>> {
        let stream = client.execution().watch_events("room-1", "es-1", None);
        tokio::time::timeout(Duration::from_secs(10), stream.collect::<Vec<_>>())
            .await
            .expect("the stream ends")
    }

    #[test]
    fn an_event_past_the_bound_is_refused_as_soon_as_it_outgrows_it() {
        let mut p = SseParser::new(10);
        // Exactly at the bound (4 + 1 + 4 + 1 bytes): delivered, and the count restarts.
        assert_eq!(p.feed(b"data:abcd\ndata:efgh\n\n").unwrap().len(), 1);
        assert_eq!(p.feed(b"data:0123\n\n").unwrap().len(), 1);
        // Past it, with no blank line ever coming: refused at the line that crosses it.
        assert_eq!(p.feed(b"data:abcd\ndata:ef").unwrap(), vec![]);
        assert_eq!(p.feed(b"ghi\n"), Err(EventTooLarge { limit: 10 }));
    }

    /// A hostile server: a 200 event stream of `data:` lines that never ends an event,
    /// written until the client goes away (at most 256 MiB). Returns its URL and the
    /// bytes it managed to write before the client closed the connection.
    async fn endless_event() -> (String, tokio::sync::oneshot::Receiver<usize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (sent_tx, sent_rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let mut head = [0u8; 4096];
            let _ = socket.read(&mut head).await;
            let mut sent = 0usize;
            let start = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\nevent: ready\ndata: {\"type\":\"ready\"}\n\n";
            if socket.write_all(start).await.is_ok() {
                let line = format!("data: {}\n", "x".repeat(1023));
                while sent < 256 << 20 {
                    if socket.write_all(line.as_bytes()).await.is_err() {
                        break;
                    }
                    sent += line.len();
                }
            }
            let _ = sent_tx.send(sent);
        });
        (url, sent_rx)
    }

    #[tokio::test]
    async fn a_server_that_never_ends_an_event_ends_the_watch_with_a_typed_error() {
        let (url, sent) = endless_event().await;
        let client = Client::builder(&url)
            .max_stream_event_bytes(64 * 1024)
            .build()
            .unwrap();
        let updates: Vec<_> = tokio::time::timeout(
            Duration::from_secs(20),
            client
                .interactions()
                .watch("48268312-0000-7000-8000-000000000000")
                .collect::<Vec<_>>(),
        )
        .await
        .expect("the watch ends by itself");
        let Some(Err(error)) = updates.last() else {
            panic!("the watch did not end with an error: {updates:?}");
        };
        assert!(
            matches!(error, Error::Decode { reason, .. } if reason.contains("65536 bytes")),
            "{error:?}"
        );
        assert!(!error.is_retryable());
        // One connection, closed by the client: the server wrote a bounded amount (what
        // the client read past the bound, plus the sockets' buffers), not 256 MiB.
        let sent = tokio::time::timeout(Duration::from_secs(20), sent)
            .await
            .expect("the server saw the client go")
            .unwrap();
        assert!(
            sent < 32 << 20,
            "the server wrote {sent} bytes before the client left"
        );
    }

    #[tokio::test]
    async fn execution_stream_resumes_after_the_last_sequence_and_ends_when_reconciled() {
        let (url, targets) = scripted(vec![
            execution_event(1, "session_opened") + &execution_event(2, "intervention_requested"),
            // The reconnect overlaps (2 again): delivered once.
            execution_event(2, "intervention_requested")
                + &execution_event(3, "session_reconciled"),
        ])
        .await;
        let events = collect_events(&client(&url, 3)).await;
        let sequences: Vec<u64> = events.into_iter().map(|e| e.unwrap().sequence).collect();
        assert_eq!(sequences, vec![1, 2, 3]);
        let targets = targets.lock().unwrap().clone();
        assert_eq!(targets.len(), 2, "{targets:?}");
        assert!(targets[0].ends_with("/events/stream"), "{targets:?}");
        assert!(
            targets[1].ends_with("/events/stream?after=2"),
            "{targets:?}"
        );
    }

    #[tokio::test]
    async fn execution_stream_gives_up_after_max_attempts_failures_without_data() {
        // Closed without a byte, then one event (the count restarts), then closed
        // without a byte every time: 3 failures in a row end the stream.
        let (url, targets) = scripted(vec![
            String::new(),
            execution_event(1, "session_opened"),
            String::new(),
        ])
        .await;
        let mut events = collect_events(&client(&url, 3)).await;
        assert_eq!(events.len(), 2, "{events:?}");
        let err = events.pop().unwrap().unwrap_err();
        assert!(
            matches!(
                &err,
                Error::Transport { operation: Operation::WatchExecutionEvents, detail, .. }
                    if detail.contains("before the session was reconciled")
            ),
            "{err:?}"
        );
        assert_eq!(events.pop().unwrap().unwrap().sequence, 1);
        let targets = targets.lock().unwrap().clone();
        // 1 failure, a connect with data then its close (1 again), 2 more failures.
        assert_eq!(targets.len(), 4, "{targets:?}");
        assert!(targets[1].ends_with("/events/stream"), "{targets:?}");
        assert!(targets[3].ends_with("after=1"), "{targets:?}");
    }

    #[tokio::test]
    async fn execution_stream_ends_with_a_decode_error_on_a_garbage_event() {
        let (url, targets) = scripted(vec![format!(
            "event: {EVENT_STREAM_EVENT_NAME}\ndata: not json\n\n"
        )])
        .await;
        let events = collect_events(&client(&url, 3)).await;
        assert_eq!(events.len(), 1, "{events:?}");
        assert!(
            matches!(
                &events[0],
                Err(Error::Decode {
                    operation: Operation::WatchExecutionEvents,
                    status: 200,
                    ..
                })
            ),
            "{events:?}"
        );
        assert_eq!(targets.lock().unwrap().len(), 1);
    }

    /// One AgentPlat frame: `id: stream:n`, `event: agentplat.<type>`, the envelope.
    fn frame(n: u64, envelope: serde_json::Value) -> String {
        let kind = envelope["type"].as_str().unwrap_or("x").to_string();
        format!("id: stream:{n}\nevent: agentplat.{kind}\ndata: {envelope}\n\n")
    }

    /// The `n`-th frame of a connection carrying session event `sequence`.
    fn enveloped(n: u64, sequence: u64, kind: &str) -> String {
        frame(
            n,
            serde_json::json!({"version": 1, "sequence": n, "type": "execution_session_event",
                "payload": {"type": kind, "occurredAt": "2026-01-01T00:00:00Z", "sequence": sequence}}),
        )
    }

    #[tokio::test]
    async fn envelope_stream_resumes_from_the_payload_sequence_not_the_frame_number() {
        let (url, targets) = scripted(vec![
            // Frame numbers restart at 1 on each connection; the session events go on.
            ": heartbeat\n\n".to_string()
                + &enveloped(1, 1, "session_opened")
                + &enveloped(2, 2, "intervention_requested")
                + &frame(3, serde_json::json!({"version": 1, "sequence": 3, "type": "progress", "content": "skipped"})),
            enveloped(1, 2, "intervention_requested")
                + &enveloped(2, 3, "intervention_applied")
                + &enveloped(3, 4, "session_reconciled"),
        ])
        .await;
        let events = collect_events(&client(&url, 3)).await;
        let sequences: Vec<u64> = events.into_iter().map(|e| e.unwrap().sequence).collect();
        assert_eq!(sequences, vec![1, 2, 3, 4]);
        let targets = targets.lock().unwrap().clone();
        assert_eq!(targets.len(), 2, "{targets:?}");
        assert!(
            targets[1].ends_with("/events/stream?after=2"),
            "{targets:?}"
        );
    }

    #[tokio::test]
    async fn a_failed_frame_is_a_typed_error_that_ends_the_stream() {
        let (url, targets) = scripted(vec![enveloped(1, 1, "session_opened")
            + &frame(
                2,
                serde_json::json!({"version": 1, "sequence": 2, "type": "failed", "content": "Stream failed"}),
            )])
        .await;
        let events = collect_events(&client(&url, 3)).await;
        assert_eq!(events.len(), 2, "{events:?}");
        assert_eq!(events[0].as_ref().unwrap().sequence, 1);
        match &events[1] {
            Err(Error::StreamFailed { operation, detail }) => {
                assert_eq!(*operation, Operation::WatchExecutionEvents);
                assert_eq!(detail, "Stream failed");
            }
            other => panic!("{other:?}"),
        }
        assert!(!events[1].as_ref().unwrap_err().is_retryable());
        assert_eq!(
            targets.lock().unwrap().len(),
            1,
            "no reconnect after a failed frame"
        );

        // Gatehouse's server names a missing session in the failure frame.
        let (url, _) = scripted(vec![frame(
            1,
            serde_json::json!({"version": 1, "sequence": 1, "type": "failed",
                "content": "Stream failed", "gatehouseCode": "NOT_FOUND"}),
        )])
        .await;
        let events = collect_events(&client(&url, 3)).await;
        assert!(
            matches!(&events[..], [Err(Error::NotFound { .. })]),
            "{events:?}"
        );
    }

    #[tokio::test]
    async fn an_unsupported_envelope_version_is_named_in_the_error() {
        let (url, _) = scripted(vec![frame(
            1,
            serde_json::json!({"version": 2, "sequence": 1, "type": "execution_session_event",
                "payload": {"type": "session_opened", "occurredAt": "t", "sequence": 1}}),
        )])
        .await;
        let events = collect_events(&client(&url, 3)).await;
        match &events[..] {
            [Err(Error::Decode { path, reason, .. })] => {
                assert_eq!(path, "version");
                assert!(reason.contains("version 2"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn an_unknown_event_type_in_an_envelope_is_kept() {
        let (url, _) = scripted(vec![
            enveloped(1, 1, "intervention_escalated") + &enveloped(2, 2, "session_reconciled"),
        ])
        .await;
        let events = collect_events(&client(&url, 3)).await;
        let kinds: Vec<String> = events
            .into_iter()
            .map(|e| e.unwrap().event_type.as_str().to_string())
            .collect();
        assert_eq!(kinds, vec!["intervention_escalated", "session_reconciled"]);
    }

    #[tokio::test]
    async fn watch_counts_a_stream_cut_at_once_as_one_more_failure() {
        let (url, _targets) = scripted(vec![String::new()]).await;
        let c = client(&url, 1);
        let mut watch = c.interactions().watch("s-1");
        let mut attempts = Vec::new();
        while attempts.len() < 6 {
            let update = tokio::time::timeout(Duration::from_secs(5), watch.next())
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            match update {
                WatchUpdate::Connected => attempts.push(0),
                WatchUpdate::Reconnecting { attempt, error } => {
                    assert!(matches!(error, Error::Transport { .. }), "{error:?}");
                    attempts.push(attempt);
                }
                WatchUpdate::Event(event) => panic!("unexpected {event:?}"),
            }
        }
        // Accepted then cut at once: no connection lasted, so the failures (and the
        // backoff) keep growing instead of starting over at every connect.
        assert_eq!(attempts, vec![0, 1, 0, 2, 0, 3]);
    }
}
