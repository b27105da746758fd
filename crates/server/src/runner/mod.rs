//! The runner tier: a deterministic harness, no model and no sleeps.
//!
//! Its behaviour is decided by the `/run` request it runs (so a test can see which config
//! ran): every output names the request's `model`; `permissions` decide whether a tool
//! step runs (`allow`), gates on a person (`ask`: the turn parks), or is skipped (`deny`);
//! a script of steps (`say` / `tool` / `parallel` / `fail` / `wait_ms`, [`Step`]) shapes the
//! turn; a `parallel` step parks on one gate per call that asks. At every step it calls a
//! [`CheckpointHook`] (`pre_step`, `post_output`, `pre_action`) so the execution service
//! can halt the run or inject an instruction.

mod hooks;
mod script;

pub use hooks::{
    ActionPermit, CheckpointDecision, CheckpointHook, HookProvider, NoopHookProvider, NoopHooks,
    TurnContext, TurnEnd,
};
pub use script::{
    default_script, last_user_text, parse_script, ParallelCall, Step, MAX_PARALLEL_CALLS,
    MAX_WAIT_MS,
};

use gatehouse_wire::resume::parse_approval_envelope;
use gatehouse_wire::run::{
    ChatMessage, ContentBlock, ContentBlockType, MessageContent, PermissionMode, RulePermission,
    RunRequest,
};
use serde_json::Value;

/// A tool call waiting for a person's approval: the turn parks here.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GateRequest {
    /// The script step that gated.
    pub step_index: usize,
    /// Tool name.
    pub tool: String,
    /// Tool arguments.
    pub args: Value,
    /// The tool call id.
    pub tool_call_id: String,
}

/// How a harness run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum HarnessEnd {
    /// The script ran to its end.
    Completed,
    /// Parked at its approval gates: one for a `tool` step, one per asking call of a
    /// `parallel` step (never empty; all of one step).
    Parked(Vec<GateRequest>),
    /// A `fail` step, a checkpoint halt, or a broken resume.
    Failed {
        /// Why.
        reason: String,
    },
    /// A Stop reached the run at a step boundary ([`CheckpointHook::stop_requested`]):
    /// the step `step_index` did not run, nor any after it.
    Stopped {
        /// The Stop command honoured.
        command_id: String,
        /// The first step that did not run.
        step_index: usize,
    },
}

impl HarnessEnd {
    /// What this end means for the turn's checkpoint hook ([`CheckpointHook::turn_ended`]).
    pub fn turn_end(&self) -> TurnEnd {
        match self {
            Self::Completed => TurnEnd::Completed,
            Self::Parked(_) => TurnEnd::Parked,
            Self::Failed { reason } => TurnEnd::Failed {
                reason: reason.clone(),
            },
            Self::Stopped { command_id, .. } => TurnEnd::Failed {
                reason: format!("stopped by a Stop (command {command_id})"),
            },
        }
    }
}

/// What a harness run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct HarnessOutcome {
    /// How it ended.
    pub end: HarnessEnd,
    /// One line per step output, in order.
    pub outputs: Vec<String>,
    /// The transcript: the request's messages plus what this run said.
    pub messages: Vec<ChatMessage>,
    /// Structured events (`message`, `tool_call`, `tool_result`, `gate`, `checkpoint`, `done`).
    pub events: Vec<serde_json::Map<String, Value>>,
}

impl HarnessOutcome {
    /// The turn's output text (the step outputs, one per line).
    pub fn output(&self) -> String {
        self.outputs.join("\n")
    }
}

/// Where a run starts: a fresh turn, or a resume at a gated tool step.
#[derive(Debug, Clone, PartialEq)]
pub enum StartAt {
    /// A fresh turn from step 0.
    Fresh,
    /// Resume at the gated step: its verdict is read from the approval envelope in the
    /// request's messages (A6), never passed around it.
    Resume(GateRequest),
    /// Resume at a `parallel` step parked on several gates (all of that step): each
    /// gate's verdict is read from its own approval envelope; the approved calls run,
    /// the denied ones are skipped, in the step's order.
    ResumeParallel(Vec<GateRequest>),
}

