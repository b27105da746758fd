//! `gatehouse`: run the reference control plane, walk the demo, operate on gates and
//! interventions of any compatible server, and check wire documents.
//!
//! Exit codes (see [`exit`]): 0 ok, 1 other error, 2 usage, 3 already answered or
//! conflict, 4 not found, 5 capability unavailable, 6 permission denied, 7 missing or
//! unknown tenant, 8 invalid request, 9 session not active, 10 intervention limit,
//! 11 answered but whose answer is not knowable, 12 another project's rows, 13 turn can no
//! longer be continued, 14 stale execution, 15 idempotency key reused, 16 Stop unresolved.

// A command-line tool: its output (and its errors) go to stdout and stderr.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod connect;
mod demo;
mod exit;
mod follow;
mod interactions;
mod interventions;
mod invoke;
mod output;
mod schema;
mod serve;
mod sessions;
mod webhooks;
mod wire;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::exit::{CliError, CliResult, Exit};

/// Gatehouse: steer and approve running AI agents.
#[derive(Debug, Parser)]
#[command(name = "gatehouse", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Walk the whole story against an in-process control plane (finishes in seconds).
    Demo,
    /// Run the reference control plane (prints `listening on http://ADDR` once bound).
    Serve(serve::ServeArgs),
    /// Approval gates: list, get, respond, approve-all, watch.
    Interactions(interactions::InteractionsArgs),
    /// Run one turn: by default the agent calls one tool and parks at its gate (--permission ask).
    Invoke(invoke::InvokeArgs),
    /// Agenta's durable session control: stop, snapshot, events.
    Sessions(sessions::SessionsArgs),
    /// Interventions on a run's execution session: request, get, wait, events.
    Interventions(interventions::InterventionsArgs),
    /// Offline wire tools: stamp, validate, row, fingerprint.
    Wire(wire::WireArgs),
    /// The JSON Schema of every wire type: list, print.
    Schema(schema::SchemaArgs),
    /// The webhook outbox: list (state, attempts, next attempt of each event).
    Webhooks(webhooks::WebhooksArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::from(Exit::Ok.code()),
        Err(err) => {
            // The message may carry a server's text: shown on one line, escaped, so it
            // cannot forge a second `error:` line or drive the terminal.
            output::errln!("error: {}", output::escape(&err.message));
            ExitCode::from(err.exit.code())
        }
    }
}

fn run(cli: Cli) -> CliResult {
    match cli.command {
        Command::Demo => runtime()?.block_on(demo::run()),
        Command::Wire(args) => wire::run(args),
        Command::Schema(args) => schema::run(args),
        Command::Serve(args) => runtime()?.block_on(serve::run(args)),
        Command::Interactions(args) => runtime()?.block_on(interactions::run(args)),
        Command::Interventions(args) => runtime()?.block_on(interventions::run(args)),
        Command::Invoke(args) => runtime()?.block_on(invoke::run(args)),
        Command::Sessions(args) => runtime()?.block_on(sessions::run(args)),
        Command::Webhooks(args) => runtime()?.block_on(webhooks::run(args)),
    }
}

fn runtime() -> CliResult<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| CliError::other(format!("cannot start the async runtime: {err}")))
}
