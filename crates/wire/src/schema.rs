//! The JSON Schema registry: one draft 2020-12 schema per top-level wire type, generated
//! from the Rust types (schemars), committed under `schema/` with an `index.json`.
//!
//! The files of `schema/` are [`crate::schema_dir::files`]: these schemas, the
//! [`index`], and the OpenAPI document built from them. `cargo xtask schema` writes
//! them; `cargo xtask schema --check` (and a contract test) fails when a committed file
//! differs from what the types generate. This module does no I/O itself.
//!
//! ```
//! let entry = gatehouse_wire::schema::by_name("RunRequest").unwrap();
//! assert_eq!(entry.file_name, "run_request.schema.json");
//! assert_eq!(entry.schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
//! assert_eq!(entry.schema["properties"]["effectiveParameters"]["minProperties"], 1);
//! ```

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::Value;

use crate::batch::{BatchRespondRequest, BatchRespondResponse};
use crate::capabilities::CapabilitiesResponse;
use crate::error::{AgentPlatErrorEnvelope, FastApiErrorBody};
use crate::execution::{
    ChangeAuthorityBody, DataEnvelope, ExecutionEvent, ExecutionSession, Intervention,
    RequestInterventionBody, StreamEnvelope,
};
use crate::health::ReadinessResponse;
use crate::interaction::{
    ApprovalAnswer, CancelStaleRequest, CancelStaleResponse, CreateInteractionRequest,
    InteractionQueryRequest, InteractionResponse, InteractionsResponse, RespondRequest,
    SessionInteraction, TransitionRequest, WatchEvent,
};
use crate::invoke::{
    CommitRevisionRequest, CommitRevisionResponse, InvokeRequest, InvokeResponse, TurnsResponse,
};
use crate::run::{RunRequest, RunResult, RunStreamRecord};
use crate::sessions::{
    CancelError, DetailWrappedEnvelope, ErrorEnvelope, PendingInputResponse, SessionCancelRequest,
    SessionCancelResponse, SessionCapabilities, SessionCommand, SessionContinuationResumeResponse,
    SessionDurableEvent, SessionInteractionContinuationResponse, SessionInteractionRespondRequest,
    SessionLiveFrame, SessionRelayClose, SessionSnapshotResponse, SessionStreamResponse,
};
use crate::webhooks::WebhookDeliveriesResponse;
use crate::JsonObject;

/// The `$schema` every generated schema declares.
pub const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// The base of every schema's `$id` (the file name is appended).
pub const ID_BASE: &str = "https://gatehouse.example.invalid/schema/";

/// The name of the index file in `schema/`.
pub const INDEX_FILE_NAME: &str = "index.json";

/// One registered wire type and its generated schema.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaEntry {
    /// The type's contract name, e.g. `RunRequest`.
    pub name: &'static str,
    /// Its file in `schema/`, e.g. `run_request.schema.json`.
    pub file_name: &'static str,
    /// What it is (also the schema's root `description`).
    pub description: &'static str,
    /// The schema: `$schema`, `$id`, `title`, `description`, then the generated body.
    pub schema: Value,
}

impl SchemaEntry {
    /// The file content: pretty-printed JSON with a trailing newline.
    pub fn to_file_contents(&self) -> String {
        pretty(&self.schema)
    }
}

/// `value` as a committed file holds it: pretty-printed JSON with a trailing newline.
pub(crate) fn pretty(value: &Value) -> String {
    // Serializing a Value cannot fail.
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

/// Remove `"default": null` from every subschema whose `type` refuses `null`: serde's
/// `#[serde(default)]` on an `Option` makes schemars write it, but a default the schema
/// itself rejects is a contradiction OpenAPI validators refuse (the field is simply
/// omitted when absent).
fn drop_refused_null_defaults(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let admits_null = match map.get("type") {
                None => true,
                Some(Value::String(t)) => t == "null",
                Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
                Some(_) => true,
            };
            if !admits_null && map.get("default") == Some(&Value::Null) {
                map.shift_remove("default");
            }
            map.values_mut().for_each(drop_refused_null_defaults);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_refused_null_defaults),
        _ => {}
    }
}

