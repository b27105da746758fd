//! `gatehouse sessions stop|snapshot|events`: Agenta's durable session control (Agenta
//! v0.121 and later, or a Gatehouse host that lists `durable_approvals`).
//!
//! A Stop answered 202 is recorded, not applied: `stop` says so, and only `--wait` with an
//! event of the session's durable log says "stopped".

use std::time::Duration;

use clap::{Args, Subcommand};
use futures::StreamExt;
use gatehouse_client::{SessionEventUpdate, StopOutcome, StopRequested};
use gatehouse_wire::sessions::{
    DurableEventPayload, SessionDurableEvent, SessionLiveFrame, SessionSnapshotResponse,
};

use crate::connect::ConnectArgs;
use crate::exit::{client_error, exit_for, CliError, CliResult, Exit};
use crate::output::{
    errln, escape, or_dash, outln, print_fields, print_json, print_json_line, Spinner, Table,
};

/// `gatehouse sessions ...`
#[derive(Debug, Args)]
pub struct SessionsArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    #[command(subcommand)]
    command: SessionsCommand,
}

#[derive(Debug, Subcommand)]
enum SessionsCommand {
    /// Stop the session's running turn (a durable command: recorded first, applied by the
    /// runner; --wait follows it until the session's events say how it ended).
    Stop(StopArgs),
    /// The session's execution state, pending gates and capabilities.
    Snapshot {
        /// The agent session.
        session_id: String,
    },
    /// The session's durable events after a sequence (--follow: then live, until Ctrl-C).
    Events(EventsArgs),
}

#[derive(Debug, Args)]
struct StopArgs {
    /// The agent session.
    session_id: String,
    /// The turn (execution) you mean to stop: the host refuses the Stop (exit 14) when
    /// another one runs now.
    #[arg(long, value_name = "ID")]
    expected_execution: Option<String>,
    /// The `Idempotency-Key` to send (default: a fresh one): the same key and expectation
    /// replay the recorded Stop.
    #[arg(long, value_name = "KEY")]
    idempotency_key: Option<String>,
    /// Follow the Stop until it settles, and print its outcome with its evidence.
    #[arg(long)]
    wait: bool,
    /// With --wait: how long to follow before reporting it unresolved (exit 16).
    #[arg(
        long = "wait-timeout",
        default_value_t = 60,
        value_name = "SECONDS",
        requires = "wait"
    )]
    wait_timeout: u64,
}

#[derive(Debug, Args)]
struct EventsArgs {
    /// The agent session.
    session_id: String,
    /// Replay the events after this sequence (0: from the start).
    #[arg(long, default_value_t = 0, value_name = "N")]
    after: u64,
    /// Keep streaming after the replay (live frames, new events; reconnects after a
    /// dropped connection from the last sequence seen) until Ctrl-C.
    #[arg(long)]
    follow: bool,
}

/// Run a `sessions` subcommand.
pub async fn run(args: SessionsArgs) -> CliResult {
    let connect = args.connect;
    match args.command {
        SessionsCommand::Stop(stop) => stop_cmd(&connect, stop).await,
        SessionsCommand::Snapshot { session_id } => snapshot_cmd(&connect, &session_id).await,
        SessionsCommand::Events(events) => events_cmd(&connect, events).await,
    }
}

