-- Agenta's durable Stop, the session snapshot and its events (issue 33), SQLite. See the
-- Postgres migration of the same number.
-- `session_runs`: the turns running now, one row from a turn's start to the transaction
-- that records how it ended (which deletes it). `state` is `running`, or `stopping` once
-- a Stop targeted it (`command_id`, the cancel command its harness honours at its next step
-- boundary). `lease_until_ms` (the store's clock) is renewed by the turn's heartbeat: a row
-- past it is a dead instance's turn, not running. `attempt_id` names the attempt that wrote
-- it (a resume retried under the same turn id takes the row over).
CREATE TABLE session_runs (
    project_id TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    state TEXT NOT NULL,
    command_id TEXT,
    attempt_id TEXT NOT NULL,
    started_ms INTEGER NOT NULL,
    lease_until_ms INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (project_id, execution_id)
);
CREATE INDEX session_runs_session ON session_runs (project_id, session_id);

-- `session_events`: a session's durable events (Agenta's `SessionDurableEvent`), in the
-- order `sequence` gives them (from 1, per session, no gaps: `session_event_sequences`
-- holds the last one, taken under its row's lock in the writing transaction). Written by
-- the announcer in the transaction of the change they tell; replayed by
-- `GET /api/sessions/{id}/events?after=N`.
CREATE TABLE session_events (
    project_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    event_id TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (project_id, session_id, sequence)
);
CREATE TABLE session_event_sequences (
    project_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    last_sequence INTEGER NOT NULL,
    PRIMARY KEY (project_id, session_id)
);
