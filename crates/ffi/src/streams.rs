//! Pull streams: a session's watch and an execution session's events as objects whose
//! `next()` the app awaits, the base of each language's own async sequence (Swift
//! `AsyncThrowingStream`, Kotlin `Flow`, Python `async for`; the hand-written layers in
//! `bindings/`).
//!
//! Nothing is read ahead: the connection is read only while a `next()` is pending, so a
//! slow consumer leaves the server's bytes in the socket (the operating system's buffers,
//! a few hundred KiB at most) and never makes this library's memory grow. The stream is
//! cold: the first `next()` connects. `cancel()` (or dropping the object) ends a pending
//! `next()` with `None` and closes the connection, which ends the server-side watch.

use std::pin::Pin;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use gatehouse_client::{
    Client, SessionEventUpdate as ClientEventUpdate, WatchUpdate as ClientUpdate,
};
use tokio::sync::{watch, Mutex};

use crate::error::{GatehouseError, GatehouseErrorKind};
use crate::json::JsonText;
use crate::records::ExecutionEvent;
use crate::runtime;
use crate::watch::WatchEvent;

/// Why a watch is reconnecting: the failure, as an [`ApproveAllFailure`](crate::ApproveAllFailure)
/// names one (kind, sentence, detail, whether a retry helps).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct StreamFailure {
    /// What kind of failure.
    pub kind: GatehouseErrorKind,
    /// The error's sentence.
    pub msg: String,
    /// The error's detail.
    pub details: Option<String>,
    /// True when a retry may succeed (the stream retries by itself).
    pub retryable: bool,
}

impl From<GatehouseError> for StreamFailure {
    fn from(error: GatehouseError) -> Self {
        Self {
            kind: error.kind(),
            msg: error.msg().to_string(),
            details: error.details().map(str::to_string),
            retryable: error.retryable(),
        }
    }
}

/// One element of a session's watch sequence.
// The gate a variant carries is large; uniffi lowers enums by value (no `Box` field), and
// an event is built once per server frame, so the size costs nothing that matters.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Enum)]
pub enum WatchUpdate {
    /// The stream (re)connected: re-query the session's gates now (events are
    /// notifications, not a log; some may have been missed while disconnected).
    Connected,
    /// An event from the server.
    Event {
        /// The event.
        event: WatchEvent,
    },
    /// The connection failed or dropped; the stream reconnects with backoff by itself.
    Reconnecting {
        /// Consecutive failures so far (1 for the first).
        attempt: i32,
        /// What went wrong.
        failure: StreamFailure,
    },
}

type Items<T> = Pin<Box<dyn Stream<Item = Result<T, GatehouseError>> + Send>>;

/// The shared part of both pull streams: the source (taken on end or cancel) and the
/// cancel signal a pending `next()` selects on.
struct Pull<T> {
    source: Arc<Mutex<Option<Items<T>>>>,
    cancel: watch::Sender<bool>,
}

impl<T: Send + 'static> Pull<T> {
    fn new(source: Items<T>) -> Self {
        Self {
            source: Arc::new(Mutex::new(Some(source))),
            cancel: watch::channel(false).0,
        }
    }

    /// The next item; `None` once ended or cancelled; a terminal failure is returned once,
    /// then `None`.
    async fn next(&self, operation: &'static str) -> Result<Option<T>, GatehouseError> {
        let source = Arc::clone(&self.source);
        let mut cancelled = self.cancel.subscribe();
        runtime::run(operation, async move {
            let mut slot = source.lock().await;
            // Cancelled before this call: the source may still be held here when the
            // cancel raced a `next()` the caller abandoned; drop it now.
            if *cancelled.borrow() {
                *slot = None;
                return Ok(None);
            }
            let Some(items) = slot.as_mut() else {
                return Ok(None);
            };
            let item = tokio::select! {
                _ = cancelled.wait_for(|cancelled| *cancelled) => None,
                item = items.next() => Some(item),
            };
            match item {
                Some(Some(Ok(value))) => Ok(Some(value)),
                Some(Some(Err(error))) => {
                    *slot = None;
                    Err(error)
                }
                // Ended, or cancelled while waiting: drop the source (closes the connection).
                Some(None) | None => {
                    *slot = None;
                    Ok(None)
                }
            }
        })
        .await
    }

    fn cancel(&self) {
        self.cancel.send_replace(true);
        // Drop the source (closing the connection) now when no `next()` holds it.
        // Otherwise a pending `next()` sees the signal and drops it; and should that
        // `next()` have just been abandoned by its caller (a cancelled coroutine or task
        // frees it while it still holds the lock), a task on the runtime drops the source
        // as soon as the lock is free, so the connection never outlives the cancel.
        match self.source.try_lock() {
            Ok(mut slot) => *slot = None,
            Err(_) => {
                let source = Arc::clone(&self.source);
                if let Ok(handle) = runtime::handle() {
                    handle.spawn(async move {
                        *source.lock().await = None;
                    });
                }
            }
        }
    }
}