async fn stop_cmd(connect: &ConnectArgs, args: StopArgs) -> CliResult {
    let client = connect.client()?;
    let sessions = client.sessions();
    let session = args.session_id.as_str();
    let expected = args.expected_execution.as_deref();
    let sent = match &args.idempotency_key {
        Some(key) => {
            sessions
                .stop_with_idempotency_key(session, expected, key)
                .await
        }
        None => sessions.stop(session, expected).await,
    };
    let requested = match sent {
        Ok(requested) => requested,
        // A 2xx: the Stop is recorded; which command and execution is unknown.
        Err(err @ gatehouse_client::Error::AcceptedUnreadable { .. }) => {
            errln!("warning: {}", escape(&err.to_string()));
            outln!(
                "stop requested for session {session} (the host accepted it); its answer could not be read: command and execution unknown, not stopped yet"
            );
            if args.wait {
                return Err(CliError::new(
                    Exit::StopUnresolved,
                    format!("the Stop cannot be followed without its execution; read the session again (gatehouse sessions snapshot {session})"),
                ));
            }
            return Ok(());
        }
        Err(err) => return Err(stop_error(session, expected, err)),
    };
    if !args.wait || !requested.is_stopping() {
        if connect.json {
            return print_json(&stop_json(session, &requested, None)?);
        }
        outln!("{}", escape(&describe_requested(session, &requested)));
        return Ok(());
    }
    if !connect.json {
        outln!("{}", escape(&describe_requested(session, &requested)));
    }
    let timeout = Duration::from_secs(args.wait_timeout);
    let outcome = {
        let _spinner = Spinner::start(format!("waiting for the Stop of session {session}"));
        sessions.wait_for_stop(session, &requested, timeout).await
    }
    .map_err(client_error)?;
    if connect.json {
        print_json(&stop_json(session, &requested, Some(&outcome))?)?;
    } else {
        outln!("{}", escape(&describe_outcome(&outcome)));
    }
    match outcome {
        StopOutcome::Unresolved {
            execution_id,
            state,
            timed_out,
        } => {
            let execution = execution_id.as_deref().unwrap_or("(none)");
            let message = if timed_out {
                format!(
                    "the Stop is still unresolved after {} s: execution {execution} is {state}; read the session again (gatehouse sessions snapshot {session})",
                    args.wait_timeout
                )
            } else {
                format!(
                    "the Stop's outcome could not be established: execution {execution} is {state} and no event says how the turn ended; read the session again (gatehouse sessions snapshot {session})"
                )
            };
            Err(CliError::new(Exit::StopUnresolved, message))
        }
        _ => Ok(()),
    }
}

/// A refused Stop: the stale expectation says which turn runs now.
fn stop_error(session: &str, expected: Option<&str>, err: gatehouse_client::Error) -> CliError {
    match &err {
        gatehouse_client::Error::StaleExecution {
            current_execution_id,
            ..
        } => {
            let running = match current_execution_id {
                Some(id) => format!("execution {id} runs now"),
                None => "nothing runs now".to_string(),
            };
            CliError::new(
                exit_for(err.kind()),
                format!(
                    "the Stop of session {session} was refused: {} is not the running execution ({running}); nothing was stopped: refresh and ask again",
                    expected.unwrap_or("the expected execution")
                ),
            )
        }
        _ => client_error(err),
    }
}

/// The recorded Stop, never more than the host said: requested (202), or nothing was
/// running (200).
pub(crate) fn describe_requested(session: &str, requested: &StopRequested) -> String {
    match requested.execution.id.as_deref() {
        Some(execution) => format!(
            "stop requested for session {session}: command {} ({}), execution {execution} {}; not stopped yet (the outcome comes from the session's events: --wait)",
            requested.command.id,
            requested.command.state.as_str(),
            requested.execution.state.as_str()
        ),
        None => format!(
            "nothing was running in session {session}: command {} ({}), execution {}",
            requested.command.id,
            requested.command.state.as_str(),
            requested.execution.state.as_str()
        ),
    }
}

/// How the Stop settled, with its evidence.
pub(crate) fn describe_outcome(outcome: &StopOutcome) -> String {
    match outcome {
        StopOutcome::Stopped {
            execution_id,
            event,
        } => {
            let mut evidence = format!(
                "event {} {} at {}",
                sequence_text(event),
                event.event_type.as_str(),
                event.created_at
            );
            if let Ok(DurableEventPayload::ExecutionStopped(stopped)) = event.typed_payload() {
                evidence.push_str(&format!(", reason {}", stopped.reason));
                if let Some(command) = stopped.command_id {
                    evidence.push_str(&format!(", command {command}"));
                }
            }
            format!("stopped: execution {execution_id} ({evidence})")
        }
        StopOutcome::NotRunning => "nothing was running".to_string(),
        StopOutcome::SupersededByNewerTurn {
            running_execution_id,
        } => format!(
            "superseded by a newer turn: the targeted turn ended without a stop, failure or loss event, and execution {running_execution_id} runs now"
        ),
        StopOutcome::Failed {
            execution_id,
            error,
        } => format!(
            "failed: execution {execution_id} failed before it stopped (execution.failed: {}: {})",
            error.code, error.message
        ),
        StopOutcome::Lost {
            execution_id,
            reason,
        } => format!("lost: execution {execution_id} was lost (execution.lost: {reason})"),
        StopOutcome::Unresolved {
            execution_id,
            state,
            timed_out,
        } => format!(
            "unresolved{}: execution {} is {state}",
            if *timed_out { " at the timeout" } else { "" },
            execution_id.as_deref().unwrap_or("(none)")
        ),
        other => format!("{other:?}"),
    }
}

