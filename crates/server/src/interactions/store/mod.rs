//! The SQL of interactions, as `impl Store` blocks over the shared
//! [`Store`](crate::store::Store): the rows, their idempotency keys and the respond
//! compare-and-set (`rows.rs`), the batch respond decided item by item in order
//! (`batch.rs`), the resume queue (`jobs.rs`), turns (`turns.rs`), the
//! tool-run ledger (`tool_runs.rs`) and the workflow registry (`workflows.rs`).

mod batch;
mod jobs;
mod rows;
mod tool_runs;
mod turns;
mod workflows;

pub use batch::BatchRespondItem;
pub use jobs::{
    ClaimedJob, CompleteOutcome, FailOutcome, JobCompletion, MAX_ATTEMPTS, RESUME_FAILED_CODE,
};
pub use rows::{
    CreateOutcome, InteractionFilter, InteractionRecord, NewInteraction, RespondOutcome,
    TransitionOutcome,
};
pub use tool_runs::{args_digest, ToolRun, ToolRunFence, ToolRunPermit, ToolRunRecord};
pub use turns::{turn_status_text, NewTurn, TurnClaim, TurnRecord};
pub use workflows::{RevisionRecord, VariantRecord, WorkflowRecord};
