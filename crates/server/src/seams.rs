//! What one area offers another, as traits defined below both: the area that owns the
//! tables implements them, [`crate::start`] wires them, and the area that uses them never
//! writes the other's SQL. (The other seam: execution steers a running turn through
//! `runner`'s checkpoint hooks.)

use futures::future::BoxFuture;

use crate::announce::Changes;
use crate::db::{StoreError, Tx};

/// Writes another area contributes to a transaction it does not own: a turn's commit
/// (interactions) carries its execution session's share (the interventions it applied,
/// the checkpoints it reached, how the run ended), so that either both are durable or
/// neither is. [`StoreError::Fenced`] rolls the whole transaction back. Its changes are
/// announced with the transaction's own.
pub trait JoinedWrite: Send + Sync {
    /// Write inside the caller's transaction; what it changed.
    fn write<'a>(&'a self, tx: Tx<'a>) -> BoxFuture<'a, Result<Changes, StoreError>>;
}

/// Offered by interactions to the webhooks area: a gate's opening event was delivered.
pub trait GateDelivered: Send + Sync {
    /// Set `flags.delivered_webhook` on the gate `interaction_id` (when it still exists),
    /// inside the delivery's transaction.
    fn mark_delivered<'a>(
        &'a self,
        tx: Tx<'a>,
        interaction_id: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
}

/// The resume job of an answered gate, as the execution reconciler sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumeJobState {
    /// `queued`, `done` or `failed`.
    pub state: String,
    /// Its last error (or the note of a job that resumed nothing).
    pub last_error: Option<String>,
}

/// The newest gate a turn opened, as the execution reconciler sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateOfTurn {
    /// The gate.
    pub interaction_id: String,
    /// Its status text.
    pub status: String,
    /// Its resume job, once it was answered.
    pub job: Option<ResumeJobState>,
}

/// An agent revision a run names, as execution's binding checks it.
#[derive(Debug, Clone)]
pub struct AgentRevision {
    /// The slug of the revision's workflow (its participant), when the workflow exists.
    pub workflow_slug: Option<String>,
    /// The revision's config.
    pub parameters: gatehouse_wire::effective::MeasuredConfig,
}

/// Offered by interactions to the execution area: what a paused session's gate came to,
/// the turn a gate belongs to, and the agent revision a run names.
pub trait InteractionQueries: Send + Sync {
    /// A SQL condition, for a statement over `execution_sessions s`: "the gate of the
    /// session's current turn still waits" (pending, or answered with its resume queued).
    /// Its own placeholders: none.
    fn waiting_gate_exists_sql(&self) -> &'static str;

    /// The resume job of `interaction_id`, inside the caller's transaction.
    fn resume_job<'a>(
        &'a self,
        tx: &'a mut Tx<'_>,
        interaction_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<ResumeJobState>, StoreError>>;

    /// The newest gate `turn_id` of `project_id` opened, with its resume job, inside the
    /// caller's transaction.
    fn gate_of_turn<'a>(
        &'a self,
        tx: &'a mut Tx<'_>,
        project_id: &'a str,
        turn_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<GateOfTurn>, StoreError>>;

    /// The turn that opened the gate `interaction_id` (any project), if any.
    fn turn_of_gate<'a>(
        &'a self,
        interaction_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, StoreError>>;

    /// The agent revision `revision_id` of `project_id`, with its workflow's slug.
    fn agent_revision<'a>(
        &'a self,
        project_id: &'a str,
        revision_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<AgentRevision>, StoreError>>;
}

/// Offered by execution to the interactions area: the fence of a write a running turn
/// makes in its execution session's name (the tool-run ledger's record of a call).
pub trait ExecutionQueries: Send + Sync {
    /// A SQL condition: "the execution session named by placeholder `$session` is active
    /// and held by the run token of placeholder `$token`".
    fn run_held_sql(&self, session: usize, token: usize) -> String;
}
