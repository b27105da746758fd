-- Execution sessions (CONTRACT.md B1-B3), Postgres.
-- One row per session; `doc` is the whole session document (interventions and events
-- included) as JSON, written only by a compare-and-set on `revision`.

CREATE TABLE execution_sessions (
    session_id TEXT PRIMARY KEY NOT NULL,
    tenant_id TEXT NOT NULL,
    room_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    current_turn_id TEXT,
    status TEXT NOT NULL,
    revision BIGINT NOT NULL,
    protected BIGINT NOT NULL DEFAULT 0,
    doc TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (tenant_id, run_id)
);
CREATE INDEX execution_sessions_task ON execution_sessions (tenant_id, task_id);
CREATE INDEX execution_sessions_turn ON execution_sessions (current_turn_id);
