//! Test support: start a real server on an ephemeral port over a temporary SQLite file,
//! in this process ([`spawn`]) or in a child process of its own ([`ChildServer`]: for
//! what holds a whole process, a faked clock or a lowered open-file limit).
//!
//! ```no_run
//! # async fn demo() {
//! let server = gatehouse_server::testing::spawn(Default::default()).await;
//! let url = server.url("/api/sessions/interactions/query");
//! // POST it with `Authorization: ApiKey {server.api_key}`.
//! server.shutdown().await;
//! # let _ = url;
//! # }
//! ```

use std::path::PathBuf;
use std::time::Duration;

use crate::{start, ApiKey, RunningServer, ServerConfig, ServerError};

/// How to start a test server. `Default` = execution on, dispatcher on, a fresh
/// temporary database, a random key and project.
#[derive(Debug, Clone)]
pub struct TestServerOptions {
    /// Serve execution sessions.
    pub execution: bool,
    /// AgentPlat's header-only tenant auth on the root paths; default false.
    pub agentplat_header_auth: bool,
    /// Use this SQLite file (to restart on the same data); default: a temp dir.
    pub database_path: Option<PathBuf>,
    /// Use this database URL instead of a SQLite file (e.g. `postgres://...`). Data is
    /// scoped by project, so tests sharing one database stay apart.
    pub database_url: Option<String>,
    /// The API key (actor `tester`); default: a random one.
    pub api_key: Option<String>,
    /// The project id tests use; default: a random UUID.
    pub project_id: Option<String>,
    /// `effectiveParameters` cap; default 65536.
    pub stamp_max_bytes: Option<usize>,
    /// Body limit; default 1 MiB.
    pub max_body_bytes: Option<usize>,
    /// Lease of resume jobs and of running sessions' holds; default 10 s.
    pub lease: Option<Duration>,
    /// Resume workers; default 8.
    pub resume_workers: Option<usize>,
    /// Admission control's backlog limit; default 128 (0 when `run_dispatcher` is off:
    /// nothing would drain the queue).
    pub max_resume_backlog: Option<u64>,
    /// The longest an answer waits for the backlog; default 5 s.
    pub backlog_wait: Option<Duration>,
    /// Reconciler pass interval; default 200 ms.
    pub reconcile_interval: Option<Duration>,
    /// Dispatcher poll interval; default 200 ms.
    pub dispatch_poll: Option<Duration>,
    /// SSE heartbeat interval; default 15 s.
    pub heartbeat: Option<Duration>,
    /// Run the resume dispatcher; default true.
    pub run_dispatcher: bool,
    /// More keys besides the test key (e.g. keys bound to projects).
    pub extra_api_keys: Vec<ApiKey>,
    /// Header-read timeout; default 30 s.
    pub header_read_timeout: Option<Duration>,
    /// Connections per client address; default a quarter of the connections in all
    /// (`Some(0)`: no per-address cap).
    pub max_connections_per_client: Option<usize>,
    /// Connections in all; default derived from the open-file limit.
    pub max_connections: Option<usize>,
    /// Most open event streams (`--max-watchers`); default half the connections.
    pub max_watchers: Option<usize>,
    /// The longest wait for the database before a 503; default 5 s.
    pub db_acquire_timeout: Option<Duration>,
    /// Record and serve metrics (`GET /metrics`); default true.
    pub metrics: bool,
    /// How often the metrics' database gauges are refreshed; default 200 ms (as the
    /// dispatcher's poll: often enough for a test to wait, rare enough to add no load).
    pub metrics_refresh: Option<Duration>,
    /// Serve `GET /metrics` on a listener of its own at this address; default none.
    pub metrics_bind: Option<std::net::SocketAddr>,
    /// The key `GET /metrics` requires; default none.
    pub metrics_key: Option<String>,
    /// Origins allowed by CORS; default none (CORS off).
    pub cors_origins: Vec<String>,
    /// Which of Agenta's contracts its session paths speak. Default legacy, unlike
    /// `gatehouse serve`: most of the suite speaks Gatehouse's own respond (200, no key),
    /// and the durable suites (durable_respond, durable_stop) set it.
    pub agenta_contract: crate::config::AgentaContract,
    /// Webhook endpoints events are written for; default none.
    pub webhook_endpoints: Vec<crate::config::WebhookEndpoint>,
    /// The webhook delivery settings (timeout, retries, workers, circuit); default the
    /// server's. Its endpoints are replaced by `webhook_endpoints`.
    pub webhook_settings: Option<crate::config::WebhookSettings>,
    /// What is pruned and how often (the server's defaults if `None`).
    pub retention: Option<crate::config::RetentionSettings>,
}

