//! Watching a session: a foreign [`WatchListener`] fed by a task on the shared runtime.

use std::cell::Cell;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use gatehouse_client::{Client, WatchUpdate};
use gatehouse_wire::interaction as wint;
use tokio::task::AbortHandle;

use crate::error::GatehouseError;
use crate::records::{Interaction, InteractionStatus};
use crate::runtime;

/// A turn started or ended.
#[derive(Debug, Clone, PartialEq, Eq, Hash, uniffi::Enum)]
pub enum LifecycleState {
    /// A turn is running.
    Running,
    /// The turn ended (completed, parked at a gate, or failed).
    Ended,
    /// A state this version does not know (a newer server), kept as the server wrote it.
    Unknown {
        /// The wire value.
        value: String,
    },
}

/// One event of a session's watch stream.
// The gate a variant carries is large; uniffi lowers enums by value (no `Box` field), and
// an event is built once per server frame, so the size costs nothing that matters.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Enum)]
pub enum WatchEvent {
    /// The server says the stream is live.
    Ready {
        /// The watched session.
        session_id: Option<String>,
    },
    /// An interaction of the session changed status: a gate opened (`Pending`) or closed.
    Interaction {
        /// The watched session.
        session_id: String,
        /// Its new status.
        status: InteractionStatus,
        /// Which interaction, when the server says.
        interaction_id: Option<String>,
        /// The gate itself, read by this library when the event names it (so showing it
        /// takes no round trip of the app's own). Absent when the server named no
        /// interaction (Agenta's frames do not) or reading it failed: re-query the
        /// session's gates then.
        interaction: Option<Interaction>,
    },
    /// The session's transcript changed.
    RecordsChanged {
        /// The watched session.
        session_id: String,
    },
    /// A turn started or ended.
    Lifecycle {
        /// The watched session.
        session_id: String,
        /// Running or ended.
        state: LifecycleState,
    },
}

impl From<wint::WatchEvent> for WatchEvent {
    fn from(event: wint::WatchEvent) -> Self {
        match event {
            wint::WatchEvent::Ready { session_id } => Self::Ready { session_id },
            wint::WatchEvent::Interaction {
                session_id,
                status,
                interaction_id,
            } => Self::Interaction {
                session_id,
                status: (&status).into(),
                interaction_id,
                interaction: None,
            },
            wint::WatchEvent::RecordsChanged { session_id } => Self::RecordsChanged { session_id },
            wint::WatchEvent::Lifecycle { session_id, state } => Self::Lifecycle {
                session_id,
                state: match state {
                    wint::LifecycleState::Running => LifecycleState::Running,
                    wint::LifecycleState::Ended => LifecycleState::Ended,
                    other => LifecycleState::Unknown {
                        value: other.as_str().to_string(),
                    },
                },
            },
        }
    }
}

impl WatchEvent {
    /// The event as the app hears it: an interaction event carries its gate, read here.
    /// The read is one `GET` by id; its failure leaves `interaction` absent and is not the
    /// watch's failure (the event still arrives).
    pub(crate) async fn with_gate(event: wint::WatchEvent, client: &Client) -> Self {
        let mut event = Self::from(event);
        if let Self::Interaction {
            interaction_id: Some(id),
            interaction,
            ..
        } = &mut event
        {
            if let Ok(row) = client.interactions().get(id).await {
                *interaction = Interaction::try_from(&row).ok();
            }
        }
        event
    }
}

/// Implemented by the app (Kotlin, Swift, Python) to hear a watched session.
///
/// Methods are called from a background thread, one at a time, in stream order. They
/// should return quickly (post to the UI thread). An exception thrown by a method
/// arrives as a [`ListenerError`] and is ignored; the watch goes on.
#[uniffi::export(with_foreign)]
pub trait WatchListener: Send + Sync {
    /// The stream (re)connected. Re-query the session's gates now: events are
    /// notifications, not a log, and some may have been missed while disconnected.
    fn on_connected(&self) -> Result<(), ListenerError>;
    /// An event from the server.
    fn on_event(&self, event: WatchEvent) -> Result<(), ListenerError>;
    /// The connection failed or dropped; the watch reconnects with backoff.
    /// `attempt` counts consecutive failures.
    fn on_reconnecting(&self, attempt: i32, error: GatehouseError) -> Result<(), ListenerError>;
    /// The watch ended by itself: `error` is set when it hit a failure a retry cannot
    /// fix (unauthorized, bad session id, no watch capability). Not called after
    /// `cancel()`.
    fn on_closed(&self, error: Option<GatehouseError>) -> Result<(), ListenerError>;
}

/// A [`WatchListener`] method failed (in Kotlin, Swift or Python: it threw). The watch
/// ignores it and goes on.
///
/// Without an error type uniffi would turn a foreign exception into a Rust panic; with
/// it, the exception arrives as a value (`From<UnexpectedUniFFICallbackError>`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, uniffi::Error)]
pub enum ListenerError {
    /// The listener failed; `reason` is the foreign exception's text.
    #[error("the watch listener failed: {reason}")]
    Failed {
        /// What the listener threw.
        reason: String,
    },
}

