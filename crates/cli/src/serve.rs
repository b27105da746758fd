//! `gatehouse serve`: run the reference control plane until Ctrl-C or SIGTERM.

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;

use clap::Args;
use gatehouse_server::webhooks::{WebhookEndpoint, WebhookSettings};
use gatehouse_server::{AgentaContract, ApiKey, ServerConfig};
use gatehouse_wire::invoke::ToolTurn;

use crate::exit::{CliError, CliResult};

/// `gatehouse serve` flags. Every flag is also an environment variable (`GATEHOUSE_` and
/// the flag's name; `serve --help` names each); a flag given wins over its variable.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on; port 0 picks a free port (the listening line names it).
    #[arg(long, env = "GATEHOUSE_BIND", default_value = "127.0.0.1:8787")]
    bind: SocketAddr,
    /// Database URL: `sqlite://FILE` (created if missing) or `postgres://...`.
    #[arg(
        long,
        env = "GATEHOUSE_DATABASE_URL",
        default_value = "sqlite://gatehouse.db"
    )]
    database_url: String,
    /// API key, `[ACTOR=]SECRET[@PROJECT[+PROJECT...]]` (repeatable): the actor it acts
    /// as (default `operator`) and the projects it may act in (`@*`: every project;
    /// none: every project, with a warning). Also GATEHOUSE_API_KEYS, comma separated.
    #[arg(
        long = "api-key",
        value_name = "KEY",
        env = "GATEHOUSE_API_KEYS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    api_keys: Vec<String>,
    /// Leave the execution service (sessions and interventions) out; `/api/capabilities`
    /// then says so and its routes answer 404.
    #[arg(long, env = "GATEHOUSE_NO_EXECUTION")]
    no_execution: bool,
    /// Admit requests on AgentPlat's root paths (`/rooms/...`) that carry only
    /// `X-Agentplat-Tenant-Id` and no key, as AgentPlat's default `headerTenantAuth()`
    /// does, so its own clients work unchanged: the tenant id is the project id, such a
    /// request acts in that project's execution sessions and nowhere else, and an
    /// intervention's requester is the body's `requestedByParticipantId`. FOR A TRUSTED
    /// NETWORK ONLY: anyone who can reach the port acts in any project by naming it.
    /// Everything else still needs a key. Also GATEHOUSE_AGENTPLAT_HEADER_AUTH=true.
    #[arg(long, env = "GATEHOUSE_AGENTPLAT_HEADER_AUTH")]
    agentplat_header_auth: bool,
    /// Seconds a client may take to send a request's head (and a kept-alive connection
    /// may sit idle) before the connection is closed.
    #[arg(long, env = "GATEHOUSE_HEADER_READ_TIMEOUT", value_name = "SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    header_read_timeout: u64,
    /// Most open connections one client address may hold at once; one more is answered
    /// 503 and closed. Default: a quarter of --max-connections (at least 1), so one
    /// address cannot take every connection; raise it for a busy proxy in front. Never
    /// above --max-connections. 0: no per-address limit.
    #[arg(long, env = "GATEHOUSE_MAX_CONNECTIONS_PER_CLIENT", value_name = "N")]
    max_connections_per_client: Option<usize>,
    /// Most open connections in all; one more is answered 503 (with Retry-After) and
    /// closed. Default: the open-file limit at start less 64 and 3 per database
    /// connection; a higher value is lowered to that.
    #[arg(long, env = "GATEHOUSE_MAX_CONNECTIONS", value_name = "N")]
    max_connections: Option<usize>,
    /// Most open event streams (interaction watch and execution event streams); one more
    /// is refused at once with 503 and Retry-After. Default: half of --max-connections,
    /// so idle watchers leave room for requests; at most all of them but 64 (a server
    /// that is mostly a hub for watching phones).
    #[arg(long, env = "GATEHOUSE_MAX_WATCHERS", value_name = "N")]
    max_watchers: Option<usize>,
    /// Seconds a request waits for the database (a pooled connection; on SQLite also its
    /// turn to write, then another process's write lock) before it is answered 503
    /// UNAVAILABLE with Retry-After; a request waits it out once, not at every call.
    #[arg(long, env = "GATEHOUSE_DB_ACQUIRE_TIMEOUT", value_name = "SECONDS", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=600))]
    db_acquire_timeout: u64,
    /// Answered gates this instance resumes at once.
    #[arg(long, env = "GATEHOUSE_RESUME_WORKERS", value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=256))]
    resume_workers: u64,
    /// Admission control: while more answered gates than this wait for their resume (on
    /// every instance of the database), a new answer waits up to 5 s before it is taken,
    /// so the backlog stays bounded under sustained load. 0: no limit.
    #[arg(
        long,
        env = "GATEHOUSE_MAX_RESUME_BACKLOG",
        value_name = "N",
        default_value_t = 128
    )]
    max_resume_backlog: u64,
    /// Lease, in milliseconds, of a resume job and of a running session's hold: renewed
    /// every third of it while the work runs; an instance that dies or stalls loses its
    /// work to another instance (or to itself, restarted) within one lease.
    #[arg(long, env = "GATEHOUSE_LEASE_MS", value_name = "MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(100..=300_000))]
    lease_ms: u64,
    /// Webhook endpoint, `NAME=whsec_BASE64@URL` (repeatable): when a gate opens, is
    /// answered, resolved or cancelled, and when an intervention is resolved, a signed
    /// event (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature) is
    /// POSTed there from a durable outbox, retried with backoff. NAME (letters, digits,
    /// `-_.`) is what the outbox and the logs show; the secret and the URL are never
    /// logged. Also GATEHOUSE_WEBHOOKS, comma separated (percent-encode a comma in a URL).
    #[arg(
        long = "webhook",
        value_name = "ENDPOINT",
        env = "GATEHOUSE_WEBHOOKS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    webhooks: Vec<String>,
    /// Attempts per webhook event and endpoint; after the last failed one the event is
    /// marked `failed` (see `gatehouse webhooks list`).
    #[arg(long, env = "GATEHOUSE_WEBHOOK_MAX_ATTEMPTS", value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100))]
    webhook_max_attempts: u32,
    /// Milliseconds before a failed webhook attempt is retried; doubled after each
    /// failure, at most 10 minutes.
    #[arg(long, env = "GATEHOUSE_WEBHOOK_RETRY_MS", value_name = "MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..=600_000))]
    webhook_retry_ms: u64,
    /// Seconds one webhook POST may take (connect to last byte) before it counts as
    /// failed. A claimed event is leased for this plus --lease-ms, so no other instance
    /// sends it while an attempt may still be under way.
    #[arg(long, env = "GATEHOUSE_WEBHOOK_TIMEOUT", value_name = "SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=300))]
    webhook_timeout: u64,
    /// Hours a delivered webhook event is kept (then pruned); 0 keeps them forever.
    #[arg(
        long,
        env = "GATEHOUSE_RETAIN_DELIVERED_EVENTS_HOURS",
        value_name = "HOURS",
        default_value_t = 168
    )]
    retain_delivered_events_hours: u64,
    /// Hours a webhook event given up on (`failed`) is kept; 0 keeps them forever.
    /// Pending events are never pruned.
    #[arg(
        long,
        env = "GATEHOUSE_RETAIN_FAILED_EVENTS_HOURS",
        value_name = "HOURS",
        default_value_t = 720
    )]
    retain_failed_events_hours: u64,
    /// Hours a respond's Idempotency-Key is remembered (a retry after that is a new
    /// respond); 0 keeps them forever.
    #[arg(
        long,
        env = "GATEHOUSE_RETAIN_IDEMPOTENCY_KEYS_HOURS",
        value_name = "HOURS",
        default_value_t = 24
    )]
    retain_idempotency_keys_hours: u64,
    /// Seconds between pruning passes; one instance of the database prunes per pass,
    /// in batches of 500 rows.
    #[arg(long, env = "GATEHOUSE_PRUNE_INTERVAL", value_name = "SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    prune_interval: u64,
    /// Record metrics and serve them at GET /metrics in Prometheus's text format, no key
    /// needed unless --metrics-key sets one (or serve them on --metrics-bind, or keep
    /// the port off public networks): requests by route
    /// and status, latency, gates by status, the resume backlog, admission waits, lease
    /// takeovers, reconciler actions, webhook deliveries, database pool use. `false`:
    /// nothing is recorded and /metrics answers 404.
    #[arg(long, env = "GATEHOUSE_METRICS", value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    metrics: bool,
    /// Serve GET /metrics on a listener of its own at this address (e.g. one only the
    /// monitoring network reaches), and not on --bind. Default: on --bind.
    #[arg(long, env = "GATEHOUSE_METRICS_BIND", value_name = "ADDR")]
    metrics_bind: Option<SocketAddr>,
    /// A key every scrape must send (`Authorization: Bearer KEY`; Prometheus's
    /// `authorization: {credentials: KEY}`); without it /metrics answers 401. Default:
    /// no key. Never logged.
    #[arg(
        long,
        env = "GATEHOUSE_METRICS_KEY",
        value_name = "KEY",
        hide_env_values = true
    )]
    metrics_key: Option<String>,
    /// Seconds between two readings of the gauges counted in the database (gates by
    /// status, the resume backlog), by one background task: a scrape only reads the last
    /// values and never touches the database, however many gates and scrapes there are.
    #[arg(long, env = "GATEHOUSE_METRICS_REFRESH", value_name = "SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    metrics_refresh: u64,
    /// Log format on stderr: `text` (one readable line per event) or `json` (one JSON
    /// object per line, with the request's id in every line of a request). `RUST_LOG`
    /// sets the level (default `info`).
    #[arg(long, env = "GATEHOUSE_LOG_FORMAT", value_name = "FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// An origin browser pages may call the API from (CORS), `scheme://host[:port]`
    /// (repeatable; GATEHOUSE_CORS_ORIGINS is comma separated). None (the default): CORS
    /// is off, and browsers keep other origins' pages from reading any answer.
    #[arg(
        long = "cors-origin",
        value_name = "ORIGIN",
        env = "GATEHOUSE_CORS_ORIGINS",
        value_delimiter = ','
    )]
    cors_origins: Vec<String>,
    /// Which of Agenta's contracts Agenta's session paths speak: `durable` (the default;
    /// Agenta v0.121 and later: the respond needs an Idempotency-Key and answers 202 with
    /// its continuation; Stop, the session snapshot and its events are served;
    /// /api/capabilities lists `durable_approvals`) or `legacy` (the contract before it:
    /// the respond answers 200 `{count, interaction}`; no Stop).
    #[arg(long, env = "GATEHOUSE_AGENTA_CONTRACT", value_name = "CONTRACT", default_value = "durable", value_parser = parse_agenta_contract)]
    agenta_contract: AgentaContract,
    /// Open this many approval gates at start, before the listening line (each a turn of
    /// its own session, the agent's `Bash` call parked by `ask`, sent through the
    /// server's own `POST /api/invoke` in --demo-project), so a quick start has gates to
    /// answer. 0: none.
    #[arg(long, env = "GATEHOUSE_DEMO_GATES", value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100))]
    demo_gates: u32,
    /// The project --demo-gates opens its gates in (the quick start's).
    #[arg(
        long,
        env = "GATEHOUSE_DEMO_PROJECT",
        value_name = "PROJECT",
        default_value = DEMO_PROJECT
    )]
    demo_project: String,
}

