//! The session's events: `GET /sessions/{session_id}/events?after=N` (Agenta's
//! `watch_session_events`, live_events.py), a `text/event-stream` that replays the durable
//! events after `N`, says `ready`, then relays live frames.
//!
//! Frames, in order: `retry: <ms>`; replayed durable events (`data:` a
//! [`SessionDurableEvent`], `kind: "event"`, written by pydantic's `model_dump_json`:
//! compact); `event: ready`; live `data:` frames (a [`SessionLiveFrame`], `kind: "frame"`,
//! relayed as `json.dumps` writes it: `", "` and `": "`); `: heartbeat`; and last, maybe,
//! `event: relay-close` ([`SessionRelayClose`]). [`SessionEventsFrame`] reads one frame's
//! text and writes it back byte for byte.
//!
//! Resume after a reconnect from the last durable event's `sequence` (or the snapshot's
//! `read.latest_sequence`): durable events always come through the replay, with their
//! sequence; live frames are not replayed.

use serde::{Deserialize, Serialize};

use crate::json::open_enum;
use crate::{JsonObject, WireDecodeError};

open_enum! {
    /// The `type` of a durable event (the union members of Agenta's
    /// `SessionDurableEvent`).
    pub enum DurableEventType {
        /// A turn started ([`ExecutionStartedPayload`]).
        ExecutionStarted = "execution.started",
        /// A turn stopped, e.g. by a Stop ([`ExecutionStoppedPayload`]).
        ExecutionStopped = "execution.stopped",
        /// A turn failed ([`ExecutionFailedPayload`]).
        ExecutionFailed = "execution.failed",
        /// A turn was lost; history may be incomplete ([`ExecutionLostPayload`]).
        ExecutionLost = "execution.lost",
        /// A message was completed ([`MessageCompletedPayload`]).
        MessageCompleted = "message.completed",
        /// A tool call was completed ([`ToolCompletedPayload`]).
        ToolCompleted = "tool.completed",
    }
}

