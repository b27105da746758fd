//! What a run returns: the [`RunResult`] with its events, usage and harness
//! capabilities, and the NDJSON stream records ([`RunStreamRecord`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ChatMessage;
use crate::JsonObject;

/// One structured event of a run, kept verbatim (every field, in its order). Its `type`
/// is a non-empty string (`message`, `thought`, `tool_call`, `tool_result`,
/// `interaction_request`, `usage`, `error`, `done`, ...); other event types are kept,
/// not rejected. A typeless event inside a [`RunResult`] is dropped on parse.
#[derive(Debug, Clone, PartialEq)]
pub struct RunEvent {
    fields: JsonObject,
}

impl RunEvent {
    /// An event of `event_type` with `fields` after the `type` key (a `type` inside
    /// `fields` is ignored).
    pub fn new(event_type: impl Into<String>, fields: JsonObject) -> Self {
        let mut all = JsonObject::new();
        all.insert(
            "type".to_string(),
            serde_json::Value::String(event_type.into()),
        );
        for (key, value) in fields {
            if key != "type" {
                all.insert(key, value);
            }
        }
        Self { fields: all }
    }

    /// Wrap an object that has a non-empty string `type`; `None` otherwise.
    pub fn from_object(fields: JsonObject) -> Option<Self> {
        match fields.get("type") {
            Some(serde_json::Value::String(t)) if !t.is_empty() => Some(Self { fields }),
            _ => None,
        }
    }

    /// The event type.
    pub fn event_type(&self) -> &str {
        self.fields
            .get("type")
            .and_then(|v| v.as_str())
            .unwrap_or_default()
    }

    /// A field of the event.
    pub fn get(&self, key: &str) -> Option<&serde_json::Value> {
        self.fields.get(key)
    }

    /// Every field, `type` included, in wire order.
    pub fn fields(&self) -> &JsonObject {
        &self.fields
    }

    /// The event as its JSON object.
    pub fn into_object(self) -> JsonObject {
        self.fields
    }
}

impl Serialize for RunEvent {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.fields.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RunEvent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let fields = JsonObject::deserialize(deserializer)?;
        Self::from_object(fields)
            .ok_or_else(|| serde::de::Error::custom("a run event needs a non-empty string `type`"))
    }
}

impl JsonSchema for RunEvent {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RunEvent".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "One structured event of a run, keyed by `type` (message, thought, tool_call, tool_result, interaction_request, usage, error, done, ...). Every other field is kept verbatim.",
            "type": "object",
            "properties": {"type": {"type": "string", "minLength": 1}},
            "required": ["type"],
            "additionalProperties": true
        })
    }
}

/// `events` of a result: a typeless event is dropped, not rejected.
fn events_dropping_typeless<'de, D>(deserializer: D) -> Result<Option<Vec<RunEvent>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let Some(items) = Option::<Vec<JsonObject>>::deserialize(deserializer)? else {
        return Ok(None);
    };
    let mut events = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        match item.get("type") {
            None | Some(serde_json::Value::Null) => continue,
            Some(serde_json::Value::String(t)) if t.is_empty() => continue,
            Some(serde_json::Value::String(_)) => {}
            Some(other) => {
                return Err(serde::de::Error::custom(format!(
                    "events[{index}].type must be a string, got {other}"
                )))
            }
        }
        events.extend(RunEvent::from_object(item));
    }
    Ok(Some(events))
}

/// The schema of `RunResult.events`: objects whose `type`, when present, is a string
/// (a typeless event is accepted on the wire and dropped on parse).
fn result_events_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "description": "The run's events. An event without a `type` is dropped on parse (not rejected).",
        "type": ["array", "null"],
        "items": {
            "type": "object",
            "properties": {"type": {"type": ["string", "null"]}},
            "additionalProperties": true
        }
    })
}

/// `usage`: tokens and cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgentUsage {
    /// Input tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<u64>,
    /// Output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<u64>,
    /// Total tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Cost in USD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

fn yes() -> bool {
    true
}

/// `capabilities`: what the harness can do (the 11 flags; absent flags take Agenta's
/// defaults: `textMessages` true, the rest false).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HarnessCapabilities {
    /// Text messages.
    #[serde(default = "yes")]
    pub text_messages: bool,
    /// Image input.
    #[serde(default)]
    pub images: bool,
    /// File attachments.
    #[serde(default)]
    pub file_attachments: bool,
    /// MCP tools.
    #[serde(default)]
    pub mcp_tools: bool,
    /// Tool calls.
    #[serde(default)]
    pub tool_calls: bool,
    /// Reasoning output.
    #[serde(default)]
    pub reasoning: bool,
    /// Plan mode.
    #[serde(default)]
    pub plan_mode: bool,
    /// Permission gates.
    #[serde(default)]
    pub permissions: bool,
    /// Usage reporting.
    #[serde(default)]
    pub usage: bool,
    /// Streaming deltas.
    #[serde(default)]
    pub streaming_deltas: bool,
    /// Session lifecycle.
    #[serde(default)]
    pub session_lifecycle: bool,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Default for HarnessCapabilities {
    fn default() -> Self {
        Self {
            text_messages: true,
            images: false,
            file_attachments: false,
            mcp_tools: false,
            tool_calls: false,
            reasoning: false,
            plan_mode: false,
            permissions: false,
            usage: false,
            streaming_deltas: false,
            session_lifecycle: false,
            extra: JsonObject::new(),
        }
    }
}