/// A session's gates as a pull stream: await [`SessionWatch::next`] until it returns
/// `None`. Cold (the first `next()` connects), nothing read ahead, reconnects by itself
/// (each reconnect is a [`WatchUpdate::Reconnecting`] then [`WatchUpdate::Connected`]);
/// a failure a retry cannot fix (unauthorized, bad session id, no watch capability) is
/// thrown once, then the stream is over. The Swift, Kotlin and Python async sequences
/// are built on it.
#[derive(uniffi::Object)]
pub struct SessionWatch {
    pull: Pull<WatchUpdate>,
}

impl std::fmt::Debug for SessionWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionWatch")
            .field("cancelled", &*self.pull.cancel.borrow())
            .finish_non_exhaustive()
    }
}

impl SessionWatch {
    pub(crate) fn open(client: &Client, session_id: &str) -> Self {
        let reader = client.clone();
        let updates = client
            .interactions()
            .watch(session_id)
            .filter_map(move |item| {
                let reader = reader.clone();
                async move {
                    match item {
                        Ok(ClientUpdate::Connected) => Some(Ok(WatchUpdate::Connected)),
                        Ok(ClientUpdate::Event(event)) => Some(Ok(WatchUpdate::Event {
                            event: WatchEvent::with_gate(event, &reader).await,
                        })),
                        Ok(ClientUpdate::Reconnecting { attempt, error }) => {
                            Some(Ok(WatchUpdate::Reconnecting {
                                attempt: crate::records::to_i32(attempt),
                                failure: GatehouseError::from(error).into(),
                            }))
                        }
                        // An update newer than this crate carries nothing to hear.
                        Ok(_) => None,
                        Err(error) => Some(Err(GatehouseError::from(error))),
                    }
                }
            });
        Self {
            pull: Pull::new(Box::pin(updates)),
        }
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl SessionWatch {
    /// The next update, or `None` when the stream is over (cancelled, or ended by the
    /// server after a failure already thrown). Call from one task at a time (a second
    /// concurrent call waits for the first).
    pub async fn next(&self) -> Result<Option<WatchUpdate>, GatehouseError> {
        self.pull.next("session_watch_next").await
    }

    /// Stop: a pending `next()` returns `None`, the connection closes, every later
    /// `next()` returns `None`. Calling it twice is harmless.
    pub fn cancel(&self) {
        self.pull.cancel();
    }
}

/// An execution session's events as a pull stream, each once in sequence order; ends
/// (`None`) after the session is reconciled. Cold, nothing read ahead, reconnects by
/// itself resuming after the last event seen.
#[derive(uniffi::Object)]
pub struct ExecutionEventWatch {
    pull: Pull<ExecutionEvent>,
}

impl std::fmt::Debug for ExecutionEventWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecutionEventWatch")
            .field("cancelled", &*self.pull.cancel.borrow())
            .finish_non_exhaustive()
    }
}