/// The project of the README's quick starts, where `--demo-gates` opens its gates.
const DEMO_PROJECT: &str = "019fac94-0000-7000-8000-000000000000";

fn parse_agenta_contract(text: &str) -> Result<AgentaContract, String> {
    text.parse()
}

/// How `gatehouse serve` writes its log lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One readable line per event.
    Text,
    /// One JSON object per line (JSON lines).
    Json,
}

/// Run the server until Ctrl-C or SIGTERM.
pub async fn run(args: ServeArgs) -> CliResult {
    init_logging(args.log_format);
    let mut api_keys = Vec::with_capacity(args.api_keys.len());
    for raw in &args.api_keys {
        if raw.trim().is_empty() {
            continue;
        }
        let key = ApiKey::parse(raw)
            .map_err(|err| CliError::usage(format!("invalid --api-key: {err}")))?;
        api_keys.push(key);
    }
    let mut config = ServerConfig::new(args.database_url.clone());
    config.bind = args.bind;
    config.api_keys = api_keys;
    config.execution = !args.no_execution;
    config.agenta_contract = args.agenta_contract;
    config.agentplat_header_auth = args.agentplat_header_auth;
    if args.agentplat_header_auth {
        tracing::warn!(
            "AgentPlat header-only tenant auth is on: requests on /rooms/... with \
             X-Agentplat-Tenant-Id and no key act in that project; trusted network only"
        );
    }
    config.header_read_timeout = std::time::Duration::from_secs(args.header_read_timeout);
    config.max_connections_per_client = args.max_connections_per_client;
    config.max_connections = args.max_connections;
    config.max_watchers = args.max_watchers;
    config.db_acquire_timeout = std::time::Duration::from_secs(args.db_acquire_timeout);
    config.resume_workers = usize::try_from(args.resume_workers).unwrap_or(8);
    config.max_resume_backlog = args.max_resume_backlog;
    config.lease = std::time::Duration::from_millis(args.lease_ms);
    config.webhooks = webhook_settings(&args)?;
    let hours = |h: u64| (h > 0).then(|| std::time::Duration::from_secs(h.saturating_mul(3600)));
    config.retention = gatehouse_server::config::RetentionSettings {
        delivered_events: hours(args.retain_delivered_events_hours),
        failed_events: hours(args.retain_failed_events_hours),
        idempotency_keys: hours(args.retain_idempotency_keys_hours),
        interval: std::time::Duration::from_secs(args.prune_interval),
        ..config.retention
    };
    config.metrics = args.metrics;
    config.metrics_bind = args.metrics_bind;
    config.metrics_refresh = std::time::Duration::from_secs(args.metrics_refresh);
    if let Some(key) = &args.metrics_key {
        if key.trim().is_empty() {
            return Err(CliError::usage("invalid --metrics-key: it is empty"));
        }
        config.metrics_key = Some(gatehouse_server::MetricsKey::new(key.trim()));
    }
    for raw in &args.cors_origins {
        if raw.trim().is_empty() {
            continue;
        }
        let origin = gatehouse_server::cors::parse_origin(raw)
            .map_err(|err| CliError::usage(format!("invalid --cors-origin: {err}")))?;
        config.cors_origins.push(origin);
    }

    let demo_key = if args.demo_gates > 0 {
        Some(demo_key(&config, &args.demo_project)?)
    } else {
        None
    };
    let server = gatehouse_server::start(config).await.map_err(|err| {
        CliError::other(format!(
            "cannot start the server on {} with {}: {err}",
            args.bind, args.database_url
        ))
    })?;
    if let Some(key) = demo_key {
        if let Err(err) = open_demo_gates(&server.base_url(), &key, &args).await {
            server.shutdown().await;
            return Err(err);
        }
    }
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on {}", server.base_url())
            .and_then(|()| out.flush())
            .map_err(|err| CliError::other(format!("cannot write to stdout: {err}")))?;
    }
    shutdown_signal().await;
    tracing::info!("shutting down");
    server.shutdown().await;
    tracing::info!("stopped");
    Ok(())
}

