//! The client's integration tests, one module per area, in ONE test binary: the client
//! and the reference server are linked once for all of them, not once per file. Shared
//! helpers (scripted hostile servers, the reference server, a proxy) are in `common`.
//!
//! `tests/log_redaction.rs` stays a binary of its own: it installs the process-wide
//! tracing subscriber, which would record (and slow down) every other test here.

// Test code: a broken fixture or server should fail the test loudly, here and in helpers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod agenta_live;
mod agentplat_root_shape;
mod durable;
mod execution;
mod hostile;
mod inbox;
mod invoke;
mod routes;
mod runs_hostile;
mod server;
