-- Readiness (`GET /health/ready`) proves the database takes a write by upserting this
-- one row (the same row for every instance).
CREATE TABLE readiness_probe (
    id INTEGER PRIMARY KEY,
    probed_at TEXT NOT NULL
);