/// `--json` of a Stop: the recorded command, and its outcome when followed.
fn stop_json(
    session: &str,
    requested: &StopRequested,
    outcome: Option<&StopOutcome>,
) -> CliResult<serde_json::Value> {
    let mut value = serde_json::json!({
        "session_id": session,
        "requested": requested.is_stopping(),
        "command": to_json(&requested.command)?,
        "execution": to_json(&requested.execution)?,
        "idempotency_key": requested.idempotency_key,
    });
    let outcome = match (requested.is_stopping(), outcome) {
        (false, _) => Some(serde_json::json!({"outcome": "not_running"})),
        (true, Some(outcome)) => Some(outcome_json(outcome)?),
        (true, None) => None,
    };
    if let (Some(object), Some(outcome)) = (value.as_object_mut(), outcome) {
        object.insert("outcome".to_string(), outcome);
    }
    Ok(value)
}

fn outcome_json(outcome: &StopOutcome) -> CliResult<serde_json::Value> {
    Ok(match outcome {
        StopOutcome::Stopped {
            execution_id,
            event,
        } => serde_json::json!({
            "outcome": "stopped", "execution_id": execution_id, "event": to_json(event)?,
        }),
        StopOutcome::NotRunning => serde_json::json!({"outcome": "not_running"}),
        StopOutcome::SupersededByNewerTurn {
            running_execution_id,
        } => serde_json::json!({
            "outcome": "superseded_by_newer_turn", "running_execution_id": running_execution_id,
        }),
        StopOutcome::Failed {
            execution_id,
            error,
        } => serde_json::json!({
            "outcome": "failed", "execution_id": execution_id, "error": to_json(error)?,
        }),
        StopOutcome::Lost {
            execution_id,
            reason,
        } => serde_json::json!({
            "outcome": "lost", "execution_id": execution_id, "reason": reason,
        }),
        StopOutcome::Unresolved {
            execution_id,
            state,
            timed_out,
        } => serde_json::json!({
            "outcome": "unresolved", "execution_id": execution_id,
            "state": state.as_str(), "timed_out": timed_out,
        }),
        other => serde_json::json!({"outcome": format!("{other:?}")}),
    })
}

fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> CliResult<serde_json::Value> {
    serde_json::to_value(value)
        .map_err(|err| CliError::other(format!("could not render JSON output: {err}")))
}

async fn snapshot_cmd(connect: &ConnectArgs, session: &str) -> CliResult {
    let client = connect.client()?;
    let snapshot = client
        .sessions()
        .snapshot(session)
        .await
        .map_err(client_error)?;
    if connect.json {
        return print_json(&snapshot);
    }
    print_snapshot(session, &snapshot);
    Ok(())
}

fn print_snapshot(session: &str, snapshot: &SessionSnapshotResponse) {
    let state = &snapshot.execution_state;
    let execution = match state.id.as_deref() {
        Some(id) => format!("{} (execution {id})", state.state.as_str()),
        None => state.state.as_str().to_string(),
    };
    let events = match &snapshot.read {
        Some(read) => format!(
            "up to sequence {} (history {})",
            read.latest_sequence,
            if read.history_complete {
                "complete"
            } else {
                "incomplete"
            }
        ),
        None => "- (the host does not say)".to_string(),
    };
    let capabilities = &snapshot.capabilities;
    let flag = |on: bool| if on { "yes" } else { "no" };
    print_fields(&[
        ("session", session.to_string()),
        ("execution state", execution),
        ("events", events),
        (
            "capabilities",
            format!(
                "durable_approvals {}, queue {}, steer {}",
                flag(capabilities.durable_approvals),
                flag(capabilities.queue),
                flag(capabilities.steer)
            ),
        ),
        ("pending inputs", snapshot.pending.inputs.len().to_string()),
    ]);
    let gates = &snapshot.pending.interactions;
    if gates.is_empty() {
        outln!("pending gates: none");
        return;
    }
    outln!("pending gates:");
    let mut table = Table::new(["ID", "KIND", "TOOL", "TURN"]);
    for gate in gates {
        let tool = gate
            .data
            .as_ref()
            .and_then(|d| d.request.as_ref())
            .and_then(|r| r.tool.as_deref());
        table.row([
            or_dash(gate.id.as_deref()),
            gate.kind.as_str().to_string(),
            or_dash(tool),
            or_dash(gate.turn_id.as_deref()),
        ]);
    }
    table.print();
}

