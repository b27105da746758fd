//! The interaction watch stream (`GET /api/sessions/streams/watch`, SSE): typed
//! events, reconnect with backoff, a revalidate signal after every (re)connect.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use gatehouse_wire::interaction::WatchEvent;
use reqwest::Method;

use crate::client::{error_kind, AnswerBody, Call, Client, Replay};
use crate::error::{self, Error, Operation, Result};
use crate::sse::{SseEvent, SseParser};

/// Longest wait between two reconnect attempts of a watch.
///
/// ```
/// assert_eq!(gatehouse_client::MAX_WATCH_RECONNECT_DELAY.as_secs(), 30);
/// ```
pub const MAX_WATCH_RECONNECT_DELAY: Duration = Duration::from_secs(30);

/// One item of a [`WatchStream`].
///
/// ```
/// use gatehouse_client::WatchUpdate;
/// let update = WatchUpdate::Connected;
/// assert!(matches!(update, WatchUpdate::Connected));
/// ```
#[derive(Debug, Clone)]
pub enum WatchUpdate {
    /// The stream is (re)connected. Revalidate now (re-query the session's gates):
    /// events are notifications, not a log, and some may have been missed.
    Connected,
    /// A typed event from the server.
    Event(WatchEvent),
    /// The connection failed or dropped; the stream waits with backoff and
    /// reconnects (then yields [`WatchUpdate::Connected`]). `attempt` counts the
    /// consecutive failures.
    Reconnecting {
        /// Consecutive failures so far (1 for the first).
        attempt: u32,
        /// What went wrong.
        error: Error,
    },
}

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

struct State {
    client: Client,
    session_id: String,
    connection: Option<ByteStream>,
    parser: SseParser,
    queue: VecDeque<WatchUpdate>,
    failures: u32,
    finished: bool,
}

/// A `Stream` of [`WatchUpdate`]s for one session.
///
/// - Yields [`WatchUpdate::Connected`] after every successful (re)connect: revalidate.
/// - Reconnects on transport errors, 5xx, a server close and an idle connection
///   (no byte, heartbeats included, for the client's stream idle timeout), with
///   jittered backoff capped at [`MAX_WATCH_RECONNECT_DELAY`] (and at least the
///   server's `retry:` hint), announcing each with [`WatchUpdate::Reconnecting`].
/// - Yields one `Err` and ends on a failure a retry cannot fix (401, 403, 400 bad
///   session id, an absent capability).
/// - Dropping it closes the connection; nothing keeps running.
///
/// ```no_run
/// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
/// use futures::StreamExt;
/// use gatehouse_client::WatchUpdate;
/// use gatehouse_wire::interaction::{InteractionStatus, WatchEvent};
/// let mut watch = client.interactions().watch("48268312-0000-7000-8000-000000000000");
/// while let Some(update) = watch.next().await {
///     if let WatchUpdate::Event(WatchEvent::Interaction { status: InteractionStatus::Pending, .. }) = update? {
///         println!("a gate opened");
///         break;
///     }
/// }
/// # Ok(()) }
/// ```
pub struct WatchStream {
    inner: Pin<Box<dyn Stream<Item = Result<WatchUpdate>> + Send>>,
}

impl std::fmt::Debug for WatchStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchStream").finish_non_exhaustive()
    }
}

