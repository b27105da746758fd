//! `gatehouse`: run the reference control plane, walk the demo, operate on gates and
//! interventions of any compatible server, and check wire documents.
//!
//! Exit codes (see [`exit`]): 0 ok, 1 other error, 2 usage, 3 already answered or
//! conflict, 4 not found, 5 capability unavailable.

mod exit;
mod output;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::exit::CliResult;

/// Gatehouse: steer and approve running AI agents.
#[derive(Debug, Parser)]
#[command(name = "gatehouse", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {}", err.message);
            ExitCode::from(err.exit.code())
        }
    }
}

fn run(cli: Cli) -> CliResult {
    match cli.command {}
}
