//! The events of the session watch stream (`GET /sessions/streams/watch`, SSE).

use serde::{Deserialize, Serialize};

use super::row::InteractionStatus;
use crate::json::open_enum;
use crate::JsonObject;

open_enum! {
    /// Lifecycle state in a watch `lifecycle` event.
    pub enum LifecycleState {
        /// A turn is running.
        Running = "running",
        /// The turn ended (completed, parked or failed).
        Ended = "ended",
    }
}

/// The `data` of one event on `GET /sessions/streams/watch` (SSE). The SSE event name
/// equals `type`. Agenta's `ready` event carries `{}` (no `type`): an object without a
/// `type` reads as [`WatchEvent::Ready`]. A client must revalidate (re-query) after every
/// (re)connect, since events are notifications, not a log.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type")]
pub enum WatchEvent {
    /// The stream is live (newer servers send it first).
    #[serde(rename = "ready")]
    Ready {
        /// The watched session.
        #[serde(default)]
        session_id: Option<String>,
    },
    /// An interaction of the session changed status.
    #[serde(rename = "interaction")]
    Interaction {
        /// The watched session.
        session_id: String,
        /// Its new status.
        status: InteractionStatus,
        /// Which row (Gatehouse adds it; upstream may not).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        interaction_id: Option<String>,
    },
    /// The session's records (transcript) changed.
    #[serde(rename = "records-changed")]
    RecordsChanged {
        /// The watched session.
        session_id: String,
    },
    /// A turn started or ended.
    #[serde(rename = "lifecycle")]
    Lifecycle {
        /// The watched session.
        session_id: String,
        /// Running or ended.
        state: LifecycleState,
    },
}

// Deserialized by hand (same shape as the derive) so that an error names the field's
// path: serde's internally tagged enums lose it.
#[derive(Deserialize)]
struct WatchReady {
    #[serde(default)]
    session_id: Option<String>,
}

#[derive(Deserialize)]
struct WatchInteraction {
    session_id: String,
    status: InteractionStatus,
    #[serde(default)]
    interaction_id: Option<String>,
}

#[derive(Deserialize)]
struct WatchRecordsChanged {
    session_id: String,
}

#[derive(Deserialize)]
struct WatchLifecycle {
    session_id: String,
    state: LifecycleState,
}

fn watch_variant<T, E>(event: JsonObject) -> Result<T, E>
where
    T: serde::de::DeserializeOwned,
    E: serde::de::Error,
{
    crate::from_json_value(serde_json::Value::Object(event))
        .map_err(|err| E::custom(format!("at {}: {}", err.path, err.reason)))
}

impl<'de> Deserialize<'de> for WatchEvent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let event = JsonObject::deserialize(deserializer)?;
        let event_type = match event.get("type") {
            Some(serde_json::Value::String(t)) => t.clone(),
            Some(other) => {
                return Err(serde::de::Error::custom(format!(
                    "`type` must be a string, got {other}"
                )))
            }
            // Agenta's `ready` frame is `data: {}`.
            None => "ready".to_string(),
        };
        match event_type.as_str() {
            "ready" => {
                let v: WatchReady = watch_variant(event)?;
                Ok(Self::Ready {
                    session_id: v.session_id,
                })
            }
            "interaction" => {
                let v: WatchInteraction = watch_variant(event)?;
                Ok(Self::Interaction {
                    session_id: v.session_id,
                    status: v.status,
                    interaction_id: v.interaction_id,
                })
            }
            "records-changed" => {
                let v: WatchRecordsChanged = watch_variant(event)?;
                Ok(Self::RecordsChanged {
                    session_id: v.session_id,
                })
            }
            "lifecycle" => {
                let v: WatchLifecycle = watch_variant(event)?;
                Ok(Self::Lifecycle {
                    session_id: v.session_id,
                    state: v.state,
                })
            }
            other => Err(serde::de::Error::custom(format!(
                "unknown watch event `type` \"{other}\", expected ready, interaction, records-changed or lifecycle"
            ))),
        }
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for WatchEvent {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "WatchEvent".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let status = generator.subschema_for::<InteractionStatus>();
        let state = generator.subschema_for::<LifecycleState>();
        schemars::json_schema!({
            "oneOf": [
                {
                    "description": "The stream is live (sent first). Agenta sends `{}`.",
                    "type": "object",
                    "properties": {
                        "type": {"const": "ready"},
                        "session_id": {"type": ["string", "null"]}
                    }
                },
                {
                    "description": "An interaction of the session changed status.",
                    "type": "object",
                    "properties": {
                        "type": {"const": "interaction"},
                        "session_id": {"type": "string"},
                        "status": status,
                        "interaction_id": {"type": "string"}
                    },
                    "required": ["type", "session_id", "status"]
                },
                {
                    "description": "The session's records (transcript) changed.",
                    "type": "object",
                    "properties": {
                        "type": {"const": "records-changed"},
                        "session_id": {"type": "string"}
                    },
                    "required": ["type", "session_id"]
                },
                {
                    "description": "A turn started or ended.",
                    "type": "object",
                    "properties": {
                        "type": {"const": "lifecycle"},
                        "session_id": {"type": "string"},
                        "state": state
                    },
                    "required": ["type", "session_id", "state"]
                }
            ]
        })
    }
}

impl WatchEvent {
    /// The SSE `event:` name this event is sent under.
    pub fn event_name(&self) -> &'static str {
        match self {
            Self::Ready { .. } => "ready",
            Self::Interaction { .. } => "interaction",
            Self::RecordsChanged { .. } => "records-changed",
            Self::Lifecycle { .. } => "lifecycle",
        }
    }
}