impl From<uniffi::UnexpectedUniFFICallbackError> for ListenerError {
    fn from(error: uniffi::UnexpectedUniFFICallbackError) -> Self {
        Self::Failed {
            reason: error.reason,
        }
    }
}

thread_local! {
    /// True while this thread is inside a listener method (so `cancel()` from a
    /// callback does not wait for itself).
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

struct Shared {
    cancelled: AtomicBool,
    /// Set just before `on_closed` is delivered: the stream ended by itself.
    ended: AtomicBool,
    /// Held while a listener method runs; `cancel()` takes it so that no callback is
    /// running or starts once it returns.
    delivering: Mutex<()>,
}

impl Shared {
    /// Call the listener unless cancelled; its error (a foreign exception) is ignored,
    /// and a panic of a Rust listener is caught as a backstop. Returns false once
    /// cancelled.
    fn deliver(&self, call: impl FnOnce() -> Result<(), ListenerError>) -> bool {
        let _lock = self.delivering.lock().unwrap_or_else(|p| p.into_inner());
        if self.cancelled.load(Ordering::SeqCst) {
            return false;
        }
        IN_CALLBACK.with(|flag| flag.set(true));
        let _ = std::panic::catch_unwind(AssertUnwindSafe(call));
        IN_CALLBACK.with(|flag| flag.set(false));
        true
    }

    fn cancel(&self) {
        if IN_CALLBACK.with(Cell::get) {
            self.cancelled.store(true, Ordering::SeqCst);
        } else {
            let _lock = self.delivering.lock().unwrap_or_else(|p| p.into_inner());
            self.cancelled.store(true, Ordering::SeqCst);
        }
    }
}

/// A running watch. `cancel()`, or dropping the handle (Kotlin `close()`, Swift
/// deinit, Python garbage collection), stops it and closes the connection.
#[derive(uniffi::Object)]
pub struct WatchHandle {
    shared: Arc<Shared>,
    task: AbortHandle,
}

impl std::fmt::Debug for WatchHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchHandle")
            .field("cancelled", &self.shared.cancelled.load(Ordering::SeqCst))
            .finish_non_exhaustive()
    }
}

#[uniffi::export]
impl WatchHandle {
    /// Stop the watch. When it returns, no listener method is running or will be
    /// called again (unless called from inside a listener method, which then finishes).
    /// Calling it twice is harmless.
    pub fn cancel(&self) -> Result<(), GatehouseError> {
        runtime::guard("cancel_watch", || {
            self.shared.cancel();
            self.task.abort();
            Ok(())
        })
    }

    /// True once `cancel()` was called or the watch ended by itself.
    pub fn is_finished(&self) -> Result<bool, GatehouseError> {
        runtime::guard("watch_is_finished", || {
            Ok(self.shared.cancelled.load(Ordering::SeqCst)
                || self.shared.ended.load(Ordering::SeqCst)
                || self.task.is_finished())
        })
    }
}

impl Drop for WatchHandle {
    fn drop(&mut self) {
        self.shared.cancel();
        self.task.abort();
    }
}

/// Start watching `session_id` on the shared runtime.
pub(crate) fn start(
    client: &Client,
    session_id: String,
    listener: Arc<dyn WatchListener>,
) -> Result<Arc<WatchHandle>, GatehouseError> {
    let shared = Arc::new(Shared {
        cancelled: AtomicBool::new(false),
        ended: AtomicBool::new(false),
        delivering: Mutex::new(()),
    });
    let client = client.clone();
    let task_shared = Arc::clone(&shared);
    let task = runtime::handle()?.spawn(async move {
        let mut stream = client.interactions().watch(&session_id);
        loop {
            let delivered = match stream.next().await {
                Some(Ok(WatchUpdate::Connected)) => task_shared.deliver(|| listener.on_connected()),
                Some(Ok(WatchUpdate::Event(event))) => {
                    let event = WatchEvent::with_gate(event, &client).await;
                    task_shared.deliver(|| listener.on_event(event))
                }
                Some(Ok(WatchUpdate::Reconnecting { attempt, error })) => {
                    let error = GatehouseError::from(error);
                    let attempt = crate::records::to_i32(attempt);
                    task_shared.deliver(|| listener.on_reconnecting(attempt, error))
                }
                // An update newer than this crate carries nothing a listener can hear.
                Some(Ok(_)) => true,
                Some(Err(error)) => {
                    let error = GatehouseError::from(error);
                    task_shared.ended.store(true, Ordering::SeqCst);
                    task_shared.deliver(|| listener.on_closed(Some(error)));
                    break;
                }
                None => {
                    task_shared.ended.store(true, Ordering::SeqCst);
                    task_shared.deliver(|| listener.on_closed(None));
                    break;
                }
            };
            if !delivered {
                break;
            }
        }
    });
    Ok(Arc::new(WatchHandle {
        shared,
        task: task.abort_handle(),
    }))
}