impl Default for TestServerOptions {
    fn default() -> Self {
        Self {
            execution: true,
            agentplat_header_auth: false,
            database_path: None,
            database_url: None,
            api_key: None,
            project_id: None,
            stamp_max_bytes: None,
            max_body_bytes: None,
            lease: None,
            resume_workers: None,
            max_resume_backlog: None,
            backlog_wait: None,
            reconcile_interval: None,
            dispatch_poll: None,
            heartbeat: None,
            run_dispatcher: true,
            extra_api_keys: Vec::new(),
            header_read_timeout: None,
            max_connections_per_client: None,
            max_connections: None,
            max_watchers: None,
            db_acquire_timeout: None,
            metrics: true,
            metrics_refresh: None,
            metrics_bind: None,
            metrics_key: None,
            cors_origins: Vec::new(),
            agenta_contract: crate::config::AgentaContract::Legacy,
            webhook_endpoints: Vec::new(),
            webhook_settings: None,
            retention: None,
        }
    }
}

/// A running test server and what a test needs to talk to it.
#[derive(Debug)]
pub struct TestServer {
    /// The server.
    pub server: RunningServer,
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    /// A valid API key (send `Authorization: ApiKey <key>`).
    pub api_key: String,
    /// A project id to put in `?project_id=`.
    pub project_id: String,
    /// The SQLite file (unused when `options.database_url` is set).
    pub database_path: PathBuf,
    /// The options it was started with (with the key, project and path filled in).
    pub options: TestServerOptions,
    dir: Option<tempfile::TempDir>,
}

impl TestServer {
    /// `base_url + path`, with `project_id=` appended to the query string.
    pub fn url(&self, path: &str) -> String {
        project_url(&self.base_url, &self.project_id, path)
    }

    /// The `Authorization` header value.
    pub fn authorization(&self) -> String {
        format!("ApiKey {}", self.api_key)
    }

    /// Stop gracefully (the database file stays until the value is dropped).
    pub async fn shutdown(self) {
        self.server.shutdown().await;
    }

    /// Stop and start again on the same database file, key and project.
    ///
    /// # Panics
    /// When the server cannot start again (see [`try_spawn`]).
    pub async fn restart(self) -> TestServer {
        let TestServer {
            server,
            options,
            dir,
            ..
        } = self;
        server.shutdown().await;
        let mut next = spawn(options).await;
        next.dir = dir;
        next
    }
}

/// `base_url + path` with `project_id=` appended to its query string.
pub fn project_url(base_url: &str, project_id: &str, path: &str) -> String {
    let separator = if path.contains('?') { '&' } else { '?' };
    format!("{base_url}{path}{separator}project_id={project_id}")
}

/// Start a test server.
///
/// # Panics
/// When the temporary directory, the database or the listener cannot be set up: test
/// support has no caller to report to. Use [`try_spawn`] to handle it.
pub async fn spawn(opts: TestServerOptions) -> TestServer {
    match try_spawn(opts).await {
        Ok(server) => server,
        Err(err) => panic!("cannot start the gatehouse test server: {err}"),
    }
}

