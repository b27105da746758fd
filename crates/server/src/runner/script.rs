//! The harness script: `agent.script`, a list of steps.

use gatehouse_wire::run::{ChatMessage, MessageContent};
use serde_json::Value;

/// One step of a script.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Step {
    /// `{"say": "text"}`: the agent says something.
    Say {
        /// What it says.
        text: String,
    },
    /// `{"tool": "Bash", "args": {...}}`: a tool call, subject to permissions.
    Tool {
        /// Tool name.
        tool: String,
        /// Arguments (any JSON; `{}` when absent).
        args: Value,
    },
    /// `{"fail": "message"}`: the turn fails.
    Fail {
        /// Why.
        message: String,
    },
    /// `{"wait_ms": N}`: the agent works for N milliseconds (slow inference or a long
    /// tool, at most [`MAX_WAIT_MS`]), so tests can catch a run in flight.
    Wait {
        /// How long.
        ms: u64,
    },
    /// `{"parallel": [{"tool": "Bash", "args": {...}}, ...]}`: tool calls of one model
    /// step (parallel tool calls, 1 to [`MAX_PARALLEL_CALLS`]), each subject to
    /// permissions as a `tool` step is: the allowed ones run at once, the denied ones are
    /// skipped, and when some ask, the turn parks on one gate per asking call (one row
    /// each, the same turn). It continues once every one of them is answered, each
    /// verdict honoured, then goes on after this step.
    Parallel {
        /// The calls, in order.
        calls: Vec<ParallelCall>,
    },
}

/// One call of a [`Step::Parallel`] step.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ParallelCall {
    /// Tool name.
    pub tool: String,
    /// Arguments (any JSON; `{}` when absent).
    pub args: Value,
}

/// The most calls one `parallel` step makes (as many as one durable respond answers).
pub const MAX_PARALLEL_CALLS: usize = 100;

/// The longest `wait_ms` step: ten minutes.
pub const MAX_WAIT_MS: u64 = 600_000;

/// The script used when a config has no `agent.script`: say, one `Bash` call, say.
pub fn default_script(prompt: Option<&str>) -> Vec<Step> {
    let prompt = prompt.unwrap_or("the task").trim();
    vec![
        Step::Say {
            text: format!("Working on: {prompt}"),
        },
        Step::Tool {
            tool: "Bash".to_string(),
            args: serde_json::json!({ "command": "echo hi" }),
        },
        Step::Say {
            text: "Done.".to_string(),
        },
    ]
}

/// The text of the last user message (the default script mentions it).
pub fn last_user_text(messages: &[ChatMessage]) -> Option<String> {
    messages
        .iter()
        .rev()
        .find(|m| m.role == "user")
        .and_then(|m| match m.content.as_ref()? {
            MessageContent::Text(text) => Some(text.clone()),
            MessageContent::Blocks(blocks) => blocks.iter().find_map(|b| b.text.clone()),
        })
}

/// Parse `agent.script` (a JSON array of step objects). The error names the step.
pub fn parse_script(value: &Value) -> Result<Vec<Step>, String> {
    let items = value
        .as_array()
        .ok_or_else(|| "agent.script must be a list of steps".to_string())?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| parse_step(item).map_err(|e| format!("agent.script[{i}]: {e}")))
        .collect()
}

fn parse_step(item: &Value) -> Result<Step, String> {
    let obj = item
        .as_object()
        .ok_or_else(|| "a step must be an object".to_string())?;
    if let Some(text) = obj.get("say") {
        let text = text.as_str().ok_or("`say` must be a string")?;
        return Ok(Step::Say {
            text: text.to_string(),
        });
    }
    if obj.contains_key("tool") {
        let ParallelCall { tool, args } = parse_call(obj)?;
        return Ok(Step::Tool { tool, args });
    }
    if let Some(calls) = obj.get("parallel") {
        let calls = calls
            .as_array()
            .filter(|calls| (1..=MAX_PARALLEL_CALLS).contains(&calls.len()))
            .ok_or_else(|| {
                format!("`parallel` must be a list of 1 to {MAX_PARALLEL_CALLS} tool calls")
            })?;
        let calls = calls
            .iter()
            .enumerate()
            .map(|(j, call)| {
                call.as_object()
                    .ok_or_else(|| "a call must be an object".to_string())
                    .and_then(parse_call)
                    .map_err(|e| format!("parallel[{j}]: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(Step::Parallel { calls });
    }
    if let Some(message) = obj.get("fail") {
        let message = message.as_str().ok_or("`fail` must be a string")?;
        return Ok(Step::Fail {
            message: message.to_string(),
        });
    }
    if let Some(ms) = obj.get("wait_ms") {
        let ms = ms
            .as_u64()
            .filter(|ms| *ms <= MAX_WAIT_MS)
            .ok_or_else(|| format!("`wait_ms` must be an integer from 0 to {MAX_WAIT_MS}"))?;
        return Ok(Step::Wait { ms });
    }
    Err("expected one of `say`, `tool`, `parallel`, `fail`, `wait_ms`".to_string())
}

/// `{"tool": "Bash", "args": {...}}`: a `tool` step, or a call of a `parallel` one.
fn parse_call(obj: &serde_json::Map<String, Value>) -> Result<ParallelCall, String> {
    let tool = obj
        .get("tool")
        .and_then(Value::as_str)
        .ok_or("`tool` must be a string")?;
    if tool.is_empty() {
        return Err("`tool` must not be empty".to_string());
    }
    let args = obj
        .get("args")
        .cloned()
        .unwrap_or_else(|| Value::Object(Default::default()));
    Ok(ParallelCall {
        tool: tool.to_string(),
        args,
    })
}
