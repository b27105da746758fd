//! The in-process event bus that feeds the SSE watch streams: fed by
//! [`Announcer`](super::Announcer) once a write committed (and with a turn's lifecycle),
//! read by the watch route; a lagging subscriber is told to revalidate. Execution sessions
//! have no bus: their event stream polls the store.

use gatehouse_wire::interaction::WatchEvent;
use tokio::sync::broadcast;

/// One published event, scoped to its project.
#[derive(Debug, Clone, PartialEq)]
pub struct BusEvent {
    /// The project the session belongs to.
    pub project_id: String,
    /// The event (its `session_id` says which session).
    pub event: WatchEvent,
}

impl BusEvent {
    /// The session the event is about (`None` only for `ready`).
    pub fn session_id(&self) -> Option<&str> {
        match &self.event {
            WatchEvent::Ready { session_id } => session_id.as_deref(),
            WatchEvent::Interaction { session_id, .. }
            | WatchEvent::RecordsChanged { session_id }
            | WatchEvent::Lifecycle { session_id, .. } => Some(session_id),
        }
    }
}

/// A broadcast channel of [`BusEvent`]s. Cheap to clone.
#[derive(Debug, Clone)]
pub struct EventBus {
    sender: broadcast::Sender<BusEvent>,
}

impl Default for EventBus {
    fn default() -> Self {
        Self::new(1024)
    }
}

impl EventBus {
    /// A bus buffering up to `capacity` events per slow subscriber.
    pub fn new(capacity: usize) -> Self {
        let (sender, _) = broadcast::channel(capacity.max(1));
        Self { sender }
    }

    /// Subscribe to every event published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<BusEvent> {
        self.sender.subscribe()
    }

    /// Publish (no subscriber is fine). Only [`crate::announce`] publishes: a row's
    /// change through `in_announced_tx!`, a turn's lifecycle through
    /// [`Announcer::turn_lifecycle`](super::Announcer::turn_lifecycle).
    pub(super) fn publish(&self, project_id: &str, event: WatchEvent) {
        let _ = self.sender.send(BusEvent {
            project_id: project_id.to_string(),
            event,
        });
    }
}
