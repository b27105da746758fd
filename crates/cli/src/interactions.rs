//! `gatehouse interactions list|get|respond|approve-all|watch`: operate on approval gates.

use clap::{Args, Subcommand, ValueEnum};
use gatehouse_client::Answer;
use gatehouse_wire::interaction::{
    InteractionKind, InteractionQuery, InteractionStatus, SessionInteraction, WatchEvent,
};

use crate::connect::ConnectArgs;
use crate::exit::{client_error, CliError, CliResult};
use crate::follow::follow_stream;
use crate::output::{or_dash, print_fields, print_json, print_json_line, truncate, Spinner, Table};

/// `gatehouse interactions ...`
#[derive(Debug, Args)]
pub struct InteractionsArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    #[command(subcommand)]
    command: InteractionsCommand,
}

#[derive(Debug, Subcommand)]
enum InteractionsCommand {
    /// List interactions (pending ones by default).
    List(ListArgs),
    /// Show one interaction, with its request, references and stamped config.
    Get {
        /// The interaction id.
        id: String,
    },
    /// Answer one approval gate.
    Respond(RespondArgs),
    /// Approve every pending gate (of a session, or the given ids) in parallel.
    ApproveAll(ApproveAllArgs),
    /// Follow a session's gates as they open and resolve (until Ctrl-C or --max-events).
    Watch {
        /// The agent session to watch.
        session_id: String,
        /// Stop after this many events of the session's gates and turns (`interaction`,
        /// `records-changed`, `lifecycle`); the `ready` of each connect is shown but not
        /// counted, nor are heartbeats.
        #[arg(long)]
        max_events: Option<usize>,
    },
}

/// Status filter of `list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum StatusFilter {
    Pending,
    Responded,
    Resolved,
    Cancelled,
    /// Every status.
    Any,
}

impl StatusFilter {
    fn status(self) -> Option<InteractionStatus> {
        match self {
            StatusFilter::Pending => Some(InteractionStatus::Pending),
            StatusFilter::Responded => Some(InteractionStatus::Responded),
            StatusFilter::Resolved => Some(InteractionStatus::Resolved),
            StatusFilter::Cancelled => Some(InteractionStatus::Cancelled),
            StatusFilter::Any => None,
        }
    }
}

/// Kind filter of `list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum KindFilter {
    UserApproval,
    UserInput,
    ClientTool,
}

impl KindFilter {
    fn kind(self) -> InteractionKind {
        match self {
            KindFilter::UserApproval => InteractionKind::UserApproval,
            KindFilter::UserInput => InteractionKind::UserInput,
            KindFilter::ClientTool => InteractionKind::ClientTool,
        }
    }
}

#[derive(Debug, Args)]
struct ListArgs {
    /// Only this agent session.
    #[arg(long)]
    session: Option<String>,
    /// Only this turn.
    #[arg(long)]
    turn: Option<String>,
    /// Only this status.
    #[arg(long, value_enum, default_value_t = StatusFilter::Pending)]
    status: StatusFilter,
    /// Only this kind.
    #[arg(long, value_enum)]
    kind: Option<KindFilter>,
}

#[derive(Debug, Args)]
struct RespondArgs {
    /// The interaction id.
    id: String,
    /// Approve the tool call.
    #[arg(long, conflicts_with = "deny", required_unless_present = "deny")]
    approve: bool,
    /// Deny the tool call.
    #[arg(long)]
    deny: bool,
    /// A message for the agent (becomes a trailing user message on resume).
    #[arg(long)]
    message: Option<String>,
    /// The tool call being answered (defaults to the row's).
    #[arg(long)]
    tool_call_id: Option<String>,
}

#[derive(Debug, Args)]
struct ApproveAllArgs {
    /// Interaction ids; when none are given, every pending approval gate (of --session).
    ids: Vec<String>,
    /// Only the pending gates of this agent session.
    #[arg(long)]
    session: Option<String>,
    /// A message for the agent.
    #[arg(long)]
    message: Option<String>,
}

