//! The in-process event bus that feeds the SSE watch streams. The code that wrote (an
//! interaction handler in [`api`](super::api), or [`end_turn`](super::turn::end_turn)
//! for a turn) publishes once the store's transaction committed; a lagging subscriber is
//! told to revalidate. Execution sessions have no bus: their event stream polls the
//! store.

use gatehouse_wire::interaction::{InteractionStatus, LifecycleState, WatchEvent};
use tokio::sync::broadcast;

use super::store::InteractionRecord;

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

    /// Publish (no subscriber is fine).
    pub fn publish(&self, project_id: &str, event: WatchEvent) {
        let _ = self.sender.send(BusEvent {
            project_id: project_id.to_string(),
            event,
        });
    }

    /// An interaction of `session_id` changed status.
    pub fn interaction(
        &self,
        project_id: &str,
        session_id: &str,
        interaction_id: &str,
        status: InteractionStatus,
    ) {
        self.publish(
            project_id,
            WatchEvent::Interaction {
                session_id: session_id.to_string(),
                status,
                interaction_id: Some(interaction_id.to_string()),
            },
        );
    }

    /// `row` changed status to `status` (told to its session's watchers).
    pub fn row_changed(&self, row: &InteractionRecord, status: InteractionStatus) {
        self.interaction(&row.project_id, &row.session_id, &row.id, status);
    }

    /// The session's records (turns, transcript) changed.
    pub fn records_changed(&self, project_id: &str, session_id: &str) {
        self.publish(
            project_id,
            WatchEvent::RecordsChanged {
                session_id: session_id.to_string(),
            },
        );
    }

    /// A turn of the session started or ended.
    pub fn lifecycle(&self, project_id: &str, session_id: &str, state: LifecycleState) {
        self.publish(
            project_id,
            WatchEvent::Lifecycle {
                session_id: session_id.to_string(),
                state,
            },
        );
    }
}
