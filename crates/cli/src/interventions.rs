//! `gatehouse interventions request|get|wait|events`: ask a running agent to stop or
//! adjust, and learn truthfully whether the run honoured it ("requested" is not
//! "applied": applied is reported only on the server's persisted evidence).

use std::collections::VecDeque;
use std::time::Duration;

use clap::{Args, Subcommand};
use futures::{Stream, StreamExt};
use gatehouse_client::{
    Error, Execution, ExecutionEventStream, InterventionHandle, InterventionOutcome,
    InterventionRequest, InterventionState,
};
use gatehouse_wire::execution::{Checkpoint, ExecutionEvent, ExecutionSession};

use crate::connect::ConnectArgs;
use crate::exit::{client_error, CliError, CliResult, Exit};
use crate::follow::follow_stream;
use crate::output::{
    errln, escape, or_dash, outln, print_fields, print_json, print_json_line, truncate, Spinner,
    Table,
};

/// `gatehouse interventions ...`
#[derive(Debug, Args)]
pub struct InterventionsArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    #[command(subcommand)]
    command: InterventionsCommand,
}

/// Which execution session (room and session ids, as in the invoke answer's `execution`).
#[derive(Debug, Clone, Args)]
struct SessionRef {
    /// The room id.
    #[arg(long)]
    room: String,
    /// The execution session id.
    #[arg(long)]
    session: String,
}

#[derive(Debug, Subcommand)]
enum InterventionsCommand {
    /// Request an intervention (prints it as requested: nothing is applied yet).
    Request {
        #[command(flatten)]
        target: SessionRef,
        /// What to do: `stop` halts the run at the checkpoint; any other text is injected
        /// into the next step.
        #[arg(long, allow_hyphen_values = true)]
        instruction: String,
        /// Where the run should honour it: pre-step, post-output or pre-action (also
        /// spelled with `_`); another name is sent as given and the host decides.
        #[arg(long, default_value = "pre-step", value_parser = parse_checkpoint)]
        checkpoint: Checkpoint,
        /// The session revision you saw (compare-and-set); default: read it first.
        #[arg(long)]
        expected_revision: Option<u64>,
        /// Idempotency: re-running with the same id replays instead of duplicating
        /// (default: a fresh UUID).
        #[arg(long, allow_hyphen_values = true)]
        operation_id: Option<String>,
        /// Then wait until it is applied or rejected (like `interventions wait`).
        #[arg(long)]
        wait: bool,
        /// How long `--wait` waits, in seconds.
        #[arg(long, default_value_t = 60, value_name = "SECONDS")]
        wait_timeout: u64,
    },
    /// Show an execution session: binding, status, interventions.
    Get {
        #[command(flatten)]
        target: SessionRef,
    },
    /// Wait until an intervention is applied (exit 0, with its evidence), or report that
    /// it was rejected, left unresolved at the run's end, or timed out (exit 1).
    Wait {
        #[command(flatten)]
        target: SessionRef,
        /// The intervention's operation id.
        #[arg(long)]
        operation_id: String,
        /// Give up after this many seconds.
        #[arg(long = "wait-timeout", default_value_t = 60, value_name = "SECONDS")]
        wait_timeout: u64,
    },
    /// List a session's event log; `--follow` streams new events until the run is
    /// reconciled (or, when the stream goes quiet, the session is found ended).
    Events {
        #[command(flatten)]
        target: SessionRef,
        /// Only events with a sequence above this (a value that is not a non-negative
        /// integer is sent as given: the host refuses it).
        #[arg(long, value_name = "SEQUENCE", allow_hyphen_values = true)]
        after: Option<String>,
        /// Keep streaming (SSE) until the session is reconciled or Ctrl-C. A quiet stream
        /// is checked against the session: one that already ended (AgentPlat keeps its
        /// stream open after the last event) ends the follow with the events it holds.
        #[arg(long)]
        follow: bool,
        /// With `--follow`: stop after this many events.
        #[arg(long, value_name = "N", requires = "follow")]
        max_events: Option<usize>,
    },
}

