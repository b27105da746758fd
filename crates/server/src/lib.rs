//! # gatehouse-server
//!
//! The Gatehouse reference control plane: a small, honest server that runs the whole
//! approval loop of CONTRACT.md on one machine. Start one with [`start`]; tests use
//! [`testing::spawn`].
//!
//! Read this page first: the rule, the map, the routes, and where each kind of change
//! goes. Then the module you need; each one's docs say what it owns.
//!
//! ## The rule
//!
//! **Each area is one folder with the same layers inside (routes, its store, its logic,
//! its workers); each owns its tables; a write announces its changes once; what several
//! parts share, and the wiring, stay at the top or below the areas.**
//!
//! - Interactions (A2, A4-A6, C1, C4) and the turns that open and resume them:
//!   [`interactions`], with its routes ([`interactions::api`], [`interactions::invoke`]),
//!   its store ([`interactions::store::InteractionStore`]), the turn in named steps
//!   ([`interactions::turn`], its config in [`interactions::config`]), and the workers
//!   that resume answered gates ([`interactions::dispatch`]).
//! - Execution sessions and interventions (B1-B3): [`execution`], with its routes
//!   ([`execution::api`]), its store ([`execution::store::ExecutionStore`]), pure rules
//!   ([`execution::rules`]), and the intervention dispatcher that claims, applies and
//!   resolves at a turn's checkpoints ([`execution::hooks`]).
//! - Webhooks: [`webhooks`], the delivery workers and their store
//!   ([`webhooks::store::DeliveryStore`]) over the outbox rows every write leaves.
//!
//! **A write that changes what a watcher or a webhook receiver sees returns its changes,
//! once** ([`announce`]): a store write collects [`announce::Change`]s inside
//! [`in_announced_tx!`](announce::in_announced_tx), which writes their outbox rows in the
//! same transaction (and a session's durable events, its log's rows) and feeds the watch
//! bus (and wakes the session logs' readers) from the same list after the commit. No
//! handler announces anything; the bus's publishing is private to [`announce`].
//!
//! Imports go one way, top to bottom; `layering.rs` is this diagram as a test
//! (`every_module_uses_only_modules_below_it`), and every layer may take the root's
//! [`AppState`]:
//!
//! ```text
//! lib.rs, testing     start, AppState, Stores: wire the rest; a server for tests
//! api                 the router: mounts the areas; capabilities, openapi, runs
//! interactions  execution  webhooks
//!                     the areas: never each other; they meet through `seams` (what
//!                     one offers another over its tables), runner's hook traits and
//!                     one transaction (seams::JoinedWrite)
//! runner  http  readiness  metrics
//! api::extract  api::reply
//! limits  cors  auth
//! error  config
//! request_id  uri
//! seams               traits one area implements for another, wired in `start`
//! announce            one list of changes: the outbox rows, the session logs, the watch bus
//! db                  the database: pool, transactions, rows, time, JSON, migrations
//! ```
//!
//! The rest of the crate reaches an area's internals in two places only: [`start`] and
//! [`Stores::new`] (the stores, their seams, the hook provider, the workers) and
//! [`api::router`] (which mounts each area's routes; execution's when
//! [`ServerConfig::execution`] is on).
//!
//! ## The map
//!
//! | module | what it owns |
//! |---|---|
//! | `lib.rs` | [`start`], [`RunningServer`], [`AppState`]: wiring and lifecycle only |
//! | [`api`] | the HTTP surface: [`api::router`] mounts each area's routes with the auth layer, the 404/405 fallbacks, panic catching and the request log; the routes of no area: [`api::capabilities`] (C5), [`api::openapi`], [`api::runs`] (the runner tier's stateless `POST /run`), `/health` |
//! | [`api::extract`], [`api::reply`] | request extractors (project id, actor, JSON bodies) whose rejections name the field, and the JSON answers; every area's routes use them |
//! | [`interactions`] | gates and the turns that open and resume them: [`interactions::api`] (A5, the batch respond, the SSE watch stream), [`interactions::durable`] (Agenta's durable respond and the continuation's redelivery, when `agenta_contract` is durable), [`interactions::sessions`] (Agenta's durable Stop, the session snapshot and its events), [`interactions::invoke`], [`interactions::turn`], [`interactions::config`] (A6 resolution, the resume's fail-closed config), [`interactions::parked`], [`interactions::dispatch`] (the resume workers, exactly once), [`interactions::guard`] (a running turn's heartbeat and the tool-run ledger), [`interactions::admission`] (answers wait while the resume backlog is at its limit), [`interactions::store`] (its store: rows and idempotency keys, the batch respond (by turn, durably, on a durable host), the gates of a turn parked on several, the resume queue and its lease, turns, tool runs, the workflow registry, the settlement of a source execution and the session commands, the running turns and the durable Stop, and what it offers the other areas) |
//! | [`execution`] | execution sessions and interventions (B1-B3, C3, C6): [`execution::rules`], [`execution::store`], [`execution::hooks`], [`execution::api`] (the routes; their SSE event stream in [`execution::stream`], AgentPlat's envelope of their answers in [`execution::envelope`], its JSON in [`execution::agentplat_shape`]), and the reconciler every instance runs ([`execution::reconcile`]) |
//! | [`runner`] | the runner tier: the deterministic harness, its script, and the checkpoint hook traits execution plugs into |
//! | [`db`] | the plumbing: sqlx over SQLite or Postgres, transactions (`in_tx!`), typed rows, the one time format, JSON columns, the embedded migrations (`migrations/sqlite`, `migrations/postgres`), readiness's SQL; no feature and no table's queries |
//! | [`announce`] | one list of changes ([`announce::Change`]): the transactional outbox ([`announce::outbox`]: endpoint names, the delivery workers' wake-up, `enqueue`) and the watch bus ([`announce::watch`]), both fed by [`in_announced_tx!`](announce::in_announced_tx); a turn's lifecycle ([`announce::Announcer::turn_lifecycle`]) |
//! | [`seams`] | what one area offers another, as traits below both: [`seams::JoinedWrite`] (execution's share of a turn's commit), [`seams::GateDelivered`] (interactions to webhooks), [`seams::InteractionQueries`] (interactions to execution), [`seams::ExecutionQueries`] (execution to interactions: the tool-run ledger's run-token fence) |
//! | [`webhooks`] | signed webhook events: the delivery store over the outbox rows ([`webhooks::store`]: claim, delivered, failed, list), the delivery workers of every instance (a lane and a circuit per endpoint ([`webhooks::circuit`]), lease, backoff; [`webhooks::deliver::record_outcome`] records each attempt's outcome), the signature, `GET /api/webhooks/deliveries`; the endpoints are settings ([`config::webhooks`]) |
//! | [`metrics`] | `GET /metrics` (Prometheus's text format): this server's recorder, what each part counts, the database's gauges refreshed off the request path (a scrape takes no database connection), the optional key and listener of its own |
//! | [`request_id`] | the request id of every request (`X-Request-Id`), its tracing span, and the id every error body carries |
//! | [`cors`] | CORS for browser pages, off unless [`ServerConfig::cors_origins`] names origins |
//! | [`readiness`] | `GET /health/ready`: the database takes a write, the migrations are applied, the resume workers and the reconciler are alive (their [`readiness::Pulse`]s) |
//! | [`auth`] | API keys (`ApiKey` / `Bearer`), kept as digests, and THE project authorisation ([`auth::authorize_project`]) every route that acts in a project goes through |
//! | [`http`] | serving connections: the accept loop (it backs off on accept errors), HTTP/1.1, the header-read timeout, the connection caps, JSON for hyper's own parse-error answers |
//! | [`limits`] | the caps derived from the open-file limit at start: connections in all and per client address, open event streams (a watcher over its cap: 503 with `Retry-After`) |
//! | [`error`] | [`error::ApiError`]: every failure as a JSON body with a machine code, in Agenta's or AgentPlat's envelope |
//! | [`config`] | [`ServerConfig`] and its defaults |
//! | [`uri`] | percent-decoding and the query string, below the auth layer and the extractors |
//! | [`testing`] | a real server on an ephemeral port over a temporary SQLite file, for tests, in the test's process or in a child process of its own ([`testing::ChildServer`], for a faked clock or a lowered open-file limit) |
//!
//! ## Routes
//!
//! The route registry in gatehouse_wire (`routes::OPERATIONS`) lists every route with its
//! parameters, bodies and every error, and generates the OpenAPI document
//! (`schema/openapi.json`, served at `GET /api/openapi.json`); `tests/it/openapi.rs` checks
//! it against the router both ways. Where each family is served: the interaction routes
//! under `/api/sessions/...`, `POST /api/invoke`, a session's turns and workflow commits
//! in [`interactions`] (one `routes()`, mounted by [`api::router`]); the execution routes
//! under `/api/rooms/...` and at AgentPlat's root paths `/rooms/...` in [`execution::api`];
//! capabilities, the OpenAPI document, `/health`, `/health/ready` ([`readiness`]) and the runner tier's `POST /run` in
//! [`api`].
//!
//! Every route but `GET /api/capabilities`, `GET /api/openapi.json`, `GET /health` and
//! `GET /health/ready` needs `Authorization: ApiKey <key>` (or `Bearer <key>`), except
//! AgentPlat's root paths on a server run with [`ServerConfig::agentplat_header_auth`]
//! ([`auth::require_key_or_tenant_header`]: the tenant header alone, for a trusted
//! network only); every `/api` route but
//! capabilities and the OpenAPI document needs `?project_id=<uuid>`; AgentPlat's root
//! paths take the project from `X-Agentplat-Tenant-Id` ([`auth::resolve_tenant`]). The key
//! must be bound to that project ([`auth::authorize_project`]: 404 for an id in another
//! project, 403 for the project itself).
//!
//! The `/api/rooms/...` and `/rooms/...` routes exist only when [`ServerConfig::execution`]
//! is on (the default; `gatehouse serve --no-execution` turns it off). They answer in
//! AgentPlat's envelope `{"data": ...}`, errors `{"error": {"code", "message",
//! "gatehouseCode"}}`. Every other route's errors answer `{"detail": ..., "code":
//! GatehouseCode}`; validation errors carry FastAPI's `[{loc, msg, type}]` list. Unknown
//! routes answer 404 `ROUTE_NOT_FOUND` (in AgentPlat's envelope under `/rooms/`, also when
//! execution is off), a wrong method 405.
//!
//! ## Where each kind of change goes
//!
//! | change | where |
//! |---|---|
//! | an interaction endpoint (new or changed) | the handler and its `routes()` entry in [`interactions::api`]; its SQL in `interactions/store/rows.rs`; its entry in the route registry in gatehouse_wire (`routes::OPERATIONS`), then `cargo xtask schema` |
//! | any other route (new or changed) | beside its handler, ALSO its entry in the route registry and `cargo xtask schema` (the router/registry test and the staleness checks fail otherwise) |
//! | a new area | a folder of its own (routes, SQL, logic, workers, as [`interactions`] and [`execution`]), its routes mounted in [`api::router`] (behind the auth `route_layer` unless public); its [`Capability`] in [`api::capabilities_for`]; a route of no area goes in `api/<name>.rs` |
//! | how a turn resolves its config | [`interactions::config`] |
//! | what a turn's `/run` request carries, what it leaves behind, what the watch stream hears of it | [`interactions::turn`] (its steps are the methods of `TurnRun`); the parked state in [`interactions::parked`] |
//! | what the harness does (script steps, permissions, checkpoints) | [`runner`] (`runner/script.rs` for the script format, `runner/hooks.rs` for the hook traits) |
//! | resuming answered gates (lease, retry, completion) | [`interactions::dispatch`]; the queue's SQL in `interactions/store/jobs.rs`, its lease in `interactions/store/lease.rs` |
//! | execution sessions or interventions, anything of B1-B3 | [`execution`]: a rule in `rules.rs` (pure, unit-tested there), its persistence in `store.rs`, what a turn does at a checkpoint (binding, claim, apply, resolve, reconcile) in `hooks.rs`, a B2 route in `api.rs` (the event stream in `stream.rs`, the envelope of the answers in `envelope.rs`) |
//! | a table or column | a new numbered migration in BOTH `migrations/sqlite` and `migrations/postgres` (never edit one already applied); its queries in the store of the ONE area that owns it (`interactions/store/`, `execution/store.rs`, `webhooks/store.rs`, or a new area's); another area that needs it asks through a trait in [`seams`], implemented by the owner |
//! | a new status, or a new change someone is told of | a [`announce::Change`] (its outbox event and its watch event in `announce/mod.rs`), pushed by the store write that makes it, inside `in_announced_tx!`; `tests/it/announcements.rs` counts one outbox event per endpoint and one watch event per change |
//! | a new delivery channel (push, a queue) | a worker like [`webhooks::deliver`] over the outbox rows (or rows of its own written from the same [`announce::Change`]s in `Announcer::record_in_tx`), its store in its own area folder; never an announcement by hand |
//! | an error code or message | the code in `gatehouse_wire::error::GatehouseCode` (wire crate; it decides the HTTP status), the text in `gatehouse_wire::error::messages`; the server builds it with [`error::ApiError`] (Agenta routes) or [`execution::ExecError`] (execution) |
//! | a watch-stream event | its wire type `gatehouse_wire::interaction::WatchEvent`, and the [`announce::Change`] that publishes it (after the write commits, from the write's own list); a turn's lifecycle through [`announce::Announcer::turn_lifecycle`] |
//! | API keys, authentication, which project a key may act in | [`auth`]; a new route that takes its project from somewhere else (a header, the body) calls [`auth::authorize_project`] on it |
//! | how connections are served, limits before the router (timeouts, per-client cap, hyper's own errors) | [`http`] |
//! | identifier and body limits, the NUL rule for every text of a request | [`api::extract`] |
//! | a server setting | [`ServerConfig`] in [`config`], [`testing::TestServerOptions`] for tests; the `gatehouse serve` flags live in `crates/cli` |
//! | startup, shutdown, background tasks | `lib.rs` ([`start`], [`RunningServer::shutdown`]); a new background task registers a [`readiness::Pulse`] |
//! | what readiness checks | [`readiness`]; its SQL in `db/readiness.rs` |
//! | a test | `tests/it/<area>.rs` (a module of the one test binary) over real HTTP with `tests/it/common` (`Harness`: start, post, invoke, park, respond, open a stream); `GATEHOUSE_TEST_DATABASE_URL=postgres://...` runs them on Postgres |
//!
//! ## Durability
//!
//! SQLite runs in WAL mode with `synchronous=NORMAL`: a process crash or restart loses
//! nothing committed (an OS crash may lose the last transactions). Set a `postgres://`
//! URL for a shared database and run as many instances on it as you like: work is owned
//! through leases (resume jobs, running sessions' holds), renewed by heartbeats while it
//! runs ([`interactions::guard`]), fenced by tokens, and taken over after expiry by any
//! instance ([`execution::reconcile`]); claims lock rows (`FOR UPDATE SKIP LOCKED`). Expiry
//! is judged by the database server's clock (lease statements compute "now" in SQL), so
//! instances whose clocks disagree do not take each other's live work; SQLite uses this
//! host's clock (one file on one host). A turn's effects are written in one transaction
//! with the turn (its interventions applied, its session's end), a parked turn is resumed
//! once (its resume claims the turn row first), and a tool call runs at most once per
//! approval (the tool-run ledger, which compares the tool and its arguments under a call
//! id).
//!
//! A database that cannot take the work (PostgreSQL down or restarting, a terminated
//! connection, a SQLite file on a full disk or locked by another process) is answered
//! 503 `UNAVAILABLE` with `Retry-After` within a bounded wait
//! ([`ServerConfig::db_acquire_timeout`], once per request: [`db::waiting_at_most_once`]),
//! never 500; readiness says so; and the server recovers by itself once it is back: a
//! connection whose transaction did not end cleanly is closed, never pooled again. A
//! resume whose approved tool could not be recorded in the ledger does not run it and is
//! retried.

