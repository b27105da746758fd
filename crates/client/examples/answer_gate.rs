//! Answer a pending gate.
//!
//! ```text
//! GATEHOUSE_URL=http://127.0.0.1:8787 GATEHOUSE_API_KEY=... GATEHOUSE_PROJECT=<uuid> \
//!     cargo run -p gatehouse-client --example answer_gate -- [approve|deny] [session_id] [message]
//! ```
//!
//! Lists the pending gates (of one session, when given), shows them, and answers the
//! oldest one. When there is none, watches the session (if given) until a gate opens.
//! Exit code 0 when a gate was answered or was already answered elsewhere, 1 otherwise.

// An example binary: it prints what it does.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use futures::StreamExt;
use gatehouse_client::{Answer, Client, Error, WatchUpdate};
use gatehouse_wire::interaction::{InteractionStatus, SessionInteraction, WatchEvent};

fn env(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| format!("set {name}"))
}

fn describe(gate: &SessionInteraction) -> String {
    let request = gate.data.as_ref().and_then(|d| d.request.as_ref());
    let tool = request.and_then(|r| r.tool.as_deref()).unwrap_or("?");
    // Tool arguments may hold secrets: show only their keys.
    let arg_keys = request
        .and_then(|r| r.args.as_ref())
        .and_then(|a| a.as_object())
        .map(|a| a.keys().cloned().collect::<Vec<_>>().join(", "))
        .unwrap_or_default();
    format!(
        "{} [{}] session {} wants {tool}({arg_keys})",
        gate.id.as_deref().unwrap_or("?"),
        gate.kind.as_str(),
        gate.session_id
    )
}

async fn first_pending(
    client: &Client,
    session: Option<&str>,
) -> Result<Option<SessionInteraction>, Error> {
    let pending = client.interactions().list_pending(session).await?;
    for gate in &pending {
        println!("pending: {}", describe(gate));
    }
    Ok(pending.into_iter().next())
}

async fn run() -> Result<bool, String> {
    let client = Client::builder(env("GATEHOUSE_URL")?)
        .api_key(env("GATEHOUSE_API_KEY")?)
        .project_id(env("GATEHOUSE_PROJECT")?)
        .build()
        .map_err(|e| e.to_string())?;
    let mut args = std::env::args().skip(1);
    let verdict = args.next().unwrap_or_else(|| "approve".to_string());
    let session = args.next();
    let message = args.next().unwrap_or_default();
    let answer = match verdict.as_str() {
        "approve" if message.is_empty() => Answer::approve(),
        "approve" => Answer::approve().message(message),
        "deny" => Answer::deny(message),
        other => return Err(format!("the verdict is approve or deny, not {other}")),
    };

    let mut gate = first_pending(&client, session.as_deref())
        .await
        .map_err(|e| e.to_string())?;
    if gate.is_none() {
        let Some(session) = session.as_deref() else {
            println!("no pending gate");
            return Ok(false);
        };
        println!("no pending gate yet; watching session {session} (Ctrl-C to stop)");
        let mut watch = client.interactions().watch(session);
        while let Some(update) = watch.next().await {
            match update.map_err(|e| e.to_string())? {
                WatchUpdate::Connected
                | WatchUpdate::Event(WatchEvent::Interaction {
                    status: InteractionStatus::Pending,
                    ..
                }) => {
                    gate = first_pending(&client, Some(session))
                        .await
                        .map_err(|e| e.to_string())?;
                    if gate.is_some() {
                        break;
                    }
                }
                WatchUpdate::Reconnecting { attempt, error } => {
                    eprintln!("reconnecting ({attempt}): {error}")
                }
                // Other events, and kinds of update newer than this example.
                _ => {}
            }
        }
    }
    let Some(gate) = gate else { return Ok(false) };
    let Some(id) = gate.id.as_deref() else {
        return Err("the gate has no id".to_string());
    };
    match client.interactions().respond(id, &answer).await {
        Ok(row) => {
            println!("answered {id} ({verdict}); status now {:?}", row.status);
            Ok(true)
        }
        Err(Error::AlreadyAnswered { .. }) => {
            println!("{id} was already answered elsewhere");
            Ok(true)
        }
        Err(err) => Err(format!("{err} (retryable: {})", err.is_retryable())),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("answer_gate: {err}");
            ExitCode::FAILURE
        }
    }
}