/// The model label every output carries.
pub fn model_label(request: &RunRequest) -> String {
    request
        .model
        .clone()
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

/// Tools that only read (run under `allow_reads`).
fn is_read_tool(tool: &str) -> bool {
    matches!(
        tool.to_ascii_lowercase().as_str(),
        "read" | "grep" | "glob" | "ls" | "find" | "webfetch" | "websearch"
    )
}

/// What the request's permissions say about `tool`: first matching rule, else default.
/// A mode or permission this version does not know asks (fail closed: the tool does not
/// run without a person's approval).
pub fn permission_for(request: &RunRequest, tool: &str) -> RulePermission {
    let permissions = request.effective_permissions();
    for rule in permissions.rules() {
        let pattern = rule.pattern.as_str();
        let name = pattern.split('(').next().unwrap_or(pattern);
        if pattern == tool || name == tool || pattern == "*" {
            return match &rule.permission {
                RulePermission::Unknown(_) => RulePermission::Ask,
                known => known.clone(),
            };
        }
    }
    match permissions.default {
        PermissionMode::Allow => RulePermission::Allow,
        PermissionMode::Deny => RulePermission::Deny,
        PermissionMode::AllowReads if is_read_tool(tool) => RulePermission::Allow,
        _ => RulePermission::Ask,
    }
}

/// The approval envelope for `tool_call_id` in `messages` (A6): `Some(approved)`.
pub fn find_approval(messages: &[ChatMessage], tool_call_id: &str) -> Option<bool> {
    messages.iter().rev().find_map(|message| {
        let MessageContent::Blocks(blocks) = message.content.as_ref()? else {
            return None;
        };
        blocks.iter().find_map(|block| {
            let (id, approved, _token) = parse_approval_envelope(block)?;
            (id == tool_call_id).then_some(approved)
        })
    })
}

/// The trailing user message a resume carries after the envelope (the answer's message).
fn trailing_user_text(messages: &[ChatMessage]) -> Option<String> {
    let last = messages.last()?;
    if last.role != "user" {
        return None;
    }
    match last.content.as_ref()? {
        MessageContent::Text(text) => Some(text.clone()),
        MessageContent::Blocks(blocks) => blocks.iter().find_map(|b| b.text.clone()),
    }
}

fn event(kind: &str, fields: Value) -> serde_json::Map<String, Value> {
    let mut map = serde_json::Map::new();
    map.insert("type".to_string(), Value::String(kind.to_string()));
    if let Value::Object(extra) = fields {
        map.extend(extra);
    }
    map
}

fn assistant_text(text: &str) -> ChatMessage {
    ChatMessage::text("assistant", text)
}

fn tool_call_message(text: &str, tool: &str, args: &Value, tool_call_id: &str) -> ChatMessage {
    let mut call = ContentBlock::empty(ContentBlockType::ToolCall);
    call.tool_call_id = Some(tool_call_id.to_string());
    call.tool_name = Some(tool.to_string());
    call.input = Some(args.clone());
    let mut said = ContentBlock::empty(ContentBlockType::Text);
    said.text = Some(text.to_string());
    ChatMessage {
        role: "assistant".to_string(),
        content: Some(MessageContent::Blocks(vec![said, call])),
        extra: Default::default(),
    }
}

fn tool_result_message(tool_call_id: &str, output: Value, is_error: bool) -> ChatMessage {
    let mut result = ContentBlock::empty(ContentBlockType::ToolResult);
    result.tool_call_id = Some(tool_call_id.to_string());
    result.output = Some(output);
    result.is_error = Some(is_error);
    ChatMessage {
        role: "tool".to_string(),
        content: Some(MessageContent::Blocks(vec![result])),
        extra: Default::default(),
    }
}

/// A deterministic tool call id for step `index` of turn `turn_id`.
pub fn tool_call_id(turn_id: &str, index: usize) -> String {
    let short: String = turn_id
        .chars()
        .filter(|c| *c != '-')
        .rev()
        .take(12)
        .collect();
    format!("toolu_{index:02}_{short}")
}

/// A deterministic tool call id for call `call` of the `parallel` step `index` of turn
/// `turn_id` (distinct from every `tool` step's, [`tool_call_id`]).
pub fn parallel_call_id(turn_id: &str, index: usize, call: usize) -> String {
    let single = tool_call_id(turn_id, index);
    let short = single.trim_start_matches(&format!("toolu_{index:02}_"));
    format!("toolu_{index:02}p{call:02}_{short}")
}

/// The deterministic "execution" of a tool: it echoes what it would have done.
fn run_tool(tool: &str, args: &Value) -> Value {
    serde_json::json!({ "ok": true, "tool": tool, "echo": args })
}

struct Run<'a> {
    label: String,
    hook: &'a dyn CheckpointHook,
    outputs: Vec<String>,
    messages: Vec<ChatMessage>,
    events: Vec<serde_json::Map<String, Value>>,
    injection: Option<String>,
    skip_pre_action: bool,
}

