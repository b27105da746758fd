//! `gatehouse interactions list|get|respond|approve-all|watch`: operate on approval gates.

use clap::{Args, Subcommand, ValueEnum};
use gatehouse_client::{Answer, Error, RespondOptions, RespondOutcome, DEFAULT_PAGE_SIZE};
use gatehouse_wire::interaction::{
    InteractionKind, InteractionQuery, InteractionStatus, SessionInteraction, WatchEvent, Windowing,
};
use gatehouse_wire::sessions::SessionExecutionState;

use crate::connect::ConnectArgs;
use crate::exit::{client_error, exit_for, CliError, CliResult};
use crate::follow::follow_stream;
use crate::output::{
    errln, escape, or_dash, outln, print_fields, print_json, print_json_line, truncate, Spinner,
    StreamJsonArray, StreamTable, Table,
};

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
    /// Show at most this many rows (the pages past them are not read).
    #[arg(long, default_value_t = DEFAULT_LIST_LIMIT)]
    limit: usize,
}

/// Rows `list` shows by default: a listing is printed as its pages arrive, and stops
/// here rather than follow a server that keeps answering full pages.
const DEFAULT_LIST_LIMIT: usize = 10_000;

/// Most gates a project- or session-wide `approve-all` collects: their ids are kept
/// until they are answered, and a server that keeps answering full pages must not grow
/// them without end. Past it nothing is answered.
const MAX_APPROVE_ALL_GATES: usize = 10_000;

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
    /// The turn (execution) you saw the gate in: a host that speaks Agenta's durable
    /// contract refuses the answer (exit 14) when the gate belongs to another one.
    #[arg(long, value_name = "ID")]
    expected_execution: Option<String>,
    /// The gate's session: where an Agenta host's contract is read from (its snapshot).
    /// Without it, on `--upstream agenta`, the gate's row is read first for its session.
    #[arg(long)]
    session: Option<String>,
    /// The `Idempotency-Key` to send (default: a fresh one). Re-running with the same key
    /// and answer replays the recorded answer; another answer under it exits 13.
    #[arg(long, value_name = "KEY")]
    idempotency_key: Option<String>,
}

