//! Answering many gates in one request (a Gatehouse route, CONTRACT.md C4):
//! `POST /api/sessions/interactions/respond-batch`, advertised as the capability
//! `interaction_batch`. Each gate is still answered exactly once (the same conditional
//! update as a single respond) and gets its own outcome; an item's `idempotency_key`
//! makes a retried batch replay that gate's first answer instead of reporting it
//! already answered. At most [`MAX_BATCH_ANSWERS`] items per request: a client splits
//! larger sets.
//!
//! ```
//! use gatehouse_wire::batch::{BatchAnswer, BatchOutcome, BatchRespondRequest, BatchRespondResponse};
//! let body = BatchRespondRequest {
//!     answers: vec![BatchAnswer::approve("019fac94-0000-7000-8000-000000000001", Some("key-1".into()))],
//! };
//! assert_eq!(
//!     serde_json::to_string(&body).unwrap(),
//!     r#"{"answers":[{"id":"019fac94-0000-7000-8000-000000000001","answer":{"approved":true},"idempotency_key":"key-1"}]}"#
//! );
//! let answer: BatchRespondResponse = serde_json::from_str(
//!     r#"{"count":1,"results":[{"id":"x","outcome":"already_answered"}]}"#,
//! ).unwrap();
//! assert_eq!(answer.results[0].outcome, BatchOutcome::AlreadyAnswered);
//! ```

use serde::{Deserialize, Serialize};

use crate::error::GatehouseCode;
use crate::interaction::SessionInteraction;
use crate::json::open_enum;
use crate::JsonObject;

/// The most answers one batch may carry; a larger set is split by the client.
pub const MAX_BATCH_ANSWERS: usize = 500;

/// `POST /api/sessions/interactions/respond-batch` body.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct BatchRespondRequest {
    /// The gates to answer, each with its answer (1 to [`MAX_BATCH_ANSWERS`]).
    pub answers: Vec<BatchAnswer>,
}

/// One gate of a batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct BatchAnswer {
    /// The interaction row's `id`.
    pub id: String,
    /// The answer object, as a single respond's `answer` (`{approved, tool_call_id?,
    /// message?}` for an approval; missing or `null` reads as `{}`). The schema's
    /// [`ApprovalAnswer`](crate::interaction::ApprovalAnswer); read as the object sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<crate::interaction::ApprovalAnswer>")
    )]
    pub answer: Option<JsonObject>,
    /// This gate's idempotency key: the same key again (a retried batch) replays the
    /// gate's first answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// The gate's digest as the client read it (`gate.digest`, C8): the item is answered
    /// only while the gate is still that one, else `invalid` with `STALE_GATE` and
    /// nothing recorded for it. Absent: not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

impl BatchAnswer {
    /// An approval of gate `id`.
    pub fn approve(id: impl Into<String>, idempotency_key: Option<String>) -> Self {
        let mut answer = JsonObject::new();
        answer.insert("approved".to_string(), serde_json::Value::Bool(true));
        Self {
            id: id.into(),
            answer: Some(answer),
            idempotency_key,
            digest: None,
        }
    }
}

open_enum! {
    /// What happened to one gate of a batch.
    pub enum BatchOutcome {
        /// This answer won (or a retried batch replayed it): `interaction` is the row.
        Answered = "answered",
        /// Someone else answered first, or the gate was cancelled.
        AlreadyAnswered = "already_answered",
        /// No such gate in this project.
        NotFound = "not_found",
        /// The item was refused (a malformed id, an idempotency key used for another
        /// request): `error` says why.
        Invalid = "invalid",
    }
}

/// Why one gate of a batch was not answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct BatchError {
    /// Gatehouse's machine code (`VALIDATION_ERROR`, `IDEMPOTENCY_KEY_REUSED`, ...).
    pub code: String,
    /// What was wrong.
    pub detail: String,
}

impl BatchError {
    /// The code as a [`GatehouseCode`]; `None` for a code this version does not know.
    pub fn gatehouse_code(&self) -> Option<GatehouseCode> {
        GatehouseCode::parse(&self.code)
    }
}

/// One gate's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct BatchResult {
    /// The gate, as sent.
    pub id: String,
    /// What happened.
    pub outcome: BatchOutcome,
    /// The row after the answer (`answered`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interaction: Option<SessionInteraction>,
    /// Why not (`invalid`, and on `already_answered`/`not_found` the single respond's
    /// error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<BatchError>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The answer of a batch: one result per item, in the request's order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct BatchRespondResponse {
    /// How many results.
    pub count: u64,
    /// One per item of the request, in its order.
    pub results: Vec<BatchResult>,
}
