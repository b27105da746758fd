//! What the server tells the world about its changes, from ONE list. A store write that
//! changes what a watcher or a webhook receiver sees collects its [`Change`]s while it
//! writes; inside the write's transaction they become outbox rows (one per configured
//! endpoint, [`outbox`]: they commit with the change or not at all), and after the commit
//! they feed the watch bus ([`watch`]). Both come from the same list, once, in
//! [`in_announced_tx!`]: a write cannot announce to one and forget the other, and no
//! handler announces anything by hand (the bus's publishing is private to this module).
//!
//! The one announcement that is no row's is a turn's lifecycle (`running` when it starts,
//! `ended` when it ends): nothing is written when a turn starts, so the turn bracket
//! (`interactions::turn`) announces it through [`Announcer::turn_lifecycle`].
//!
//! Plumbing: this module knows the database ([`crate::db`]) and the wire types, never an
//! area. An area turns its rows into [`Change`]s with plain fields.

pub mod outbox;
pub mod session_log;
pub mod watch;

use gatehouse_wire::interaction::{InteractionStatus, LifecycleState, WatchEvent};
use serde_json::{json, Value};

use crate::db::{StoreError, Tx};
pub use outbox::{Outbox, OutboxEvent, GATE_OPENED};
pub use session_log::{SessionBell, SessionEvent};
pub use watch::{BusEvent, EventBus, SessionReceiver};

/// An interaction row that reached a status (`pending` is its opening): what its
/// webhook event and its watch event say. Ids and statuses only, never an answer's text,
/// a config or a secret.
#[derive(Debug, Clone, PartialEq)]
pub struct InteractionChange {
    /// The row's project.
    pub project_id: String,
    /// The agent session.
    pub session_id: String,
    /// The row.
    pub interaction_id: String,
    /// The turn that opened it.
    pub turn_id: Option<String>,
    /// The row's kind (`user_approval`, ...).
    pub kind: String,
    /// The status it reached, as stored.
    pub status: String,
    /// `resolution.verdict`, when it has one.
    pub verdict: Option<String>,
    /// `resolution.error.code`, when it has one.
    pub error_code: Option<String>,
}

/// An intervention of an execution session that was resolved (applied or rejected).
#[derive(Debug, Clone, PartialEq)]
pub struct InterventionChange {
    /// The session's tenant (its project).
    pub project_id: String,
    /// The session's room.
    pub room_id: String,
    /// The execution session.
    pub execution_session_id: String,
    /// The session's run.
    pub run_id: String,
    /// The intervention.
    pub operation_id: String,
    /// `applied` or `rejected`.
    pub status: String,
}

/// One change a watcher or a webhook receiver sees.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// An interaction row reached a status: a webhook event and a watch event.
    Interaction(InteractionChange),
    /// A session's records (its turns, the transcript) changed: a watch event only
    /// (`records-changed`).
    Records {
        /// The project.
        project_id: String,
        /// The agent session.
        session_id: String,
    },
    /// An intervention was resolved: a webhook event only (execution sessions have no
    /// watch bus; their event stream reads the store).
    InterventionResolved(InterventionChange),
    /// A durable event of a session (a turn started, stopped, failed, was lost; its
    /// message completed): a row of the session's log ([`session_log`]), whose readers are
    /// woken after the commit. Neither a webhook event nor a watch event.
    SessionEvent(SessionEvent),
}

impl Change {
    /// The webhook event this change writes to the outbox, if any.
    pub fn outbox_event(&self) -> Option<OutboxEvent> {
        match self {
            Self::Interaction(row) => {
                let event_type = match row.status.as_str() {
                    "pending" => GATE_OPENED.to_string(),
                    other => format!("interaction.{other}"),
                };
                let mut data = json!({
                    "interaction_id": row.interaction_id,
                    "project_id": row.project_id,
                    "session_id": row.session_id,
                    "turn_id": row.turn_id,
                    "kind": row.kind,
                    "status": row.status,
                });
                if let Some(verdict) = &row.verdict {
                    data["verdict"] = Value::String(verdict.clone());
                }
                if let Some(code) = &row.error_code {
                    data["error_code"] = Value::String(code.clone());
                }
                Some(OutboxEvent {
                    event_type,
                    project_id: row.project_id.clone(),
                    subject_id: row.interaction_id.clone(),
                    interaction_id: Some(row.interaction_id.clone()),
                    data,
                })
            }
            Self::Records { .. } | Self::SessionEvent(_) => None,
            Self::InterventionResolved(intervention) => Some(OutboxEvent {
                event_type: "intervention.resolved".to_string(),
                project_id: intervention.project_id.clone(),
                subject_id: intervention.execution_session_id.clone(),
                interaction_id: None,
                data: json!({
                    "project_id": intervention.project_id,
                    "room_id": intervention.room_id,
                    "execution_session_id": intervention.execution_session_id,
                    "run_id": intervention.run_id,
                    "operation_id": intervention.operation_id,
                    "status": intervention.status,
                }),
            }),
        }
    }

