//! `gatehouse invoke`: run one turn on a Gatehouse control plane (`POST /api/invoke`), by
//! default the common one, the deterministic agent calling one tool under one permission,
//! so there is a gate to answer without writing the invoke body by hand; `--body FILE`
//! sends any other turn.

use std::io::Read;

use clap::{Args, ValueEnum};
use gatehouse_client::Client;
use gatehouse_wire::invoke::{
    InvokeRequest, InvokeResponse, ToolTurn, TurnStatus, TOOL_TURN_MODEL,
};
use gatehouse_wire::run::RulePermission;
use serde_json::Value;

use crate::connect::ConnectArgs;
use crate::exit::{client_error, CliError, CliResult};
use crate::output::{or_dash, print_fields, print_json, Table};

/// What the turn's permissions decide for its tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PermissionArg {
    /// Park at an approval gate (the default).
    Ask,
    /// Run the tool without asking.
    Allow,
    /// Skip the tool.
    Deny,
}

impl PermissionArg {
    fn permission(self) -> RulePermission {
        match self {
            PermissionArg::Ask => RulePermission::Ask,
            PermissionArg::Allow => RulePermission::Allow,
            PermissionArg::Deny => RulePermission::Deny,
        }
    }
}

/// `gatehouse invoke` flags.
#[derive(Debug, Args)]
pub struct InvokeArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// The agent session (default: a new one, named by the server). A new turn in a
    /// session cancels the session's still-pending gates.
    #[arg(long)]
    session: Option<String>,
    /// What the user asks (the turn's user message).
    #[arg(long, default_value = "list the files")]
    prompt: String,
    /// The tool the agent calls, which the permission gates.
    #[arg(long, value_name = "TOOL", default_value = "Bash")]
    gate_tool: String,
    /// The tool call's arguments, a JSON value (what the gate shows).
    #[arg(long, value_name = "JSON", default_value = "{}")]
    args: String,
    /// What the turn's permissions decide for the call.
    #[arg(long, value_enum, default_value_t = PermissionArg::Ask)]
    permission: PermissionArg,
    /// The model the turn's config names (`agent.llm.model`).
    #[arg(long, default_value = TOOL_TURN_MODEL)]
    model: String,
    /// Send this invoke body instead (Agenta's `{session_id?, references?, data}`; `-`
    /// reads stdin); the turn flags above do not apply with it.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["prompt", "gate_tool", "args", "permission", "model"])]
    body: Option<String>,
}

/// Run `gatehouse invoke`.
pub async fn run(args: InvokeArgs) -> CliResult {
    let request = request_of(&args)?;
    let client = args.connect.client()?;
    let answer = client
        .service()
        .invoke(&request)
        .await
        .map_err(client_error)?;
    let gates = gates_of(&client, &answer).await;
    if args.connect.json {
        print_json(&with_gates(&answer, &gates)?)?;
    } else {
        print_answer(&answer, &gates);
    }
    if answer.status == TurnStatus::Failed {
        return Err(CliError::other(format!(
            "the turn failed: {}",
            answer.output.as_deref().unwrap_or("(no output)")
        )));
    }
    Ok(())
}

/// The invoke body the flags ask for; bad JSON is a usage error.
fn request_of(args: &InvokeArgs) -> CliResult<InvokeRequest> {
    if let Some(path) = &args.body {
        let text = read_body(path)?;
        let mut request: InvokeRequest = serde_json::from_str::<Value>(&text)
            .and_then(serde_json::from_value)
            .map_err(|err| {
                CliError::usage(format!("--body {path} is not an invoke body: {err}"))
            })?;
        if args.session.is_some() {
            request.session_id = args.session.clone();
        }
        return Ok(request);
    }
    let tool_args: Value = serde_json::from_str(&args.args)
        .map_err(|err| CliError::usage(format!("--args is not JSON: {err}")))?;
    if args.gate_tool.trim().is_empty() {
        return Err(CliError::usage("--gate-tool must not be empty"));
    }
    let mut turn = ToolTurn::new(args.prompt.as_str(), args.gate_tool.trim())
        .args(tool_args)
        .permission(args.permission.permission())
        .model(args.model.as_str());
    if let Some(session) = args.session.as_deref().filter(|s| !s.trim().is_empty()) {
        turn = turn.session(session);
    }
    Ok(turn.to_request())
}

fn read_body(path: &str) -> CliResult<String> {
    if path == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|err| CliError::other(format!("cannot read the body from stdin: {err}")))?;
        return Ok(text);
    }
    std::fs::read_to_string(path)
        .map_err(|err| CliError::other(format!("cannot read --body {path}: {err}")))
}

/// One opened gate: its id, and its tool when its row could be read.
struct OpenedGate {
    id: String,
    tool: Option<String>,
}

/// The gates the turn opened, each with the tool its row names (a row that cannot be read
/// back shows no tool: the invoke itself succeeded).
async fn gates_of(client: &Client, answer: &InvokeResponse) -> Vec<OpenedGate> {
    let mut gates = Vec::with_capacity(answer.interaction_ids.len());
    for id in &answer.interaction_ids {
        let tool = match client.interactions().get(id).await {
            Ok(row) => row
                .data
                .as_ref()
                .and_then(|d| d.request.as_ref())
                .and_then(|r| r.tool.clone()),
            Err(err) => {
                eprintln!("warning: gate {id} opened, but its row could not be read: {err}");
                None
            }
        };
        gates.push(OpenedGate {
            id: id.clone(),
            tool,
        });
    }
    gates
}

/// The invoke answer with `gates: [{id, tool}]` beside it.
fn with_gates(answer: &InvokeResponse, gates: &[OpenedGate]) -> CliResult<Value> {
    let mut value = serde_json::to_value(answer)
        .map_err(|err| CliError::other(format!("cannot write the answer as JSON: {err}")))?;
    let listed: Vec<Value> = gates
        .iter()
        .map(|g| serde_json::json!({"id": g.id, "tool": g.tool}))
        .collect();
    if let Value::Object(map) = &mut value {
        map.insert("gates".to_string(), Value::Array(listed));
    }
    Ok(value)
}

fn status_str(status: TurnStatus) -> &'static str {
    match status {
        TurnStatus::Parked => "parked",
        TurnStatus::Completed => "completed",
        TurnStatus::Failed => "failed",
    }
}

fn print_answer(answer: &InvokeResponse, gates: &[OpenedGate]) {
    print_fields(&[
        ("status", status_str(answer.status).to_string()),
        ("session", answer.session_id.clone()),
        ("turn", answer.turn_id.clone()),
        ("model", or_dash(answer.model.as_deref())),
    ]);
    if gates.is_empty() {
        println!("no gates opened");
        return;
    }
    println!();
    let mut table = Table::new(["GATE", "TOOL"]);
    for gate in gates {
        table.row([gate.id.clone(), or_dash(gate.tool.as_deref())]);
    }
    table.print();
}
