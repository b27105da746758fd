//! # gatehouse-client
//!
//! Async Rust client for Gatehouse-compatible control planes (Agenta's session
//! interactions, AgentPlat's execution sessions, and Gatehouse's own additions):
//! list, answer and watch the gates a running agent opens, and run agents.
//!
//! ```no_run
//! # async fn demo() -> Result<(), gatehouse_client::Error> {
//! use gatehouse_client::{Answer, Client, Error};
//! let client = Client::builder("http://127.0.0.1:8080")
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
//!   [`Client::execution`], [`Client::capabilities`].
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
//! | module | holds |
//! |---|---|
//! | `interactions.rs`, `runs.rs`, `execution.rs`, `service.rs` | the sub-clients, one per domain: each builds `Call`s and hands them to its `Client` |
//! | `watch.rs`, `sse.rs` | the interaction watch; the SSE parser and the reconnect loop it shares with the execution event stream (which reads AgentPlat's versioned SSE envelope, in `execution.rs`) |
//! | `capabilities.rs` | the [`Capabilities`] sub-client, and the capability cache every call is checked against before it is sent |
//! | `client.rs` | [`Client`], the handle every sub-client holds: `send` opens the `gatehouse_call` span, asks the capability cache, lets the transport send, and teaches the cache |
//! | `config.rs` | [`ClientBuilder`], [`Upstream`], [`AuthScheme`], the `DEFAULT_*` settings |
//! | `transport.rs` | the transport: a `Call` in, an answer or an [`Error`] out (URLs, credentials, attempts, bounded reads, `Retry-After`) |
//! | `retry.rs` | [`RetryPolicy`] and `with_retries`, the one retry loop (the transport's and the respond path's) |
//! | `classify.rs` | classification: HTTP status + upstream error bodies (FastAPI, AgentPlat, Gatehouse codes) to [`Error`]; reqwest failures; decode errors |
//! | `redact.rs` | bounds and secret scrubbing of every text an [`Error`] keeps |
//! | `error.rs` | [`Error`], [`Operation`] and [`ErrorKind`], the kind table |
//!
//! The last five know nothing of the modules above them: the transport does not know
//! the sub-clients nor the capability cache (a route-not-found 404 comes back as
//! [`Error::CapabilityUnavailable`] and `Client::send` remembers it).
//!
//! Where a change goes:
//! - a new endpoint: an [`Operation`] (its name, whether it is a read, its capability)
//!   in `error.rs`, and a method on its sub-client;
//! - a new failure: an [`Error`] variant and its [`ErrorKind`] (with its place in
//!   [`ErrorKind::ALL`]) in `error.rs`, how answers map to it in `classify.rs`; then
//!   its row in the FFI's kind table (`From<ErrorKind> for GatehouseErrorKind`) and the
//!   CLI's exit table (`exit_for`), whose tests fail until it is there;
//! - a new upstream error body or message: `classify.rs`; what is scrubbed: `redact.rs`;
//! - how calls are sent, timed out or retried: `transport.rs`, `retry.rs`, `config.rs`.

mod capabilities;
mod classify;
mod client;
mod config;
mod error;
mod execution;
mod interactions;
mod redact;
mod retry;
mod runs;
mod service;
mod sse;
mod transport;
mod watch;

pub use capabilities::Capabilities;
pub use client::Client;
pub use config::{
    AuthScheme, ClientBuilder, Upstream, DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_STREAM_EVENT_BYTES, DEFAULT_STREAM_IDLE_TIMEOUT, DEFAULT_TIMEOUT,
};
pub use error::{Error, ErrorKind, Operation, Result, TransportSource};
pub use execution::{
    Execution, ExecutionEventStream, InterventionHandle, InterventionOutcome, InterventionRequest,
    InterventionState,
};
pub use interactions::{
    Answer, ApproveAllReport, Interactions, DEFAULT_APPROVE_ALL_CONCURRENCY, DEFAULT_PAGE_SIZE,
};
pub use retry::RetryPolicy;
pub use runs::{RunStream, Runs, NDJSON};
pub use service::Service;
pub use watch::{WatchStream, WatchUpdate, MAX_WATCH_RECONNECT_DELAY};

/// The wire types this client speaks, re-exported for convenience.
pub use gatehouse_wire as wire;
