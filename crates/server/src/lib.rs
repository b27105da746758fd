//! # gatehouse-server
//!
//! The Gatehouse reference control plane: a small, honest server that runs the whole
//! approval loop of CONTRACT.md on one machine.
//!
//! | module | role |
//! |---|---|
//! | [`api`] | axum routers: interactions (A5), invoke and turns, workflow commits, capabilities (C5), the runner tier's `/run` |
//! | [`service`] | the service tier: config resolution (A6 hydration rule) and `/run` request building with `gatehouse-wire` |
//! | [`runner`] | the runner tier: the deterministic harness and its checkpoint hooks |
//! | [`dispatch`] | the resume worker: claims responded interactions under a lease and resumes their turns |
//! | [`store`] | sqlx storage (SQLite file by default, Postgres by URL), migrations embedded |
//! | [`auth`], [`error`], [`events`] | API keys, error envelopes, the watch-stream event bus |
//!
//! Start one with [`start`]; tests use [`testing::spawn`].
//!
//! ## Routes
//!
//! Every route but `GET /api/capabilities` needs `Authorization: ApiKey <key>` (or
//! `Bearer <key>`); every `/api` route but capabilities needs `?project_id=<uuid>`.
//!
//! | method, path | what |
//! |---|---|
//! | `POST /api/sessions/interactions/query` | filter + window rows (A5) |
//! | `GET /api/sessions/interactions/{id}` | one row |
//! | `POST /api/sessions/interactions/{id}/respond` | compare-and-set answer (C1); `Idempotency-Key` replays |
//! | `POST /api/sessions/interactions/` | runner opens a gate (idempotent on session + token) |
//! | `POST /api/sessions/interactions/transition` | runner resolves/cancels by token |
//! | `POST /api/sessions/interactions/cancel-stale` | cancel other turns' pending gates |
//! | `GET /api/sessions/streams/watch?session_id=` | SSE: `ready`, `interaction`, `records-changed`, `lifecycle`, heartbeats |
//! | `POST /api/invoke` | run a turn (service tier) |
//! | `GET /api/sessions/{session_id}/turns` | a session's turns, oldest first |
//! | `POST /api/workflows/revisions/commit` | commit a revision, move the variant's HEAD |
//! | `GET /api/capabilities` | what this host serves (C5), no auth |
//! | `POST /run` | runner tier: `RunRequest` -> `RunResult` (JSON) or NDJSON records |
//!
//! Errors answer `{"detail": ..., "code": GatehouseCode}`; validation errors carry
//! FastAPI's `[{loc, msg, type}]` list. Unknown routes answer 404 `ROUTE_NOT_FOUND`.
//!
//! ## Durability
//!
//! SQLite runs in WAL mode with `synchronous=NORMAL`: a process crash or restart loses
//! nothing committed (an OS crash may lose the last transactions). Set a `postgres://`
//! URL for a shared database; leases then lock rows (`FOR UPDATE SKIP LOCKED`).

#![warn(missing_docs)]

pub mod api;
pub mod auth;
pub mod config;
pub mod dispatch;
pub mod error;
pub mod events;
pub mod execution;
pub mod runner;
pub mod service;
pub mod store;
pub mod testing;

use std::net::SocketAddr;
use std::ops::Deref;
use std::sync::Arc;

use gatehouse_wire::capabilities::Capability;
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

pub use config::{ApiKey, ServerConfig, DEV_API_KEY};
pub use store::{Store, StoreError};

use auth::KeyRing;
use events::EventBus;
use runner::{HookProvider, NoopHookProvider};

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The database could not be opened or migrated.
    #[error("cannot open the store: {0}")]
    Store(#[from] StoreError),
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
    /// Durable state.
    pub store: Store,
    /// Feeds the SSE watch streams.
    pub events: EventBus,
    /// Wakes the resume dispatcher (after a respond).
    pub dispatch_wakeup: Arc<Notify>,
    /// Checkpoint hooks for every turn the harness runs.
    pub hooks: Arc<dyn HookProvider>,
    /// What this host serves (`GET /api/capabilities`).
    pub capabilities: Vec<Capability>,
    /// Flips to true when the server shuts down (ends SSE streams and workers).
    pub shutdown: watch::Receiver<bool>,
    keys: KeyRing,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("config", &self.config)
            .field("store", &self.store.backend_name())
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
    /// Assemble the state of a server.
    pub fn new(
        config: ServerConfig,
        store: Store,
        hooks: Arc<dyn HookProvider>,
        capabilities: Vec<Capability>,
        shutdown: watch::Receiver<bool>,
    ) -> Self {
        let keys = KeyRing::new(&config.effective_keys());
        Self(Arc::new(AppInner {
            config,
            store,
            events: EventBus::default(),
            dispatch_wakeup: Arc::new(Notify::new()),
            hooks,
            capabilities,
            shutdown,
            keys,
        }))
    }

    /// The accepted API keys.
    pub(crate) fn keys(&self) -> &KeyRing {
        &self.keys
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
        if let Some(dispatcher) = self.dispatcher {
            if let Err(err) = dispatcher.await {
                tracing::warn!(error = %err, "dispatcher task ended abnormally");
            }
        }
        self.state.store.close().await;
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
    let store = Store::connect(&config.database_url).await?;
    if config.execution {
        execution::reconcile_orphans_at_startup(&store).await;
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
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let capabilities = api::capabilities_for(&config);
    let hooks: Arc<dyn HookProvider> = if config.execution {
        Arc::new(execution::ExecutionHookProvider::with_default_lease(
            store.clone(),
        ))
    } else {
        Arc::new(NoopHookProvider)
    };
    let state = AppState::new(config, store, hooks, capabilities, shutdown_rx.clone());
    let router = api::router(state.clone());
    let mut signal = shutdown_rx.clone();
    let server = tokio::spawn(async move {
        let result = axum::serve(listener, router.into_make_service())
            .with_graceful_shutdown(async move {
                let _ = signal.wait_for(|stop| *stop).await;
            })
            .await;
        if let Err(err) = result {
            tracing::error!(error = %err, "http server failed");
        }
    });
    let dispatcher = state
        .config
        .run_dispatcher
        .then(|| dispatch::spawn(state.clone()));
    tracing::info!(%addr, backend = state.store.backend_name(), "gatehouse server listening");
    Ok(RunningServer {
        addr,
        state,
        shutdown_tx,
        server,
        dispatcher,
    })
}
