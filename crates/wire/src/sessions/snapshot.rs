//! `GET /sessions/{session_id}` (Agenta's `get_session_snapshot`): what a client reads on
//! (re)connect: the execution state, the pending gates and inputs, how far the durable
//! events go, and the host's capabilities.
//!
//! Agenta's route sets `response_model_exclude_none=True`: a `None` field is left out at
//! every depth of every model (a `dict`'s own values are kept). The writer here does the
//! same, so a snapshot reads and writes back byte for byte.

use serde::{Deserialize, Serialize, Serializer};

use crate::interaction::SessionInteraction;
use crate::JsonObject;

use super::inputs::PendingInput;
use super::streams::{SessionStream, SessionTurn, STREAM, TURN};
use super::{ExcludeNone, NoneShape, SessionCapabilities, SessionExecutionState, FLAT_MODEL};

/// `execution_state` (Agenta's `SessionExecutionSnapshot`): `idle`, `running` or
/// `stopping`, and which execution. A turn parked on gates holds the sandbox alive, not
/// running: it reads `idle` while `pending.interactions` lists its gates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionExecutionSnapshot {
    /// The execution (the stopping turn, else the stream's turn); absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub id: Option<String>,
    /// The state (Agenta's model lists `idle`, `running`, `stopping`; any other is kept).
    #[serde(default = "idle")]
    pub state: SessionExecutionState,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

fn idle() -> SessionExecutionState {
    SessionExecutionState::Idle
}

impl Default for SessionExecutionSnapshot {
    fn default() -> Self {
        Self {
            id: None,
            state: idle(),
            extra: JsonObject::new(),
        }
    }
}

/// `pending` (Agenta's `SessionSnapshotPending`): the inputs waiting and the gates still
/// open (interactions with status `pending`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionSnapshotPending {
    /// Queued or steering inputs.
    #[serde(default, serialize_with = "inputs_without_nones")]
    pub inputs: Vec<PendingInput>,
    /// The open gates, each answerable with the durable respond.
    #[serde(default, serialize_with = "interactions_without_nones")]
    pub interactions: Vec<SessionInteraction>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `read` (Agenta's `SessionRecordsReadState`): the last durable event's sequence (resume
/// `GET /sessions/{id}/events?after=` from it) and whether the history is whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionRecordsReadState {
    /// The sequence of the last durable event (0: none).
    pub latest_sequence: u64,
    /// False when some history was lost (an `execution.lost`).
    pub history_complete: bool,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The snapshot (Agenta's `SessionSnapshotResponse`). `session`, `execution` and `read`
/// are present only when Agenta's shared reader is on and a stream row exists; never
/// `null` (the schema refuses it; the reader takes it as absent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionSnapshotResponse {
    /// The stream row.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "stream_without_nones"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "SessionStream"))]
    pub session: Option<SessionStream>,
    /// The current (or last) turn.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "turn_without_nones"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "SessionTurn"))]
    pub execution: Option<SessionTurn>,
    /// Idle, running or stopping.
    #[serde(default)]
    pub execution_state: SessionExecutionSnapshot,
    /// Pending inputs and open gates.
    pub pending: SessionSnapshotPending,
    /// How far the durable events go.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "SessionRecordsReadState"))]
    pub read: Option<SessionRecordsReadState>,
    /// What the host can do.
    #[serde(default)]
    pub capabilities: SessionCapabilities,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// [`SessionInteraction`]'s models (its `data`, the request, references and selector in
/// it, its flags), for `exclude_none`. `resolution`, `parameters`, `tags`, `meta` and the
/// request's `args` are dicts: their own nulls stay.
const INTERACTION: NoneShape = NoneShape::Model(&[
    (
        "data",
        NoneShape::Model(&[
            ("request", FLAT_MODEL),
            ("references", NoneShape::MapOf(&FLAT_MODEL)),
            ("selector", FLAT_MODEL),
        ]),
    ),
    ("flags", FLAT_MODEL),
]);

fn interactions_without_nones<S: Serializer>(
    rows: &[SessionInteraction],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(rows.iter().map(|row| ExcludeNone(row, &INTERACTION)))
}

fn inputs_without_nones<S: Serializer>(
    inputs: &[PendingInput],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(inputs.iter().map(|input| ExcludeNone(input, &FLAT_MODEL)))
}

// `skip_serializing_if` has already left out `None`.
fn stream_without_nones<S: Serializer>(
    stream: &Option<SessionStream>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match stream {
        Some(stream) => ExcludeNone(stream, &STREAM).serialize(serializer),
        None => serializer.serialize_none(),
    }
}

fn turn_without_nones<S: Serializer>(
    turn: &Option<SessionTurn>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match turn {
        Some(turn) => ExcludeNone(turn, &TURN).serialize(serializer),
        None => serializer.serialize_none(),
    }
}