pub mod announce;
pub mod api;
pub mod auth;
pub mod config;
pub mod cors;
pub mod db;
pub mod error;
pub mod execution;
pub mod http;
pub mod interactions;
#[cfg(test)]
mod layering;
pub mod limits;
pub mod metrics;
pub mod readiness;
pub mod request_id;
pub mod retention;
pub mod runner;
pub mod seams;
pub mod testing;
pub mod uri;
pub mod webhooks;

use std::net::SocketAddr;
use std::ops::Deref;
use std::sync::Arc;

use gatehouse_wire::capabilities::Capability;
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

pub use config::{AgentaContract, ApiKey, MetricsKey, ServerConfig, DEV_API_KEY};
pub use db::{Database, StoreError};

use announce::{Announcer, EventBus, Outbox};
use auth::KeyRing;
use execution::store::ExecutionStore;
use interactions::admission::{self, Backlog};
use interactions::store::{InteractionStore, OfferedQueries};
use runner::{HookProvider, NoopHookProvider};
use webhooks::store::DeliveryStore;

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The database could not be opened or migrated.
    #[error("cannot open the store: {0}")]
    Database(#[from] StoreError),
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Everything a request handler or worker needs. Cheap to clone.
#[derive(Clone)]
pub struct AppState(Arc<AppInner>);

/// The shared parts of [`AppState`].
pub struct AppInner {
    /// The configuration the server started with.
    pub config: ServerConfig,
    /// The database (plumbing; each area reads and writes through its own store below).
    pub db: Database,
    /// Where changes are told: the outbox and the watch bus (`announce`).
    pub announce: Announcer,
    /// The interactions area's store.
    pub interactions: InteractionStore,
    /// The execution area's store.
    pub executions: ExecutionStore,
    /// The webhooks area's store (deliveries).
    pub deliveries: DeliveryStore,
    /// Wakes the resume dispatcher (after a respond).
    pub dispatch_wakeup: Arc<Notify>,
    /// Checkpoint hooks for every turn the harness runs.
    pub hooks: Arc<dyn HookProvider>,
    /// What this host serves (`GET /api/capabilities`).
    pub capabilities: Vec<Capability>,
    /// Flips to true when the server shuts down (ends SSE streams and workers).
    pub shutdown: watch::Receiver<bool>,
    /// The resume backlog answers are admitted against ([`admission`]).
    pub backlog: Backlog,
    /// The caps derived from the open-file limit at start ([`limits`]).
    pub budget: limits::FdBudget,
    /// The open event streams, against [`limits::FdBudget::max_watchers`].
    pub watchers: limits::StreamSlots,
    /// What `GET /health/ready` checks: the background tasks' pulses, the database probe.
    pub readiness: readiness::Readiness,
    /// This server's metrics (`GET /metrics`); records nothing when they are off.
    pub metrics: metrics::Metrics,
    keys: KeyRing,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("config", &self.config)
            .field("db", &self.db.backend_name())
            .field("keys", &self.keys)
            .finish()
    }
}

