//! Where the operator commands connect: URL, API key and project from flags or the
//! environment (`GATEHOUSE_URL`, `GATEHOUSE_API_KEY`, `GATEHOUSE_PROJECT`).

use std::time::Duration;

use clap::Args;
use gatehouse_client::Client;

use crate::exit::{CliError, CliResult};

/// Connection flags shared by every operator command.
#[derive(Debug, Clone, Args)]
pub struct ConnectArgs {
    /// Base URL of the control plane (without `/api`).
    #[arg(
        long,
        env = "GATEHOUSE_URL",
        default_value = "http://127.0.0.1:8787",
        global = true,
        help_heading = "Connection"
    )]
    pub url: String,
    /// API key, sent as `Authorization: ApiKey <key>`.
    #[arg(
        long,
        env = "GATEHOUSE_API_KEY",
        hide_env_values = true,
        global = true,
        help_heading = "Connection"
    )]
    pub api_key: Option<String>,
    /// Project id (UUID) sent as `?project_id=` on every call.
    #[arg(
        long,
        env = "GATEHOUSE_PROJECT",
        global = true,
        help_heading = "Connection"
    )]
    pub project: Option<String>,
    /// Per-request timeout in seconds.
    #[arg(
        long,
        default_value_t = 30,
        value_name = "SECONDS",
        global = true,
        help_heading = "Connection"
    )]
    pub timeout: u64,
    /// Print JSON instead of tables (one document, or one line per event for streams).
    #[arg(long, global = true, help_heading = "Output")]
    pub json: bool,
}

impl ConnectArgs {
    /// Build a client for these flags.
    pub fn client(&self) -> CliResult<Client> {
        let mut builder = Client::builder(self.url.as_str());
        if let Some(key) = &self.api_key {
            builder = builder.api_key(key.as_str());
        }
        if let Some(project) = &self.project {
            builder = builder.project_id(project.as_str());
        }
        builder = builder.timeout(Duration::from_secs(self.timeout.max(1)));
        builder.build().map_err(|err| {
            CliError::other(format!("cannot build a client for {}: {err}", self.url))
        })
    }
}
