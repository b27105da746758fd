-- Every filter the query API offers is served by an index read in `id` order, so a
-- filtered page costs the same at a million rows as at ten (issue 37, item 7; the plans
-- are checked by crates/server/tests/it/query_plans.rs). session_id and status had theirs.
CREATE INDEX interactions_project_id ON interactions (project_id, id);
CREATE INDEX interactions_project_turn ON interactions (project_id, turn_id, id);
CREATE INDEX interactions_project_kind ON interactions (project_id, kind, id);
CREATE INDEX interactions_project_in_band ON interactions (project_id, delivered_in_band, id);
CREATE INDEX interactions_project_webhook ON interactions (project_id, delivered_webhook, id);
-- `gatehouse webhooks list --state pending`: the project's rows in one state, newest first.
CREATE INDEX webhook_outbox_project_state ON webhook_outbox (project_id, state, id);