/// The key `--demo-gates` invokes with: the development key when none is configured,
/// else the first key that may act in the demo project (none: a usage error).
fn demo_key(config: &ServerConfig, project: &str) -> CliResult<String> {
    if project.trim().is_empty() {
        return Err(CliError::usage("--demo-project must not be empty"));
    }
    if config.api_keys.is_empty() {
        return Ok(gatehouse_server::DEV_API_KEY.to_string());
    }
    config
        .api_keys
        .iter()
        .find(|key| key.projects.allows(project))
        .map(|key| key.secret.clone())
        .ok_or_else(|| {
            CliError::usage(format!(
                "--demo-gates: no --api-key may act in the demo project {project} (set --demo-project)"
            ))
        })
}

/// Open `--demo-gates` gates through the server's own invoke route (the same path as
/// any client's), one session each: a new turn in a session would cancel its pending
/// gate.
async fn open_demo_gates(base_url: &str, key: &str, args: &ServeArgs) -> CliResult {
    let client = gatehouse_client::Client::builder(base_url)
        .api_key(key)
        .project_id(args.demo_project.as_str())
        .build()
        .map_err(|err| CliError::other(format!("--demo-gates: cannot build a client: {err}")))?;
    for n in 1..=args.demo_gates {
        let turn = ToolTurn::new(format!("demo task {n}"), "Bash")
            .args(serde_json::json!({"command": format!("echo demo {n}")}));
        let opened = client.service().invoke_tool(&turn).await.map_err(|err| {
            CliError::other(format!("--demo-gates: cannot open demo gate {n}: {err}"))
        })?;
        for id in &opened.interaction_ids {
            tracing::info!(
                interaction_id = %id,
                session_id = %opened.session_id,
                project_id = %args.demo_project,
                "opened a demo gate (Bash)"
            );
        }
    }
    Ok(())
}

