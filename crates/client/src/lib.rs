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
//!   [`Client::capabilities`].
//! - Every failure is one flat [`Error`] naming its [`Operation`], with
//!   [`Error::kind`] (an [`ErrorKind`] with a stable name: the one table the FFI's
//!   error variants and the CLI's exit codes are mapped from) and
//!   [`Error::is_retryable`].
//! - Reads are retried with jittered, bounded backoff ([`RetryPolicy`]); a respond is
//!   never blindly replayed (it carries an `Idempotency-Key`, see
//!   [`Interactions::respond_with_idempotency_key`]).
//! - Each HTTP call runs in a `gatehouse_call` tracing span (operation, method,
//!   status, attempts, duration); the API key and request contents are never logged.

#![warn(missing_docs)]

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
    AuthScheme, ClientBuilder, DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_STREAM_IDLE_TIMEOUT, DEFAULT_TIMEOUT,
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
