-- A continuation names every gate it answers (issue 33, parallel gates), Postgres. See
-- the SQLite migration of the same number. A JSON list; NULL on a command written before
-- this migration (its gate is `interaction_id`).
ALTER TABLE session_commands ADD COLUMN interaction_ids TEXT;