/// A checkpoint name on the command line: the three known ones in either spelling
/// (`pre-step`, `pre_step`), any other non-blank name as given (the host decides).
fn parse_checkpoint(text: &str) -> Result<Checkpoint, String> {
    let name = text.trim();
    if name.is_empty() {
        return Err("the checkpoint is blank (pre-step, post-output or pre-action)".to_string());
    }
    let known = Checkpoint::from_wire(&name.replace('-', "_"));
    Ok(if known.is_known() {
        known
    } else {
        Checkpoint::from_wire(name)
    })
}

/// Run an `interventions` subcommand.
pub async fn run(args: InterventionsArgs) -> CliResult {
    let connect = args.connect;
    match args.command {
        InterventionsCommand::Request {
            target,
            instruction,
            checkpoint,
            expected_revision,
            operation_id,
            wait,
            wait_timeout,
        } => {
            let request = RequestArgs {
                instruction,
                checkpoint,
                expected_revision,
                operation_id,
                wait: wait.then(|| Duration::from_secs(wait_timeout)),
            };
            request_cmd(&connect, &target, request).await
        }
        InterventionsCommand::Get { target } => get_cmd(&connect, &target).await,
        InterventionsCommand::Wait {
            target,
            operation_id,
            wait_timeout,
        } => {
            wait_cmd(
                &connect,
                &target,
                &operation_id,
                Duration::from_secs(wait_timeout),
            )
            .await
        }
        InterventionsCommand::Events {
            target,
            after,
            follow,
            max_events,
        } => {
            let follow = follow.then_some(max_events);
            events_cmd(&connect, &target, after, follow).await
        }
    }
}

struct RequestArgs {
    instruction: String,
    checkpoint: Checkpoint,
    expected_revision: Option<u64>,
    operation_id: Option<String>,
    wait: Option<Duration>,
}

/// The snake_case name of an event type (an unknown one as the server spelled it).
pub fn event_type_name(event: &ExecutionEvent) -> String {
    event.event_type.as_str().to_string()
}

/// The one-word name of an intervention's state (`requested` for a new request; a
/// replay of an older one may show further progress).
pub fn state_label(state: &InterventionState) -> &'static str {
    match state {
        InterventionState::Requested => "requested",
        InterventionState::Dispatching { .. } => "dispatching",
        InterventionState::Applied { .. } => "applied",
        InterventionState::Rejected { .. } => "rejected",
        _ => "unknown",
    }
}

/// One line describing an intervention's state.
pub fn describe_state(state: &InterventionState) -> String {
    match state {
        InterventionState::Requested => {
            "requested (pending: not applied yet, nothing has stopped)".to_string()
        }
        InterventionState::Dispatching { attempts } => {
            format!("dispatching (claimed at a checkpoint, attempt {attempts}; not applied yet)")
        }
        InterventionState::Applied { evidence } => format!(
            "applied (evidence: event #{} {} at {}{})",
            evidence.sequence,
            event_type_name(evidence),
            evidence.occurred_at,
            evidence
                .checkpoint
                .as_ref()
                .map(|c| format!(", checkpoint {}", c.as_str()))
                .unwrap_or_default()
        ),
        InterventionState::Rejected { reason } => format!("rejected: {reason}"),
        InterventionState::Unknown { status } => {
            format!("{status} (a status this CLI does not know; not known to be applied)")
        }
        // A state this CLI does not know yet: say so, never claim it applied.
        other => format!("in a state this CLI does not know ({other:?}; not known to be applied)"),
    }
}

async fn request_cmd(connect: &ConnectArgs, target: &SessionRef, args: RequestArgs) -> CliResult {
    let client = connect.client()?;
    let execution = client.execution();
    let expected_revision = match args.expected_revision {
        Some(revision) => revision,
        None => {
            execution
                .get_session(&target.room, &target.session)
                .await
                .map_err(client_error)?
                .revision
        }
    };
    let mut request =
        InterventionRequest::new(expected_revision, args.instruction, args.checkpoint);
    if let Some(id) = args.operation_id {
        request = request.operation_id(id);
    }
    let handle = match execution
        .request_intervention(&target.room, &target.session, request)
        .await
    {
        Ok(handle) => handle,
        // The host accepted it: it was requested, only its answer is unreadable.
        Err(err @ Error::AcceptedUnreadable { .. }) => {
            return accepted_unreadable(connect, &execution, target, args.wait, err).await
        }
        Err(err) => return Err(request_refused(connect, err)),
    };
    if connect.json && args.wait.is_none() {
        let intervention = handle.session().intervention(handle.operation_id());
        print_json(&serde_json::json!({
            "operation_id": handle.operation_id(),
            "state": state_label(&handle.state()),
            "session_revision": handle.session().revision,
            "intervention": intervention,
        }))?;
    } else if !connect.json {
        outln!(
            "operation {}: {}",
            handle.operation_id(),
            describe_state(&handle.state())
        );
        outln!(
            "session {} is at revision {} ({})",
            handle.session_id(),
            handle.session().revision,
            handle.session().status.as_str()
        );
    }
    match args.wait {
        None => Ok(()),
        Some(timeout) => wait_and_report(connect.json, &handle, timeout).await,
    }
}

