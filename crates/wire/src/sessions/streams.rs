//! The session's stream row and its turns, as the snapshot and
//! `GET /sessions/streams/?session_id=` (Agenta's `fetch_session_stream`) carry them:
//! Agenta's `SessionStream` and `SessionTurn` (read from the models' OpenAPI extract;
//! Agenta allows extra keys on both, and so do the readers here).
//!
//! Written as `model_dump` writes them, every key, `null` when unset; the snapshot writes
//! them without their nulls (see [`super::snapshot`]).

use serde::{Deserialize, Serialize};

use crate::JsonObject;

use super::{NoneShape, SessionCapabilities, FLAT_MODEL};

/// One reference of a stream or a turn (Agenta's `SessionReference`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionReference {
    /// The entity's id (a UUID).
    #[serde(default)]
    pub id: Option<String>,
    /// The entity's slug.
    #[serde(default)]
    pub slug: Option<String>,
    /// The revision's version.
    #[serde(default)]
    pub version: Option<String>,
    /// Which reference this is (e.g. `workflow_revision`).
    #[serde(default)]
    pub key: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A stream's flags (Agenta's `SessionStreamFlags`); a missing flag reads as false.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionStreamFlags {
    /// The session's sandbox is up (a turn parked on a gate holds it alive, not running).
    #[serde(default)]
    pub is_alive: bool,
    /// A turn is running.
    #[serde(default)]
    pub is_running: bool,
    /// A client is attached.
    #[serde(default)]
    pub is_attached: bool,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The session's stream row (Agenta's `SessionStream`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionStream {
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
    /// The row's id (a UUID).
    #[serde(default)]
    pub id: Option<String>,
    /// Its name.
    #[serde(default)]
    pub name: Option<String>,
    /// Its description.
    #[serde(default)]
    pub description: Option<String>,
    /// Owning project (a UUID).
    pub project_id: String,
    /// The agent session.
    pub session_id: String,
    /// Running, alive, attached.
    #[serde(default)]
    pub flags: SessionStreamFlags,
    /// Free-form tags.
    #[serde(default)]
    pub tags: Option<JsonObject>,
    /// Free-form metadata.
    #[serde(default)]
    pub meta: Option<JsonObject>,
    /// The current (or last) turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// What the session runs.
    #[serde(default)]
    pub references: Option<Vec<SessionReference>>,
    /// When it was archived (RFC 3339).
    #[serde(default)]
    pub archived_at: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One turn (execution) of a session (Agenta's `SessionTurn`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionTurn {
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
    /// The row's id (a UUID).
    #[serde(default)]
    pub id: Option<String>,
    /// Owning project (a UUID).
    #[serde(default)]
    pub project_id: Option<String>,
    /// The agent session.
    pub session_id: String,
    /// The turn (execution) id.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The stream row (a UUID).
    #[serde(default)]
    pub stream_id: Option<String>,
    /// The turn's position in the session.
    #[serde(default)]
    pub turn_index: Option<i64>,
    /// The harness that ran it, e.g. `pi`.
    #[serde(default)]
    pub harness_kind: Option<String>,
    /// The harness's own session id.
    #[serde(default)]
    pub agent_session_id: Option<String>,
    /// The sandbox it ran in.
    #[serde(default)]
    pub sandbox_id: Option<String>,
    /// What the turn ran.
    #[serde(default)]
    pub references: Option<Vec<SessionReference>>,
    /// When it started (RFC 3339).
    #[serde(default)]
    pub start_time: Option<String>,
    /// When it ended (RFC 3339).
    #[serde(default)]
    pub end_time: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `GET /sessions/streams/?session_id=` 200 (Agenta's `SessionStreamResponse`, no
/// `exclude_none`: `stream` is written `null`, never left out).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionStreamResponse {
    /// The stream row, or `null`.
    #[serde(default)]
    pub stream: Option<SessionStream>,
    /// What the host can do.
    #[serde(default)]
    pub capabilities: SessionCapabilities,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// [`SessionReference`]'s model fields: `exclude_none` drops its nulls.
const REFERENCE: NoneShape = FLAT_MODEL;

/// [`SessionStream`]'s models, for `exclude_none`.
pub(crate) const STREAM: NoneShape = NoneShape::Model(&[
    ("flags", FLAT_MODEL),
    ("references", NoneShape::ListOf(&REFERENCE)),
]);

/// [`SessionTurn`]'s models, for `exclude_none`.
pub(crate) const TURN: NoneShape =
    NoneShape::Model(&[("references", NoneShape::ListOf(&REFERENCE))]);
