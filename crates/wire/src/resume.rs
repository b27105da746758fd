//! The resume of a gated turn (CONTRACT.md A6): the invoke body a dispatcher (or a client
//! building its own resume) sends after a gate is answered, and the resolver's hydration
//! rule.
//!
//! - the row's stamp (`data.parameters`, a non-empty object) rides inline as the invoke's
//!   `data.parameters`, which suppresses reference hydration, so the turn resumes under
//!   the config it was gated with; a legacy row (no stamp) gives a references-only body
//!   with no `parameters` key at all;
//! - `references` and `session_id` come from the row;
//! - the approval envelope `{"type":"tool_result","toolCallId":<gated id>,
//!   "output":{"approved":bool,"interactionToken":<token>}}` is appended to the history's
//!   final assistant message, or to a new assistant message;
//! - a non-blank `answer.message` becomes a trailing user message.
//!
//! ```
//! use gatehouse_wire::interaction::{ApprovalAnswer, SessionInteraction};
//! use gatehouse_wire::resume::{build_resume_request, should_hydrate_from_references};
//! use gatehouse_wire::run::ChatMessage;
//!
//! let row: SessionInteraction = serde_json::from_value(serde_json::json!({
//!     "session_id": "s1", "token": "tok-1", "kind": "user_approval", "status": "responded",
//!     "data": {"request": {"tool": "Bash", "tool_call_id": "toolu_01"},
//!              "references": {"workflow_variant": {"slug": "agent.default"}},
//!              "parameters": {"agent": {"llm": {"model": "m1"}}}}
//! })).unwrap();
//! let answer = ApprovalAnswer { approved: true, tool_call_id: None, message: None };
//! let body = build_resume_request(&row, &answer, vec![ChatMessage::text("user", "hi")], None);
//! assert_eq!(body.data.parameters.as_ref().unwrap()["agent"]["llm"]["model"], "m1");
//! assert!(!should_hydrate_from_references(&body));
//! ```

use serde_json::{json, Value};

use crate::interaction::{ApprovalAnswer, SessionInteraction};
use crate::invoke::{InvokeData, InvokeInputs, InvokeRequest};
use crate::run::{ChatMessage, ContentBlock, ContentBlockType, MessageContent};
use crate::JsonObject;

/// The tool call id the approval answers, by precedence: `answer.tool_call_id`, then the
/// gate record's tool call id (`gate_tool_call_id`), then the row's
/// `data.request.tool_call_id`, then the row's token. Blank ids are skipped.
pub fn gated_tool_call_id(
    row: &SessionInteraction,
    answer: &ApprovalAnswer,
    gate_tool_call_id: Option<&str>,
) -> String {
    [
        answer.tool_call_id.as_deref(),
        gate_tool_call_id,
        row.request_tool_call_id(),
    ]
    .into_iter()
    .flatten()
    .find(|id| !id.trim().is_empty())
    .unwrap_or(row.token.as_str())
    .to_string()
}

/// The approval envelope block:
/// `{"type":"tool_result","toolCallId":id,"output":{"approved":b,"interactionToken":token}}`.
pub fn approval_envelope(
    tool_call_id: &str,
    approved: bool,
    interaction_token: &str,
) -> ContentBlock {
    let mut block = ContentBlock::empty(ContentBlockType::ToolResult);
    block.tool_call_id = Some(tool_call_id.to_string());
    block.output = Some(json!({
        "approved": approved,
        "interactionToken": interaction_token,
    }));
    block
}