/// A refused intervention request; a 403 says where the host took the requester from:
/// the API key's identity when one is sent (AgentPlat takes the authenticated actor
/// first, and Gatehouse's server the key's actor; `--participant` is not read), else
/// `--participant` (AgentPlat's header-only auth reads the body's requester).
fn request_refused(connect: &ConnectArgs, err: Error) -> CliError {
    let mut refused = client_error(err);
    if refused.exit == Exit::Forbidden {
        let hint = if connect.api_key.is_some() {
            " (the host takes the requester from the API key's identity, not from \
             --participant)"
        } else {
            " (without --api-key the host takes the requester from --participant or \
             GATEHOUSE_PARTICIPANT)"
        };
        refused.message.push_str(hint);
    }
    refused
}

/// A request the host accepted whose answer could not be read: report it as requested
/// (exit 0, the reason on stderr) and, with `--wait`, wait for it as usual.
async fn accepted_unreadable(
    connect: &ConnectArgs,
    execution: &gatehouse_client::Execution,
    target: &SessionRef,
    wait: Option<Duration>,
    err: Error,
) -> CliResult {
    let Error::AcceptedUnreadable {
        operation_id: Some(operation_id),
        ..
    } = &err
    else {
        return Err(client_error(err));
    };
    errln!("warning: {}", escape(&err.to_string()));
    if connect.json && wait.is_none() {
        print_json(&serde_json::json!({
            "operation_id": operation_id,
            "state": "requested",
            "answer_unreadable": err.to_string(),
        }))?;
    } else if !connect.json {
        outln!("operation {operation_id}: requested (accepted by the host; its answer could not be read)");
    }
    let Some(timeout) = wait else {
        return Ok(());
    };
    let handle = execution
        .intervention(&target.room, &target.session, operation_id)
        .await
        .map_err(client_error)?;
    wait_and_report(connect.json, &handle, timeout).await
}

async fn get_cmd(connect: &ConnectArgs, target: &SessionRef) -> CliResult {
    let client = connect.client()?;
    let session = client
        .execution()
        .get_session(&target.room, &target.session)
        .await
        .map_err(client_error)?;
    if connect.json {
        return print_json(&session);
    }
    print_session(&session);
    Ok(())
}

fn print_session(session: &ExecutionSession) {
    print_fields(&[
        ("room", session.room_id.clone()),
        ("session", session.session_id.clone()),
        ("status", session.status.as_str().to_string()),
        ("revision", session.revision.to_string()),
        ("run", session.run_id.clone()),
        ("task", session.task_id.clone()),
        ("participant", session.participant_id.clone()),
        (
            "agent revision",
            match (&session.agent_revision_id, &session.agent_revision_digest) {
                (Some(id), Some(digest)) => format!("{id} ({digest})"),
                (Some(id), None) => id.clone(),
                (None, _) => "- (the host has no agent registry)".to_string(),
            },
        ),
        (
            "predecessor",
            or_dash(session.predecessor_session_id.as_deref()),
        ),
        (
            "runtime profile",
            or_dash(session.runtime_profile.as_deref()),
        ),
        ("events", session.events.len().to_string()),
    ]);
    if session.interventions.is_empty() {
        outln!("no interventions");
        return;
    }
    let mut table = Table::new([
        "OPERATION",
        "STATUS",
        "CHECKPOINT",
        "ATTEMPTS",
        "BY",
        "INSTRUCTION",
        "REASON",
    ]);
    for intervention in &session.interventions {
        table.row([
            intervention.operation_id.clone(),
            intervention.status.as_str().to_string(),
            intervention.checkpoint.as_str().to_string(),
            intervention.attempts.to_string(),
            intervention.requested_by_participant_id.clone(),
            truncate(&intervention.instruction, 40),
            or_dash(intervention.resolution_reason.as_deref()),
        ]);
    }
    table.print();
}