/// How often a `wait_ms` step looks for a Stop.
const WAIT_SLICE: std::time::Duration = std::time::Duration::from_millis(100);

/// The request extension key (a Gatehouse extension kept in the request's unknown keys)
/// that makes the harness skip `pre_action`: a misbehaving runtime, for tests of
/// protected actions. The service tier sets it from `agent.runner.skip_pre_action`.
pub const SKIP_PRE_ACTION_KEY: &str = "skipPreAction";

impl Run<'_> {
    fn say(&mut self, index: usize, text: &str) -> String {
        let mut line = format!("[model={}]", self.label);
        if let Some(injected) = self.injection.take() {
            line.push_str(&format!(" (instruction: {injected})"));
        }
        line.push(' ');
        line.push_str(text);
        self.events.push(event(
            "message",
            serde_json::json!({ "step": index, "text": line }),
        ));
        self.outputs.push(line.clone());
        line
    }

    fn checkpoint(
        &mut self,
        name: &str,
        index: usize,
        decision: CheckpointDecision,
    ) -> Option<String> {
        match decision {
            CheckpointDecision::Continue => None,
            CheckpointDecision::Inject { text } => {
                self.events.push(event(
                    "checkpoint",
                    serde_json::json!({ "checkpoint": name, "step": index, "injected": text }),
                ));
                self.injection = Some(text);
                None
            }
            CheckpointDecision::Halt { reason } => {
                self.events.push(event(
                    "checkpoint",
                    serde_json::json!({ "checkpoint": name, "step": index, "halted": reason }),
                ));
                let line = format!("[model={}] halted at {name}: {reason}", self.label);
                self.outputs.push(line.clone());
                self.messages.push(assistant_text(&line));
                Some(format!("halted at {name}: {reason}"))
            }
        }
    }

    /// The end of a run a Stop reached before step `index`, if one did: the harness
    /// honours a Stop at every step boundary.
    async fn stopped_before(&mut self, index: usize) -> Option<HarnessEnd> {
        let command_id = self.hook.stop_requested().await?;
        let line = format!("[model={}] stopped before step {index}: a Stop", self.label);
        self.outputs.push(line.clone());
        self.messages.push(assistant_text(&line));
        Some(HarnessEnd::Stopped {
            command_id,
            step_index: index,
        })
    }

    /// A tool call that asks: announced as waiting (its call in the transcript, a `gate`
    /// event), and the gate the turn parks on.
    fn gate(&mut self, index: usize, tool: &str, args: &Value, call_id: String) -> GateRequest {
        let line = self.say(index, &format!("waiting for approval to run {tool}"));
        self.messages
            .push(tool_call_message(&line, tool, args, &call_id));
        self.events.push(event(
            "gate",
            serde_json::json!({ "step": index, "tool": tool, "args": args, "toolCallId": call_id }),
        ));
        GateRequest {
            step_index: index,
            tool: tool.to_string(),
            args: args.clone(),
            tool_call_id: call_id,
        }
    }

    async fn post_output(&mut self, index: usize, line: &str) -> Option<String> {
        let decision = self.hook.post_output(index, line).await;
        self.checkpoint("post_output", index, decision)
    }

    fn finish(self, end: HarnessEnd) -> HarnessOutcome {
        let mut events = self.events;
        let stop = match &end {
            HarnessEnd::Completed => "end_turn",
            HarnessEnd::Parked(_) => "awaiting_approval",
            HarnessEnd::Failed { .. } => "error",
            HarnessEnd::Stopped { .. } => "cancelled",
        };
        events.push(event("done", serde_json::json!({ "stopReason": stop })));
        HarnessOutcome {
            end,
            outputs: self.outputs,
            messages: self.messages,
            events,
        }
    }
}

