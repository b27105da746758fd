//! The in-process event bus that feeds the SSE watch streams: fed by
//! [`Announcer`](super::Announcer) once a write committed (and with a turn's lifecycle),
//! read by the watch route, each stream on its own session's channel; a lagging
//! subscriber is told to revalidate. Execution sessions
//! have no bus: their event stream polls the store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use gatehouse_wire::interaction::WatchEvent;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

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

/// A broadcast of [`BusEvent`]s: one channel per watched session, and one of every
/// event. Cheap to clone.
///
/// A watch stream subscribes to its own session's channel ([`EventBus::subscribe_session`]):
/// an event wakes that session's watchers only. (One channel for every session woke every
/// open stream on each event, to be dropped by all but a few: with 10,000 streams open,
/// each respond cost the server ~10 ms of wake-ups and a respond's p99 grew 5x;
/// BENCHMARKS.md row 14.) A session's channel exists while someone watches it.
#[derive(Debug, Clone)]
pub struct EventBus {
    sender: broadcast::Sender<BusEvent>,
    sessions: Arc<Mutex<HashMap<SessionKey, broadcast::Sender<BusEvent>>>>,
}

/// A watched session: `(project, session)`.
type SessionKey = (String, String);

/// Events a session's channel keeps for a slow watcher of it; one that falls further
/// behind is told to revalidate (`records-changed`). Each session's channel holds this
/// many slots from its first watcher on, so it is small.
pub const SESSION_CAPACITY: usize = 32;

impl Default for EventBus {
    fn default() -> Self {
        Self::new(1024)
    }
}

impl EventBus {
    /// A bus buffering up to `capacity` events per slow subscriber of every event.
    pub fn new(capacity: usize) -> Self {
        let (sender, _) = broadcast::channel(capacity.max(1));
        Self {
            sender,
            sessions: Arc::default(),
        }
    }

    /// Subscribe to every event published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<BusEvent> {
        self.sender.subscribe()
    }

    /// Subscribe to `session_id`'s events (of `project_id`) published from now on.
    pub fn subscribe_session(&self, project_id: &str, session_id: &str) -> SessionReceiver {
        let key = (project_id.to_string(), session_id.to_string());
        let receiver = {
            let mut sessions = lock(&self.sessions);
            sessions
                .entry(key.clone())
                .or_insert_with(|| broadcast::channel(SESSION_CAPACITY).0)
                .subscribe()
        };
        SessionReceiver {
            receiver: Some(receiver),
            key,
            sessions: self.sessions.clone(),
        }
    }

    /// Sessions with a channel (someone watches them).
    pub fn watched_sessions(&self) -> usize {
        lock(&self.sessions).len()
    }

    /// Publish (no subscriber is fine). Only [`crate::announce`] publishes: a row's
    /// change through `in_announced_tx!`, a turn's lifecycle through
    /// [`Announcer::turn_lifecycle`](super::Announcer::turn_lifecycle).
    pub(super) fn publish(&self, project_id: &str, event: WatchEvent) {
        let event = BusEvent {
            project_id: project_id.to_string(),
            event,
        };
        if let Some(session_id) = event.session_id() {
            let key = (project_id.to_string(), session_id.to_string());
            if let Some(session) = lock(&self.sessions).get(&key) {
                let _ = session.send(event.clone());
            }
        }
        let _ = self.sender.send(event);
    }
}

/// The session channels' map, even after a panic elsewhere left its lock poisoned (every
/// change to it is one insert or one remove: never half done).
fn lock(
    sessions: &Mutex<HashMap<SessionKey, broadcast::Sender<BusEvent>>>,
) -> std::sync::MutexGuard<'_, HashMap<SessionKey, broadcast::Sender<BusEvent>>> {
    sessions
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One watcher's subscription to one session's events. Dropping the last of a session
/// removes its channel.
#[derive(Debug)]
pub struct SessionReceiver {
    /// `Some` until dropped.
    receiver: Option<broadcast::Receiver<BusEvent>>,
    key: SessionKey,
    sessions: Arc<Mutex<HashMap<SessionKey, broadcast::Sender<BusEvent>>>>,
}

impl SessionReceiver {
    /// The session's next event (as [`broadcast::Receiver::recv`]: `Lagged` when the
    /// watcher fell more than [`SESSION_CAPACITY`] events behind).
    pub async fn recv(&mut self) -> Result<BusEvent, RecvError> {
        match self.receiver.as_mut() {
            Some(receiver) => receiver.recv().await,
            None => Err(RecvError::Closed),
        }
    }
}

impl Drop for SessionReceiver {
    fn drop(&mut self) {
        // Unsubscribe first; then, under the lock a new subscriber takes too, remove the
        // channel if nobody else holds it.
        drop(self.receiver.take());
        let mut sessions = lock(&self.sessions);
        if sessions
            .get(&self.key)
            .is_some_and(|sender| sender.receiver_count() == 0)
        {
            sessions.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_wire::interaction::InteractionStatus;

    fn opened(session_id: &str) -> WatchEvent {
        WatchEvent::Interaction {
            session_id: session_id.to_string(),
            status: InteractionStatus::Pending,
            interaction_id: Some(format!("gate-of-{session_id}")),
        }
    }

    #[tokio::test]
    async fn a_session_hears_only_its_own_events_and_its_channel_goes_with_its_last_watcher() {
        let bus = EventBus::default();
        let mut everything = bus.subscribe();
        let mut a = bus.subscribe_session("p", "a");
        let mut a_again = bus.subscribe_session("p", "a");
        let mut b = bus.subscribe_session("p", "b");
        let other_project = bus.subscribe_session("q", "a");
        assert_eq!(bus.watched_sessions(), 3);
        bus.publish("p", opened("b"));
        bus.publish("p", opened("a"));
        assert_eq!(a.recv().await.unwrap().event, opened("a"));
        assert_eq!(a_again.recv().await.unwrap().event, opened("a"));
        assert_eq!(b.recv().await.unwrap().event, opened("b"));
        assert_eq!(everything.try_recv().unwrap().event, opened("b"));
        assert_eq!(everything.try_recv().unwrap().event, opened("a"));
        // Nothing more: b's event did not reach a, nor p's a the other project's a.
        assert!(a.receiver.as_mut().unwrap().try_recv().is_err());
        drop(other_project);
        drop(a);
        assert_eq!(bus.watched_sessions(), 2, "a is still watched once");
        drop(a_again);
        drop(b);
        assert_eq!(bus.watched_sessions(), 0);
        // Published with nobody watching: nothing kept, nothing fails.
        bus.publish("p", opened("a"));
        let mut late = bus.subscribe_session("p", "a");
        bus.publish("p", opened("a"));
        assert_eq!(late.recv().await.unwrap().event, opened("a"));
    }

    #[tokio::test]
    async fn a_watcher_behind_its_session_by_more_than_the_capacity_is_told_it_lagged() {
        let bus = EventBus::default();
        let mut slow = bus.subscribe_session("p", "a");
        for _ in 0..SESSION_CAPACITY + 1 {
            bus.publish("p", opened("a"));
        }
        assert!(matches!(slow.recv().await, Err(RecvError::Lagged(1))));
        assert_eq!(slow.recv().await.unwrap().event, opened("a"));
    }
}