impl Stream for WatchStream {
    type Item = Result<WatchUpdate>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl WatchStream {
    pub(crate) fn new(client: Client, session_id: String) -> Self {
        let state = State {
            client,
            session_id,
            connection: None,
            parser: SseParser::default(),
            queue: VecDeque::new(),
            failures: 0,
            finished: false,
        };
        Self {
            inner: Box::pin(futures::stream::unfold(state, next_item)),
        }
    }
}

async fn next_item(mut st: State) -> Option<(Result<WatchUpdate>, State)> {
    loop {
        if let Some(update) = st.queue.pop_front() {
            return Some((Ok(update), st));
        }
        if st.finished {
            return None;
        }
        match st.connection.as_mut() {
            None => {
                if st.failures > 0 {
                    tokio::time::sleep(reconnect_delay(&st)).await;
                }
                match connect(&st.client, &st.session_id).await {
                    Ok(bytes) => {
                        st.connection = Some(bytes);
                        st.parser = SseParser::default();
                        st.failures = 0;
                        st.queue.push_back(WatchUpdate::Connected);
                    }
                    Err(err) if err.is_retryable() => st.fail(err),
                    Err(err) => {
                        st.finished = true;
                        return Some((Err(err), st));
                    }
                }
            }
            Some(connection) => {
                let idle = st.client.inner.stream_idle_timeout;
                match tokio::time::timeout(idle, connection.next()).await {
                    Ok(Some(Ok(chunk))) => {
                        for event in st.parser.feed(&chunk) {
                            if let Some(event) = to_watch_event(&event) {
                                st.queue.push_back(WatchUpdate::Event(event));
                            }
                        }
                    }
                    Ok(Some(Err(err))) => {
                        let timeout = st.client.inner.timeout;
                        st.fail(error::transport_error(
                            Operation::WatchInteractions,
                            err,
                            timeout,
                        ));
                    }
                    Ok(None) => st.fail(Error::Transport {
                        operation: Operation::WatchInteractions,
                        detail: "the server closed the watch stream".to_string(),
                        source: std::sync::Arc::new(std::io::Error::new(
                            std::io::ErrorKind::UnexpectedEof,
                            "watch stream closed by the server",
                        )),
                    }),
                    Err(_) => st.fail(Error::Timeout {
                        operation: Operation::WatchInteractions,
                        after: idle,
                    }),
                }
            }
        }
    }
}

impl State {
    fn fail(&mut self, err: Error) {
        self.connection = None;
        self.failures = self.failures.saturating_add(1);
        tracing::debug!(
            operation = %Operation::WatchInteractions,
            attempt = self.failures,
            error = error_kind(&err),
            "watch disconnected; reconnecting"
        );
        self.queue.push_back(WatchUpdate::Reconnecting {
            attempt: self.failures,
            error: err,
        });
    }
}

fn reconnect_delay(st: &State) -> Duration {
    let policy = st.client.inner.retry;
    let mut policy = policy;
    policy.max_backoff = policy
        .max_backoff
        .max(Duration::from_millis(1))
        .min(MAX_WATCH_RECONNECT_DELAY);
    let backoff = policy.backoff(st.failures, None);
    let hint = st
        .parser
        .retry_ms()
        .map(Duration::from_millis)
        .unwrap_or_default()
        .min(MAX_WATCH_RECONNECT_DELAY);
    backoff.max(hint)
}

async fn connect(client: &Client, session_id: &str) -> Result<ByteStream> {
    let mut call = Call::new(
        Operation::WatchInteractions,
        Method::GET,
        &["api", "sessions", "streams", "watch"],
    );
    call.query.push(("session_id", session_id.to_string()));
    call.accept = "text/event-stream";
    call.streaming = true;
    call.replay = Replay::Never; // the stream reconnects itself
    let answered = client.send(&call).await?;
    match answered.body {
        AnswerBody::Stream(response) => Ok(Box::pin(response.bytes_stream())),
        AnswerBody::Full(bytes) => Ok(Box::pin(futures::stream::iter([Ok(bytes)]))),
    }
}

/// Type an SSE event; unknown event kinds are skipped (a newer server may send more).
fn to_watch_event(event: &SseEvent) -> Option<WatchEvent> {
    let mut value = if event.data.trim().is_empty() {
        serde_json::Value::Object(Default::default())
    } else {
        match serde_json::from_str::<serde_json::Value>(&event.data) {
            Ok(value) => value,
            Err(_) => {
                tracing::warn!(event = %event.event, "watch event data is not JSON; skipped");
                return None;
            }
        }
    };
    if let Some(obj) = value.as_object_mut() {
        if !obj.contains_key("type") {
            obj.insert(
                "type".to_string(),
                serde_json::Value::String(event.event.clone()),
            );
        }
    }
    match gatehouse_wire::from_json_value::<WatchEvent>(value) {
        Ok(typed) => Some(typed),
        Err(err) => {
            tracing::debug!(event = %event.event, path = %err.path, "watch event not understood; skipped");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_wire::interaction::InteractionStatus;

    #[test]
    fn events_are_typed_with_the_event_name_as_fallback() {
        let ev = SseEvent {
            event: "interaction".into(),
            data: r#"{"session_id":"s","status":"pending"}"#.into(),
            id: None,
        };
        assert_eq!(
            to_watch_event(&ev),
            Some(WatchEvent::Interaction {
                session_id: "s".into(),
                status: InteractionStatus::Pending,
                interaction_id: None
            })
        );
        let ready = SseEvent {
            event: "ready".into(),
            data: String::new(),
            id: None,
        };
        assert_eq!(
            to_watch_event(&ready),
            Some(WatchEvent::Ready { session_id: None })
        );
        let unknown = SseEvent {
            event: "future-thing".into(),
            data: "{}".into(),
            id: None,
        };
        assert_eq!(to_watch_event(&unknown), None);
    }
}