/// Run an `interactions` subcommand.
pub async fn run(args: InteractionsArgs) -> CliResult {
    let connect = args.connect;
    match args.command {
        InteractionsCommand::List(list) => list_cmd(&connect, list).await,
        InteractionsCommand::Get { id } => get_cmd(&connect, &id).await,
        InteractionsCommand::Respond(respond) => respond_cmd(&connect, respond).await,
        InteractionsCommand::ApproveAll(all) => approve_all_cmd(&connect, all).await,
        InteractionsCommand::Watch {
            session_id,
            max_events,
        } => watch_cmd(&connect, &session_id, max_events).await,
    }
}

/// The model a row's stamped config names (`agent.llm.model`), if any.
pub fn stamped_model(row: &SessionInteraction) -> Option<String> {
    row.stamped_parameters()
        .and_then(|p| p.get("agent"))
        .and_then(|a| a.get("llm"))
        .and_then(|l| l.get("model"))
        .and_then(|m| m.as_str())
        .map(str::to_string)
}

fn status_str(row: &SessionInteraction) -> String {
    row.status
        .as_ref()
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|| "-".to_string())
}

fn tool_of(row: &SessionInteraction) -> Option<String> {
    row.data
        .as_ref()
        .and_then(|d| d.request.as_ref())
        .and_then(|r| r.tool.clone())
}

/// Print rows as a table (or JSON).
pub fn print_rows(rows: &[SessionInteraction], json: bool) -> CliResult {
    if json {
        return print_json(rows);
    }
    if rows.is_empty() {
        println!("no interactions");
        return Ok(());
    }
    let mut table = Table::new([
        "ID",
        "STATUS",
        "KIND",
        "SESSION",
        "TURN",
        "TOOL",
        "STAMPED MODEL",
    ]);
    for row in rows {
        table.row([
            or_dash(row.id.as_deref()),
            status_str(row),
            row.kind.as_str().to_string(),
            row.session_id.clone(),
            or_dash(row.turn_id.as_deref()),
            tool_of(row).unwrap_or_else(|| "-".to_string()),
            stamped_model(row).unwrap_or_else(|| "- (no stamp)".to_string()),
        ]);
    }
    table.print();
    Ok(())
}

/// Print one row in detail (or JSON).
pub fn print_row(row: &SessionInteraction, json: bool) -> CliResult {
    if json {
        return print_json(row);
    }
    let data = row.data.as_ref();
    let request = data.and_then(|d| d.request.as_ref());
    let compact = |value: Option<&serde_json::Value>| {
        value
            .map(|v| truncate(&v.to_string(), 120))
            .unwrap_or_else(|| "-".to_string())
    };
    let references = data
        .and_then(|d| d.references.as_ref())
        .and_then(|r| serde_json::to_value(r).ok());
    let resolution = data
        .and_then(|d| d.resolution.as_ref())
        .map(|r| serde_json::Value::Object(r.clone()));
    print_fields(&[
        ("id", or_dash(row.id.as_deref())),
        ("status", status_str(row)),
        ("kind", row.kind.as_str().to_string()),
        ("session", row.session_id.clone()),
        ("turn", or_dash(row.turn_id.as_deref())),
        ("token", row.token.clone()),
        ("tool", or_dash(request.and_then(|r| r.tool.as_deref()))),
        ("args", compact(request.and_then(|r| r.args.as_ref()))),
        (
            "tool call",
            or_dash(request.and_then(|r| r.tool_call_id.as_deref())),
        ),
        ("references", compact(references.as_ref())),
        ("resolution", compact(resolution.as_ref())),
        ("created", or_dash(row.created_at.as_deref())),
    ]);
    match row.stamped_parameters() {
        Some(parameters) => {
            println!("stamped config (data.parameters, the config the turn resumes under):");
            let text = serde_json::to_string_pretty(parameters)
                .map_err(|err| CliError::other(format!("cannot render the stamped config: {err}")))?;
            for line in text.lines() {
                println!("  {line}");
            }
        }
        None => println!(
            "stamped config: none (the resume hydrates from the references: pinned revision or the variant's HEAD)"
        ),
    }
    Ok(())
}

