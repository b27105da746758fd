//! The resume job's lease: what a worker's claim holds, and the SQL condition that fences
//! a statement on it. Below both the resume queue (`jobs.rs`, which claims and ends jobs)
//! and the turns (`turns.rs`, whose parked turn a job's resume claims under its lease).

/// A job this worker holds the lease of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedJob {
    /// The responded interaction.
    pub interaction_id: String,
    /// Its project.
    pub project_id: String,
    /// The lease owner token this claim set (needed to complete).
    pub owner: String,
    /// How many times the job has been claimed, this claim included.
    pub attempts: i64,
}

/// The SQL condition "this worker still holds the job's lease" for a statement fenced by
/// it: `interaction` and `owner` number the placeholders of the job's interaction id and
/// its lease owner; `now_ms` is the SQL of the time now (`Database::now_ms_sql`: the
/// database's clock on PostgreSQL, so every instance judges a lease by one clock).
pub(crate) fn job_lease_held(interaction: usize, owner: usize, now_ms: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM resume_jobs WHERE interaction_id = ${interaction} \
         AND lease_owner = ${owner} AND state = 'queued' AND lease_expires_ms > {now_ms})"
    )
}