/// Run `script` under `request`, from `start`, calling `hook` at every checkpoint.
/// `call_seed` seeds the tool call ids (a fresh turn's id; for a resume, the answered
/// gate's id, so every attempt of one resume names its tool calls alike). Never panics;
/// a broken input fails the turn.
pub async fn run_harness(
    request: &RunRequest,
    script: &[Step],
    start: &StartAt,
    call_seed: &str,
    hook: &dyn CheckpointHook,
) -> HarnessOutcome {
    let mut run = Run {
        label: model_label(request),
        hook,
        outputs: Vec::new(),
        messages: request.messages.clone(),
        events: Vec::new(),
        injection: None,
        skip_pre_action: request
            .extra
            .get(SKIP_PRE_ACTION_KEY)
            .and_then(Value::as_bool)
            .unwrap_or(false),
    };
    let mut index = 0;
    let resumed: &[GateRequest] = match start {
        StartAt::Fresh => &[],
        StartAt::Resume(gate) => std::slice::from_ref(gate),
        StartAt::ResumeParallel(gates) => gates,
    };
    // Every gate's verdict before any call runs: a missing one fails the turn at once.
    let mut verdicts = Vec::with_capacity(resumed.len());
    for gate in resumed {
        let Some(approved) = find_approval(&request.messages, &gate.tool_call_id) else {
            let reason = format!(
                "no approval envelope for tool call {} in the resumed history",
                gate.tool_call_id
            );
            let line = format!("[model={}] failed: {reason}", run.label);
            run.outputs.push(line.clone());
            run.messages.push(assistant_text(&line));
            return run.finish(HarnessEnd::Failed { reason });
        };
        verdicts.push(approved);
    }
    for (gate, approved) in resumed.iter().zip(verdicts) {
        index = gate.step_index;
        let message = trailing_user_text(&request.messages).filter(|m| !m.trim().is_empty());
        if let Some(stopped) = run.stopped_before(index).await {
            return run.finish(stopped);
        }
        if approved {
            let (tool, args, call_id) = (&gate.tool, &gate.args, &gate.tool_call_id);
            if let Some(halt) = execute_tool(&mut run, index, tool, args, call_id, false).await {
                return run.finish(HarnessEnd::Failed { reason: halt });
            }
        } else {
            let mut text = format!("skipped {}: denied by the user", gate.tool);
            if let Some(message) = &message {
                text.push_str(&format!(" ({message})"));
            }
            let line = run.say(index, &text);
            run.messages.push(tool_result_message(
                &gate.tool_call_id,
                serde_json::json!({ "skipped": true, "reason": "denied by the user" }),
                true,
            ));
            run.messages.push(assistant_text(&line));
            if let Some(halt) = run.post_output(index, &line).await {
                return run.finish(HarnessEnd::Failed { reason: halt });
            }
        }
    }
    if !resumed.is_empty() {
        index += 1;
    }
    while index < script.len() {
        if let Some(stopped) = run.stopped_before(index).await {
            return run.finish(stopped);
        }
        let decision = hook.pre_step(index).await;
        if let Some(halt) = run.checkpoint("pre_step", index, decision) {
            return run.finish(HarnessEnd::Failed { reason: halt });
        }
        match &script[index] {
            Step::Say { text } => {
                let line = run.say(index, text);
                run.messages.push(assistant_text(&line));
                if let Some(halt) = run.post_output(index, &line).await {
                    return run.finish(HarnessEnd::Failed { reason: halt });
                }
            }
            Step::Fail { message } => {
                let line = run.say(index, &format!("failed: {message}"));
                run.messages.push(assistant_text(&line));
                return run.finish(HarnessEnd::Failed {
                    reason: message.clone(),
                });
            }
            Step::Wait { ms } => {
                // The agent's work is interruptible: a Stop is honoured within a slice.
                let until = tokio::time::Instant::now() + std::time::Duration::from_millis(*ms);
                while tokio::time::Instant::now() < until {
                    let slice = until - tokio::time::Instant::now();
                    tokio::time::sleep(slice.min(WAIT_SLICE)).await;
                    if tokio::time::Instant::now() < until {
                        if let Some(stopped) = run.stopped_before(index + 1).await {
                            return run.finish(stopped);
                        }
                    }
                }
            }
            Step::Tool { tool, args } => {
                let call_id = tool_call_id(call_seed, index);
                match tool_call(&mut run, request, index, tool, args, call_id).await {
                    Err(halt) => return run.finish(HarnessEnd::Failed { reason: halt }),
                    Ok(Some(gate)) => return run.finish(HarnessEnd::Parked(vec![gate])),
                    Ok(None) => {}
                }
            }
            Step::Parallel { calls } => {
                let mut gates = Vec::new();
                for (j, call) in calls.iter().enumerate() {
                    let call_id = parallel_call_id(call_seed, index, j);
                    match tool_call(&mut run, request, index, &call.tool, &call.args, call_id).await
                    {
                        Err(halt) => return run.finish(HarnessEnd::Failed { reason: halt }),
                        Ok(Some(gate)) => gates.push(gate),
                        Ok(None) => {}
                    }
                }
                if !gates.is_empty() {
                    return run.finish(HarnessEnd::Parked(gates));
                }
            }
        }
        index += 1;
    }
    run.finish(HarnessEnd::Completed)
}

