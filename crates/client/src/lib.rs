//! # gatehouse-client
//!
//! Async Rust client for Gatehouse-compatible control planes (Agenta's session
//! interactions, AgentPlat's execution sessions, and Gatehouse's own additions):
//! list, answer and watch the gates a running agent opens, and run agents.
//!
//! ```no_run
//! # async fn demo() -> Result<(), gatehouse_client::Error> {
//! use gatehouse_client::{Answer, Client, Error};
//! let client = Client::builder("http://127.0.0.1:8787")
//!     .api_key("gh_...")
//!     .project_id("019fac94-0000-7000-8000-000000000000")
//!     .build()?;
//! for gate in client.interactions().list_pending(None).await? {
//!     let Some(id) = gate.id.as_deref() else { continue };
//!     match client.interactions().respond(id, &Answer::approve()).await {
//!         Ok(_) | Err(Error::AlreadyAnswered { .. }) => {}
//!         Err(other) => return Err(other),
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! - [`Client`] is cheap to clone (one connection pool, one capability cache) and
//!   hands out sub-clients: [`Client::interactions`], [`Client::runs`],
//!   [`Client::execution`], [`Client::sessions`], [`Client::capabilities`].
//! - One setting says which kind of host it talks to ([`Upstream`]): Gatehouse's own
//!   server (the default), AgentPlat's Rooms API (root paths, the
//!   `X-Agentplat-Tenant-Id` tenant, the requesting participant, no `project_id`), or
//!   Agenta's API.
//! - Reading is tolerant: a status, checkpoint, event type or code this version does
//!   not know is kept as an unknown value, never a failed read; a write the host
//!   accepted is never reported as failed ([`Error::AcceptedUnreadable`] says it landed).
//! - Every failure is one flat [`Error`] naming its [`Operation`], with
//!   [`Error::kind`] (an [`ErrorKind`] with a stable name: the one table the FFI's
//!   error variants and the CLI's exit codes are mapped from) and
//!   [`Error::is_retryable`].
//! - Reads are retried with jittered, bounded backoff ([`RetryPolicy`]); a respond is
//!   never blindly replayed (it carries an `Idempotency-Key`, see
//!   [`Interactions::respond_with_idempotency_key`]).
//! - Each HTTP call runs in a `gatehouse_call` tracing span (operation, method,
//!   status, attempts, duration); the API key and request contents are never logged.
//! - Public enums are `#[non_exhaustive]`: match them with a wildcard arm, so a new
//!   error kind, operation or stream update is not a breaking change.
//!
//! ## Where things are (`src/`)
//!
//! Top to bottom: each module uses only modules below it (a unit test reads the
//! `crate::` paths of every module and fails otherwise).
//!
//! | module | holds |
//! |---|---|
//! | `inbox.rs` | [`Inbox`]: the pending gates of several hosts or projects as one paged list, a host that fails reported without failing the others |
//! | `interactions.rs`, `runs.rs`, `execution.rs`, `service.rs` | the sub-clients, one per domain: each builds `Call`s (an [`Operation`] and its path values) and hands them to its `Client`; each module also holds the `Client` method that hands its sub-client out ([`Client::interactions`], ...) |
//! | `sessions.rs` | the [`Sessions`] sub-client: Agenta's durable session control (the contract a host speaks, snapshot, replayable events, durable Stop and how it settled, resume); the durable respond is on [`Interactions`] |
//! | `watch.rs` | the interaction watch (the execution event stream, which reads AgentPlat's versioned SSE envelope, is in `execution.rs`) |
//! | `capabilities.rs` | the [`Capabilities`] sub-client: discovery, read once and kept in the capability cache |
//! | `config.rs` | [`ClientBuilder`] (and [`Client::builder`]), the `DEFAULT_*` settings |
//! | `sse.rs` | the SSE parser and the reconnect loop the watch and the execution event stream share |
//! | `client.rs` | [`Client`], the handle every sub-client holds: `send` opens the `gatehouse_call` span, asks the capability cache, lets the transport send, and teaches the cache |
//! | `capability_cache.rs` | what the client learned of the host's capabilities, checked before every call is sent |
//! | `transport.rs` | the transport: a `Call` in, an answer or an [`Error`] out (its route's method and path, URLs, credentials, attempts, bounded reads, `Retry-After`) |
//! | `routes.rs` | the registered route (`gatehouse_wire::routes`) every [`Operation`] takes on each [`Upstream`]: the one place the client names a route |
//! | `retry.rs` | [`RetryPolicy`] and `with_retries`, the one retry loop (the transport's and the respond path's) |
//! | `classify.rs` | classification: HTTP status + upstream error bodies (FastAPI, AgentPlat, Gatehouse codes) to [`Error`]; reqwest failures; decode errors |
//! | `redact.rs` | bounds and secret scrubbing of every text an [`Error`] keeps |
//! | `upstream.rs` | [`Upstream`] and [`AuthScheme`]: which kind of host, and how the key is spelled |
//! | `error.rs` | [`Error`], [`Operation`] and [`ErrorKind`], the kind table |
//!
//! So the transport knows neither the sub-clients nor the capability cache (a
//! route-not-found 404 comes back as [`Error::CapabilityUnavailable`] and `Client::send`
//! remembers it), and no module below `config.rs` knows how a client is built.
//!
//! Where a change goes:
//! - a new endpoint: its route in the registry (`gatehouse_wire::routes`, beside its
//!   server handler); an [`Operation`] (its name, whether it is a read, its capability,
//!   its place in `Operation::ALL`) in `error.rs`; its route in `routes.rs`; a method on
//!   its sub-client; and a call of it in `tests/it/routes.rs`, which checks every request
//!   the client sends against the registry;
//! - a new failure: an [`Error`] variant and its [`ErrorKind`] (with its place in
//!   [`ErrorKind::ALL`]) in `error.rs`, how answers map to it in `classify.rs`; then
//!   its row in the FFI's kind table (`From<ErrorKind> for GatehouseErrorKind`) and the
//!   CLI's exit table (`exit_for`), whose tests fail until it is there;
//! - a new upstream error body or message: `classify.rs`; what is scrubbed: `redact.rs`;
//! - how calls are sent, timed out or retried: `transport.rs`, `retry.rs`, `config.rs`.

