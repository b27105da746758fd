//! A session's durable events (Agenta's `SessionDurableEvent`: `execution.started`,
//! `execution.stopped`, `execution.failed`, `execution.lost`, `message.completed`): the
//! log `GET /api/sessions/{id}/events?after=N` replays. An event is a [`Change`] like any
//! other: written by [`in_announced_tx!`] in the transaction of the change it tells, with
//! the session's next `sequence` (from 1, no gaps: taken under the lock of the session's
//! row in `session_event_sequences`), and after the commit its session's watchers are
//! woken ([`SessionBell`]). Readers replay from the table, never from the bell, so a
//! missed wake-up only delays an event, and a reader on another instance (which hears no
//! bell of this one) finds it on its next poll.
//!
//! [`Change`]: super::Change
//! [`in_announced_tx!`]: super::in_announced_tx

use gatehouse_wire::sessions::{DurableEventType, SessionDurableEvent};
use gatehouse_wire::JsonObject;
use tokio::sync::broadcast;

use crate::db::{from_json_text, new_id, to_json_text, with_pool, with_tx, Database, RowExt};
use crate::db::{StoreError, Tx};

/// One durable event to append to a session's log.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionEvent {
    /// The session's project.
    pub project_id: String,
    /// The agent session.
    pub session_id: String,
    /// The execution (turn) it belongs to.
    pub execution_id: String,
    /// What it is about (the execution, a message).
    pub entity_id: String,
    /// What happened.
    pub event_type: DurableEventType,
    /// The type's payload (ids, states, times and the turn's output text; never a
    /// config or a secret).
    pub payload: JsonObject,
}

/// Append `event` to its session's log inside `tx`, with the session's next sequence.
pub(crate) async fn append(
    tx: &mut Tx<'_>,
    event: &SessionEvent,
    now: &str,
) -> Result<u64, StoreError> {
    let next = "INSERT INTO session_event_sequences (project_id, session_id, last_sequence) \
                VALUES ($1, $2, 1) ON CONFLICT (project_id, session_id) DO UPDATE SET \
                last_sequence = session_event_sequences.last_sequence + 1 RETURNING last_sequence";
    let insert = "INSERT INTO session_events (project_id, session_id, sequence, event_id, \
                  execution_id, entity_id, event_type, payload, created_at) \
                  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
    with_tx!(tx, conn => {
        let row = sqlx::query(next)
            .bind(&event.project_id)
            .bind(&event.session_id)
            .fetch_one(&mut **conn)
            .await?;
        let sequence = row.int("last_sequence")?;
        sqlx::query(insert)
            .bind(&event.project_id)
            .bind(&event.session_id)
            .bind(sequence)
            .bind(new_id())
            .bind(&event.execution_id)
            .bind(&event.entity_id)
            .bind(event.event_type.as_str())
            .bind(to_json_text(&event.payload))
            .bind(now)
            .execute(&mut **conn)
            .await?;
        Ok(u64::try_from(sequence).unwrap_or(0))
    })
}

/// The events of a session with `sequence > after`, oldest first, at most `limit`.
pub async fn read_after(
    db: &Database,
    project_id: &str,
    session_id: &str,
    after: u64,
    limit: u32,
) -> Result<Vec<SessionDurableEvent>, StoreError> {
    let sql = "SELECT sequence, event_id, execution_id, entity_id, event_type, payload, \
               created_at FROM session_events WHERE project_id = $1 AND session_id = $2 \
               AND sequence > $3 ORDER BY sequence LIMIT $4";
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    with_pool!(db, pool => {
        let rows = sqlx::query(sql)
            .bind(project_id)
            .bind(session_id)
            .bind(after)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?;
        rows.iter()
            .map(|row| {
                Ok(SessionDurableEvent {
                    version: 1,
                    kind: "event".to_string(),
                    session_id: session_id.to_string(),
                    execution_id: row.text("execution_id")?,
                    frame_or_event_id: row.text("event_id")?,
                    entity_id: row.text("entity_id")?,
                    sequence: u64::try_from(row.int("sequence")?).ok(),
                    created_at: row.text("created_at")?,
                    event_type: DurableEventType::from_wire(&row.text("event_type")?),
                    payload: from_json_text("session_events.payload", &row.text("payload")?)?,
                    extra: JsonObject::new(),
                })
            })
            .collect()
    })
}

/// The last sequence of a session's log (0: no event yet).
pub async fn latest_sequence(
    db: &Database,
    project_id: &str,
    session_id: &str,
) -> Result<u64, StoreError> {
    let sql = "SELECT last_sequence FROM session_event_sequences WHERE project_id = $1 \
               AND session_id = $2";
    with_pool!(db, pool => {
        let row = sqlx::query(sql).bind(project_id).bind(session_id).fetch_optional(pool).await?;
        match row {
            Some(row) => Ok(u64::try_from(row.int("last_sequence")?).unwrap_or(0)),
            None => Ok(0),
        }
    })
}

/// Wakes a session's event readers after a commit that appended to its log: a broadcast
/// of `(project, session)`. A lagging receiver only loses wake-ups (its reader polls).
#[derive(Debug, Clone)]
pub struct SessionBell {
    sender: broadcast::Sender<(String, String)>,
}

impl Default for SessionBell {
    fn default() -> Self {
        Self {
            sender: broadcast::channel(256).0,
        }
    }
}

impl SessionBell {
    /// A receiver of every later ring.
    pub fn subscribe(&self) -> broadcast::Receiver<(String, String)> {
        self.sender.subscribe()
    }

    pub(super) fn ring(&self, project_id: &str, session_id: &str) {
        // No receiver is not an error: nobody is reading.
        let _ = self
            .sender
            .send((project_id.to_string(), session_id.to_string()));
    }
}
