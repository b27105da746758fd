-- Agenta's durable session control (issue 33), Postgres. See the SQLite migration of the same
-- number.
-- `session_executions`: how a source execution (a turn) was settled, by a compare-and-set
-- that exactly one writer wins: an answer that continues it (`continued`), or a Stop
-- (`stopping`, then `stopped` once the turn's record says it ended by that Stop). No row:
-- the turn is open. The answer and the Stop of one turn race on this row's key.
CREATE TABLE session_executions (
    project_id TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    state TEXT NOT NULL,
    command_id TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT,
    PRIMARY KEY (project_id, execution_id)
);
CREATE INDEX session_executions_session ON session_executions (project_id, session_id, state);

-- `session_commands`: what an answer (`continue`) or a Stop (`cancel`) asks of a session's
-- execution. `state` is the delivery (`pending`, `claimed`, `applied`, `obsolete`), apart
-- from `outcome` (`started`, `stopped`, `not_running`, ...): `applied` only with evidence.
-- A continuation names the answered gate (its resume job) and the execution id its resume
-- turn takes. `idem_key` (per session and kind) and `request_hash` make a retry replay.
CREATE TABLE session_commands (
    id TEXT PRIMARY KEY NOT NULL,
    project_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    state TEXT NOT NULL,
    outcome TEXT,
    target_execution_id TEXT,
    interaction_id TEXT,
    continuation_execution_id TEXT,
    idem_key TEXT,
    request_hash TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT,
    settled_at TEXT,
    UNIQUE (project_id, session_id, kind, idem_key)
);
CREATE INDEX session_commands_interaction ON session_commands (interaction_id);
CREATE INDEX session_commands_open ON session_commands (kind, state, created_at);
CREATE INDEX session_commands_target ON session_commands (project_id, target_execution_id, kind);