    /// The watch event this change publishes, with its project, if any.
    pub fn watch_event(&self) -> Option<(&str, WatchEvent)> {
        match self {
            Self::Interaction(row) => Some((
                &row.project_id,
                WatchEvent::Interaction {
                    session_id: row.session_id.clone(),
                    status: InteractionStatus::from_wire(&row.status),
                    interaction_id: Some(row.interaction_id.clone()),
                },
            )),
            Self::Records {
                project_id,
                session_id,
            } => Some((
                project_id,
                WatchEvent::RecordsChanged {
                    session_id: session_id.clone(),
                },
            )),
            Self::InterventionResolved(_) | Self::SessionEvent(_) => None,
        }
    }
}

/// The changes of one write, in the order they happened.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Changes(Vec<Change>);

impl Changes {
    /// Add a change.
    pub fn push(&mut self, change: Change) {
        self.0.push(change);
    }

    /// Add every change of `other` (a joined write's share), after these.
    pub fn extend(&mut self, other: Changes) {
        self.0.extend(other.0);
    }

    /// The changes, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Change> {
        self.0.iter()
    }

    /// True when the write changed nothing anyone is told about.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Where changes are told: the outbox (webhook endpoints) and the watch bus. Cheap to
/// clone; every store that announces holds one, and all of a server's share the same.
#[derive(Debug, Clone, Default)]
pub struct Announcer {
    outbox: Outbox,
    watch: EventBus,
    sessions: SessionBell,
}

impl Announcer {
    /// Changes go to the outbox rows of `outbox`'s endpoints and to `watch`'s subscribers.
    pub fn new(outbox: Outbox, watch: EventBus) -> Self {
        Self {
            outbox,
            watch,
            sessions: SessionBell::default(),
        }
    }

    /// The outbox (its endpoints and the delivery workers' wake-up).
    pub fn outbox(&self) -> &Outbox {
        &self.outbox
    }

    /// The watch bus (to subscribe).
    pub fn watch(&self) -> &EventBus {
        &self.watch
    }

    /// The bell of the sessions' durable event logs (to subscribe).
    pub fn session_bell(&self) -> &SessionBell {
        &self.sessions
    }

    /// A turn of `session_id` started (`running`) or ended: the one announcement that is
    /// no row's change (see the module docs).
    pub fn turn_lifecycle(&self, project_id: &str, session_id: &str, state: LifecycleState) {
        self.watch.publish(
            project_id,
            WatchEvent::Lifecycle {
                session_id: session_id.to_string(),
                state,
            },
        );
    }

    /// Inside the write's transaction: the outbox rows of `changes`. Called by
    /// [`in_announced_tx!`] only.
    pub(crate) async fn record_in_tx(
        &self,
        tx: &mut Tx<'_>,
        changes: &Changes,
    ) -> Result<(), StoreError> {
        for event in changes.iter().filter_map(Change::outbox_event) {
            outbox::enqueue(tx, &self.outbox, event).await?;
        }
        let now = crate::db::now_text();
        for change in changes.iter() {
            if let Change::SessionEvent(event) = change {
                session_log::append(tx, event, &now).await?;
            }
        }
        Ok(())
    }

    /// After the write committed: the watch events of `changes`. Called by
    /// [`in_announced_tx!`] only.
    pub(crate) fn publish_committed(&self, changes: &Changes) {
        for change in changes.iter() {
            if let Some((project_id, event)) = change.watch_event() {
                self.watch.publish(project_id, event);
            }
            if let Change::SessionEvent(event) = change {
                self.sessions.ring(&event.project_id, &event.session_id);
            }
        }
    }
}