impl Deref for AppState {
    type Target = AppInner;
    fn deref(&self) -> &AppInner {
        &self.0
    }
}

impl AppState {
    /// Assemble the state of a server over `stores` ([`Stores::new`]).
    pub fn new(
        config: ServerConfig,
        stores: Stores,
        hooks: Arc<dyn HookProvider>,
        capabilities: Vec<Capability>,
        shutdown: watch::Receiver<bool>,
    ) -> Self {
        let Stores {
            db,
            announce,
            interactions,
            executions,
            deliveries,
        } = stores;
        let keys = KeyRing::new(&config.effective_keys());
        let backlog = Backlog::new(config.max_resume_backlog, config.backlog_wait);
        let budget =
            limits::FdBudget::derive(limits::open_file_limit(), db.max_connections(), &config);
        let watchers = limits::StreamSlots::new(budget.max_watchers);
        let config_metrics = config.metrics;
        Self(Arc::new(AppInner {
            config,
            db,
            announce,
            interactions,
            executions,
            deliveries,
            dispatch_wakeup: Arc::new(Notify::new()),
            hooks,
            capabilities,
            shutdown,
            backlog,
            budget,
            watchers,
            readiness: readiness::Readiness::default(),
            metrics: metrics::Metrics::new(config_metrics),
            keys,
        }))
    }

