-- Crash safety (issue 13), Postgres. See the SQLite migration of the same number.
ALTER TABLE execution_sessions ADD COLUMN run_token TEXT;
ALTER TABLE execution_sessions ADD COLUMN run_lease_expires_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE execution_sessions ADD COLUMN resume_interaction_id TEXT;
CREATE INDEX execution_sessions_status ON execution_sessions (status, run_lease_expires_ms);

CREATE TABLE tool_runs (
    project_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    interaction_id TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (project_id, session_id, tool_call_id)
);
