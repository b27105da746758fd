//! The server's integration tests, one module per area, in ONE test binary: the whole
//! server is linked once for all of them, not once per file. Shared helpers are in
//! `common` (`Harness`, direct database access).
//!
//! `tests/logging.rs` stays a binary of its own: it installs the process-wide tracing
//! subscriber and counts the request lines of its one server, which the other tests'
//! servers would add to (and slow down) in a shared process. `tests/real_tools.rs` (a real
//! Prometheus scraping `/metrics`, a page in headless Chromium calling the API) is one too:
//! starting those tools takes the cores for seconds, which starved the lease-timing tests
//! here when they ran side by side.

// Test code: a broken fixture or server should fail the test loudly, here and in helpers.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Tests report on stderr what they skipped (no database, no fd limit) or measured.
#![allow(clippy::print_stderr)]

mod common;

mod admission;
mod agenta;
mod agenta_live;
mod agentplat_dropin;
mod agentplat_root_paths;
mod announcements;
mod approved_call_runs;
mod bad_input;
mod batch;
mod batch_idempotency;
mod clock_skew;
mod concurrency;
mod control_chars;
mod cors;
mod crash_safety;
mod database_faults;
mod durable_respond;
mod durable_stop;
mod execution;
mod fail_closed;
mod fd_limit;
mod fuzz;
mod gate_digest;
mod http_layer;
mod interactions;
mod lease;
mod limits_and_races;
mod metrics;
mod nul_text;
mod one_resume_per_turn;
mod openapi;
mod parallel_gates;
mod project_keys;
mod query_plans;
mod request_ids;
mod restart;
mod resume_claims;
mod retention;
mod run;
mod secrets_at_rest;
mod story;
mod unknown_filter_keys;
mod watch;
mod webhook_lanes;
