-- One resume per parked turn (issue 23, item 1), SQLite. See the Postgres migration of the same
-- number. `resume_interaction_id`: the answered gate whose resume claimed this parked
-- turn, by a compare-and-set fenced by that gate's resume lease before anything of the
-- resume runs; only that resume may record `resumed_by_turn_id`.
ALTER TABLE turns ADD COLUMN resume_interaction_id TEXT;