#[derive(Debug, Args)]
struct ApproveAllArgs {
    /// Interaction ids; when none are given, every pending approval gate of --session
    /// (or, with --all-sessions --yes, of the whole project).
    ids: Vec<String>,
    /// Only the pending gates of this agent session.
    #[arg(long)]
    session: Option<String>,
    /// Every pending approval gate of the project, every session's (needs --yes).
    #[arg(long, conflicts_with_all = ["ids", "session"])]
    all_sessions: bool,
    /// Confirm --all-sessions: answer other sessions' gates without asking.
    #[arg(long, requires = "all_sessions")]
    yes: bool,
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

/// The columns of a table of rows.
const ROW_HEADERS: [&str; 7] = [
    "ID",
    "STATUS",
    "KIND",
    "SESSION",
    "TURN",
    "TOOL",
    "STAMPED MODEL",
];

/// One row's cells under [`ROW_HEADERS`].
fn row_cells(row: &SessionInteraction) -> Vec<String> {
    vec![
        or_dash(row.id.as_deref()),
        status_str(row),
        row.kind.as_str().to_string(),
        row.session_id.clone(),
        or_dash(row.turn_id.as_deref()),
        tool_of(row).unwrap_or_else(|| "-".to_string()),
        stamped_model(row).unwrap_or_else(|| "- (no stamp)".to_string()),
    ]
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
            outln!("stamped config (data.parameters, the config the turn resumes under):");
            let text = serde_json::to_string_pretty(parameters)
                .map_err(|err| CliError::other(format!("cannot render the stamped config: {err}")))?;
            for line in text.lines() {
                outln!("  {line}");
            }
        }
        None => outln!(
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
    stream_rows(&client, &query, args.limit, connect.json).await
}

/// Print the rows matching `query`, at most `limit`, each page as it arrives (then
/// dropped: only the paging cursors are kept), as a table or one JSON array.
async fn stream_rows(
    client: &gatehouse_client::Client,
    query: &InteractionQuery,
    limit: usize,
    as_json: bool,
) -> CliResult {
    // Each page is printed as it arrives and dropped: only the cursors are kept.
    let page_size = limit.clamp(1, DEFAULT_PAGE_SIZE as usize) as u32;
    let mut pages = client.interactions().pages(
        query,
        Windowing {
            limit: Some(page_size),
            ..Windowing::default()
        },
    );
    let mut table = StreamTable::new(ROW_HEADERS);
    let mut json = StreamJsonArray::default();
    let mut shown = 0usize;
    let mut cut = false;
    let failed = loop {
        if shown >= limit {
            cut = true;
            break None;
        }
        let page = match pages.next_page().await {
            Ok(Some(page)) => page,
            Ok(None) => break None,
            Err(err) => break Some(err),
        };
        let room = limit - shown;
        cut = page.len() > room;
        let page: Vec<SessionInteraction> = page.into_iter().take(room).collect();
        shown += page.len();
        if as_json {
            for row in &page {
                json.push(row)?;
            }
        } else {
            table.print(page.iter().map(row_cells).collect());
        }
    };
    // A listing that failed before its first row prints nothing but the error.
    if as_json && (failed.is_none() || json.started()) {
        json.finish();
    } else if !as_json && !table.printed_any() && failed.is_none() {
        outln!("no interactions");
    }
    if let Some(err) = failed {
        return Err(client_error(err));
    }
    if cut {
        errln!(
            "showing the first {} rows; more may match (narrow the filters or raise --limit)",
            limit
        );
    }
    Ok(())
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
    let mut options = RespondOptions::new();
    if let Some(key) = args.idempotency_key {
        options = options.idempotency_key(key);
    }
    if let Some(expected) = args.expected_execution {
        options = options.expected_execution_id(expected);
    }
    // An Agenta host has no discovery route: `--session` lets the client read its contract
    // from that session's snapshot. Without it, nothing more is asked of the host: the
    // answer goes out in the form every host takes, and what comes back is read as it is.
    if let Some(session) = args.session {
        options = options.session_id(session);
    }
    let verdict = if args.approve { "approved" } else { "denied" };
    let outcome = match client
        .interactions()
        .respond_outcome(&args.id, &answer, &options)
        .await
    {
        Ok(outcome) => outcome,
        // A 2xx: the answer is recorded; only what it did is unknown.
        Err(err @ Error::AcceptedUnreadable { .. }) => {
            errln!("warning: {}", escape(&err.to_string()));
            if connect.json {
                return print_json(&serde_json::json!({
                    "outcome": "recorded_unreadable",
                    "id": args.id,
                    "reason": err.to_string(),
                }));
            }
            outln!(
                "{verdict} {}: recorded (the host accepted it); what it did is unknown: its answer could not be read",
                args.id
            );
            return Ok(());
        }
        Err(err) => return Err(respond_error(&args.id, err)),
    };
    if connect.json {
        return print_json(&outcome_json(&outcome)?);
    }
    outln!("{}", escape(&describe_outcome(verdict, &args.id, &outcome)));
    Ok(())
}

/// What an answer did, in one line (only what the host said).
fn describe_outcome(verdict: &str, id: &str, outcome: &RespondOutcome) -> String {
    match outcome {
        RespondOutcome::Continued {
            command, execution, ..
        } => {
            let mut line = format!(
                "{verdict} {id}: recorded; the turn continues as execution {} ({}), command {} ({})",
                execution.id,
                execution.state.as_str(),
                command.id,
                command.state.as_str()
            );
            if execution.state == SessionExecutionState::Recoverable {
                line.push_str(
                    "; its delivery to the runner failed after the answer was recorded: the host delivers it again on a resume or the next message",
                );
            }
            line
        }
        RespondOutcome::AlreadyRecorded { execution, .. } => format!(
            "{verdict} {id}: the same verdict was already recorded; nothing new was created (turn {} is {})",
            execution.id,
            execution.state.as_str()
        ),
        RespondOutcome::AwaitingOtherGates { execution, .. } => format!(
            "{verdict} {id}: recorded; turn {} waits for its other gates ({}): the answer that completes them continues it",
            execution.id,
            execution.state.as_str()
        ),
        RespondOutcome::Answered { interaction } => {
            // Only a stamped row names the config its turn resumes under; say nothing more.
            let config = if interaction.stamped_parameters().is_some() {
                "the turn resumes under its stamped config"
            } else {
                "the row carries no stamped config"
            };
            format!(
                "{verdict} {id} (status {}); {config}",
                status_str(interaction)
            )
        }
        // An outcome this CLI does not know yet: the row is all it can tell.
        other => format!(
            "{verdict} {id} (status {})",
            status_str(other.interaction())
        ),
    }
}

/// `--json` of an answer: the row alone on a legacy host (as before); on a durable host
/// the outcome, the row, and the command and execution the host named.
fn outcome_json(outcome: &RespondOutcome) -> CliResult<serde_json::Value> {
    let row = |interaction: &SessionInteraction| to_json(interaction);
    Ok(match outcome {
        RespondOutcome::Continued {
            interaction,
            command,
            execution,
        } => serde_json::json!({
            "outcome": "continued",
            "interaction": row(interaction)?,
            "command": to_json(command)?,
            "execution": to_json(execution)?,
        }),
        RespondOutcome::AlreadyRecorded {
            interaction,
            execution,
        } => serde_json::json!({
            "outcome": "already_recorded",
            "interaction": row(interaction)?,
            "command": null,
            "execution": to_json(execution)?,
        }),
        RespondOutcome::AwaitingOtherGates {
            interaction,
            execution,
        } => serde_json::json!({
            "outcome": "awaiting_other_gates",
            "interaction": row(interaction)?,
            "command": null,
            "execution": to_json(execution)?,
        }),
        other => row(other.interaction())?,
    })
}

/// Render a wire value as JSON.
fn to_json<T: serde::Serialize>(value: &T) -> CliResult<serde_json::Value> {
    serde_json::to_value(value)
        .map_err(|err| CliError::other(format!("could not render JSON output: {err}")))
}

/// A refused answer: its message (what the host said, and what to do) and exit code.
fn respond_error(id: &str, err: Error) -> CliError {
    let exit = exit_for(err.kind());
    let message = match &err {
        Error::AlreadyAnswered {
            interaction_status: Some(InteractionStatus::Responded),
            ..
        } => format!("{id} was already answered differently; your answer was not recorded ({err})"),
        Error::AlreadyAnswered {
            interaction_status: Some(status),
            ..
        } => format!(
            "{id} is no longer pending (it is {status}); your answer was not recorded ({err})"
        ),
        Error::TurnNotContinuable {
            execution_state,
            terminal_outcome,
            ..
        } => {
            let mut why = Vec::new();
            if let Some(state) = execution_state {
                why.push(format!("state {state}"));
            }
            if let Some(outcome) = terminal_outcome {
                why.push(format!("outcome {outcome}"));
            }
            let why = if why.is_empty() {
                String::new()
            } else {
                format!(" ({})", why.join(", "))
            };
            format!(
                "the turn of {id} can no longer be continued{why}; your answer was not recorded: read the session again (gatehouse sessions snapshot)"
            )
        }
        Error::StaleExecution {
            current_execution_id,
            ..
        } => format!(
            "{id} belongs to execution {}, not the one you expected: refresh and ask again",
            current_execution_id.as_deref().unwrap_or("(not said)")
        ),
        Error::IdempotencyKeyReused { .. } => format!(
            "the idempotency key was already used for another request; nothing was recorded: answer under a new key ({err})"
        ),
        _ => return client_error(err),
    };
    CliError::new(exit, message)
}

async fn approve_all_cmd(connect: &ConnectArgs, args: ApproveAllArgs) -> CliResult {
    // Without ids the gates answered are every pending one of a scope the caller named:
    // a session, or (said twice) the whole project. A misspelt filter or a forgotten
    // flag must not answer other sessions' gates.
    if args.ids.is_empty() && args.session.is_none() && !(args.all_sessions && args.yes) {
        let message = if args.all_sessions {
            "approve-all --all-sessions answers every session's pending gates: add --yes to confirm"
        } else {
            "approve-all without ids needs --session <ID> (or --all-sessions --yes for every session of the project)"
        };
        return Err(CliError::usage(message));
    }
    let client = connect.client()?;
    let ids = if args.ids.is_empty() {
        pending_approval_ids(&client, args.session.as_deref()).await?
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
        outln!("nothing to approve: no pending approval gates");
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
        outln!(
            "{} approved, {} already answered{owner_unknown_count}, {} failed",
            report.answered.len(),
            report.already_answered.len(),
            report.failed.len() - unknown
        );
        if report.all_already_answered() {
            outln!("every gate was already answered: nothing left to do");
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

/// The ids of the pending approval gates of `session` (of the project without one),
/// read a page at a time; at most [`MAX_APPROVE_ALL_GATES`], or nothing is answered.
async fn pending_approval_ids(
    client: &gatehouse_client::Client,
    session: Option<&str>,
) -> CliResult<Vec<String>> {
    let query = InteractionQuery {
        session_id: session.map(str::to_string),
        status: Some(InteractionStatus::Pending),
        ..InteractionQuery::default()
    };
    let mut pages = client.interactions().pages(&query, Windowing::default());
    let mut ids = Vec::new();
    while let Some(page) = pages.next_page().await.map_err(client_error)? {
        ids.extend(
            page.into_iter()
                .filter(|row| row.kind == InteractionKind::UserApproval)
                .filter_map(|row| row.id),
        );
        if ids.len() > MAX_APPROVE_ALL_GATES {
            return Err(CliError::other(format!(
                "more than {MAX_APPROVE_ALL_GATES} pending approval gates match; nothing was approved: approve a session's or given ids"
            )));
        }
    }
    Ok(ids)
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
        errln!("watching session {session_id} (Ctrl-C to stop)");
    }
    follow_stream(stream, max_events, move |update| async move {
        match update {
            // Revalidate after every (re)connect; the JSON stream carries events only.
            gatehouse_client::WatchUpdate::Connected if !connect.json => {
                errln!("connected; current pending gates:");
                let pending = InteractionQuery {
                    session_id: Some(session_id.to_string()),
                    status: Some(InteractionStatus::Pending),
                    ..InteractionQuery::default()
                };
                stream_rows(client, &pending, DEFAULT_LIST_LIMIT, false).await?;
                Ok(false)
            }
            gatehouse_client::WatchUpdate::Reconnecting { attempt, error } => {
                // A server that keeps cutting the stream must not fill the terminal: the
                // first few losses in a row are told, then one in ten.
                if attempt <= SHOWN_RECONNECTS || attempt % 10 == 0 {
                    errln!(
                        "connection lost (attempt {attempt}): {}; reconnecting",
                        escape(&error.to_string())
                    );
                }
                if attempt == SHOWN_RECONNECTS {
                    errln!("(from now on one reconnect in ten is shown)");
                }
                Ok(false)
            }
            gatehouse_client::WatchUpdate::Event(event) => {
                if connect.json {
                    print_json_line(&event)?;
                } else {
                    outln!("{}", escape(&describe_event(&event)));
                }
                Ok(counts_as_event(&event))
            }
            // A connect in JSON mode, or an update this CLI does not know yet: nothing to show.
            _ => Ok(false),
        }
    })
    .await
}

/// Losses in a row of a watch's connection that are each told on stderr; after them, one
/// in ten is.
const SHOWN_RECONNECTS: u32 = 3;

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
            escape(interaction_id.as_deref().unwrap_or("(id not sent)")),
            escape(status.as_str())
        ),
        WatchEvent::RecordsChanged { .. } => "records changed".to_string(),
        WatchEvent::Lifecycle { state, .. } => format!("turn {}", escape(state.as_str())),
    }
}