/// Start a test server, reporting failures.
pub async fn try_spawn(mut opts: TestServerOptions) -> Result<TestServer, ServerError> {
    let (dir, database_path) = match &opts.database_path {
        Some(path) => (None, path.clone()),
        None => {
            let dir = tempfile::tempdir().map_err(|source| ServerError::Bind {
                addr: ([127, 0, 0, 1], 0).into(),
                source,
            })?;
            let path = dir.path().join("gatehouse.db");
            (Some(dir), path)
        }
    };
    let api_key = opts
        .api_key
        .clone()
        .unwrap_or_else(|| format!("test-key-{}", uuid::Uuid::new_v4().simple()));
    let project_id = opts
        .project_id
        .clone()
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let url = opts
        .database_url
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", database_path.display()));
    let mut config = ServerConfig::new(url);
    config.api_keys = vec![ApiKey::new("tester", api_key.clone())];
    config.api_keys.extend(opts.extra_api_keys.iter().cloned());
    config.execution = opts.execution;
    config.agentplat_header_auth = opts.agentplat_header_auth;
    config.run_dispatcher = opts.run_dispatcher;
    config.dispatch_poll = opts.dispatch_poll.unwrap_or(Duration::from_millis(200));
    if let Some(v) = opts.stamp_max_bytes {
        config.stamp_max_bytes = v;
    }
    if let Some(v) = opts.max_body_bytes {
        config.max_body_bytes = v;
    }
    if let Some(v) = opts.lease {
        config.lease = v;
    }
    if let Some(v) = opts.resume_workers {
        config.resume_workers = v;
    }
    config.reconcile_interval = opts
        .reconcile_interval
        .unwrap_or(Duration::from_millis(200));
    // Without resume workers here nothing drains the queue: no admission control then.
    if !opts.run_dispatcher {
        config.max_resume_backlog = 0;
    }
    if let Some(v) = opts.max_resume_backlog {
        config.max_resume_backlog = v;
    }
    if let Some(v) = opts.backlog_wait {
        config.backlog_wait = v;
    }
    if let Some(v) = opts.heartbeat {
        config.heartbeat = v;
    }
    if let Some(v) = opts.header_read_timeout {
        config.header_read_timeout = v;
    }
    config.max_connections_per_client = opts.max_connections_per_client;
    config.max_connections = opts.max_connections;
    config.max_watchers = opts.max_watchers;
    config.metrics = opts.metrics;
    config.metrics_refresh = opts.metrics_refresh.unwrap_or(Duration::from_millis(200));
    config.metrics_bind = opts.metrics_bind;
    config.metrics_key = opts.metrics_key.as_deref().map(crate::MetricsKey::new);
    config.cors_origins = opts.cors_origins.clone();
    config.agenta_contract = opts.agenta_contract;
    if let Some(settings) = &opts.webhook_settings {
        config.webhooks = settings.clone();
    }
    config.webhooks.endpoints = opts.webhook_endpoints.clone();
    if let Some(v) = &opts.retention {
        config.retention = v.clone();
    }
    if let Some(v) = opts.db_acquire_timeout {
        config.db_acquire_timeout = v;
    }
    let server = start(config).await?;
    opts.database_path = Some(database_path.clone());
    opts.api_key = Some(api_key.clone());
    opts.project_id = Some(project_id.clone());
    Ok(TestServer {
        base_url: server.base_url(),
        server,
        api_key,
        project_id,
        database_path,
        options: opts,
        dir,
    })
}

/// Create an empty PostgreSQL database beside the one `url` names (same server and
/// credentials, a random name) and return its URL: a test server or a benchmark that
/// gets one has a resume queue of its own, shared with nobody else's settings.
pub async fn fresh_postgres_database(url: &str) -> Result<String, sqlx::Error> {
    let (base, _) = url
        .rsplit_once('/')
        .ok_or_else(|| sqlx::Error::Configuration(format!("not a database URL: {url}").into()))?;
    let admin = sqlx::PgPool::connect(url).await?;
    let name = format!("gh_test_{}", uuid::Uuid::new_v4().simple());
    let created = sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&admin)
        .await;
    admin.close().await;
    created?;
    Ok(format!("{base}/{name}"))
}