mod capabilities;
mod capability_cache;
mod classify;
mod client;
mod config;
mod error;
mod execution;
mod inbox;
mod interactions;
mod redact;
mod retry;
mod routes;
mod runs;
mod service;
mod sessions;
mod sse;
mod transport;
mod upstream;
mod watch;

pub use capabilities::Capabilities;
pub use client::Client;
pub use config::{
    ClientBuilder, DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_STREAM_EVENT_BYTES, DEFAULT_STREAM_IDLE_TIMEOUT, DEFAULT_TIMEOUT,
};
pub use error::{Error, ErrorKind, Operation, Result, TransportSource};
pub use execution::{
    Execution, ExecutionEventStream, InterventionHandle, InterventionOutcome, InterventionRequest,
    InterventionState,
};
pub use inbox::{
    HostReport, HostState, Inbox, InboxCursor, InboxGate, InboxPage, MAX_INBOX_HOSTS,
    MAX_INBOX_PAGE,
};
pub use interactions::{
    Answer, ApproveAllReport, GateOutcome, InteractionPages, Interactions, RespondOptions,
    RespondOutcome, TurnApproveReport, DEFAULT_APPROVE_ALL_CONCURRENCY, DEFAULT_PAGE_SIZE,
};
pub use retry::RetryPolicy;
pub use runs::{RunStream, Runs, NDJSON};
pub use service::Service;
pub use sessions::{
    SessionEventStream, SessionEventUpdate, Sessions, StopOutcome, StopRequested,
    MAX_SESSION_EVENTS_RECONNECT_DELAY,
};
pub use upstream::{AgentaContract, AuthScheme, Upstream};
pub use watch::{WatchStream, WatchUpdate, MAX_WATCH_RECONNECT_DELAY, WATCH_STABLE_AFTER};

/// The wire types this client speaks, re-exported for convenience.
pub use gatehouse_wire as wire;

#[cfg(test)]
mod layering {
    /// Every module, top to bottom, with its source: the crate docs' table.
    const MODULES: &[(&str, &str)] = &[
        ("inbox", include_str!("inbox.rs")),
        ("interactions", include_str!("interactions.rs")),
        ("runs", include_str!("runs.rs")),
        ("execution", include_str!("execution.rs")),
        ("service", include_str!("service.rs")),
        ("sessions", include_str!("sessions.rs")),
        ("watch", include_str!("watch.rs")),
        ("capabilities", include_str!("capabilities.rs")),
        ("config", include_str!("config.rs")),
        ("sse", include_str!("sse.rs")),
        ("client", include_str!("client.rs")),
        ("capability_cache", include_str!("capability_cache.rs")),
        ("transport", include_str!("transport.rs")),
        ("routes", include_str!("routes.rs")),
        ("retry", include_str!("retry.rs")),
        ("classify", include_str!("classify.rs")),
        ("redact", include_str!("redact.rs")),
        ("upstream", include_str!("upstream.rs")),
        ("error", include_str!("error.rs")),
    ];

    /// The paths named as `crate::a::b`, shared with the server's layering test.
    mod shared {
        include!("../../../tests/shared/modules_used.rs");
    }

    /// The modules of [`MODULES`] that `source` names as `crate::<module>` in its code.
    fn modules_used(source: &str) -> Vec<&'static str> {
        shared::modules_used(source)
            .iter()
            .filter_map(|path| {
                let first = path.split("::").next().unwrap_or_default();
                MODULES
                    .iter()
                    .map(|(module, _)| *module)
                    .find(|module| *module == first)
            })
            .collect()
    }

    #[test]
    fn every_module_uses_only_modules_below_it() {
        let position = |name: &str| MODULES.iter().position(|(module, _)| *module == name);
        for (index, (module, source)) in MODULES.iter().enumerate() {
            for used in modules_used(source) {
                assert!(
                    position(used) > Some(index),
                    "{module}.rs uses crate::{used}, which is not below it in the crate docs' table"
                );
            }
        }
    }

    #[test]
    fn every_module_is_in_the_table() {
        let declared = include_str!("lib.rs")
            .lines()
            .filter_map(|line| line.strip_prefix("mod "))
            .filter_map(|rest| rest.strip_suffix(';'))
            .count();
        assert_eq!(declared, MODULES.len());
    }
}

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