async fn list_cmd(connect: &ConnectArgs, args: ListArgs) -> CliResult {
    let client = connect.client()?;
    let query = InteractionQuery {
        session_id: args.session,
        turn_id: args.turn,
        kind: args.kind.map(KindFilter::kind),
        status: args.status.status(),
        ..InteractionQuery::default()
    };
    let rows = client
        .interactions()
        .query_all(&query)
        .await
        .map_err(client_error)?;
    print_rows(&rows, connect.json)
}

async fn get_cmd(connect: &ConnectArgs, id: &str) -> CliResult {
    let client = connect.client()?;
    let row = client.interactions().get(id).await.map_err(client_error)?;
    print_row(&row, connect.json)
}

async fn respond_cmd(connect: &ConnectArgs, args: RespondArgs) -> CliResult {
    let client = connect.client()?;
    let mut answer = if args.approve {
        Answer::approve()
    } else {
        Answer::deny(String::new())
    };
    if let Some(message) = args.message.filter(|m| !m.trim().is_empty()) {
        answer = answer.message(message);
    }
    if let Some(tool_call_id) = args.tool_call_id {
        answer = answer.tool_call_id(tool_call_id);
    }
    let row = client
        .interactions()
        .respond(&args.id, &answer)
        .await
        .map_err(client_error)?;
    if connect.json {
        return print_json(&row);
    }
    let verdict = if args.approve { "approved" } else { "denied" };
    // Only a stamped row names the config its turn resumes under; say nothing more.
    let config = if row.stamped_parameters().is_some() {
        "the turn resumes under its stamped config"
    } else {
        "the row carries no stamped config"
    };
    println!(
        "{verdict} {} (status {}); {config}",
        args.id,
        status_str(&row)
    );
    Ok(())
}

async fn approve_all_cmd(connect: &ConnectArgs, args: ApproveAllArgs) -> CliResult {
    let client = connect.client()?;
    let ids = if args.ids.is_empty() {
        client
            .interactions()
            .list_pending(args.session.as_deref())
            .await
            .map_err(client_error)?
            .into_iter()
            .filter(|row| row.kind == InteractionKind::UserApproval)
            .filter_map(|row| row.id)
            .collect()
    } else {
        args.ids
    };
    let mut answer = Answer::approve();
    if let Some(message) = args.message.filter(|m| !m.trim().is_empty()) {
        answer = answer.message(message);
    }
    let report = {
        let _spinner = Spinner::start(format!("approving {} gate(s)", ids.len()));
        client.interactions().approve_all(&ids, &answer).await
    };
    if connect.json {
        let failed: Vec<serde_json::Value> = report
            .failed
            .iter()
            .map(|(id, err)| serde_json::json!({"id": id, "error": err.to_string()}))
            .collect();
        let answered: Vec<&str> = report
            .answered
            .iter()
            .filter_map(|row| row.id.as_deref())
            .collect();
        print_json(&serde_json::json!({
            "answered": answered,
            "already_answered": report.already_answered,
            "failed": failed,
            "all_already_answered": report.all_already_answered(),
        }))?;
    } else if report.total() == 0 {
        println!("nothing to approve: no pending approval gates");
    } else {
        let mut table = Table::new(["ID", "OUTCOME"]);
        for row in &report.answered {
            table.row([or_dash(row.id.as_deref()), "approved".to_string()]);
        }
        for id in &report.already_answered {
            table.row([
                id.clone(),
                "already answered (settled elsewhere)".to_string(),
            ]);
        }
        for (id, err) in &report.failed {
            let outcome = if owner_unknown(err) {
                "answered; whose answer is not knowable from this host".to_string()
            } else {
                format!("failed: {err}")
            };
            table.row([id.clone(), outcome]);
        }
        table.print();
        let unknown = report
            .failed
            .iter()
            .filter(|(_, e)| owner_unknown(e))
            .count();
        let owner_unknown_count = if unknown > 0 {
            format!(", {unknown} answered (whose answer is not knowable)")
        } else {
            String::new()
        };
        println!(
            "{} approved, {} already answered{owner_unknown_count}, {} failed",
            report.answered.len(),
            report.already_answered.len(),
            report.failed.len() - unknown
        );
        if report.all_already_answered() {
            println!("every gate was already answered: nothing left to do");
        }
    }
    // A real failure's code first; a gate answered by an unknown owner is settled.
    let mut failed = report.failed;
    failed.sort_by_key(|(_, err)| owner_unknown(err));
    match failed.into_iter().next() {
        None => Ok(()),
        Some((id, err)) => {
            let settled = owner_unknown(&err);
            let mapped = client_error(err);
            let message = if settled {
                format!("approve-all: {id}: {}", mapped.message)
            } else {
                format!("approve-all: {id} failed: {}", mapped.message)
            };
            Err(CliError::new(mapped.exit, message))
        }
    }
}