    /// The accepted API keys.
    pub(crate) fn keys(&self) -> &KeyRing {
        &self.keys
    }
}

/// Every store of a server over one database: the plumbing's announcer (one outbox,
/// one watch bus) shared by the areas' stores, and the seams between areas wired here.
#[derive(Debug, Clone)]
pub struct Stores {
    /// The database.
    pub db: Database,
    /// The outbox and the watch bus every store announces to.
    pub announce: Announcer,
    /// The interactions area's store.
    pub interactions: InteractionStore,
    /// The execution area's store.
    pub executions: ExecutionStore,
    /// The webhooks area's store.
    pub deliveries: DeliveryStore,
}

impl Stores {
    /// The stores over `db`, writing webhook events for `webhook_endpoints` (their names;
    /// none: no event).
    pub fn new(db: Database, webhook_endpoints: Vec<String>) -> Self {
        let announce = Announcer::new(Outbox::new(webhook_endpoints), EventBus::default());
        let interactions = InteractionStore::new(
            db.clone(),
            announce.clone(),
            Arc::new(execution::store::OfferedToInteractions),
        );
        let offered = Arc::new(OfferedQueries::new(interactions.clone()));
        let executions = ExecutionStore::new(db.clone(), announce.clone(), offered.clone());
        let deliveries = DeliveryStore::new(db.clone(), offered);
        Self {
            db,
            announce,
            interactions,
            executions,
            deliveries,
        }
    }
}