/// `execution.started` payload (Agenta's `ExecutionStartedPayload`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ExecutionStartedPayload {
    /// When (RFC 3339).
    pub started_at: String,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `execution.stopped` payload (Agenta's `ExecutionStoppedPayload`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ExecutionStoppedPayload {
    /// When (RFC 3339).
    pub stopped_at: String,
    /// Why, e.g. `user_stop`.
    pub reason: String,
    /// The Stop command that stopped it, if one did (written `null` otherwise).
    #[serde(default)]
    pub command_id: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The error of a failed execution (Agenta's `SessionExecutionError`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionExecutionError {
    /// A machine code, e.g. `continuation_delivery_failed`.
    pub code: String,
    /// A message for people.
    pub message: String,
    /// Whether trying again may work.
    pub retryable: bool,
    /// Structured detail.
    #[serde(default)]
    pub details: Option<JsonObject>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `execution.failed` payload (Agenta's `ExecutionFailedPayload`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ExecutionFailedPayload {
    /// When (RFC 3339).
    pub failed_at: String,
    /// What failed.
    pub error: SessionExecutionError,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `execution.lost` payload (Agenta's `ExecutionLostPayload`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ExecutionLostPayload {
    /// When (RFC 3339).
    pub lost_at: String,
    /// Why.
    pub reason: String,
    /// Always false: some of the turn's history is missing.
    pub history_complete: bool,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `message.completed` payload (Agenta's `MessageCompletedPayload`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MessageCompletedPayload {
    /// The message's id.
    pub message_id: String,
    /// Who wrote it, e.g. `assistant`.
    pub role: String,
    /// Its content (any JSON).
    pub content: serde_json::Value,
    /// Why the model stopped, when known (written `null` otherwise).
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `tool.completed` payload (Agenta's `ToolCompletedPayload`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolCompletedPayload {
    /// The model's tool call id.
    pub tool_call_id: String,
    /// The tool.
    pub name: String,
    /// Its input (any JSON).
    pub input: serde_json::Value,
    /// Its output (any JSON; `null` when none).
    #[serde(default)]
    pub output: serde_json::Value,
    /// Its error (any JSON; `null` when none).
    #[serde(default)]
    pub error: serde_json::Value,
    /// e.g. `completed`, `failed`, `denied`.
    pub status: String,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A durable event's payload, read by its `type`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum DurableEventPayload {
    /// `execution.started`.
    ExecutionStarted(ExecutionStartedPayload),
    /// `execution.stopped`.
    ExecutionStopped(ExecutionStoppedPayload),
    /// `execution.failed`.
    ExecutionFailed(ExecutionFailedPayload),
    /// `execution.lost`.
    ExecutionLost(ExecutionLostPayload),
    /// `message.completed`.
    MessageCompleted(MessageCompletedPayload),
    /// `tool.completed`.
    ToolCompleted(ToolCompletedPayload),
    /// A type this version does not know: the payload as sent.
    Unknown(JsonObject),
}

fn const_one() -> u64 {
    1
}

fn event_kind() -> String {
    "event".to_string()
}

/// One durable event (Agenta's `SessionDurableEvent`, a union discriminated by `type`):
/// what the session's log holds, replayed after `?after=N` with its `sequence`. Written as
/// `model_dump_json` writes it: every key, `sequence` `null` when unset.
///
/// The payload is kept as sent; [`SessionDurableEvent::typed_payload`] reads it by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionDurableEvent {
    /// The frame format's version (1).
    #[serde(default = "const_one")]
    pub version: u64,
    /// `event` (a durable event; live frames are `frame`).
    #[serde(default = "event_kind")]
    pub kind: String,
    /// The agent session.
    pub session_id: String,
    /// The execution (turn) it belongs to.
    pub execution_id: String,
    /// The event's id.
    pub frame_or_event_id: String,
    /// What it is about (the execution, a message, a tool call).
    pub entity_id: String,
    /// Its place in the session's log, from 1: resume with `?after=` it.
    #[serde(default)]
    pub sequence: Option<u64>,
    /// When (RFC 3339).
    pub created_at: String,
    /// What happened.
    #[serde(rename = "type")]
    pub event_type: DurableEventType,
    /// The type's payload.
    pub payload: JsonObject,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SessionDurableEvent {
    /// The payload read as its `type` says; an unknown type's payload as sent.
    pub fn typed_payload(&self) -> Result<DurableEventPayload, WireDecodeError> {
        let payload = serde_json::Value::Object(self.payload.clone());
        Ok(match self.event_type {
            DurableEventType::ExecutionStarted => {
                DurableEventPayload::ExecutionStarted(crate::from_json_value(payload)?)
            }
            DurableEventType::ExecutionStopped => {
                DurableEventPayload::ExecutionStopped(crate::from_json_value(payload)?)
            }
            DurableEventType::ExecutionFailed => {
                DurableEventPayload::ExecutionFailed(crate::from_json_value(payload)?)
            }
            DurableEventType::ExecutionLost => {
                DurableEventPayload::ExecutionLost(crate::from_json_value(payload)?)
            }
            DurableEventType::MessageCompleted => {
                DurableEventPayload::MessageCompleted(crate::from_json_value(payload)?)
            }
            DurableEventType::ToolCompleted => {
                DurableEventPayload::ToolCompleted(crate::from_json_value(payload)?)
            }
            DurableEventType::Unknown(_) => DurableEventPayload::Unknown(self.payload.clone()),
        })
    }
}

fn frame_kind() -> String {
    "frame".to_string()
}

/// One live frame (Agenta's `SessionLiveFrame`, `kind: "frame"`): what the runner streams
/// while a turn runs (message deltas, tool progress). Not replayed after a reconnect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionLiveFrame {
    /// The frame format's version (1).
    #[serde(default = "const_one")]
    pub version: u64,
    /// `frame`.
    #[serde(default = "frame_kind")]
    pub kind: String,
    /// The agent session.
    pub session_id: String,
    /// The execution (turn) streaming it.
    pub execution_id: String,
    /// The frame's id.
    pub frame_or_event_id: String,
    /// Its place in the execution's frames, from 0.
    pub frame_index: u64,
    /// What it is about (a message, a tool call).
    pub entity_id: String,
    /// What it is, e.g. `message.delta` (the runner's types).
    #[serde(rename = "type")]
    pub frame_type: String,
    /// The type's payload.
    pub payload: JsonObject,
    /// When (RFC 3339).
    pub created_at: String,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_enum! {
    /// Why the events stream was closed.
    pub enum RelayCloseReason {
        /// The client read too slowly (reconnect).
        SlowReader = "slow_reader",
        /// The caller may no longer read the session (do not reconnect).
        AuthorizationRevoked = "authorization_revoked",
        /// The live relay went away (reconnect).
        RelayUnavailable = "relay_unavailable",
    }
}

/// The data of `event: relay-close`, the stream's last frame: why, and whether to
/// reconnect (with `?after=` the last sequence).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionRelayClose {
    /// Why the stream closed.
    pub reason: RelayCloseReason,
    /// Whether a client should reconnect.
    pub reconnect: bool,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One frame of the events stream, as its text reads ([`SessionEventsFrame::parse`]) and
/// is written ([`SessionEventsFrame::to_sse`]), byte for byte.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SessionEventsFrame {
    /// `retry: <ms>`: the reconnect delay, first.
    Retry(u64),
    /// `data: {...kind:"event"...}`: a replayed durable event (compact JSON).
    Event(SessionDurableEvent),
    /// `event: ready` (data `{}`): the replay is done; live frames follow.
    Ready,
    /// `data: {...kind:"frame"...}`: a live frame (`json.dumps` spacing).
    Frame(SessionLiveFrame),
    /// `: heartbeat`: an idle keep-alive.
    Heartbeat,
    /// `event: relay-close`: the last frame.
    RelayClose(SessionRelayClose),
    /// A frame this version does not know: its text, kept.
    Unknown(String),
}

/// The text of a `data:` frame of a live frame or relay-close, as Python's `json.dumps`
/// writes it.
fn python_data<T: Serialize>(value: &T) -> Result<String, WireDecodeError> {
    let value = serde_json::to_value(value).map_err(|err| WireDecodeError {
        type_name: "SessionEventsFrame",
        path: ".".to_string(),
        reason: err.to_string(),
    })?;
    Ok(crate::pyjson::python_json_dumps(&value))
}

impl SessionEventsFrame {
    /// Read one frame's text (a `\n\n`-terminated block, as the stream sends it). A frame
    /// whose form this version does not know is [`SessionEventsFrame::Unknown`]; a
    /// durable event, live frame or relay-close whose data does not read is an error.
    ///
    /// ```
    /// use gatehouse_wire::sessions::SessionEventsFrame;
    /// let text = "event: relay-close\ndata: {\"reason\": \"slow_reader\", \"reconnect\": true}\n\n";
    /// let frame = SessionEventsFrame::parse(text).unwrap();
    /// assert!(matches!(frame, SessionEventsFrame::RelayClose(ref close) if close.reconnect));
    /// assert_eq!(frame.to_sse().unwrap(), text);
    /// ```
    pub fn parse(text: &str) -> Result<Self, WireDecodeError> {
        let block = text.strip_suffix("\n\n").unwrap_or(text);
        let mut event = None;
        let mut data: Vec<&str> = Vec::new();
        let mut retry = None;
        let mut comment = None;
        for line in block.split('\n') {
            if let Some(value) = line.strip_prefix("data:") {
                data.push(value.strip_prefix(' ').unwrap_or(value));
            } else if let Some(value) = line.strip_prefix("event:") {
                event = Some(value.strip_prefix(' ').unwrap_or(value));
            } else if let Some(value) = line.strip_prefix("retry:") {
                retry = Some(value.trim());
            } else if let Some(value) = line.strip_prefix(':') {
                comment = Some(value.trim());
            }
        }
        let data = data.join("\n");
        let unknown = || Ok(Self::Unknown(text.to_string()));
        match (event, retry, comment) {
            (None, Some(ms), None) if data.is_empty() => match ms.parse() {
                Ok(ms) => Ok(Self::Retry(ms)),
                Err(_) => unknown(),
            },
            (None, None, Some("heartbeat")) if data.is_empty() => Ok(Self::Heartbeat),
            (Some("ready"), None, None) if data == "{}" => Ok(Self::Ready),
            (Some("relay-close"), None, None) => {
                crate::from_json_slice(data.as_bytes()).map(Self::RelayClose)
            }
            (None, None, None) if !data.is_empty() => {
                let kind = crate::from_json_slice::<JsonObject>(data.as_bytes())?
                    .get("kind")
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_string);
                match kind.as_deref() {
                    Some("event") => crate::from_json_slice(data.as_bytes()).map(Self::Event),
                    Some("frame") => crate::from_json_slice(data.as_bytes()).map(Self::Frame),
                    _ => unknown(),
                }
            }
            _ => unknown(),
        }
    }

    /// The frame's text as Agenta's stream sends it (with its closing `\n\n`).
    pub fn to_sse(&self) -> Result<String, WireDecodeError> {
        Ok(match self {
            Self::Retry(ms) => format!("retry: {ms}\n\n"),
            Self::Event(event) => {
                let data = serde_json::to_string(event).map_err(|err| WireDecodeError {
                    type_name: "SessionDurableEvent",
                    path: ".".to_string(),
                    reason: err.to_string(),
                })?;
                format!("data: {data}\n\n")
            }
            Self::Ready => "event: ready\ndata: {}\n\n".to_string(),
            Self::Frame(frame) => format!("data: {}\n\n", python_data(frame)?),
            Self::Heartbeat => ": heartbeat\n\n".to_string(),
            Self::RelayClose(close) => {
                format!("event: relay-close\ndata: {}\n\n", python_data(close)?)
            }
            Self::Unknown(text) => text.clone(),
        })
    }
}
