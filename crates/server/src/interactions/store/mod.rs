//! The interactions area's store, [`InteractionStore`]: its tables (`interactions`,
//! `idempotency_keys`, `resume_jobs`, `turns`, `tool_runs`, the workflow registry,
//! `session_executions`, `session_commands`, `session_runs`) and
//! their SQL, over the plain [`Database`]. A write that changes what a watcher or a
//! webhook receiver sees announces its changes once, through
//! [`in_announced_tx!`](crate::announce::in_announced_tx).
//!
//! Inside, imports go one way: `batch.rs`, `jobs.rs` and `turns.rs` use `rows.rs`;
//! `jobs.rs` uses `turns.rs`; both use `lease.rs`. The files: the rows, their idempotency
//! keys and the respond compare-and-set (`rows.rs`), the batch respond decided item by
//! item in order (`batch.rs`), the resume queue (`jobs.rs`) and its lease (`lease.rs`),
//! turns (`turns.rs`), the tool-run ledger (`tool_runs.rs`), the workflow registry
//! (`workflows.rs`), Agenta's durable session control (`commands.rs`: the settlement of a
//! source execution, the continuation and Stop commands, the durable respond decided in
//! one transaction; `jobs.rs` uses it to settle a continuation with its resume), the running
//! turns and the durable Stop (`runs.rs`: `turns.rs` and `jobs.rs` end a run in the
//! transaction that records its turn), and what
//! this area offers the others over its tables (`offered.rs`: the webhook flag of a
//! delivered gate, a paused session's gate), and the gates of a turn parked on several
//! (`parallel.rs`: which rows they are, read from the turn; `rows.rs`, `commands.rs` and
//! `jobs.rs` use it), and Gatehouse's batch on a durable host (`durable_batch.rs`, over
//! `commands.rs` and `batch.rs`).

mod batch;
mod commands;
mod durable_batch;
mod jobs;
mod lease;
mod offered;
mod parallel;
mod rows;
mod runs;
mod tool_runs;
mod turns;
mod workflows;

pub use batch::BatchRespondItem;
pub use commands::{
    continuation_state, durable_request_hash, CommandRecord, DurableAnswer, DurableOutcome,
    DurableRespond,
};
pub use durable_batch::DurableBatch;
pub use jobs::{CompleteOutcome, FailOutcome, JobCompletion, MAX_ATTEMPTS, RESUME_FAILED_CODE};
pub use lease::ClaimedJob;
pub use offered::OfferedQueries;
pub use rows::{
    CreateOutcome, InteractionFilter, InteractionRecord, NewInteraction, RespondOutcome,
    TransitionOutcome,
};
pub use runs::{
    RunEnd, RunRecorded, SessionRunState, StopOutcome, StopRequest, KIND_CANCEL, RUN_RUNNING,
    RUN_STOPPING,
};
pub use tool_runs::{args_digest, ToolRun, ToolRunFence, ToolRunPermit, ToolRunRecord};
pub use turns::{turn_status_text, NewTurn, TurnClaim, TurnRecord};
pub use workflows::{RevisionRecord, VariantRecord, WorkflowRecord};

use std::sync::Arc;

use crate::announce::Announcer;
use crate::db::Database;
use crate::seams::ExecutionQueries;

/// The interactions area's store. Cheap to clone.
#[derive(Clone)]
pub struct InteractionStore {
    db: Database,
    announce: Announcer,
    execution: Arc<dyn ExecutionQueries>,
}

impl std::fmt::Debug for InteractionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InteractionStore")
            .field("db", &self.db.backend_name())
            .finish_non_exhaustive()
    }
}

impl InteractionStore {
    /// The store over `db`, announcing its changes through `announce`, fencing a
    /// running turn's writes with what `execution` offers.
    pub fn new(db: Database, announce: Announcer, execution: Arc<dyn ExecutionQueries>) -> Self {
        Self {
            db,
            announce,
            execution,
        }
    }

    /// The database under it.
    pub fn db(&self) -> &Database {
        &self.db
    }
}
