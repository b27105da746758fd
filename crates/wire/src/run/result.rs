//! What a run returns: the [`RunResult`] with its events, usage and harness
//! capabilities, and the NDJSON stream records ([`RunStreamRecord`]).

use serde::{Deserialize, Serialize};

use super::ChatMessage;
use crate::json::present_or_null;
use crate::JsonObject;

/// One structured event of a run, kept verbatim (every field, in its order). Agenta's reader
/// (`Event.from_wire`) keeps an event whose `type` is truthy and drops the rest: a missing,
/// `null`, `""`, `false`, `0`, `[]` or `{}` type. The type is usually a string (`message`,
/// `thought`, `tool_call`, `tool_result`, `interaction_request`, `usage`, `error`, `done`,
/// ...); another truthy value is read as Python's `str()` writes it (`7`, `True`).
#[derive(Debug, Clone, PartialEq)]
pub struct RunEvent {
    fields: JsonObject,
    /// The type as text when the wire's `type` is not a string.
    type_text: Option<String>,
}

/// Python's `str()` of a truthy JSON scalar; `None` for a falsy value (Agenta drops the
/// event). Containers are read as their JSON text.
fn python_type_text(value: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match value {
        Value::Null | Value::Bool(false) => None,
        Value::Bool(true) => Some("True".to_string()),
        Value::String(s) if s.is_empty() => None,
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => {
            let f = crate::numbers::literal_to_f64(n.as_str());
            (f != 0.0).then(|| crate::numbers::python_number_text(n).into_owned())
        }
        Value::Array(items) if items.is_empty() => None,
        Value::Object(map) if map.is_empty() => None,
        other => Some(other.to_string()),
    }
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
        Self {
            fields: all,
            type_text: None,
        }
    }

    /// Wrap an object whose `type` Agenta's reader accepts (truthy); `None` otherwise.
    pub fn from_object(fields: JsonObject) -> Option<Self> {
        match fields.get("type") {
            Some(serde_json::Value::String(t)) if !t.is_empty() => Some(Self {
                fields,
                type_text: None,
            }),
            Some(other) => {
                let type_text = python_type_text(other)?;
                Some(Self {
                    fields,
                    type_text: Some(type_text),
                })
            }
            None => None,
        }
    }

    /// The event type.
    pub fn event_type(&self) -> &str {
        if let Some(text) = &self.type_text {
            return text;
        }
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
        Self::from_object(fields).ok_or_else(|| {
            serde::de::Error::custom("a run event needs a `type` (a non-empty string)")
        })
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for RunEvent {
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

/// `events` of a result as Agenta's reader takes them: an item that is not an object, or
/// whose `type` is falsy, is dropped; the rest are kept verbatim.
fn events_as_agenta_reads<'de, D>(
    deserializer: D,
) -> Result<Option<Option<Vec<RunEvent>>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let Some(items) = Option::<Vec<serde_json::Value>>::deserialize(deserializer)? else {
        return Ok(Some(None));
    };
    let events = items
        .into_iter()
        .filter_map(|item| match item {
            serde_json::Value::Object(fields) => RunEvent::from_object(fields),
            _ => None,
        })
        .collect();
    Ok(Some(Some(events)))
}

/// The schema of `RunResult.events`: objects whose `type`, when present, is a string
/// (an event without a type is accepted on the wire and dropped on parse).
#[cfg(feature = "schema")]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AgentUsage {
    /// Input tokens.
    #[serde(
        default,
        deserialize_with = "crate::json::optional_whole_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub input: Option<u64>,
    /// Output tokens.
    #[serde(
        default,
        deserialize_with = "crate::json::optional_whole_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub output: Option<u64>,
    /// Total tokens.
    #[serde(
        default,
        deserialize_with = "crate::json::optional_whole_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub total: Option<u64>,
    /// Cost in USD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `capabilities`: what the harness can do (the 11 flags). An absent flag takes Agenta's
/// default, `textMessages` true and the rest false ([`HarnessCapabilities::flag`]); the
/// flags are kept as written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HarnessCapabilities {
    /// Text messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_messages: Option<bool>,
    /// Image input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<bool>,
    /// File attachments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_attachments: Option<bool>,
    /// MCP tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_tools: Option<bool>,
    /// Tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<bool>,
    /// Reasoning output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<bool>,
    /// Plan mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_mode: Option<bool>,
    /// Permission gates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<bool>,
    /// Usage reporting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<bool>,
    /// Streaming deltas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming_deltas: Option<bool>,
    /// Session lifecycle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_lifecycle: Option<bool>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl HarnessCapabilities {
    /// A flag as Agenta reads it (`HarnessCapabilities.from_wire`): the value when written,
    /// else its default (`true` for `textMessages`, `false` for the others and for a name
    /// it does not know). `name` is the camelCase wire name.
    pub fn flag(&self, name: &str) -> bool {
        let value = match name {
            "textMessages" => self.text_messages,
            "images" => self.images,
            "fileAttachments" => self.file_attachments,
            "mcpTools" => self.mcp_tools,
            "toolCalls" => self.tool_calls,
            "reasoning" => self.reasoning,
            "planMode" => self.plan_mode,
            "permissions" => self.permissions,
            "usage" => self.usage,
            "streamingDeltas" => self.streaming_deltas,
            "sessionLifecycle" => self.session_lifecycle,
            _ => None,
        };
        value.unwrap_or(name == "textMessages")
    }
}

