//! The interaction watch stream (`GET /api/sessions/streams/watch`, SSE): typed
//! events, reconnect with backoff, a revalidate signal after every (re)connect.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use gatehouse_wire::interaction::WatchEvent;
use rand::Rng;

use crate::client::Client;
use crate::error::{Error, Operation, Result};
use crate::retry::RetryPolicy;
use crate::sse::{FailuresReset, ReconnectingSse, SseEvent, SsePolicy};
use crate::transport::Call;

/// Longest wait between two reconnect attempts of a watch.
///
/// ```
/// assert_eq!(gatehouse_client::MAX_WATCH_RECONNECT_DELAY.as_secs(), 30);
/// ```
pub const MAX_WATCH_RECONNECT_DELAY: Duration = Duration::from_secs(30);

/// How long a watch connection must have lasted for its loss to start the backoff over.
/// A shorter one (a server or proxy that accepts the stream and cuts it at once) counts
/// as one more failure in a row, so the waits keep growing to
/// [`MAX_WATCH_RECONNECT_DELAY`] instead of reconnecting many times a second.
///
/// ```
/// assert_eq!(gatehouse_client::WATCH_STABLE_AFTER.as_secs(), 10);
/// ```
pub const WATCH_STABLE_AFTER: Duration = Duration::from_secs(10);

/// One item of a [`WatchStream`].
///
/// ```
/// use gatehouse_client::WatchUpdate;
/// let update = WatchUpdate::Connected;
/// assert!(matches!(update, WatchUpdate::Connected));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
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

/// A `Stream` of [`WatchUpdate`]s for one session.
///
/// - Yields [`WatchUpdate::Connected`] after every successful (re)connect: revalidate.
/// - Reconnects on transport errors, 5xx, a server close and an idle connection
///   (no byte, heartbeats included, for the client's stream idle timeout), with
///   jittered exponential backoff from the retry policy's `initial_backoff` up to
///   [`MAX_WATCH_RECONNECT_DELAY`] (and at least the server's `retry:` hint),
///   announcing each with [`WatchUpdate::Reconnecting`]. The failures in a row (and the
///   backoff) start over only when a connection had lasted [`WATCH_STABLE_AFTER`].
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
        Self {
            inner: ReconnectingSse::stream(client, Watch { session_id }),
        }
    }
}

/// What is specific to the watch: announce every (re)connect, never give up, back
/// off at most [`MAX_WATCH_RECONNECT_DELAY`] (and at least the server's `retry:`), and
/// start the backoff over only after a connection that lasted [`WATCH_STABLE_AFTER`].
struct Watch {
    session_id: String,
}

impl SsePolicy for Watch {
    type Item = WatchUpdate;
    const OPERATION: Operation = Operation::WatchInteractions;
    const FAILURES_RESET: FailuresReset = FailuresReset::AfterLasting(WATCH_STABLE_AFTER);
    const DISCONNECTED_LOG: &'static str = "watch disconnected; reconnecting";
    const CLOSED_DETAIL: &'static str = "the server closed the watch stream";
    const CLOSED_SOURCE: &'static str = "watch stream closed by the server";

    fn request(&self) -> Call {
        let mut call = Call::new(Self::OPERATION, &[]);
        call.query.push(("session_id", self.session_id.clone()));
        call
    }

    fn reconnect_delay(
        &self,
        retry: RetryPolicy,
        failures: u32,
        retry_hint: Option<Duration>,
    ) -> Duration {
        let hint = retry_hint
            .unwrap_or_default()
            .min(MAX_WATCH_RECONNECT_DELAY);
        watch_backoff(retry.initial_backoff, failures).max(hint)
    }

    fn connected(&mut self, queue: &mut VecDeque<WatchUpdate>) {
        queue.push_back(WatchUpdate::Connected);
    }

    fn event(
        &mut self,
        _client: &Client,
        event: &SseEvent,
        queue: &mut VecDeque<WatchUpdate>,
    ) -> Result<()> {
        if let Some(event) = to_watch_event(event) {
            queue.push_back(WatchUpdate::Event(event));
        }
        Ok(())
    }

    fn disconnected(
        &mut self,
        _retry: RetryPolicy,
        attempt: u32,
        error: Error,
        queue: &mut VecDeque<WatchUpdate>,
    ) -> Result<()> {
        queue.push_back(WatchUpdate::Reconnecting { attempt, error });
        Ok(())
    }

    fn is_complete(&self) -> bool {
        false
    }
}

/// The wait after `failures` (from 1) failures in a row: `initial * 2^(failures-1)`,
/// capped at [`MAX_WATCH_RECONNECT_DELAY`], jittered in its upper half so that many
/// watchers cut at once neither reconnect together nor at once.
fn watch_backoff(initial: Duration, failures: u32) -> Duration {
    let exp = failures.saturating_sub(1).min(16);
    let cap = initial
        .max(Duration::from_millis(1))
        .saturating_mul(1u32 << exp)
        .min(MAX_WATCH_RECONNECT_DELAY);
    let half = cap / 2;
    let spread = u64::try_from(half.as_millis()).unwrap_or(u64::MAX);
    half + Duration::from_millis(rand::thread_rng().gen_range(0..=spread))
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
    fn the_backoff_grows_to_the_ceiling_and_never_drops_below_half_of_it() {
        let initial = Duration::from_millis(100);
        for _ in 0..50 {
            let first = watch_backoff(initial, 1);
            assert!(
                (Duration::from_millis(50)..=initial).contains(&first),
                "{first:?}"
            );
            let fifth = watch_backoff(initial, 5);
            assert!(fifth >= Duration::from_millis(800), "{fifth:?}");
            let late = watch_backoff(initial, 40);
            assert!(
                (MAX_WATCH_RECONNECT_DELAY / 2..=MAX_WATCH_RECONNECT_DELAY).contains(&late),
                "{late:?}"
            );
        }
    }

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