/// The environment variable that tells a test binary run as a [`ChildServer`] which
/// entry test is to serve (its value), and the ones that carry the settings.
const CHILD_ENTRY_VAR: &str = "GATEHOUSE_CHILD_SERVER";
const CHILD_DATABASE_VAR: &str = "GATEHOUSE_CHILD_DATABASE_URL";
const CHILD_KEY_VAR: &str = "GATEHOUSE_CHILD_API_KEY";
const CHILD_PROJECT_VAR: &str = "GATEHOUSE_CHILD_PROJECT_ID";
const CHILD_LEASE_VAR: &str = "GATEHOUSE_CHILD_LEASE_MS";
const CHILD_CONTRACT_VAR: &str = "GATEHOUSE_CHILD_AGENTA_CONTRACT";
const CHILD_PER_CLIENT_VAR: &str = "GATEHOUSE_CHILD_MAX_CONNECTIONS_PER_CLIENT";
const CHILD_MAX_WATCHERS_VAR: &str = "GATEHOUSE_CHILD_MAX_WATCHERS";
const CHILD_DISPATCHER_OFF_VAR: &str = "GATEHOUSE_CHILD_DISPATCHER_OFF";
/// What a child server prints on stdout once it listens: this, then its base URL.
const CHILD_LISTENING: &str = "gatehouse child server listening on ";

/// How to start a [`ChildServer`].
#[derive(Debug, Clone, Default)]
pub struct ChildServerOptions {
    /// The name of the `#[test]` (ignored) in the calling test binary that calls
    /// [`serve_child_if_asked`]: the child runs the binary again with it as the filter,
    /// so it must be unique in the binary.
    pub entry: String,
    /// A command the child runs under, with its arguments (`["faketime", "-f", "+8s"]`,
    /// `["prlimit", "--nofile=512:512"]`); empty: none.
    pub wrapper: Vec<String>,
    /// The database; `None`: a SQLite file in a temporary folder of the child's own.
    pub database_url: Option<String>,
    /// The project id requests use; default: a random UUID.
    pub project_id: Option<String>,
    /// Lease of resume jobs and of running sessions' holds; default 10 s.
    pub lease: Option<Duration>,
    /// More environment variables for the child (`FAKETIME_DONT_FAKE_MONOTONIC=1`).
    pub env: Vec<(String, String)>,
    /// Which of Agenta's contracts its session paths speak. Default legacy, unlike
    /// `gatehouse serve`: most of the suite speaks Gatehouse's own respond (200, no key),
    /// and the durable suites (durable_respond, durable_stop) set it.
    pub agenta_contract: crate::config::AgentaContract,
    /// Connections per client address; default a quarter of the connections in all
    /// (`Some(0)`: no per-address cap).
    pub max_connections_per_client: Option<usize>,
    /// Most open event streams; default half the connections.
    pub max_watchers: Option<usize>,
    /// Start without the resume dispatcher (gates opened directly, with no parked turn
    /// behind them, as the benchmarks do); default: with it.
    pub dispatcher_off: bool,
}

/// A real server in a child process: the calling test binary, run again on one entry
/// test that serves ([`serve_child_if_asked`]) until its standard input closes. Killed
/// when dropped.
#[derive(Debug)]
pub struct ChildServer {
    child: std::process::Child,
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    /// A valid API key (actor `tester`).
    pub api_key: String,
    /// The project id to put in `?project_id=`.
    pub project_id: String,
}

