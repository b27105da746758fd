//! Where the operator commands connect: URL, API key, project, upstream kind, tenant
//! and participant, from flags or the environment (`GATEHOUSE_URL`,
//! `GATEHOUSE_API_KEY`, `GATEHOUSE_PROJECT`, `GATEHOUSE_UPSTREAM`, `GATEHOUSE_TENANT`,
//! `GATEHOUSE_PARTICIPANT`).

use std::time::Duration;

use clap::{Args, ValueEnum};
use gatehouse_client::{Client, Upstream};

use crate::exit::{CliError, CliResult};

/// Which kind of host `--url` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UpstreamArg {
    /// Gatehouse's own server (`gatehouse serve`): everything under `/api`.
    Gatehouse,
    /// AgentPlat's Rooms API: execution sessions at the root, the tenant header, the
    /// requesting participant, no `project_id`.
    Agentplat,
    /// Agenta's API: the interactions endpoints.
    Agenta,
}

impl From<UpstreamArg> for Upstream {
    fn from(arg: UpstreamArg) -> Self {
        match arg {
            UpstreamArg::Gatehouse => Upstream::Gatehouse,
            UpstreamArg::Agentplat => Upstream::AgentPlat,
            UpstreamArg::Agenta => Upstream::Agenta,
        }
    }
}

/// Connection flags shared by every operator command.
#[derive(Debug, Clone, Args)]
pub struct ConnectArgs {
    /// Base URL of the host (without `/api`; a path prefix is kept).
    #[arg(
        long,
        env = "GATEHOUSE_URL",
        default_value = "http://127.0.0.1:8787",
        global = true,
        help_heading = "Connection"
    )]
    pub url: String,
    /// API key, sent as `Authorization: Bearer <key>` (`ApiKey <key>` to Agenta).
    #[arg(
        long,
        env = "GATEHOUSE_API_KEY",
        hide_env_values = true,
        global = true,
        help_heading = "Connection"
    )]
    pub api_key: Option<String>,
    /// Project id (UUID) sent as `?project_id=` on every Gatehouse and Agenta call.
    #[arg(
        long,
        env = "GATEHOUSE_PROJECT",
        global = true,
        help_heading = "Connection"
    )]
    pub project: Option<String>,
    /// Which kind of host `--url` is.
    #[arg(
        long,
        value_enum,
        env = "GATEHOUSE_UPSTREAM",
        default_value = "gatehouse",
        ignore_case = true,
        global = true,
        help_heading = "Connection"
    )]
    pub upstream: UpstreamArg,
    /// Tenant, sent as `X-Agentplat-Tenant-Id` (AgentPlat's default authentication
    /// requires it; Gatehouse's server reads it as the project on AgentPlat's paths).
    #[arg(
        long,
        env = "GATEHOUSE_TENANT",
        global = true,
        help_heading = "Connection"
    )]
    pub tenant: Option<String>,
    /// Who requests interventions, sent as `requestedByParticipantId` (an AgentPlat host
    /// whose authentication names no actor takes the requester from there).
    #[arg(
        long,
        env = "GATEHOUSE_PARTICIPANT",
        global = true,
        help_heading = "Connection"
    )]
    pub participant: Option<String>,
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
    /// Build a client for these flags (an unusable setting, such as a blank tenant, is a
    /// usage error).
    pub fn client(&self) -> CliResult<Client> {
        let mut builder = Client::builder(self.url.as_str()).upstream(self.upstream.into());
        if let Some(key) = &self.api_key {
            builder = builder.api_key(key.as_str());
        }
        if let Some(project) = &self.project {
            builder = builder.project_id(project.as_str());
        }
        if let Some(tenant) = &self.tenant {
            builder = builder.tenant(tenant.as_str());
        }
        if let Some(participant) = &self.participant {
            builder = builder.participant_id(participant.as_str());
        }
        builder = builder.timeout(Duration::from_secs(self.timeout.max(1)));
        builder.build().map_err(|err| match err {
            gatehouse_client::Error::Config { reason, .. } => {
                CliError::usage(format!("cannot connect to {}: {reason}", self.url))
            }
            other => CliError::other(format!("cannot build a client for {}: {other}", self.url)),
        })
    }
}