/// The webhook settings of the flags; a bad endpoint spec is a usage error that never
/// shows the secret.
fn webhook_settings(args: &ServeArgs) -> CliResult<WebhookSettings> {
    let mut settings = WebhookSettings {
        max_attempts: args.webhook_max_attempts,
        retry_delay: std::time::Duration::from_millis(args.webhook_retry_ms),
        timeout: std::time::Duration::from_secs(args.webhook_timeout),
        ..WebhookSettings::default()
    };
    for raw in &args.webhooks {
        if raw.trim().is_empty() {
            continue;
        }
        let endpoint = WebhookEndpoint::parse(raw)
            .map_err(|err| CliError::usage(format!("invalid --webhook: {err}")))?;
        if settings.endpoint(&endpoint.name).is_some() {
            return Err(CliError::usage(format!(
                "invalid --webhook: two endpoints are named '{}'",
                endpoint.name
            )));
        }
        settings.endpoints.push(endpoint);
    }
    Ok(settings)
}

/// One line per event on stderr, readable or JSON; `RUST_LOG` overrides the default
/// `info` level. JSON lines carry the current span (`request`, with its `request_id`).
fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    let _ = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
}

/// Resolve on Ctrl-C or (on Unix) SIGTERM.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::ServeArgs;
    use clap::{Args, Command};

    /// Every `serve` flag can be set from the environment, as `GATEHOUSE_<FLAG>` (so an
    /// operator configures a container without a command line), and `--help` says so.
    #[test]
    fn every_serve_flag_has_its_environment_variable() {
        let command = ServeArgs::augment_args(Command::new("serve"));
        let mut checked = 0;
        for arg in command.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if long == "help" {
                continue;
            }
            let env = arg
                .get_env()
                .unwrap_or_else(|| panic!("--{long} has no environment variable"));
            let expected = match long {
                "api-key" => "GATEHOUSE_API_KEYS".to_string(),
                "webhook" => "GATEHOUSE_WEBHOOKS".to_string(),
                "cors-origin" => "GATEHOUSE_CORS_ORIGINS".to_string(),
                other => format!("GATEHOUSE_{}", other.replace('-', "_").to_uppercase()),
            };
            assert_eq!(env.to_str(), Some(expected.as_str()), "--{long}");
            checked += 1;
        }
        assert!(checked >= 16, "only {checked} flags seen");
    }
}