async fn events_cmd(connect: &ConnectArgs, args: EventsArgs) -> CliResult {
    let client = connect.client()?;
    let json = connect.json;
    let mut stream = std::pin::pin!(client.sessions().events(&args.session_id, args.after));
    loop {
        let next = tokio::select! {
            next = stream.next() => next,
            _ = tokio::signal::ctrl_c() => return Ok(()),
        };
        let Some(update) = next else {
            return Ok(());
        };
        match update.map_err(client_error)? {
            SessionEventUpdate::Connected { after } if !json => {
                errln!("connected; replaying the events after sequence {after}");
            }
            SessionEventUpdate::Event(event) => {
                if json {
                    print_json_line(&event)?;
                } else {
                    outln!("{}", escape(&describe_event(&event)));
                }
            }
            SessionEventUpdate::Ready => {
                // Without --follow the command ends with the replay.
                if !args.follow {
                    return Ok(());
                }
                if !json {
                    errln!("replay done; following live (Ctrl-C to stop)");
                }
            }
            SessionEventUpdate::Frame(frame) => {
                if json {
                    print_json_line(&frame)?;
                } else {
                    outln!("{}", escape(&describe_frame(&frame)));
                }
            }
            // As the watch: the first few losses in a row are told, then one in ten.
            SessionEventUpdate::Reconnecting { attempt, error }
                if attempt <= 3 || attempt % 10 == 0 =>
            {
                errln!(
                    "connection lost (attempt {attempt}): {}; reconnecting after the last sequence seen",
                    escape(&error.to_string())
                );
            }
            SessionEventUpdate::Closed(close) => {
                return Err(CliError::other(format!(
                    "the host closed the event stream of session {} for good ({})",
                    args.session_id,
                    close.reason.as_str()
                )));
            }
            // A connect in JSON mode, or an update this CLI does not know yet: nothing to
            // show.
            _ => {}
        }
    }
}

/// One durable event: sequence, type, execution, when, and what its payload says.
fn describe_event(event: &SessionDurableEvent) -> String {
    let detail = match event.typed_payload() {
        Ok(DurableEventPayload::ExecutionStopped(stopped)) => format!(
            "reason {}{}",
            stopped.reason,
            stopped
                .command_id
                .map(|c| format!(", command {c}"))
                .unwrap_or_default()
        ),
        Ok(DurableEventPayload::ExecutionFailed(failed)) => {
            format!("error {}: {}", failed.error.code, failed.error.message)
        }
        Ok(DurableEventPayload::ExecutionLost(lost)) => format!("reason {}", lost.reason),
        _ => String::new(),
    };
    let line = format!(
        "{}  {}  execution {}  {}",
        sequence_text(event),
        event.event_type.as_str(),
        event.execution_id,
        event.created_at
    );
    if detail.is_empty() {
        line
    } else {
        format!("{line}  {detail}")
    }
}

/// A live frame (not durable, not replayed): marked `live` where a sequence would be.
fn describe_frame(frame: &SessionLiveFrame) -> String {
    format!(
        "live  {}  execution {}  {}",
        frame.frame_type, frame.execution_id, frame.created_at
    )
}

/// `#N`, or `#-` for an event without a sequence.
fn sequence_text(event: &SessionDurableEvent) -> String {
    match event.sequence {
        Some(sequence) => format!("#{sequence}"),
        None => "#-".to_string(),
    }
}