/// A respond whose gate is answered, by whom the host cannot show (exit 11): no failure
/// to answer, and never "already answered".
fn owner_unknown(err: &gatehouse_client::Error) -> bool {
    err.kind() == gatehouse_client::ErrorKind::AnswerOwnerUnknown
}

async fn watch_cmd(
    connect: &ConnectArgs,
    session_id: &str,
    max_events: Option<usize>,
) -> CliResult {
    let client = connect.client()?;
    // A reference, so that each update's future can borrow the client.
    let client = &client;
    let stream = client.interactions().watch(session_id);
    if !connect.json {
        eprintln!("watching session {session_id} (Ctrl-C to stop)");
    }
    follow_stream(stream, max_events, move |update| async move {
        match update {
            // Revalidate after every (re)connect; the JSON stream carries events only.
            gatehouse_client::WatchUpdate::Connected if !connect.json => {
                eprintln!("connected; current pending gates:");
                let rows = client
                    .interactions()
                    .list_pending(Some(session_id))
                    .await
                    .map_err(client_error)?;
                print_rows(&rows, false)?;
                Ok(false)
            }
            gatehouse_client::WatchUpdate::Reconnecting { attempt, error } => {
                eprintln!("connection lost (attempt {attempt}): {error}; reconnecting");
                Ok(false)
            }
            gatehouse_client::WatchUpdate::Event(event) => {
                if connect.json {
                    print_json_line(&event)?;
                } else {
                    println!("{}", describe_event(&event));
                }
                Ok(counts_as_event(&event))
            }
            // A connect in JSON mode, or an update this CLI does not know yet: nothing to show.
            _ => Ok(false),
        }
    })
    .await
}

/// True for an event of the session's gates or turns, which `--max-events` counts; a
/// connect's `ready` is no such event (the client never yields heartbeats).
fn counts_as_event(event: &WatchEvent) -> bool {
    match event {
        WatchEvent::Ready { .. } => false,
        WatchEvent::Interaction { .. }
        | WatchEvent::RecordsChanged { .. }
        | WatchEvent::Lifecycle { .. } => true,
    }
}

fn describe_event(event: &WatchEvent) -> String {
    match event {
        WatchEvent::Ready { .. } => "ready".to_string(),
        WatchEvent::Interaction {
            status,
            interaction_id,
            ..
        } => format!(
            "interaction {} {}",
            interaction_id.as_deref().unwrap_or("(id not sent)"),
            status.as_str()
        ),
        WatchEvent::RecordsChanged { .. } => "records changed".to_string(),
        WatchEvent::Lifecycle { state, .. } => format!("turn {}", state.as_str()),
    }
}