/// The `/run` result. On failure `ok` is false and `error` a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    /// The run succeeded.
    pub ok: bool,
    /// Final output text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// The conversation after the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<ChatMessage>>,
    /// The run's events (typeless ones dropped on parse).
    #[serde(
        default,
        deserialize_with = "events_dropping_typeless",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(schema_with = "result_events_schema")]
    pub events: Option<Vec<RunEvent>>,
    /// Token usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<AgentUsage>,
    /// Why the model stopped, e.g. `end_turn`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Harness capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<HarnessCapabilities>,
    /// The session the run used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The model the run used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The run's trace id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// Failure message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl RunResult {
    /// A failed result: `{"ok": false, "error": message}`.
    pub fn failure(message: impl Into<String>) -> Self {
        Self {
            ok: false,
            output: None,
            messages: None,
            events: None,
            usage: None,
            stop_reason: None,
            capabilities: None,
            session_id: None,
            model: None,
            trace_id: None,
            error: Some(message.into()),
            extra: JsonObject::new(),
        }
    }

    /// A successful result with `output` and nothing else set.
    pub fn success(output: impl Into<String>) -> Self {
        let mut result = Self::failure(String::new());
        result.ok = true;
        result.error = None;
        result.output = Some(output.into());
        result
    }
}

/// One line of the NDJSON `/run` stream (`Accept: application/x-ndjson`): any number of
/// `{"kind":"event","event":{...}}` then exactly one `{"kind":"result","result":{...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunStreamRecord {
    /// A run event.
    Event {
        /// The event.
        event: RunEvent,
    },
    /// The final result (the last line).
    Result {
        /// The result (boxed: it is much larger than an event).
        result: Box<RunResult>,
    },
}

/// Decode the inner `event`/`result` value, naming its path in the error (serde's
/// internally tagged enums lose the path of the inner field).
fn stream_record_field<T, E>(record: &mut JsonObject, field: &str) -> Result<T, E>
where
    T: serde::de::DeserializeOwned,
    E: serde::de::Error,
{
    let value = record
        .remove(field)
        .ok_or_else(|| E::custom(format!("missing field `{field}`")))?;
    crate::from_json_value(value).map_err(|err| {
        let at = if err.path == "." {
            field.to_string()
        } else {
            format!("{field}.{}", err.path)
        };
        E::custom(format!("at {at}: {}", err.reason))
    })
}

impl<'de> Deserialize<'de> for RunStreamRecord {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut record = JsonObject::deserialize(deserializer)?;
        let kind = match record.get("kind") {
            Some(serde_json::Value::String(kind)) => kind.clone(),
            Some(other) => {
                return Err(serde::de::Error::custom(format!(
                    "`kind` must be \"event\" or \"result\", got {other}"
                )))
            }
            None => return Err(serde::de::Error::custom("missing field `kind`")),
        };
        match kind.as_str() {
            "event" => Ok(Self::Event {
                event: stream_record_field(&mut record, "event")?,
            }),
            "result" => Ok(Self::Result {
                result: stream_record_field(&mut record, "result")?,
            }),
            other => Err(serde::de::Error::custom(format!(
                "unknown `kind` \"{other}\", expected \"event\" or \"result\""
            ))),
        }
    }
}

impl RunStreamRecord {
    /// Parse one NDJSON line. A blank line, and an event without a `type` (dropped, as
    /// in a result), give `Ok(None)`.
    ///
    /// ```
    /// use gatehouse_wire::run::RunStreamRecord;
    /// let line = r#"{"kind":"event","event":{"type":"message","text":"hi"}}"#;
    /// assert!(matches!(RunStreamRecord::from_ndjson_line(line), Ok(Some(RunStreamRecord::Event { .. }))));
    /// assert!(RunStreamRecord::from_ndjson_line(r#"{"kind":"event","event":{"text":"x"}}"#).unwrap().is_none());
    /// ```
    pub fn from_ndjson_line(line: &str) -> Result<Option<Self>, crate::WireDecodeError> {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return Ok(None);
        }
        let value: serde_json::Value = crate::from_json_slice(trimmed.as_bytes())?;
        let typeless_event = value.get("kind").and_then(|k| k.as_str()) == Some("event")
            && value
                .get("event")
                .and_then(|e| e.as_object())
                .is_some_and(|e| RunEvent::from_object(e.clone()).is_none());
        if typeless_event {
            return Ok(None);
        }
        crate::from_json_value(value).map(Some)
    }

    /// The final-result record.
    pub fn result(result: RunResult) -> Self {
        Self::Result {
            result: Box::new(result),
        }
    }

    /// An event record.
    pub fn event(event: RunEvent) -> Self {
        Self::Event { event }
    }

    /// This record as one NDJSON line (no trailing newline).
    pub fn to_ndjson_line(&self) -> String {
        // Serializing these types cannot fail: every map key is a string.
        serde_json::to_string(self).unwrap_or_default()
    }
}