async fn wait_cmd(
    connect: &ConnectArgs,
    target: &SessionRef,
    operation_id: &str,
    timeout: Duration,
) -> CliResult {
    let client = connect.client()?;
    let handle = client
        .execution()
        .intervention(&target.room, &target.session, operation_id)
        .await
        .map_err(client_error)?;
    wait_and_report(connect.json, &handle, timeout).await
}

/// Wait (behind a spinner) until the intervention is applied, rejected, left unresolved
/// or timed out, and report how it ended.
async fn wait_and_report(json: bool, handle: &InterventionHandle, timeout: Duration) -> CliResult {
    let operation_id = handle.operation_id();
    let outcome = {
        let _spinner = Spinner::start(format!("waiting for {operation_id} to be applied"));
        handle.wait_applied(timeout).await.map_err(client_error)?
    };
    report_outcome(json, operation_id, &outcome)
}

fn report_outcome(json: bool, operation_id: &str, outcome: &InterventionOutcome) -> CliResult {
    if json {
        let value = match outcome {
            InterventionOutcome::Applied { evidence } => {
                serde_json::json!({"operation_id": operation_id, "outcome": "applied", "evidence": evidence})
            }
            InterventionOutcome::Rejected { reason } => {
                serde_json::json!({"operation_id": operation_id, "outcome": "rejected", "reason": reason})
            }
            InterventionOutcome::UnresolvedAtTerminal { status } => serde_json::json!({
                "operation_id": operation_id,
                "outcome": "unresolved_at_terminal",
                "session_status": status.as_str(),
            }),
            InterventionOutcome::TimedOut => {
                serde_json::json!({"operation_id": operation_id, "outcome": "timed_out"})
            }
            other => serde_json::json!({
                "operation_id": operation_id,
                "outcome": "unknown",
                "detail": format!("{other:?}"),
            }),
        };
        print_json(&value)?;
    }
    match outcome {
        InterventionOutcome::Applied { evidence } => {
            if !json {
                outln!(
                    "operation {operation_id}: {}",
                    describe_state(&InterventionState::Applied {
                        evidence: evidence.clone()
                    })
                );
                if let Some(details) = &evidence.details {
                    outln!("details: {}", escape(&details.to_string()));
                }
            }
            Ok(())
        }
        InterventionOutcome::Rejected { reason } => Err(CliError::other(format!(
            "operation {operation_id} was rejected: {reason}"
        ))),
        InterventionOutcome::UnresolvedAtTerminal { status } => Err(CliError::other(format!(
            "operation {operation_id} was not applied: the run ended ({}) before reaching its checkpoint",
            status.as_str()
        ))),
        InterventionOutcome::TimedOut => Err(CliError::other(format!(
            "operation {operation_id} is not applied yet: timed out waiting (it is still requested)"
        ))),
        // Only `Applied` is a success; an outcome this CLI does not know is not one.
        other => Err(CliError::other(format!(
            "operation {operation_id} is not known to be applied: {other:?}"
        ))),
    }
}

fn event_row(event: &ExecutionEvent) -> [String; 5] {
    [
        event.sequence.to_string(),
        event_type_name(event),
        or_dash(event.operation_id.as_deref()),
        event
            .checkpoint
            .as_ref()
            .map(|c| c.as_str().to_string())
            .unwrap_or_else(|| "-".to_string()),
        event.occurred_at.clone(),
    ]
}

const EVENT_HEADERS: [&str; 5] = ["SEQ", "TYPE", "OPERATION", "CHECKPOINT", "OCCURRED"];

