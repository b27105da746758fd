//! The runner tier's endpoint: `POST /run` (outside `/api`, so no `project_id`; the
//! API key as on every route, which a runner sends as `Bearer <key>`).
//!
//! Takes a wire `RunRequest`, read as Agenta's runner reads it (JavaScript's `JSON.parse`:
//! a lone surrogate escape and duplicate keys are read; the typed request holds a lone
//! surrogate as U+FFFD), runs the deterministic harness on it, and answers a JSON
//! `RunResult`, or NDJSON `RunStreamRecord` lines (events, then exactly one result) when
//! the caller sends `Accept: application/x-ndjson`. The script comes from the request's
//! extension key `script` (a Gatehouse extension, kept by the wire type's unknown-key
//! map), else the default script. The endpoint is stateless: a tool step that needs
//! approval ends the run with `stopReason` `awaiting_approval` and a `gate` event (gates
//! that park durably are the service tier's job, `POST /api/invoke`).

use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use gatehouse_wire::run::{MessageContent, RunEvent, RunRequest, RunResult, RunStreamRecord};

use super::extract::RunnerJsonBody;
use super::reply::json;
use crate::error::{ApiError, ApiResult};
use crate::runner::{
    self, default_script, last_user_text, parse_script, HarnessEnd, StartAt, TurnContext,
};
use crate::AppState;

/// NDJSON media type.
pub const NDJSON: &str = "application/x-ndjson";

/// The runner route.
pub fn routes() -> Router<AppState> {
    Router::new().route("/run", post(run))
}

fn wants_ndjson(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains(NDJSON))
}

/// A runner answers with the transcript it ran, so a content block it cannot read would
/// come back in its answer as a kind the contract does not have: the request is refused
/// (422 naming the block) rather than answered with a document Agenta's reader refuses.
fn refuse_unknown_block_types(request: &RunRequest) -> ApiResult<()> {
    for (i, message) in request.messages.iter().enumerate() {
        let Some(MessageContent::Blocks(blocks)) = &message.content else {
            continue;
        };
        for (j, block) in blocks.iter().enumerate() {
            if !block.block_type.is_known() {
                return Err(ApiError::validation_at(
                    vec![
                        "body".into(),
                        "messages".into(),
                        i.into(),
                        "content".into(),
                        j.into(),
                        "type".into(),
                    ],
                    format!(
                        "this runner does not know content block type {:?}",
                        block.block_type.as_str()
                    ),
                    "enum",
                ));
            }
        }
    }
    Ok(())
}

async fn run(
    State(state): State<AppState>,
    headers: HeaderMap,
    actor: super::extract::ActorName,
    body: RunnerJsonBody<RunRequest>,
) -> ApiResult<Response> {
    let request = body.value;
    refuse_unknown_block_types(&request)?;
    let script = match request.extra.get("script") {
        Some(value) => parse_script(value)
            .map_err(|problem| ApiError::validation(&["body", "script"], problem, "value_error"))?,
        None => default_script(last_user_text(&request.messages).as_deref()),
    };
    let turn_id = request
        .turn_id
        .clone()
        .filter(|t| !t.is_empty())
        .unwrap_or_else(crate::db::new_id);
    let ctx = TurnContext {
        project_id: request.project_id.clone().unwrap_or_default(),
        session_id: request.session_id.clone().unwrap_or_default(),
        turn_id: turn_id.clone(),
        resumed_from_interaction_id: None,
        model: request.model.clone(),
        actor: actor.0,
        parameters: None,
        references: None,
        predecessor_session_id: None,
        execution_session_id: None,
    };
    let hook = state.hooks.hook_for(&ctx);
    let outcome =
        runner::run_harness(&request, &script, &StartAt::Fresh, &turn_id, hook.as_ref()).await;
    hook.turn_ended(&outcome.end.turn_end()).await;

    let events: Vec<RunEvent> = outcome
        .events
        .iter()
        .filter_map(|e| RunEvent::from_object(e.clone()))
        .collect();
    let mut result = match &outcome.end {
        HarnessEnd::Failed { reason } => {
            let mut result = RunResult::failure(reason.clone());
            result.output = Some(outcome.output());
            result.stop_reason = Some("error".to_string());
            result
        }
        HarnessEnd::Completed => {
            let mut result = RunResult::success(outcome.output());
            result.stop_reason = Some("end_turn".to_string());
            result
        }
        HarnessEnd::Parked(_) => {
            let mut result = RunResult::success(outcome.output());
            result.stop_reason = Some("awaiting_approval".to_string());
            result
        }
        // The stateless `/run` has no Stop (its hook never asks for one).
        HarnessEnd::Stopped { .. } => {
            let mut result = RunResult::success(outcome.output());
            result.stop_reason = Some("cancelled".to_string());
            result
        }
    };
    result.messages = Some(outcome.messages.clone());
    result.session_id = request.session_id.clone();
    result.model = request.model.clone();

    if wants_ndjson(&headers) {
        let mut body = String::new();
        for event in &events {
            body.push_str(&RunStreamRecord::event(event.clone()).to_ndjson_line());
            body.push('\n');
        }
        body.push_str(&RunStreamRecord::result(result).to_ndjson_line());
        body.push('\n');
        Ok(([(header::CONTENT_TYPE, NDJSON)], body).into_response())
    } else {
        result.events = Some(events);
        Ok(json(&result))
    }
}