impl ChildServer {
    /// Start the child and wait (up to 60 s) for its listening line.
    pub fn spawn(opts: &ChildServerOptions) -> std::io::Result<ChildServer> {
        use std::io::BufRead;
        let api_key = format!("test-key-{}", uuid::Uuid::new_v4().simple());
        let project_id = opts
            .project_id
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let exe = std::env::current_exe()?;
        let mut command = match opts.wrapper.split_first() {
            Some((program, args)) => {
                let mut command = std::process::Command::new(program);
                command.args(args).arg(exe);
                command
            }
            None => std::process::Command::new(exe),
        };
        command
            .args([
                opts.entry.as_str(),
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENTRY_VAR, &opts.entry)
            .env(CHILD_KEY_VAR, &api_key)
            .env(CHILD_PROJECT_VAR, &project_id)
            .envs(opts.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        if let Some(url) = &opts.database_url {
            command.env(CHILD_DATABASE_VAR, url);
        }
        if let Some(lease) = opts.lease {
            command.env(CHILD_LEASE_VAR, lease.as_millis().to_string());
        }
        command.env(CHILD_CONTRACT_VAR, opts.agenta_contract.as_str());
        if let Some(n) = opts.max_connections_per_client {
            command.env(CHILD_PER_CLIENT_VAR, n.to_string());
        }
        if let Some(n) = opts.max_watchers {
            command.env(CHILD_MAX_WATCHERS_VAR, n.to_string());
        }
        if opts.dispatcher_off {
            command.env(CHILD_DISPATCHER_OFF_VAR, "1");
        }
        let mut child = command.spawn()?;
        let stdout = child.stdout.take().ok_or_else(|| {
            std::io::Error::other("the child server's standard output is not piped")
        })?;
        // The listening line, read on a thread of its own so that a child that never
        // prints it costs the deadline, not forever.
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                // The harness may have printed the test's name first on the same line.
                if let Some((_, url)) = line.split_once(CHILD_LISTENING) {
                    let _ = sender.send(url.trim().to_string());
                }
            }
        });
        match receiver.recv_timeout(Duration::from_secs(60)) {
            Ok(base_url) => Ok(ChildServer {
                child,
                base_url,
                api_key,
                project_id,
            }),
            Err(_) => {
                let _ = child.kill();
                let status = child.wait()?;
                Err(std::io::Error::other(format!(
                    "the child server printed no listening line (it ended: {status})"
                )))
            }
        }
    }

    /// `base_url + path`, with `project_id=` appended to the query string.
    pub fn url(&self, path: &str) -> String {
        project_url(&self.base_url, &self.project_id, path)
    }

    /// The `Authorization` header value.
    pub fn authorization(&self) -> String {
        format!("ApiKey {}", self.api_key)
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The child side of [`ChildServer`]: when this process was started as the child of
/// entry test `entry`, start the server, print its listening line, and serve until
/// standard input closes (the parent ended or dropped its [`ChildServer`]), then return
/// true. Otherwise return false at once.
///
/// # Panics
/// When the server cannot start: the parent sees the child end without its line.
pub fn serve_child_if_asked(entry: &str) -> bool {
    if std::env::var(CHILD_ENTRY_VAR).ok().as_deref() != Some(entry) {
        return false;
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => panic!("the child server has no runtime: {err}"),
    };
    runtime.block_on(async {
        let mut opts = TestServerOptions {
            database_url: std::env::var(CHILD_DATABASE_VAR).ok(),
            api_key: std::env::var(CHILD_KEY_VAR).ok(),
            project_id: std::env::var(CHILD_PROJECT_VAR).ok(),
            ..TestServerOptions::default()
        };
        if let Some(ms) = std::env::var(CHILD_LEASE_VAR)
            .ok()
            .and_then(|ms| ms.parse().ok())
        {
            opts.lease = Some(Duration::from_millis(ms));
        }
        if let Some(contract) = std::env::var(CHILD_CONTRACT_VAR)
            .ok()
            .and_then(|text| text.parse().ok())
        {
            opts.agenta_contract = contract;
        }
        opts.max_connections_per_client = std::env::var(CHILD_PER_CLIENT_VAR)
            .ok()
            .and_then(|n| n.parse().ok());
        opts.max_watchers = std::env::var(CHILD_MAX_WATCHERS_VAR)
            .ok()
            .and_then(|n| n.parse().ok());
        opts.run_dispatcher = std::env::var_os(CHILD_DISPATCHER_OFF_VAR).is_none();
        let server = spawn(opts).await;
        // The parent reads the child's address from its stdout: that line is the protocol.
        #[allow(clippy::print_stdout)]
        {
            println!("{CHILD_LISTENING}{}", server.base_url);
        }
        // Until the parent closes our standard input (or dies): then stop.
        let _ = tokio::task::spawn_blocking(|| {
            let mut sink = Vec::new();
            let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
        })
        .await;
        server.shutdown().await;
    });
    true
}