/// The `/run` result. On failure `ok` is false and `error` a message.
///
/// Agenta's reader treats a `null` optional key as absent; this type reads it so too, and
/// remembers it, so that the result is written back as it was read.
// serde is implemented by hand below; the `serde` attributes here are for the schemars
// derive alone, hence under the same feature.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", serde(rename_all = "camelCase"))]
pub struct RunResult {
    /// The run succeeded.
    pub ok: bool,
    /// Final output text.
    #[cfg_attr(feature = "schema", serde(default))]
    pub output: Option<String>,
    /// The conversation after the run.
    #[cfg_attr(feature = "schema", serde(default))]
    pub messages: Option<Vec<ChatMessage>>,
    /// The run's events (those Agenta's reader drops are dropped on parse).
    #[cfg_attr(feature = "schema", serde(default))]
    #[cfg_attr(feature = "schema", schemars(schema_with = "result_events_schema"))]
    pub events: Option<Vec<RunEvent>>,
    /// Token usage.
    #[cfg_attr(feature = "schema", serde(default))]
    pub usage: Option<AgentUsage>,
    /// Why the model stopped, e.g. `end_turn`.
    #[cfg_attr(feature = "schema", serde(default))]
    pub stop_reason: Option<String>,
    /// Harness capabilities.
    #[cfg_attr(feature = "schema", serde(default))]
    pub capabilities: Option<HarnessCapabilities>,
    /// The session the run used.
    #[cfg_attr(feature = "schema", serde(default))]
    pub session_id: Option<String>,
    /// The model the run used.
    #[cfg_attr(feature = "schema", serde(default))]
    pub model: Option<String>,
    /// The run's trace id.
    #[cfg_attr(feature = "schema", serde(default))]
    pub trace_id: Option<String>,
    /// Failure message.
    #[cfg_attr(feature = "schema", serde(default))]
    pub error: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[cfg_attr(feature = "schema", serde(flatten))]
    pub extra: JsonObject,
    /// The optional keys that were read as `null` (written back as `null` while unset).
    #[cfg_attr(feature = "schema", schemars(skip))]
    nulls: ResultNulls,
}

/// Which optional keys of a [`RunResult`] were `null` on the wire, one bit per key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct ResultNulls(u16);

impl ResultNulls {
    fn set<T>(&mut self, bit: u16, read: &Option<Option<T>>) {
        if matches!(read, Some(None)) {
            self.0 |= 1 << bit;
        }
    }

    /// How to write a key: the value, `null` when it was read as `null`, else absent.
    fn write<T>(self, bit: u16, value: Option<&T>) -> Option<Option<&T>> {
        match value {
            Some(value) => Some(Some(value)),
            None if self.0 & (1 << bit) != 0 => Some(None),
            None => None,
        }
    }
}

/// The wire form of [`RunResult`], reading: `Some(None)` is a `null` key.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RunResultRead {
    ok: bool,
    #[serde(default, deserialize_with = "present_or_null")]
    output: Option<Option<String>>,
    #[serde(default, deserialize_with = "present_or_null")]
    messages: Option<Option<Vec<ChatMessage>>>,
    #[serde(default, deserialize_with = "events_as_agenta_reads")]
    events: Option<Option<Vec<RunEvent>>>,
    #[serde(default, deserialize_with = "present_or_null")]
    usage: Option<Option<AgentUsage>>,
    #[serde(default, deserialize_with = "present_or_null")]
    stop_reason: Option<Option<String>>,
    #[serde(default, deserialize_with = "present_or_null")]
    capabilities: Option<Option<HarnessCapabilities>>,
    #[serde(default, deserialize_with = "present_or_null")]
    session_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "present_or_null")]
    model: Option<Option<String>>,
    #[serde(default, deserialize_with = "present_or_null")]
    trace_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "present_or_null")]
    error: Option<Option<String>>,
    #[serde(flatten)]
    extra: JsonObject,
}

