-- Webhooks (issue 26, item 6), SQLite. The durable outbox: one row per event and
-- endpoint, written in the same transaction as the change it announces (a gate opened,
-- answered, resolved or cancelled; an intervention resolved), delivered at least once by
-- any instance under a lease, retried with exponential backoff, then `failed`.
-- `event_id` is the `webhook-id` header: the same on every attempt and every endpoint,
-- for the receiver's de-duplication. `payload` holds ids and statuses only, never a
-- config or a secret; the endpoint is named, never its URL or secret (those live only in
-- the server's settings).
CREATE TABLE webhook_outbox (
    id TEXT PRIMARY KEY,
    event_id TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    project_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    interaction_id TEXT,
    payload TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_ms INTEGER NOT NULL,
    lease_owner TEXT,
    lease_expires_ms INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    created_at TEXT NOT NULL,
    delivered_at TEXT,
    UNIQUE (event_id, endpoint)
);
CREATE INDEX webhook_outbox_due ON webhook_outbox (state, next_attempt_ms);
CREATE INDEX webhook_outbox_project ON webhook_outbox (project_id, id);
