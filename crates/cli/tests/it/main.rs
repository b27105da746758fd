//! The CLI's integration tests, one module per area, in ONE test binary: the server and
//! the client are linked once for all of them, not once per file. The tests run the
//! built `gatehouse` binary (`common::BIN`) as child processes, so none of them needs a
//! test process of its own.
//!
//! `cargo xtask test` runs `crash` and `webhooks` again on PostgreSQL (`--test it crash::`,
//! `--test it webhooks::`).

// Test code: a broken fixture or server should fail the test loudly, here and in helpers.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Tests report on stderr what they skipped (no database, no fd limit) or measured.
#![allow(clippy::print_stderr)]

mod common;
mod replay;

mod agenta_replay;
mod agentplat_replay;
mod crash;
mod demo;
mod durable;
mod hostile_host;
mod interactions;
mod interventions;
mod interventions_follow;
mod invoke;
mod serve;
mod webhooks;
mod wire;