fn generate<T: JsonSchema>(
    name: &'static str,
    file_name: &'static str,
    description: &'static str,
) -> SchemaEntry {
    let generator = SchemaSettings::draft2020_12().into_generator();
    let mut body = generator.into_root_schema_for::<T>().to_value();
    drop_refused_null_defaults(&mut body);
    let mut root = JsonObject::new();
    root.insert("$schema".into(), Value::String(DRAFT_2020_12.into()));
    root.insert("$id".into(), Value::String(format!("{ID_BASE}{file_name}")));
    root.insert("title".into(), Value::String(name.into()));
    root.insert("description".into(), Value::String(description.into()));
    if let Value::Object(map) = body {
        for (key, value) in map {
            if !matches!(key.as_str(), "$schema" | "$id" | "title" | "description") {
                root.insert(key, value);
            }
        }
    }
    SchemaEntry {
        name,
        file_name,
        description,
        schema: Value::Object(root),
    }
}

/// Every registered wire type, in a stable order.
pub fn all() -> Vec<SchemaEntry> {
    vec![
        generate::<RunRequest>(
            "RunRequest",
            "run_request.schema.json",
            "A1: the /run request the SDK sends a runner (every key Agenta 0.125.1 and main write, camelCase; runContext inner keys snake_case). effectiveParameters is optional: a non-empty object, present only on a session run (a non-empty sessionId); harnessMode only on codex; the tool keys on every harness but mock.",
        ),
        generate::<RunResult>(
            "RunResult",
            "run_result.schema.json",
            "A1: the /run result. An event without a type is accepted here and dropped on parse.",
        ),
        generate::<RunStreamRecord>(
            "RunStreamRecord",
            "run_stream_record.schema.json",
            "A1: one NDJSON line of a streaming /run: {\"kind\":\"event\",\"event\":{...}} or, last, {\"kind\":\"result\",\"result\":{...}}.",
        ),
        generate::<SessionInteraction>(
            "SessionInteraction",
            "session_interaction.schema.json",
            "A4: the session-interaction row a gate writes; data.parameters is the stamped effectiveParameters, absent on a legacy row.",
        ),
        generate::<InteractionResponse>(
            "InteractionResponse",
            "interaction_response.schema.json",
            "A5: {count, interaction}: the answer of get, respond, create and transition.",
        ),
        generate::<InteractionsResponse>(
            "InteractionsResponse",
            "interactions_response.schema.json",
            "A5: {count, interactions}: the answer of query.",
        ),
        generate::<InteractionQueryRequest>(
            "InteractionQueryRequest",
            "interaction_query_request.schema.json",
            "A5: POST /sessions/interactions/query body.",
        ),
        generate::<RespondRequest>(
            "RespondRequest",
            "respond_request.schema.json",
            "A5: POST /sessions/interactions/{id}/respond body: {answer}.",
        ),
        generate::<ApprovalAnswer>(
            "ApprovalAnswer",
            "approval_answer.schema.json",
            "A5: the answer to a user_approval gate: {approved, tool_call_id?, message?}.",
        ),
        generate::<BatchRespondRequest>(
            "BatchRespondRequest",
            "batch_respond_request.schema.json",
            "C4 (Gatehouse route): POST /sessions/interactions/respond-batch body: up to 500 {id, answer, idempotency_key?}.",
        ),
        generate::<BatchRespondResponse>(
            "BatchRespondResponse",
            "batch_respond_response.schema.json",
            "C4 (Gatehouse route): {count, results}: one result per item, in order, each answered, already_answered, not_found or invalid.",
        ),
        generate::<CreateInteractionRequest>(
            "CreateInteractionRequest",
            "create_interaction_request.schema.json",
            "A5: POST /sessions/interactions/ body (idempotent on project, session_id, token).",
        ),
        generate::<TransitionRequest>(
            "TransitionRequest",
            "transition_request.schema.json",
            "A5: POST /sessions/interactions/transition body.",
        ),
        generate::<CancelStaleRequest>(
            "CancelStaleRequest",
            "cancel_stale_request.schema.json",
            "A5: POST /sessions/interactions/cancel-stale body.",
        ),
        generate::<CancelStaleResponse>(
            "CancelStaleResponse",
            "cancel_stale_response.schema.json",
            "A5: {cancelled}: the answer of cancel-stale.",
        ),
        generate::<WatchEvent>(
            "WatchEvent",
            "watch_event.schema.json",
            "A5: the data of one event on GET /sessions/streams/watch (SSE).",
        ),
        generate::<ExecutionSession>(
            "ExecutionSession",
            "execution_session.schema.json",
            "B1: an AgentPlat execution session.",
        ),
        generate::<DataEnvelope<ExecutionSession>>(
            "ExecutionSessionResponse",
            "execution_session_response.schema.json",
            "B2: {data: session}: the answer of GET and of request-intervention (202).",
        ),
        generate::<Intervention>(
            "Intervention",
            "intervention.schema.json",
            "B1: one run intervention of an execution session.",
        ),
        generate::<ExecutionEvent>(
            "ExecutionEvent",
            "execution_event.schema.json",
            "B1: one append-only execution session event.",
        ),
        generate::<DataEnvelope<Vec<ExecutionEvent>>>(
            "ExecutionEventsResponse",
            "execution_events_response.schema.json",
            "B2: {data: [event...]}: the answer of GET .../events.",
        ),
        generate::<ChangeAuthorityBody>(
            "ChangeAuthorityBody",
            "change_authority_body.schema.json",
            "B1 (Gatehouse route): POST /api/rooms/{roomId}/execution-sessions/{sessionId}/authority body: the authority and role revisions now in force.",
        ),
        generate::<StreamEnvelope>(
            "StreamEnvelope",
            "stream_envelope.schema.json",
            "B2: the data of one frame of GET .../events/stream (SSE), AgentPlat's versioned envelope: {version: 1, sequence (per connection), type: execution_session_event with the session event as payload, or failed with content}.",
        ),
        generate::<RequestInterventionBody>(
            "RequestInterventionBody",
            "request_intervention_body.schema.json",
            "B2: POST /rooms/{roomId}/execution-sessions/{sessionId}/interventions body.",
        ),
        generate::<FastApiErrorBody>(
            "FastApiErrorBody",
            "fastapi_error_body.schema.json",
            "Agenta's error body {detail} (Gatehouse adds code).",
        ),
        generate::<AgentPlatErrorEnvelope>(
            "AgentPlatErrorEnvelope",
            "agentplat_error_envelope.schema.json",
            "AgentPlat's error envelope {error: {code, message, details?}} (Gatehouse adds gatehouseCode).",
        ),
        generate::<InvokeRequest>(
            "InvokeRequest",
            "invoke_request.schema.json",
            "A6: POST /api/invoke body (also the resume body).",
        ),
        generate::<InvokeResponse>(
            "InvokeResponse",
            "invoke_response.schema.json",
            "The answer of POST /api/invoke.",
        ),
        generate::<TurnsResponse>(
            "TurnsResponse",
            "turns_response.schema.json",
            "GET /api/sessions/{session_id}/turns.",
        ),
        generate::<CommitRevisionRequest>(
            "CommitRevisionRequest",
            "commit_revision_request.schema.json",
            "POST /api/workflows/revisions/commit body.",
        ),
        generate::<CommitRevisionResponse>(
            "CommitRevisionResponse",
            "commit_revision_response.schema.json",
            "The answer of a revision commit.",
        ),
        generate::<CapabilitiesResponse>(
            "CapabilitiesResponse",
            "capabilities_response.schema.json",
            "C5: GET /api/capabilities.",
        ),
        generate::<ReadinessResponse>(
            "ReadinessResponse",
            "readiness_response.schema.json",
            "GET /health/ready: 200 when every check passes, else 503; each check named.",
        ),
        generate::<WebhookDeliveriesResponse>(
            "WebhookDeliveriesResponse",
            "webhook_deliveries_response.schema.json",
            "GET /api/webhooks/deliveries: the webhook outbox of a project, newest first.",
        ),
        generate::<SessionInteractionRespondRequest>(
            "SessionInteractionRespondRequest",
            "session_interaction_respond_request.schema.json",
            "Agenta v0.121+ durable respond: POST /sessions/interactions/{id}/respond body: answer, or answers[] of {interaction_id, answer} (1..100, the path's interaction among them), and optional expected_execution_id. Idempotency-Key header required.",
        ),
        generate::<SessionInteractionContinuationResponse>(
            "SessionInteractionContinuationResponse",
            "session_interaction_continuation_response.schema.json",
            "Agenta v0.121+ durable respond 202: {interaction, command (null when nothing new was created), execution {id, state}}; null keys present.",
        ),
        generate::<SessionContinuationResumeResponse>(
            "SessionContinuationResumeResponse",
            "session_continuation_resume_response.schema.json",
            "Agenta v0.121+: POST /sessions/{id}/continuations/resume 200: {resumed}.",
        ),
        generate::<ErrorEnvelope>(
            "ErrorEnvelope",
            "error_envelope.schema.json",
            "Agenta v0.121+ session-control error envelope {code, message, retryable, details?, next_step?} (respond 409/422, the Idempotency-Key 422 of cancel); keys absent rather than null.",
        ),
        generate::<DetailWrappedEnvelope>(
            "DetailWrappedEnvelope",
            "detail_wrapped_envelope.schema.json",
            "Agenta v0.121+: the error envelope under FastAPI's detail, {detail: {code, message, retryable, details?, next_step?}} (pending inputs, runner admission).",
        ),
        generate::<SessionCancelRequest>(
            "SessionCancelRequest",
            "session_cancel_request.schema.json",
            "Agenta v0.121+ durable Stop: POST /sessions/{id}/cancel body (optional): {expected_execution_id?}. Idempotency-Key header optional.",
        ),
        generate::<SessionCancelResponse>(
            "SessionCancelResponse",
            "session_cancel_response.schema.json",
            "Agenta v0.121+ durable Stop 202 {command {id, state: pending}, execution {id, state: stopping}} or 200 {command {id, state: obsolete}, execution {id: null, state: idle}}. The run's outcome is not in it.",
        ),
        generate::<CancelError>(
            "CancelError",
            "cancel_error.schema.json",
            "Agenta v0.121+ durable Stop error bodies: {detail: {message, current_execution_id}} (stale expectation), {detail: {message, state}} (not claimable) or {detail: message}.",
        ),
        generate::<SessionCommand>(
            "SessionCommand",
            "session_command.schema.json",
            "Agenta v0.121+: a durable session command (cancel, continue_interaction, continue_input): its delivery state (pending, claimed, applied, obsolete) apart from the run's outcome.",
        ),
        generate::<SessionSnapshotResponse>(
            "SessionSnapshotResponse",
            "session_snapshot_response.schema.json",
            "Agenta v0.121+: GET /sessions/{id} 200 (exclude_none: absent rather than null): execution_state, pending inputs and interactions, read {latest_sequence, history_complete}, capabilities.",
        ),
        generate::<SessionStreamResponse>(
            "SessionStreamResponse",
            "session_stream_response.schema.json",
            "Agenta: GET /sessions/streams/?session_id= 200: {stream, capabilities}; null keys present.",
        ),
        generate::<PendingInputResponse>(
            "PendingInputResponse",
            "pending_input_response.schema.json",
            "Agenta v0.121+: DELETE /sessions/{id}/inputs/{input_id} 200: {input}.",
        ),
        generate::<SessionDurableEvent>(
            "SessionDurableEvent",
            "session_durable_event.schema.json",
            "Agenta v0.121+: a durable event of GET /sessions/{id}/events?after=N (SSE data, kind event): replayed with its sequence.",
        ),
        generate::<SessionLiveFrame>(
            "SessionLiveFrame",
            "session_live_frame.schema.json",
            "Agenta v0.121+: a live frame of GET /sessions/{id}/events (SSE data, kind frame); not replayed.",
        ),
        generate::<SessionRelayClose>(
            "SessionRelayClose",
            "session_relay_close.schema.json",
            "Agenta v0.121+: the data of event: relay-close, the last frame of GET /sessions/{id}/events: {reason, reconnect}.",
        ),
        generate::<SessionCapabilities>(
            "SessionCapabilities",
            "session_capabilities.schema.json",
            "Agenta v0.121+: {durable_approvals, queue, steer}, in the snapshot and the stream.",
        ),
    ]
}

/// The entry named `name` (e.g. `RunRequest`), if registered.
pub fn by_name(name: &str) -> Option<SchemaEntry> {
    all().into_iter().find(|entry| entry.name == name)
}

/// `schema/index.json`: `{name: {"file": ..., "description": ...}}` in registry order.
pub fn index(entries: &[SchemaEntry]) -> Value {
    let mut index = JsonObject::new();
    for entry in entries {
        let mut item = JsonObject::new();
        item.insert("file".into(), Value::String(entry.file_name.into()));
        item.insert(
            "description".into(),
            Value::String(entry.description.into()),
        );
        index.insert(entry.name.into(), Value::Object(item));
    }
    Value::Object(index)
}
