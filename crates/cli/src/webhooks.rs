//! `gatehouse webhooks list`: the webhook outbox of a project (each event for each
//! endpoint: its state, attempts, next attempt and last error).

use clap::{Args, Subcommand, ValueEnum};

use crate::connect::ConnectArgs;
use crate::exit::{client_error, CliResult};
use crate::output::{or_dash, outln, print_json, truncate, Table};

/// `gatehouse webhooks ...`
#[derive(Debug, Args)]
pub struct WebhooksArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    #[command(subcommand)]
    command: WebhooksCommand,
}

#[derive(Debug, Subcommand)]
enum WebhooksCommand {
    /// The outbox, newest event first: one line per event and endpoint.
    List(ListArgs),
}

/// State filter of `list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum StateFilter {
    /// To be sent, or retried after a failed attempt.
    Pending,
    /// Answered 2xx.
    Delivered,
    /// Every attempt failed.
    Failed,
    /// Every state.
    Any,
}

impl StateFilter {
    fn state(self) -> Option<&'static str> {
        match self {
            StateFilter::Pending => Some("pending"),
            StateFilter::Delivered => Some("delivered"),
            StateFilter::Failed => Some("failed"),
            StateFilter::Any => None,
        }
    }
}

#[derive(Debug, Args)]
struct ListArgs {
    /// Only this state.
    #[arg(long, value_enum, default_value_t = StateFilter::Any)]
    state: StateFilter,
    /// At most this many (the server caps it at 1000).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1000))]
    limit: u32,
}

/// Run a `webhooks` subcommand.
pub async fn run(args: WebhooksArgs) -> CliResult {
    let connect = args.connect;
    match args.command {
        WebhooksCommand::List(list) => list_cmd(&connect, list).await,
    }
}

async fn list_cmd(connect: &ConnectArgs, args: ListArgs) -> CliResult {
    let client = connect.client()?;
    let answer = client
        .service()
        .webhook_deliveries(args.state.state(), Some(args.limit))
        .await
        .map_err(client_error)?;
    if connect.json {
        return print_json(&answer.deliveries);
    }
    if answer.deliveries.is_empty() {
        outln!("no webhook events");
        return Ok(());
    }
    let mut table = Table::new([
        "EVENT",
        "TYPE",
        "ENDPOINT",
        "STATE",
        "ATTEMPTS",
        "NEXT ATTEMPT",
        "LAST ERROR",
        "SUBJECT",
    ]);
    for d in &answer.deliveries {
        table.row([
            d.event_id.clone(),
            d.event_type.clone(),
            d.endpoint.clone(),
            d.state.clone(),
            d.attempts.to_string(),
            or_dash(d.next_attempt_at.as_deref()),
            truncate(&or_dash(d.last_error.as_deref()), 60),
            d.subject_id.clone(),
        ]);
    }
    table.print();
    Ok(())
}
