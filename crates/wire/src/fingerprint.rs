//! `configFingerprint` (CONTRACT.md A3): the hash that decides warm resume vs cold replay.
//!
//! The fingerprint is the lowercase hex SHA-256 of the canonical JSON (keys sorted
//! recursively, absent values dropped, no whitespace) of a projection of the `/run`
//! request, [`fingerprint_material`]:
//!
//! | key | from |
//! |---|---|
//! | `harness`, `sandbox`, `model` | the same keys |
//! | `harnessMode` | `harnessMode` on codex, else `null` |
//! | `connection`, `modelCapabilities`, `agentsMd`, `systemPrompt`, `appendSystemPrompt` | the same keys |
//! | `modelConnection` | with `credentials: [{binding, usage}]` (values removed) |
//! | `skills`, `customTools`, `permissions`, `sandboxPermission`, `harnessFiles` | the same keys |
//! | `mcpServers` | with credential values removed (public headers kept) |
//! | `toolCallbackEndpoint` | `toolCallback.endpoint` (never its authorization) |
//! | `workflowRevision` | `runContext.workflow.revision` as `{id, version}`, or `null` |
//! | `isDraft` | `runContext.workflow.is_draft` |
//!
//! Not hashed: `messages`, `turnId`, `context`, `telemetry`, `sessionId`, `projectId`,
//! `tools`, `runContext.run`/`trace`/`artifact`/`variant`, unknown top-level keys, and
//! `effectiveParameters` (a projection of fields already hashed).
//!
//! ```
//! use gatehouse_wire::fingerprint::config_fingerprint;
//! use gatehouse_wire::run::{Harness, RunRequest, Sandbox};
//! let a = RunRequest::new(Harness::PiCore, Sandbox::Local, "m1", vec![]);
//! let b = RunRequest::new(Harness::PiCore, Sandbox::Local, "m2", vec![]);
//! assert_eq!(config_fingerprint(&a).len(), 64);
//! assert_ne!(config_fingerprint(&a), config_fingerprint(&b));
//! ```

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::run::{Harness, ModelConnection, RunRequest};
use crate::JsonObject;

/// The fingerprint of `request`: lowercase hex SHA-256 of
/// `canonical_json(&fingerprint_material(request))`.
pub fn config_fingerprint(request: &RunRequest) -> String {
    let canonical = canonical_json(&fingerprint_material(request));
    hex::encode(Sha256::digest(canonical.as_bytes()))
}

fn to_value<T: Serialize>(value: &T) -> Value {
    // The wire types serialize to JSON without failure (string keys only).
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn put<T: Serialize>(shape: &mut JsonObject, key: &str, value: Option<&T>) {
    if let Some(value) = value {
        shape.insert(key.to_string(), to_value(value));
    }
}

/// Keep only `binding` and `usage` of each credential object in `credentials`.
fn without_credential_values(credentials: &mut Value) {
    if let Value::Array(items) = credentials {
        for item in items.iter_mut() {
            if let Value::Object(credential) = item {
                credential.retain(|key, _| key == "binding" || key == "usage");
            }
        }
    }
}

fn model_connection_material(connection: &ModelConnection) -> Value {
    let mut value = to_value(connection);
    if let Some(credentials) = value.get_mut("credentials") {
        without_credential_values(credentials);
    }
    value
}

/// The shape that is hashed (before canonicalization); see the module docs.
pub fn fingerprint_material(request: &RunRequest) -> Value {
    let mut shape = JsonObject::new();
    shape.insert("harness".into(), to_value(&request.harness));
    shape.insert("sandbox".into(), to_value(&request.sandbox));
    put(&mut shape, "model", request.model.as_ref());
    let harness_mode = match request.harness {
        Harness::Codex => request.harness_mode.map(|m| to_value(&m)),
        _ => None,
    };
    shape.insert("harnessMode".into(), harness_mode.unwrap_or(Value::Null));
    put(&mut shape, "connection", request.connection.as_ref());
    if let Some(connection) = &request.model_connection {
        shape.insert(
            "modelConnection".into(),
            model_connection_material(connection),
        );
    }
    put(
        &mut shape,
        "modelCapabilities",
        request.model_capabilities.as_ref(),
    );
    put(&mut shape, "agentsMd", request.agents_md.as_ref());
    put(&mut shape, "systemPrompt", request.system_prompt.as_ref());
    put(
        &mut shape,
        "appendSystemPrompt",
        request.append_system_prompt.as_ref(),
    );
    if !request.skills.is_empty() {
        shape.insert("skills".into(), to_value(&request.skills));
    }
    shape.insert("customTools".into(), to_value(&request.custom_tools));
    if !request.mcp_servers.is_empty() {
        let mut servers = to_value(&request.mcp_servers);
        if let Value::Array(items) = &mut servers {
            for server in items.iter_mut() {
                if let Some(credentials) = server
                    .get_mut("connection")
                    .and_then(|c| c.get_mut("credentials"))
                {
                    without_credential_values(credentials);
                }
            }
        }
        shape.insert("mcpServers".into(), servers);
    }
    put(
        &mut shape,
        "toolCallbackEndpoint",
        request.tool_callback.as_ref().map(|c| &c.endpoint),
    );
    shape.insert("permissions".into(), to_value(&request.permissions));
    put(
        &mut shape,
        "sandboxPermission",
        request.sandbox_permission.as_ref(),
    );
    if !request.harness_files.is_empty() {
        shape.insert("harnessFiles".into(), to_value(&request.harness_files));
    }
    let workflow = request
        .run_context
        .as_ref()
        .and_then(|c| c.workflow.as_ref());
    let revision = workflow.and_then(|w| w.revision.as_ref()).map(|r| {
        let mut pinned = JsonObject::new();
        put(&mut pinned, "id", r.id.as_ref());
        put(&mut pinned, "version", r.version.as_ref());
        Value::Object(pinned)
    });
    shape.insert("workflowRevision".into(), revision.unwrap_or(Value::Null));
    put(
        &mut shape,
        "isDraft",
        workflow.and_then(|w| w.is_draft.as_ref()),
    );
    Value::Object(shape)
}

fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = JsonObject::new();
            for key in keys {
                out.insert(key.clone(), sorted(&map[key.as_str()]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// Canonical JSON: object keys sorted (by UTF-8 bytes) at every depth, no whitespace,
/// serde_json's escaping (UTF-8 kept, not `\u`-escaped).
///
/// ```
/// let v = serde_json::json!({"b": 1, "a": {"d": [true], "c": null}});
/// assert_eq!(gatehouse_wire::fingerprint::canonical_json(&v), r#"{"a":{"c":null,"d":[true]},"b":1}"#);
/// ```
pub fn canonical_json(value: &Value) -> String {
    // Serializing a Value cannot fail.
    serde_json::to_string(&sorted(value)).unwrap_or_default()
}