/// Append `block` to the history's final message when it is an assistant message (text
/// content becomes a text block first; empty text is dropped), else add a new assistant
/// message holding it.
pub fn append_to_last_assistant(history: &mut Vec<ChatMessage>, block: ContentBlock) {
    if let Some(last) = history.last_mut().filter(|m| m.role == "assistant") {
        let mut blocks = match last.content.take() {
            None => Vec::new(),
            Some(MessageContent::Text(text)) if text.is_empty() => Vec::new(),
            Some(MessageContent::Text(text)) => vec![ContentBlock::text_block(text)],
            Some(MessageContent::Blocks(blocks)) => blocks,
        };
        blocks.push(block);
        last.content = Some(MessageContent::Blocks(blocks));
    } else {
        history.push(ChatMessage {
            role: "assistant".to_string(),
            content: Some(MessageContent::Blocks(vec![block])),
            extra: JsonObject::new(),
        });
    }
}

/// Build the resume invoke body for an answered `user_approval` row.
///
/// `history` is the conversation rebuilt from the session's records;
/// `gate_tool_call_id` is the tool call id from the runner's gate record, when known.
/// The body carries `session_id` and `references` from the row, `data.parameters` iff
/// the row has a non-empty stamp, and the history with the approval envelope (and a
/// trailing user message for a non-blank `answer.message`).
pub fn build_resume_request(
    row: &SessionInteraction,
    answer: &ApprovalAnswer,
    history: Vec<ChatMessage>,
    gate_tool_call_id: Option<&str>,
) -> InvokeRequest {
    let mut messages = history;
    let gated_id = gated_tool_call_id(row, answer, gate_tool_call_id);
    append_to_last_assistant(
        &mut messages,
        approval_envelope(&gated_id, answer.approved, &row.token),
    );
    if let Some(message) = answer.message.as_deref().filter(|m| !m.trim().is_empty()) {
        messages.push(ChatMessage::text("user", message));
    }
    let references = row
        .data
        .as_ref()
        .and_then(|d| d.references.clone())
        .filter(|r| !r.is_empty());
    InvokeRequest {
        session_id: Some(row.session_id.clone()),
        references,
        data: InvokeData {
            inputs: InvokeInputs {
                messages,
                extra: JsonObject::new(),
            },
            parameters: row.stamped_parameters().cloned(),
            revision: None,
            extra: JsonObject::new(),
        },
    }
}

/// The resolver's hydration rule (A6): hydrate config from references iff references
/// were sent and the caller sent neither a non-empty `data.parameters` nor a non-empty
/// `data.revision`. (A service's registered default fills parameters only after a
/// hydration attempt came back empty.)
pub fn should_hydrate_from_references(request: &InvokeRequest) -> bool {
    let has_references = request.references.as_ref().is_some_and(|r| !r.is_empty());
    let has_parameters = request
        .data
        .parameters
        .as_ref()
        .is_some_and(|p| !p.is_empty());
    let has_revision = request
        .data
        .revision
        .as_ref()
        .is_some_and(|r| !r.is_empty());
    has_references && !has_parameters && !has_revision
}

