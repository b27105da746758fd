//! The durable respond: `POST /sessions/interactions/{interaction_id}/respond` (Agenta's
//! `respond_interaction`), and `POST /sessions/{session_id}/continuations/resume`.
//!
//! The request carries one `answer`, or `answers[]` for a turn parked on parallel gates
//! (the path's interaction among them); the 202 says which command continues the turn
//! and in what state the execution is. Errors are [`super::ErrorEnvelope`]s.

use serde::{Deserialize, Serialize};

use crate::interaction::SessionInteraction;
use crate::JsonObject;

use super::{SessionCommandRef, SessionExecutionState};

/// The most `answers` one respond takes (Agenta's model: 1..=100).
pub const MAX_ANSWERS: usize = 100;

/// One item of `answers[]` (Agenta's `SessionInteractionAnswerRequest`: extra keys are a
/// 422 there; a reader here keeps them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionInteractionAnswerRequest {
    /// The interaction answered (a UUID).
    #[cfg_attr(feature = "schema", schemars(extend("format" = "uuid")))]
    pub interaction_id: String,
    /// Its answer, e.g. `{"approved": true, "tool_call_id": "..."}` (the schema's
    /// [`ApprovalAnswer`](crate::interaction::ApprovalAnswer); read as the object sent).
    #[cfg_attr(
        feature = "schema",
        schemars(with = "crate::interaction::ApprovalAnswer")
    )]
    pub answer: JsonObject,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The respond body (Agenta's `SessionInteractionRespondRequest`): `answer`, or
/// `answers[]` (1..=100, distinct, all of one execution, the path's interaction among
/// them), not both; `expected_execution_id` refuses the answer (409
/// `execution_mismatch`) when the interaction belongs to another execution. An
/// `Idempotency-Key` header is required. Written with only the keys that are set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionInteractionRespondRequest {
    /// The answer to the path's interaction (the schema's [`ApprovalAnswer`](crate::interaction::ApprovalAnswer); read as
    /// the object sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<crate::interaction::ApprovalAnswer>")
    )]
    pub answer: Option<JsonObject>,
    /// The answers to several gates of one turn (parallel gates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = 100)))]
    pub answers: Option<Vec<SessionInteractionAnswerRequest>>,
    /// The execution (turn) the caller saw the gate in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_execution_id: Option<String>,
    /// The path's gate's digest as the client read it (`gate.digest`, C8; Gatehouse
    /// only): recorded only while the gate is still that one, else 409 `STALE_GATE` and
    /// nothing is recorded. Absent: not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SessionInteractionRespondRequest {
    /// A body answering the path's interaction.
    pub fn single(answer: JsonObject) -> Self {
        Self {
            answer: Some(answer),
            ..Self::default()
        }
    }

    /// A body answering several gates of one turn; the path's interaction must be among
    /// them.
    pub fn many(answers: Vec<SessionInteractionAnswerRequest>) -> Self {
        Self {
            answers: Some(answers),
            ..Self::default()
        }
    }

    /// The same body, refused unless the interaction belongs to `execution_id`.
    pub fn expecting(mut self, execution_id: impl Into<String>) -> Self {
        self.expected_execution_id = Some(execution_id.into());
        self
    }
}

/// `{id, state}` of the execution a respond 202 names (Agenta's
/// `SessionInteractionContinuationExecution`): the new continuation, or the source turn
/// when no command was created (a partial `answers[]`, a same-verdict second answer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionInteractionContinuationExecution {
    /// The execution's id.
    pub id: String,
    /// Its state: `awaiting_interactions`, `pending_delivery`, `recoverable`, `running`,
    /// `terminal` (Agenta's model lists these; any other is kept).
    pub state: SessionExecutionState,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The respond 202 (Agenta's `SessionInteractionContinuationResponse`, dumped with
/// `model_dump`: `command` is written `null`, never left out). `command` is null when
/// nothing new was created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionInteractionContinuationResponse {
    /// The answered interaction row (for `answers[]`, the path's).
    pub interaction: SessionInteraction,
    /// The continuation command, or `null`.
    #[serde(default)]
    pub command: Option<SessionCommandRef>,
    /// The execution that continues (or the source turn).
    pub execution: SessionInteractionContinuationExecution,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `POST /sessions/{session_id}/continuations/resume` 200 (Agenta's
/// `SessionContinuationResumeResponse`): whether a `recoverable` continuation was
/// delivered again (false while one is executing, or when there is none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionContinuationResumeResponse {
    /// True when a continuation was redelivered.
    pub resumed: bool,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}
