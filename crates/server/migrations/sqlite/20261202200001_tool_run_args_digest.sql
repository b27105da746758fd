-- The tool-run ledger records the call, not only its key (issue 23, item 2), SQLite. See
-- the Postgres migration of the same number. `args_digest`: SHA-256 of the call's
-- arguments; a later call under the same key with another tool or other arguments does
-- not run. NULL on rows written before this migration (then the tool alone is compared).
ALTER TABLE tool_runs ADD COLUMN args_digest TEXT;