/// The approval envelope of a block, when it is one: `(toolCallId, approved, token)`.
pub fn parse_approval_envelope(block: &ContentBlock) -> Option<(&str, bool, &str)> {
    if block.block_type != ContentBlockType::ToolResult {
        return None;
    }
    let output = block.output.as_ref()?;
    let approved = output.get("approved").and_then(Value::as_bool)?;
    let token = output.get("interactionToken").and_then(Value::as_str)?;
    Some((block.tool_call_id.as_deref()?, approved, token))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::InteractionData;

    fn row(parameters: Option<Value>, request_id: Option<&str>) -> SessionInteraction {
        let mut data = json!({
            "request": {"tool": "Bash", "args": {"command": "echo hi"}},
            "references": {"workflow": {"id": "w1"}, "workflow_variant": {"id": "v1"}},
            "selector": null, "resolution": null,
        });
        if let Some(id) = request_id {
            data["request"]["tool_call_id"] = json!(id);
        }
        if let Some(p) = parameters {
            data["parameters"] = p;
        }
        serde_json::from_value(json!({
            "id": "row-1", "session_id": "s1", "turn_id": "t1", "token": "tok-1",
            "kind": "user_approval", "status": "responded", "data": data,
        }))
        .unwrap()
    }

    fn answer(tool_call_id: Option<&str>, message: Option<&str>) -> ApprovalAnswer {
        ApprovalAnswer {
            approved: true,
            tool_call_id: tool_call_id.map(str::to_string),
            message: message.map(str::to_string),
        }
    }

    #[test]
    fn gated_id_precedence() {
        let r = row(None, Some("from-request"));
        assert_eq!(
            gated_tool_call_id(&r, &answer(Some("from-answer"), None), Some("from-gate")),
            "from-answer"
        );
        assert_eq!(
            gated_tool_call_id(&r, &answer(None, None), Some("from-gate")),
            "from-gate"
        );
        assert_eq!(
            gated_tool_call_id(&r, &answer(None, None), None),
            "from-request"
        );
        assert_eq!(
            gated_tool_call_id(&row(None, None), &answer(Some(" "), None), None),
            "tok-1"
        );
    }

    #[test]
    fn stamped_row_resumes_inline_and_does_not_hydrate() {
        let r = row(
            Some(json!({"agent": {"llm": {"model": "m1"}}})),
            Some("toolu_01"),
        );
        let history = vec![
            ChatMessage::text("user", "hi"),
            ChatMessage::text("assistant", "Running it."),
        ];
        let body = build_resume_request(&r, &answer(None, Some("go on")), history, None);
        let text = serde_json::to_string(&body).unwrap();
        assert_eq!(
            text,
            r#"{"session_id":"s1","references":{"workflow":{"version":null,"slug":null,"id":"w1"},"workflow_variant":{"version":null,"slug":null,"id":"v1"}},"data":{"inputs":{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"text","text":"Running it."},{"type":"tool_result","toolCallId":"toolu_01","output":{"approved":true,"interactionToken":"tok-1"}}]},{"role":"user","content":"go on"}]},"parameters":{"agent":{"llm":{"model":"m1"}}}}}"#
        );
        assert!(!should_hydrate_from_references(&body));
    }

    #[test]
    fn legacy_row_is_references_only_and_hydrates() {
        let r = row(None, Some("toolu_01"));
        let body = build_resume_request(
            &r,
            &answer(None, Some("   ")),
            vec![ChatMessage::text("user", "hi")],
            None,
        );
        let value = serde_json::to_value(&body).unwrap();
        assert!(value["data"].get("parameters").is_none());
        let messages = value["data"]["inputs"]["messages"].as_array().unwrap();
        assert_eq!(
            messages.len(),
            2,
            "blank message adds nothing; envelope gets a new assistant message"
        );
        assert_eq!(messages[1]["role"], "assistant");
        assert!(should_hydrate_from_references(&body));
    }

    #[test]
    fn empty_stamp_is_not_sent() {
        let mut r = row(None, None);
        r.data = Some(InteractionData {
            parameters: Some(Some(JsonObject::new())),
            ..r.data.clone().unwrap()
        });
        let body = build_resume_request(&r, &answer(None, None), vec![], None);
        assert!(body.data.parameters.is_none());
    }

    #[test]
    fn revision_suppresses_hydration_and_no_references_never_hydrates() {
        let mut body = build_resume_request(&row(None, None), &answer(None, None), vec![], None);
        body.data.revision = Some(serde_json::from_value(json!({"id": "rev"})).unwrap());
        assert!(!should_hydrate_from_references(&body));
        body.data.revision = None;
        body.references = None;
        assert!(!should_hydrate_from_references(&body));
    }

    #[test]
    fn envelope_parses_back() {
        let block = approval_envelope("toolu_01", false, "tok");
        assert_eq!(
            parse_approval_envelope(&block),
            Some(("toolu_01", false, "tok"))
        );
        assert_eq!(
            parse_approval_envelope(&ContentBlock::text_block("x")),
            None
        );
    }
}