/// A started server. Dropping it without [`RunningServer::shutdown`] leaves its tasks
/// running until the runtime ends.
#[derive(Debug)]
pub struct RunningServer {
    addr: SocketAddr,
    state: AppState,
    shutdown_tx: watch::Sender<bool>,
    server: JoinHandle<()>,
    dispatcher: Option<JoinHandle<()>>,
    reconciler: Option<JoinHandle<()>>,
    gauge: Option<JoinHandle<()>>,
    webhooks: Option<JoinHandle<()>>,
    metrics_refresh: Option<JoinHandle<()>>,
    metrics_addr: Option<SocketAddr>,
    metrics_server: Option<JoinHandle<()>>,
    retention: Option<JoinHandle<()>>,
}

impl RunningServer {
    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address of the metrics listener of its own, when
    /// [`ServerConfig::metrics_bind`] set one.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// The server's state (store, event bus), for in-process tests and tools.
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Stop gracefully: stop accepting, end watch streams, let in-flight requests and the
    /// dispatcher's current job finish, then close the store.
    pub async fn shutdown(self) {
        let _ = self.shutdown_tx.send(true);
        if let Err(err) = self.server.await {
            tracing::warn!(error = %err, "http server task ended abnormally");
        }
        if let Some(metrics_server) = self.metrics_server {
            if let Err(err) = metrics_server.await {
                tracing::warn!(error = %err, "metrics listener task ended abnormally");
            }
        }
        for (name, task) in [
            ("dispatcher", self.dispatcher),
            ("reconciler", self.reconciler),
            ("backlog gauge", self.gauge),
            ("webhook workers", self.webhooks),
            ("metrics refresh", self.metrics_refresh),
            ("retention", self.retention),
        ] {
            if let Some(task) = task {
                if let Err(err) = task.await {
                    tracing::warn!(task = name, error = %err, "background task ended abnormally");
                }
            }
        }
        self.state.db.close().await;
    }
}

