-- A continuation names every gate it answers (issue 33, parallel gates), SQLite. A turn
-- parked on several gates continues once, after its last answer: its continuation
-- command lists them all, as Agenta's `data.interaction_ids` does. A JSON list; NULL on a
-- command written before this migration (its gate is `interaction_id`).
ALTER TABLE session_commands ADD COLUMN interaction_ids TEXT;
