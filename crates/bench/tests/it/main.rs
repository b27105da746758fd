//! The benchmark crate's integration tests, one module per area, in ONE test binary: the
//! server, the client and the benchmarks are linked once, not once per file.

// Test code: a broken fixture or server should fail the test loudly, here and in helpers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod inputs;
mod live_smoke;
mod stats;