/// Open the store (migrating it), bind, and serve until [`RunningServer::shutdown`].
pub async fn start(config: ServerConfig) -> Result<RunningServer, ServerError> {
    if config.api_keys.is_empty() {
        tracing::warn!(
            "no API key configured: accepting the development key {DEV_API_KEY:?} (actor \"dev\"); \
             configure keys before exposing this server"
        );
    }
    auth::warn_about_unbound_keys(&config);
    let webhook_endpoints = config
        .webhooks
        .endpoints
        .iter()
        .map(|e| e.name.clone())
        .collect();
    let db = Database::connect_with(&config.database_url, config.db_acquire_timeout).await?;
    let stores = Stores::new(db, webhook_endpoints);
    let scrubbed = interactions::parked::scrub_parked_configs(
        &stores.interactions,
        gatehouse_wire::effective::StampPolicy::default().redaction,
    )
    .await;
    if scrubbed > 0 {
        tracing::info!(
            scrubbed,
            "redacted the config of parked turns an older version stored"
        );
    }
    let listener = tokio::net::TcpListener::bind(config.bind)
        .await
        .map_err(|source| ServerError::Bind {
            addr: config.bind,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| ServerError::Bind {
        addr: config.bind,
        source,
    })?;
    let metrics_listener = match config.metrics_bind.filter(|_| config.metrics) {
        Some(metrics_bind) => {
            let bound = tokio::net::TcpListener::bind(metrics_bind)
                .await
                .and_then(|listener| Ok((listener.local_addr()?, listener)))
                .map_err(|source| ServerError::Bind {
                    addr: metrics_bind,
                    source,
                })?;
            Some(bound)
        }
        None => None,
    };
    if config.metrics
        && config.metrics_key.is_none()
        && metrics_listener.is_none()
        && !addr.ip().is_loopback()
    {
        tracing::warn!(
            %addr,
            "GET /metrics is served without a key on the API's listener: set a metrics key \
             or a metrics listener of its own, or keep the port off public networks"
        );
    }
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let capabilities = api::capabilities_for(&config);
    let hooks: Arc<dyn HookProvider> = if config.execution {
        Arc::new(execution::ExecutionHookProvider::with_default_lease(
            stores.executions.clone(),
            config.lease,
        ))
    } else {
        Arc::new(NoopHookProvider)
    };
    let state = AppState::new(config, stores, hooks, capabilities, shutdown_rx.clone());
    let router = api::router(state.clone());
    let limits = http::ConnectionLimits::new(&state.config, &state.budget);
    tracing::info!(
        open_files = state.budget.open_files,
        max_connections = state.budget.max_connections,
        max_watchers = state.budget.max_watchers,
        max_connections_per_client = state.budget.max_connections_per_client,
        "connection caps from the open-file limit"
    );
    let server = tokio::spawn(http::serve(listener, router, limits, shutdown_rx.clone()));
    let (metrics_addr, metrics_server) = match metrics_listener {
        Some((metrics_addr, metrics_listener)) => {
            tracing::info!(%metrics_addr, "metrics listening on a listener of their own");
            let limits = http::ConnectionLimits {
                header_read_timeout: state.config.header_read_timeout,
                max_connections_per_client: 0,
                max_connections: metrics::MAX_LISTENER_CONNECTIONS,
            };
            let task = tokio::spawn(http::serve(
                metrics_listener,
                metrics::router(state.clone()),
                limits,
                shutdown_rx,
            ));
            (Some(metrics_addr), Some(task))
        }
        None => (None, None),
    };
    let dispatcher = state
        .config
        .run_dispatcher
        .then(|| interactions::dispatch::spawn(state.clone()));
    let reconciler = state
        .config
        .execution
        .then(|| execution::reconcile::spawn(state.clone()));
    let gauge = admission::spawn_gauge(state.clone());
    let webhooks = webhooks::deliver::spawn(state.clone());
    let metrics_refresh = metrics::spawn_refresh(state.clone());
    let retention = Some(retention::spawn(state.clone()));
    tracing::info!(%addr, backend = state.db.backend_name(), "gatehouse server listening");
    Ok(RunningServer {
        addr,
        state,
        shutdown_tx,
        server,
        dispatcher,
        reconciler,
        gauge,
        webhooks,
        metrics_refresh,
        metrics_addr,
        metrics_server,
        retention,
    })
}
