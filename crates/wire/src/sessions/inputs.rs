//! Pending inputs: messages sent while a turn runs, queued or steering (Agenta's
//! `PendingInput`, inputs/dtos.py), listed by the snapshot and removed with
//! `DELETE /sessions/{session_id}/inputs/{input_id}` (Agenta's
//! `remove_pending_session_input`; 404 `pending_input_not_found` and 409
//! `pending_input_promoted` as a [`super::DetailWrappedEnvelope`]).

use serde::{Deserialize, Serialize};

use crate::json::open_enum;
use crate::JsonObject;

open_enum! {
    /// Where a pending input is (Agenta's `PendingInputState`).
    pub enum PendingInputState {
        /// Waiting for the running turn to end.
        Pending = "pending",
        /// It became an execution (`promoted_execution_id`).
        Promoted = "promoted",
        /// Removed before it ran.
        Removed = "removed",
    }
}

open_enum! {
    /// How a pending input joins the session (Agenta's `PendingInput.policy`).
    pub enum PendingInputPolicy {
        /// Run after the current turn.
        Queue = "queue",
        /// Steer the running turn.
        Steer = "steer",
    }
}

/// One pending input (Agenta's `PendingInput`). Written as `model_dump` writes it, every
/// key, `null` when unset (the snapshot drops the nulls).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PendingInput {
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
    /// The input's id (a UUID).
    #[serde(default)]
    pub id: Option<String>,
    /// Owning project (a UUID).
    pub project_id: String,
    /// The agent session.
    pub session_id: String,
    /// The message, as sent.
    pub content: JsonObject,
    /// Its place in the queue.
    pub position: i64,
    /// Pending, promoted or removed.
    pub state: PendingInputState,
    /// Queue or steer.
    pub policy: PendingInputPolicy,
    /// The `Idempotency-Key` it was sent with.
    pub idempotency_key: String,
    /// A digest of the request, to tell a replay from a reuse of the key.
    pub request_fingerprint: String,
    /// The execution it became, once promoted.
    #[serde(default)]
    pub promoted_execution_id: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `DELETE /sessions/{session_id}/inputs/{input_id}` 200 (Agenta's
/// `PendingInputResponse`): the removed input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PendingInputResponse {
    /// The input, now `removed`.
    pub input: PendingInput,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}