/// `follow`: `None` lists once; `Some(max)` streams (at most `max` events).
async fn events_cmd(
    connect: &ConnectArgs,
    target: &SessionRef,
    after: Option<String>,
    follow: Option<Option<usize>>,
) -> CliResult {
    let client = connect.client()?;
    let execution = client.execution();
    let sequence = match after.as_deref().map(|a| a.trim().parse::<u64>()) {
        None => Ok(None),
        Some(Ok(n)) => Ok(Some(n)),
        Some(Err(_)) => Err(after.clone().unwrap_or_default()),
    };
    if follow.is_none() {
        let events = match &sequence {
            Ok(after) => {
                execution
                    .events(&target.room, &target.session, *after)
                    .await
            }
            // Not a sequence: sent as given, the host says what it makes of it.
            Err(text) => {
                execution
                    .events_after_text(&target.room, &target.session, text)
                    .await
            }
        }
        .map_err(client_error)?;
        if connect.json {
            return print_json(&events);
        }
        if events.is_empty() {
            outln!("no events");
            return Ok(());
        }
        let mut table = Table::new(EVENT_HEADERS);
        for event in &events {
            table.row(event_row(event));
        }
        table.print();
        return Ok(());
    }
    let max_events = follow.unwrap_or(None);
    let after = sequence.map_err(|text| {
        CliError::usage(format!(
            "--after with --follow must be a non-negative integer, not {text:?}"
        ))
    })?;
    let events = execution.watch_events(&target.room, &target.session, after);
    let stream = until_session_ended(execution, target.clone(), after.unwrap_or(0), events);
    if !connect.json {
        outln!("{}", EVENT_HEADERS.join("  "));
    }
    follow_stream(stream, max_events, move |event| async move {
        if connect.json {
            print_json_line(&event)?;
        } else {
            let cells: Vec<String> = event_row(&event)
                .iter()
                .map(|cell| escape(cell).into_owned())
                .collect();
            outln!("{}", cells.join("  "));
        }
        Ok(true)
    })
    .await
}

/// How long `events --follow` waits for an event before it reads the session: on a
/// session that already ended AgentPlat's stream stays open and sends nothing more.
const QUIET_BEFORE_SESSION_CHECK: Duration = Duration::from_secs(2);

/// What [`until_session_ended`] keeps between items.
struct Follow {
    execution: Execution,
    target: SessionRef,
    events: ExecutionEventStream,
    /// The highest session-event sequence shown (or the `--after` given).
    last_shown: u64,
    /// Events of an ended session not shown yet, then the end.
    rest: VecDeque<ExecutionEvent>,
    ended: bool,
}

/// `events`, ended once the session is known to be over: whenever the stream has been
/// quiet for [`QUIET_BEFORE_SESSION_CHECK`] the session is read, and if it is terminal
/// the events it holds past the last one shown are yielded (its log is complete) and
/// the stream ends. A failed read changes nothing (the next quiet spell reads again);
/// the stream itself still ends after `session_reconciled` or on its own error.
fn until_session_ended(
    execution: Execution,
    target: SessionRef,
    after: u64,
    events: ExecutionEventStream,
) -> impl Stream<Item = Result<ExecutionEvent, Error>> {
    let follow = Follow {
        execution,
        target,
        events,
        last_shown: after,
        rest: VecDeque::new(),
        ended: false,
    };
    futures::stream::unfold(follow, |mut follow| async move {
        loop {
            if let Some(event) = follow.rest.pop_front() {
                return Some((Ok(event), follow));
            }
            if follow.ended {
                return None;
            }
            match tokio::time::timeout(QUIET_BEFORE_SESSION_CHECK, follow.events.next()).await {
                Ok(Some(Ok(event))) => {
                    follow.last_shown = follow.last_shown.max(event.sequence);
                    return Some((Ok(event), follow));
                }
                Ok(Some(Err(err))) => return Some((Err(err), follow)),
                Ok(None) => return None,
                Err(_quiet) => {
                    let session = follow
                        .execution
                        .get_session(&follow.target.room, &follow.target.session)
                        .await;
                    if let Ok(session) = session {
                        if session.status.is_terminal() {
                            let last_shown = follow.last_shown;
                            follow.rest = session
                                .events
                                .into_iter()
                                .filter(|e| e.sequence > last_shown)
                                .collect();
                            follow.ended = true;
                        }
                    }
                }
            }
        }
    })
}