/// The wire form of [`RunResult`], writing (keys in the runner's order).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RunResultWrite<'a> {
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<Option<&'a String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    messages: Option<Option<&'a Vec<ChatMessage>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    events: Option<Option<&'a Vec<RunEvent>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<Option<&'a AgentUsage>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop_reason: Option<Option<&'a String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    capabilities: Option<Option<&'a HarnessCapabilities>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<Option<&'a String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<Option<&'a String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace_id: Option<Option<&'a String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Option<&'a String>>,
    #[serde(flatten)]
    extra: &'a JsonObject,
}

impl<'de> Deserialize<'de> for RunResult {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let read = RunResultRead::deserialize(deserializer)?;
        let mut nulls = ResultNulls::default();
        nulls.set(0, &read.output);
        nulls.set(1, &read.messages);
        nulls.set(2, &read.events);
        nulls.set(3, &read.usage);
        nulls.set(4, &read.stop_reason);
        nulls.set(5, &read.capabilities);
        nulls.set(6, &read.session_id);
        nulls.set(7, &read.model);
        nulls.set(8, &read.trace_id);
        nulls.set(9, &read.error);
        Ok(Self {
            ok: read.ok,
            output: read.output.flatten(),
            messages: read.messages.flatten(),
            events: read.events.flatten(),
            usage: read.usage.flatten(),
            stop_reason: read.stop_reason.flatten(),
            capabilities: read.capabilities.flatten(),
            session_id: read.session_id.flatten(),
            model: read.model.flatten(),
            trace_id: read.trace_id.flatten(),
            error: read.error.flatten(),
            extra: read.extra,
            nulls,
        })
    }
}

impl Serialize for RunResult {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let n = self.nulls;
        RunResultWrite {
            ok: self.ok,
            output: n.write(0, self.output.as_ref()),
            messages: n.write(1, self.messages.as_ref()),
            events: n.write(2, self.events.as_ref()),
            usage: n.write(3, self.usage.as_ref()),
            stop_reason: n.write(4, self.stop_reason.as_ref()),
            capabilities: n.write(5, self.capabilities.as_ref()),
            session_id: n.write(6, self.session_id.as_ref()),
            model: n.write(7, self.model.as_ref()),
            trace_id: n.write(8, self.trace_id.as_ref()),
            error: n.write(9, self.error.as_ref()),
            extra: &self.extra,
        }
        .serialize(serializer)
    }
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
            nulls: ResultNulls::default(),
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
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    /// A strict reading: the record must be an event Agenta keeps or a result. A stream
    /// reader takes each line through [`RunStreamRecord::from_ndjson_line`], which drops
    /// what Agenta's reader drops instead.
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
    /// Read one NDJSON line as Agenta's stream reader (`AgentStream`) does: a blank line, a
    /// record whose `kind` is neither `event` nor `result` (or missing), and an event Agenta
    /// drops (not an object, or a falsy `type`) give `Ok(None)`; a result record whose
    /// `result` is missing or `null` reads as a failed run (`ok` false, no error text). A
    /// line that is not a JSON object, or a `result` of the wrong shape, is an error.
    ///
    /// ```
    /// use gatehouse_wire::run::RunStreamRecord;
    /// let line = r#"{"kind":"event","event":{"type":"message","text":"hi"}}"#;
    /// assert!(matches!(RunStreamRecord::from_ndjson_line(line), Ok(Some(RunStreamRecord::Event { .. }))));
    /// assert!(RunStreamRecord::from_ndjson_line(r#"{"kind":"event","event":{"text":"x"}}"#).unwrap().is_none());
    /// assert!(RunStreamRecord::from_ndjson_line(r#"{"kind":"heartbeat"}"#).unwrap().is_none());
    /// ```
    pub fn from_ndjson_line(line: &str) -> Result<Option<Self>, crate::WireDecodeError> {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return Ok(None);
        }
        let mut record: JsonObject = crate::from_json_slice(trimmed.as_bytes())?;
        match record.get("kind").and_then(serde_json::Value::as_str) {
            Some("event") => match record.shift_remove("event") {
                Some(serde_json::Value::Object(fields)) => {
                    Ok(RunEvent::from_object(fields).map(|event| Self::Event { event }))
                }
                _ => Ok(None),
            },
            Some("result") => {
                let value = match record.shift_remove("result") {
                    // Agenta reads `record.get("result") or {}`: a failed run.
                    None | Some(serde_json::Value::Null) => {
                        let mut failed = RunResult::failure(String::new());
                        failed.error = None;
                        return Ok(Some(Self::result(failed)));
                    }
                    Some(value) => value,
                };
                let result: RunResult =
                    crate::from_json_value(value).map_err(|err| crate::WireDecodeError {
                        type_name: "RunStreamRecord",
                        path: if err.path == "." {
                            "result".to_string()
                        } else {
                            format!("result.{}", err.path)
                        },
                        reason: err.reason,
                    })?;
                Ok(Some(Self::result(result)))
            }
            _ => Ok(None),
        }
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
