-- Gatehouse reference control plane, initial schema (SQLite).
-- Timestamps are RFC 3339 text with microseconds (sortable); leases are epoch milliseconds.

CREATE TABLE interactions (
    id TEXT PRIMARY KEY NOT NULL,
    project_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    turn_id TEXT,
    token TEXT NOT NULL,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    data TEXT NOT NULL,
    resolution TEXT,
    flags TEXT NOT NULL,
    delivered_in_band INTEGER NOT NULL DEFAULT 0,
    delivered_webhook INTEGER NOT NULL DEFAULT 0,
    tags TEXT,
    meta TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT,
    deleted_at TEXT,
    created_by_id TEXT,
    updated_by_id TEXT,
    deleted_by_id TEXT,
    UNIQUE (project_id, session_id, token)
);
CREATE INDEX interactions_project_session ON interactions (project_id, session_id, id);
CREATE INDEX interactions_project_status ON interactions (project_id, status, id);

CREATE TABLE idempotency_keys (
    project_id TEXT NOT NULL,
    idem_key TEXT NOT NULL,
    interaction_id TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    response TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (project_id, idem_key)
);

CREATE TABLE resume_jobs (
    interaction_id TEXT PRIMARY KEY NOT NULL,
    project_id TEXT NOT NULL,
    state TEXT NOT NULL,
    lease_owner TEXT,
    lease_expires_ms INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    resume_turn_id TEXT,
    last_error TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT
);
CREATE INDEX resume_jobs_state ON resume_jobs (state, lease_expires_ms);

CREATE TABLE turns (
    id TEXT PRIMARY KEY NOT NULL,
    project_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    status TEXT NOT NULL,
    model TEXT,
    output TEXT,
    resumed INTEGER NOT NULL DEFAULT 0,
    resumed_from_interaction_id TEXT,
    resumed_by_turn_id TEXT,
    messages TEXT NOT NULL,
    parked_state TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT
);
CREATE INDEX turns_project_session ON turns (project_id, session_id, id);

CREATE TABLE workflows (
    id TEXT PRIMARY KEY NOT NULL,
    project_id TEXT NOT NULL,
    slug TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (project_id, slug)
);

CREATE TABLE workflow_variants (
    id TEXT PRIMARY KEY NOT NULL,
    project_id TEXT NOT NULL,
    workflow_id TEXT NOT NULL,
    slug TEXT NOT NULL,
    head_revision_id TEXT,
    created_at TEXT NOT NULL,
    UNIQUE (workflow_id, slug)
);

CREATE TABLE workflow_revisions (
    id TEXT PRIMARY KEY NOT NULL,
    project_id TEXT NOT NULL,
    workflow_id TEXT NOT NULL,
    variant_id TEXT NOT NULL,
    slug TEXT NOT NULL,
    version INTEGER NOT NULL,
    parameters TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (variant_id, version)
);
