-- A gate's revision (issue 34, item 3; CONTRACT.md C8): 1 when written, moved on by a
-- write that changes what the gate asks (its tool, arguments or call id). It is bound
-- into the gate digest a respond carries back, so an answer read from an older revision
-- is refused (409 STALE_GATE) instead of landing on a gate the person did not see.
ALTER TABLE interactions ADD COLUMN revision BIGINT NOT NULL DEFAULT 1;
