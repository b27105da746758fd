//! The benchmark crate's integration tests, one module per area, in ONE test binary: the
//! server, the client and the benchmarks are linked once, not once per file.

mod inputs;
mod live_smoke;
mod stats;
