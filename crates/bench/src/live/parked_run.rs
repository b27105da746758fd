//! A run that parks at a gate: the agent rows 9, 12 and 13 run (one gated tool call, then
//! a message), and the invoke that starts it in a session of its own.

use serde_json::{json, Value};

use gatehouse_client::Client;

use super::failed;
use crate::BenchError;

/// The agent every run of the load runs: one gated tool call (`permissions: ask`), then
/// a message.
pub(super) fn sustained_parameters() -> Result<gatehouse_wire::JsonObject, BenchError> {
    match json!({"agent": {
        "llm": {"model": "m-sustained"},
        "runner": {"permissions": {"default": "ask"}},
        "script": [{"tool": "Bash", "args": {"command": "make"}}, {"say": "done"}]
    }}) {
        Value::Object(map) => Ok(map),
        _ => Err(BenchError::Invalid("the sustained config".into())),
    }
}

/// Invoke a run of `parameters` in a new session `session_id`; the gate it parked at.
pub(super) async fn park_a_run(
    client: &Client,
    parameters: &gatehouse_wire::JsonObject,
    session_id: String,
) -> Result<String, BenchError> {
    let request = gatehouse_wire::invoke::InvokeRequest {
        session_id: Some(session_id),
        references: None,
        data: gatehouse_wire::invoke::InvokeData {
            parameters: Some(parameters.clone()),
            ..Default::default()
        },
    };
    let parked = client
        .service()
        .invoke(&request)
        .await
        .map_err(failed("a sustained-load run"))?;
    parked
        .interaction_ids
        .first()
        .cloned()
        .ok_or_else(|| BenchError::Invariant("a sustained-load run did not park".into()))
}