/// Run `$body` in one transaction of `$db` (as [`crate::db::in_tx!`]) with `$changes`, a
/// [`Changes`] the body pushes to as it writes. On `Ok`, the changes' outbox rows are
/// written in the same transaction, and once it committed their watch events are
/// published; on `Err`, nothing is written and nothing is told. The value is the body's.
/// This is the one way a store write announces.
macro_rules! in_announced_tx {
    ($db:expr, $announcer:expr, $tx:ident, $changes:ident => $body:expr) => {{
        let announcer: &$crate::announce::Announcer = &$announcer;
        let written = $crate::db::in_tx!($db, $tx => {
            let mut $changes = $crate::announce::Changes::default();
            let out: Result<_, $crate::db::StoreError> = async { $body }.await;
            let value = out?;
            announcer
                .record_in_tx(&mut $crate::db::Tx::from(&mut *$tx), &$changes)
                .await?;
            Ok((value, $changes))
        });
        written.map(|(value, changes)| {
            announcer.publish_committed(&changes);
            value
        })
    }};
}
pub(crate) use in_announced_tx;

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(status: &str) -> Change {
        Change::Interaction(InteractionChange {
            project_id: "p".into(),
            session_id: "s".into(),
            interaction_id: "i".into(),
            turn_id: Some("t".into()),
            kind: "user_approval".into(),
            status: status.into(),
            verdict: (status == "resolved").then(|| "approved".into()),
            error_code: None,
        })
    }

    #[test]
    fn an_interaction_change_is_one_webhook_event_and_one_watch_event() {
        let opened = gate("pending");
        let event = opened.outbox_event().unwrap();
        assert_eq!(event.event_type, GATE_OPENED);
        assert_eq!(event.interaction_id.as_deref(), Some("i"));
        assert_eq!(event.data["status"], "pending");
        assert!(event.data.get("verdict").is_none());
        let (project, watch) = opened.watch_event().unwrap();
        assert_eq!(project, "p");
        assert_eq!(
            watch,
            WatchEvent::Interaction {
                session_id: "s".into(),
                status: InteractionStatus::Pending,
                interaction_id: Some("i".into()),
            }
        );
        let resolved = gate("resolved").outbox_event().unwrap();
        assert_eq!(resolved.event_type, "interaction.resolved");
        assert_eq!(resolved.data["verdict"], "approved");
    }

    #[test]
    fn records_reach_watchers_only_and_interventions_webhooks_only() {
        let records = Change::Records {
            project_id: "p".into(),
            session_id: "s".into(),
        };
        assert!(records.outbox_event().is_none());
        assert!(matches!(
            records.watch_event(),
            Some((_, WatchEvent::RecordsChanged { .. }))
        ));
        let intervention = Change::InterventionResolved(InterventionChange {
            project_id: "p".into(),
            room_id: "r".into(),
            execution_session_id: "e".into(),
            run_id: "run".into(),
            operation_id: "op".into(),
            status: "applied".into(),
        });
        assert!(intervention.watch_event().is_none());
        let event = intervention.outbox_event().unwrap();
        assert_eq!(event.event_type, "intervention.resolved");
        assert_eq!(event.subject_id, "e");
        assert_eq!(event.data["operation_id"], "op");
    }

    #[test]
    fn publish_committed_feeds_the_bus_in_order() {
        let announcer = Announcer::default();
        let mut receiver = announcer.watch().subscribe();
        let mut changes = Changes::default();
        changes.push(gate("resolved"));
        changes.push(gate("pending"));
        changes.push(Change::Records {
            project_id: "p".into(),
            session_id: "s".into(),
        });
        announcer.publish_committed(&changes);
        let statuses: Vec<String> = (0..3)
            .map(|_| match receiver.try_recv().unwrap().event {
                WatchEvent::Interaction { status, .. } => status.as_str().to_string(),
                other => other.event_name().to_string(),
            })
            .collect();
        assert_eq!(statuses, ["resolved", "pending", "records-changed"]);
        assert!(receiver.try_recv().is_err());
    }

    /// Only this module records or publishes a change (through `in_announced_tx!`): no
    /// area or handler announces by hand.
    #[test]
    fn nothing_else_records_or_publishes_changes() {
        for (path, source) in crate::layering::sources() {
            if path.starts_with("announce/") {
                continue;
            }
            for forbidden in ["record_in_tx(", "publish_committed(", ".publish("] {
                assert!(
                    !source.contains(forbidden),
                    "{path} calls {forbidden}: announce through in_announced_tx! (crate::announce)"
                );
            }
        }
    }
}
