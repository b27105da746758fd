-- Retention (issue 37, item 6): finished webhook events and old idempotency keys are
-- pruned in batches by age, and one instance at a time prunes, under this lease.
CREATE INDEX webhook_outbox_finished ON webhook_outbox (state, created_at);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
CREATE TABLE retention_lease (
    name TEXT PRIMARY KEY NOT NULL,
    owner TEXT,
    expires_ms INTEGER NOT NULL DEFAULT 0
);
INSERT INTO retention_lease (name, owner, expires_ms) VALUES ('prune', NULL, 0);