/// One tool call of a step, by its permission: run (allowed), skipped (denied by
/// policy), or the gate it asks for (`Ok(Some)`). `Err(reason)` when a checkpoint halted
/// the run.
async fn tool_call(
    run: &mut Run<'_>,
    request: &RunRequest,
    index: usize,
    tool: &str,
    args: &Value,
    call_id: String,
) -> Result<Option<GateRequest>, String> {
    match permission_for(request, tool) {
        RulePermission::Allow => match execute_tool(run, index, tool, args, &call_id, true).await {
            Some(halt) => Err(halt),
            None => Ok(None),
        },
        RulePermission::Deny => {
            let line = run.say(index, &format!("skipped {tool}: denied by policy"));
            run.messages.push(assistant_text(&line));
            match run.post_output(index, &line).await {
                Some(halt) => Err(halt),
                None => Ok(None),
            }
        }
        _ => Ok(Some(run.gate(index, tool, args, call_id))),
    }
}

/// Run one tool (after `pre_action`). `announce` writes the assistant's tool call into
/// the transcript (a resumed call was announced before the turn parked).
/// `Some(reason)` when a checkpoint halted the run.
async fn execute_tool(
    run: &mut Run<'_>,
    index: usize,
    tool: &str,
    args: &Value,
    call_id: &str,
    announce: bool,
) -> Option<String> {
    if !run.skip_pre_action {
        let decision = run.hook.pre_action(index, tool, args).await;
        if let Some(halt) = run.checkpoint("pre_action", index, decision) {
            return Some(halt);
        }
    }
    let args_text = serde_json::to_string(args).unwrap_or_default();
    let line = match run.hook.begin_action(index, tool, args, call_id).await {
        ActionPermit::Run => run.say(index, &format!("ran {tool} {args_text}: ok")),
        ActionPermit::AlreadyRan { turn_id } => run.say(
            index,
            &format!("ran {tool} {args_text}: ok (run once, by attempt {turn_id}; not run again)"),
        ),
        ActionPermit::Refused { reason } => {
            let line = format!(
                "[model={}] halted before running {tool}: {reason}",
                run.label
            );
            run.outputs.push(line.clone());
            run.messages.push(assistant_text(&line));
            return Some(format!("halted before running {tool}: {reason}"));
        }
    };
    run.events.push(event(
        "tool_result",
        serde_json::json!({ "step": index, "tool": tool, "toolCallId": call_id }),
    ));
    if announce {
        run.messages
            .push(tool_call_message(&line, tool, args, call_id));
        run.messages
            .push(tool_result_message(call_id, run_tool(tool, args), false));
    } else {
        run.messages
            .push(tool_result_message(call_id, run_tool(tool, args), false));
        run.messages.push(assistant_text(&line));
    }
    let decision = run.hook.action_completed(index, tool).await;
    if let Some(halt) = run.checkpoint("action_completed", index, decision) {
        return Some(halt);
    }
    run.post_output(index, &line).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_wire::run::{Harness, PermissionRule, Permissions, Sandbox};

    fn request(mode: PermissionMode) -> RunRequest {
        let mut request = RunRequest::new(
            Harness::PiCore,
            Sandbox::Local,
            "m-test",
            vec![ChatMessage::text("user", "hi")],
        );
        request.permissions = Some(Permissions {
            default: mode,
            rules: None,
            extra: Default::default(),
        });
        request
    }

    #[test]
    fn rules_win_over_the_default() {
        let mut req = request(PermissionMode::Ask);
        req.permissions.as_mut().unwrap().rules = Some(vec![PermissionRule {
            pattern: "Bash(npm run:*)".into(),
            permission: RulePermission::Allow,
            extra: Default::default(),
        }]);
        assert_eq!(permission_for(&req, "Bash"), RulePermission::Allow);
        assert_eq!(permission_for(&req, "Edit"), RulePermission::Ask);
        let reads = request(PermissionMode::AllowReads);
        assert_eq!(permission_for(&reads, "Read"), RulePermission::Allow);
        assert_eq!(permission_for(&reads, "Bash"), RulePermission::Ask);
    }

    /// A hook that halts at the second pre_step and injects at the first.
    struct Scripted;
    impl CheckpointHook for Scripted {
        fn pre_step(
            &self,
            step_index: usize,
        ) -> futures::future::BoxFuture<'_, CheckpointDecision> {
            Box::pin(async move {
                match step_index {
                    0 => CheckpointDecision::Inject {
                        text: "be brief".into(),
                    },
                    1 => CheckpointDecision::Halt {
                        reason: "stop".into(),
                    },
                    _ => CheckpointDecision::Continue,
                }
            })
        }
        fn post_output<'a>(
            &'a self,
            _: usize,
            _: &'a str,
        ) -> futures::future::BoxFuture<'a, CheckpointDecision> {
            Box::pin(async { CheckpointDecision::Continue })
        }
        fn pre_action<'a>(
            &'a self,
            _: usize,
            _: &'a str,
            _: &'a Value,
        ) -> futures::future::BoxFuture<'a, CheckpointDecision> {
            Box::pin(async { CheckpointDecision::Continue })
        }
    }

    #[tokio::test]
    async fn hooks_inject_and_halt() {
        let req = request(PermissionMode::Allow);
        let script = default_script(Some("hi"));
        let outcome = run_harness(&req, &script, &StartAt::Fresh, "t1", &Scripted).await;
        assert_eq!(
            outcome.outputs[0],
            "[model=m-test] (instruction: be brief) Working on: hi"
        );
        assert!(
            matches!(outcome.end, HarnessEnd::Failed { ref reason } if reason == "halted at pre_step: stop")
        );
        assert!(!outcome.output().contains("ran Bash"));
    }

    #[tokio::test]
    async fn resume_without_envelope_fails_the_turn() {
        let req = request(PermissionMode::Ask);
        let script = default_script(None);
        let gate = GateRequest {
            step_index: 1,
            tool: "Bash".into(),
            args: serde_json::json!({}),
            tool_call_id: "toolu_x".into(),
        };
        let outcome = run_harness(&req, &script, &StartAt::Resume(gate), "t2", &NoopHooks).await;
        assert!(matches!(outcome.end, HarnessEnd::Failed { .. }));
        assert!(outcome.output().contains("no approval envelope"));
    }

    #[tokio::test]
    async fn a_parallel_step_runs_the_allowed_calls_and_parks_on_the_asking_ones() {
        let mut req = request(PermissionMode::Ask);
        req.permissions.as_mut().unwrap().rules = Some(vec![
            PermissionRule {
                pattern: "Read".into(),
                permission: RulePermission::Allow,
                extra: Default::default(),
            },
            PermissionRule {
                pattern: "Delete".into(),
                permission: RulePermission::Deny,
                extra: Default::default(),
            },
        ]);
        let script = parse_script(&serde_json::json!([
            {"parallel": [
                {"tool": "Bash", "args": {"c": 1}}, {"tool": "Read"},
                {"tool": "Delete"}, {"tool": "Edit"}
            ]},
            {"say": "after"}
        ]))
        .unwrap();
        let outcome = run_harness(&req, &script, &StartAt::Fresh, "t-par", &NoopHooks).await;
        let HarnessEnd::Parked(gates) = &outcome.end else {
            panic!("{:?}", outcome.end);
        };
        let tools: Vec<&str> = gates.iter().map(|g| g.tool.as_str()).collect();
        assert_eq!(tools, ["Bash", "Edit"]);
        assert_eq!(gates[0].tool_call_id, parallel_call_id("t-par", 0, 0));
        assert_eq!(gates[1].tool_call_id, parallel_call_id("t-par", 0, 3));
        assert_ne!(gates[0].tool_call_id, tool_call_id("t-par", 0));
        let output = outcome.output();
        assert!(output.contains("ran Read {}: ok"), "{output}");
        assert!(
            output.contains("skipped Delete: denied by policy"),
            "{output}"
        );
        assert!(!output.contains("after"), "{output}");

        // Resumed with Bash approved and Edit denied: Bash runs, Edit does not, and
        // the script goes on after the step.
        let mut resumed = req.clone();
        resumed.messages = outcome.messages.clone();
        for (gate, approved) in gates.iter().zip([true, false]) {
            gatehouse_wire::resume::append_to_last_assistant(
                &mut resumed.messages,
                gatehouse_wire::resume::approval_envelope(&gate.tool_call_id, approved, "tok"),
            );
        }
        let start = StartAt::ResumeParallel(gates.clone());
        let again = run_harness(&resumed, &script, &start, "i-1", &NoopHooks).await;
        assert_eq!(again.end, HarnessEnd::Completed);
        let output = again.output();
        assert!(output.contains(r#"ran Bash {"c":1}: ok"#), "{output}");
        assert!(
            output.contains("skipped Edit: denied by the user"),
            "{output}"
        );
        assert!(!output.contains("ran Edit"), "{output}");
        assert!(output.ends_with("after"), "{output}");

        // A gate without its envelope: nothing runs.
        let mut partial = req.clone();
        partial.messages = outcome.messages.clone();
        gatehouse_wire::resume::append_to_last_assistant(
            &mut partial.messages,
            gatehouse_wire::resume::approval_envelope(&gates[0].tool_call_id, true, "tok"),
        );
        let failed = run_harness(&partial, &script, &start, "i-1", &NoopHooks).await;
        assert!(matches!(failed.end, HarnessEnd::Failed { .. }));
        assert!(!failed.output().contains("ran Bash"), "{}", failed.output());
    }

    #[test]
    fn parallel_steps_parse_and_name_bad_calls() {
        let steps = parse_script(&serde_json::json!([{"parallel": [{"tool": "Bash"}]}])).unwrap();
        assert!(
            matches!(&steps[0], Step::Parallel { calls } if calls.len() == 1 && calls[0].args == serde_json::json!({}))
        );
        let err = parse_script(&serde_json::json!([{"parallel": []}])).unwrap_err();
        assert!(err.contains("1 to 100"), "{err}");
        let err = parse_script(&serde_json::json!([{"parallel": [{"tool": "A"}, {"tool": ""}]}]))
            .unwrap_err();
        assert!(err.starts_with("agent.script[0]: parallel[1]"), "{err}");
    }

    #[test]
    fn scripts_parse_and_name_bad_steps() {
        let steps =
            parse_script(&serde_json::json!([{"say": "a"}, {"tool": "Bash"}, {"fail": "x"}]))
                .unwrap();
        assert_eq!(steps.len(), 3);
        assert!(matches!(&steps[1], Step::Tool { args, .. } if args == &serde_json::json!({})));
        let err = parse_script(&serde_json::json!([{"say": "a"}, {"say": 3}])).unwrap_err();
        assert!(err.starts_with("agent.script[1]"), "{err}");
    }
}
