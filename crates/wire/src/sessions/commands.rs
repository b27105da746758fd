//! Session commands: what a Stop (`cancel`) or an answer (`continue_interaction`) writes,
//! and the runner claims and settles. Agenta's `SessionCommand` (commands/dtos.py) and the
//! `{id, state}` reference the public routes answer with (`SessionCommandRef`).
//!
//! A command's delivery [`SessionCommandState`] is not the run's
//! [`SessionCommandOutcome`]: `applied` says the runner took the command, `stopped` says
//! what became of the run.

use serde::{Deserialize, Serialize};

use crate::json::open_enum;
use crate::JsonObject;

open_enum! {
    /// Where a command is in its delivery (Agenta's `SessionCommandState`). Not the run's
    /// outcome.
    pub enum SessionCommandState {
        /// Recorded, not yet claimed by a runner.
        Pending = "pending",
        /// A runner claimed it under a lease.
        Claimed = "claimed",
        /// The runner applied it; its outcome is set.
        Applied = "applied",
        /// Nothing to apply it to (e.g. a Stop while nothing runs): settled at once.
        Obsolete = "obsolete",
    }
}

open_enum! {
    /// What a command did to the run (Agenta's `SessionCommandOutcome`), once settled.
    pub enum SessionCommandOutcome {
        /// The run stopped.
        Stopped = "stopped",
        /// Nothing was running.
        NotRunning = "not_running",
        /// A newer turn had started; the command no longer applied.
        SupersededByNewerTurn = "superseded_by_newer_turn",
        /// Applying it failed.
        Failed = "failed",
        /// The run was lost (its runner went away).
        Lost = "lost",
        /// A continuation started.
        Started = "started",
    }
}

open_enum! {
    /// What a command asks for (Agenta's `SessionCommandKind`).
    pub enum SessionCommandKind {
        /// Stop the running turn.
        Cancel = "cancel",
        /// Continue a turn with the answers to its gates.
        ContinueInteraction = "continue_interaction",
        /// Run a queued input.
        ContinueInput = "continue_input",
    }
}

/// `{id, state}`: the command a respond 202 or a Stop answers with (Agenta's
/// `SessionCommandRef`). `state` is the state when it was answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionCommandRef {
    /// The command's id (a UUID).
    #[cfg_attr(feature = "schema", schemars(extend("format" = "uuid")))]
    pub id: String,
    /// Its delivery state.
    pub state: SessionCommandState,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A durable command row (Agenta's `SessionCommand`, commands/dtos.py): no public route
/// returns it whole; the runner's outcome route answers a part of it. Written as
/// `model_dump` writes it: every key, `null` when unset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionCommand {
    /// RFC 3339 creation time.
    #[serde(default)]
    pub created_at: Option<String>,
    /// RFC 3339 last update time.
    #[serde(default)]
    pub updated_at: Option<String>,
    /// RFC 3339 deletion time.
    #[serde(default)]
    pub deleted_at: Option<String>,
    /// Who created it (a UUID).
    #[serde(default)]
    pub created_by_id: Option<String>,
    /// Who last updated it (a UUID).
    #[serde(default)]
    pub updated_by_id: Option<String>,
    /// Who deleted it (a UUID).
    #[serde(default)]
    pub deleted_by_id: Option<String>,
    /// The command's id (a UUID).
    #[serde(default)]
    pub id: Option<String>,
    /// Owning project (a UUID).
    pub project_id: String,
    /// The agent session.
    pub session_id: String,
    /// What it asks for.
    pub kind: SessionCommandKind,
    /// The execution (turn) it acts on.
    #[serde(default)]
    pub target_turn_id: Option<String>,
    /// The execution the caller expected (`expected_execution_id`).
    #[serde(default)]
    pub expected_turn_id: Option<String>,
    /// What the command carries (e.g. the answers of a continuation).
    #[serde(default)]
    pub data: Option<JsonObject>,
    /// Its delivery state.
    pub state: SessionCommandState,
    /// The runner that claimed it.
    #[serde(default)]
    pub claimed_by: Option<String>,
    /// When the claim's lease runs out (RFC 3339).
    #[serde(default)]
    pub claim_expires_at: Option<String>,
    /// How many claims it has had.
    #[serde(default)]
    pub claim_count: i64,
    /// What it did to the run, once settled.
    #[serde(default)]
    pub outcome: Option<SessionCommandOutcome>,
    /// The `Idempotency-Key` it was recorded under.
    #[serde(default)]
    pub idempotency_key: Option<String>,
    /// When it was settled (RFC 3339).
    #[serde(default)]
    pub settled_at: Option<String>,
    /// Free-form tags.
    #[serde(default)]
    pub tags: Option<JsonObject>,
    /// Free-form metadata.
    #[serde(default)]
    pub meta: Option<JsonObject>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}
