-- Crash safety (issue 13), SQLite.
-- A running session is owned by one run attempt: `run_token` names it, and the attempt
-- renews `run_lease_expires_ms` (epoch milliseconds) while it runs. An expired lease is
-- taken over by the reconciler of any instance. `resume_interaction_id` names the gate
-- whose resume job runs the attempt (its retry re-attaches to this session).
ALTER TABLE execution_sessions ADD COLUMN run_token TEXT;
ALTER TABLE execution_sessions ADD COLUMN run_lease_expires_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE execution_sessions ADD COLUMN resume_interaction_id TEXT;
CREATE INDEX execution_sessions_status ON execution_sessions (status, run_lease_expires_ms);

-- Every tool call a turn ran, at most once per (project, agent session, tool call id):
-- written, fenced by the run's leases, before the tool runs. A retried resume that finds
-- its tool call here does not run it again.
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
