//! `gatehouse schema list|print NAME`: the generated JSON Schema of every wire type.

use clap::{Args, Subcommand};
use gatehouse_wire::schema::SchemaEntry;

use crate::exit::{CliError, CliResult};
use crate::output::{print_json, Table};

/// `gatehouse schema ...`
#[derive(Debug, Args)]
pub struct SchemaArgs {
    #[command(subcommand)]
    command: SchemaCommand,
}

#[derive(Debug, Subcommand)]
enum SchemaCommand {
    /// List the wire types that have a schema (name and file under schema/).
    List {
        /// Print the names as a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Print one type's JSON Schema (draft 2020-12).
    Print {
        /// The wire type name (see `gatehouse schema list`).
        name: String,
    },
}

/// Run a `schema` subcommand.
pub fn run(args: SchemaArgs) -> CliResult {
    match args.command {
        SchemaCommand::List { json } => {
            let entries = gatehouse_wire::schema::all();
            if json {
                let names: Vec<&str> = entries.iter().map(|e| e.name).collect();
                print_json(&names)
            } else {
                let mut table = Table::new(["NAME", "FILE"]);
                for entry in &entries {
                    table.row([entry.name.to_string(), entry.file_name.to_string()]);
                }
                table.print();
                Ok(())
            }
        }
        SchemaCommand::Print { name } => print_json(&entry(&name)?.schema),
    }
}

/// The schema entry named `name`, or a usage error (exit 2) listing the valid names.
pub fn entry(name: &str) -> CliResult<SchemaEntry> {
    gatehouse_wire::schema::by_name(name).ok_or_else(|| {
        let names: Vec<String> = gatehouse_wire::schema::all()
            .iter()
            .map(|e| e.name.to_string())
            .collect();
        CliError::usage(format!(
            "unknown type name '{name}'; valid names: {}",
            names.join(", ")
        ))
    })
}
