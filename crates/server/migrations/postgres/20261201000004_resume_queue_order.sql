-- The resume queue is claimed oldest first: an index in that order keeps a claim cheap
-- however long the queue (a claim walked and sorted every queued job before).
CREATE INDEX resume_jobs_queue ON resume_jobs (state, created_at, interaction_id);