impl ExecutionEventWatch {
    pub(crate) fn open(
        client: &Client,
        room_id: &str,
        session_id: &str,
        after: Option<u64>,
    ) -> Self {
        let events = client
            .execution()
            .watch_events(room_id, session_id, after)
            .map(|item| match item {
                Ok(event) => Ok(ExecutionEvent::from(&event)),
                Err(error) => Err(GatehouseError::from(error)),
            });
        Self {
            pull: Pull::new(Box::pin(events)),
        }
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl ExecutionEventWatch {
    /// The next event, or `None` when the log is complete (the session was reconciled)
    /// or the stream was cancelled. Call from one task at a time.
    pub async fn next(&self) -> Result<Option<ExecutionEvent>, GatehouseError> {
        self.pull.next("execution_events_next").await
    }

    /// Stop: a pending `next()` returns `None`, the connection closes.
    pub fn cancel(&self) {
        self.pull.cancel();
    }
}

/// One durable event of a session's log.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct SessionEvent {
    /// Its place in the log (resume after it); none when the host gave none.
    pub sequence: Option<i64>,
    /// The execution (turn) it belongs to.
    pub execution_id: String,
    /// Its type as the host spells it (`execution.stopped`, `message.completed`, ...).
    pub event_type: String,
    /// When it happened; absent when the host's time is not RFC 3339.
    pub created_at: Option<std::time::SystemTime>,
    /// Its payload, as JSON text.
    pub payload: JsonText,
}

/// One item of a [`SessionEventWatch`].
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Enum)]
pub enum SessionEventUpdate {
    /// (Re)connected, replaying the durable events after `after`.
    Connected {
        /// The last sequence seen before this connection.
        after: i64,
    },
    /// A durable event (each sequence once, across reconnects).
    Event {
        /// The event.
        event: SessionEvent,
    },
    /// The replay is done; live frames follow.
    Ready,
    /// A live frame (not replayed).
    Frame {
        /// The execution it belongs to.
        execution_id: String,
        /// Its type (`message.delta`, ...).
        frame_type: String,
        /// Its payload, as JSON text.
        payload: JsonText,
    },
    /// The connection dropped; the stream reconnects after the last sequence seen.
    Reconnecting {
        /// Consecutive failures so far.
        attempt: i32,
        /// What went wrong.
        failure: StreamFailure,
    },
    /// The host closed the stream for good (e.g. `authorization_revoked`); it ends.
    Closed {
        /// Why, as the host spells it.
        reason: String,
    },
}

/// A session's durable events, then its live frames, as a pull stream
/// ([`GatehouseClient::open_session_events`](crate::GatehouseClient::open_session_events)):
/// `next()` until `None`, `cancel()` to stop. Nothing is read ahead.
#[derive(uniffi::Object)]
pub struct SessionEventWatch {
    pull: Pull<SessionEventUpdate>,
}

impl std::fmt::Debug for SessionEventWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionEventWatch")
            .field("cancelled", &*self.pull.cancel.borrow())
            .finish_non_exhaustive()
    }
}

impl SessionEventWatch {
    pub(crate) fn open(client: &Client, session_id: &str, after: u64) -> Self {
        let updates = client
            .sessions()
            .events(session_id, after)
            .filter_map(|item| async move {
                let update = match item {
                    Ok(ClientEventUpdate::Connected { after }) => SessionEventUpdate::Connected {
                        after: crate::records::to_i64(after),
                    },
                    Ok(ClientEventUpdate::Event(event)) => SessionEventUpdate::Event {
                        event: SessionEvent {
                            sequence: event.sequence.map(crate::records::to_i64),
                            payload: JsonText::from_value(&serde_json::Value::Object(
                                event.payload,
                            )),
                            execution_id: event.execution_id,
                            event_type: event.event_type.as_str().to_string(),
                            created_at: crate::records::timestamp(Some(&event.created_at)),
                        },
                    },
                    Ok(ClientEventUpdate::Ready) => SessionEventUpdate::Ready,
                    Ok(ClientEventUpdate::Frame(frame)) => SessionEventUpdate::Frame {
                        payload: JsonText::from_value(&serde_json::Value::Object(frame.payload)),
                        execution_id: frame.execution_id,
                        frame_type: frame.frame_type,
                    },
                    Ok(ClientEventUpdate::Reconnecting { attempt, error }) => {
                        SessionEventUpdate::Reconnecting {
                            attempt: crate::records::to_i32(attempt),
                            failure: GatehouseError::from(error).into(),
                        }
                    }
                    Ok(ClientEventUpdate::Closed(close)) => SessionEventUpdate::Closed {
                        reason: close.reason.as_str().to_string(),
                    },
                    // An update newer than this crate carries nothing to hear.
                    Ok(_) => return None,
                    Err(error) => return Some(Err(GatehouseError::from(error))),
                };
                Some(Ok(update))
            });
        Self {
            pull: Pull::new(Box::pin(updates)),
        }
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl SessionEventWatch {
    /// The next update; `None` once the stream ended or was cancelled.
    pub async fn next(&self) -> Result<Option<SessionEventUpdate>, GatehouseError> {
        self.pull.next("session_events_next").await
    }

    /// Stop: a pending `next()` returns `None`; the connection is closed.
    pub fn cancel(&self) {
        self.pull.cancel();
    }
}
