//! `cargo xtask <command>`: the project's chores, in plain Rust with std::process.
//!
//! - `schema [--check]`: regenerate schema/ (JSON Schema per wire type, index.json, the
//!   server's openapi.json) from the wire types (or fail when stale).
//! - `bindings [--check]`: regenerate bindings/{kotlin,swift,python} (or fail when stale).
//! - `test`: run every test: Rust, Python (schema, OpenAPI), schemathesis against a live
//!   server, TypeScript (schema), the installed Python wheel and Kotlin jar.
//! - `bench`: run the benchmarks and rewrite BENCHMARKS.md.
//! - `package`: check publish flags and rust-versions against the lockfile, then
//!   `cargo package` (packaged and verify-built) every publishable crate.
//! - `native-lib`: build the native library every language's package takes, once, and
//!   print where it is.
//! - `dist [--list]`: what a release would publish (CLI, wheel, sdist, jar, crates), with
//!   checksums, in `<target>/dist/`.

// A command-line tool: it prints progress and failures of the chores it runs.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod bench;
mod bindings;
mod dist;
mod native_lib;
mod package;
mod postgres;
mod schema;
// The benchmark crate's order statistics, compiled in rather than depended on: the
// crate itself pulls in the server and the client, which `cargo xtask schema` must not
// have to build. xtask uses `Summary::of` only, hence the allow.
#[allow(dead_code)]
#[path = "../../bench/src/stats.rs"]
mod stats;
mod test;
mod util;

use std::process::ExitCode;

/// `cargo xtask` is `cargo run -p xtask`, which gives this process xtask's own
/// `CARGO_MANIFEST_DIR`, `CARGO_PKG_NAME`, ... Every cargo started from here would pass them
/// on to the build scripts' freshness checks (ring's reruns when `CARGO_MANIFEST_DIR` or
/// `CARGO_PKG_NAME` changes), so a build started here and the same build started from a
/// shell (or by maturin under pip) would each find the other's stale and compile ring,
/// rustls and the mobile library again (minutes, with LTO). Children see the caller's
/// environment instead.
fn forget_cargo_run_environment() {
    let names: Vec<String> = std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .filter(|name| {
            name.starts_with("CARGO_PKG_")
                || name.starts_with("CARGO_MANIFEST_")
                || matches!(
                    name.as_str(),
                    "CARGO_CRATE_NAME" | "CARGO_BIN_NAME" | "CARGO_PRIMARY_PACKAGE"
                )
        })
        .collect();
    for name in names {
        std::env::remove_var(name);
    }
}

fn main() -> ExitCode {
    forget_cargo_run_environment();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (command, rest) = match args.split_first() {
        Some((command, rest)) => (command.as_str(), rest),
        None => {
            eprintln!(
                "usage: cargo xtask <schema|bindings|test|bench|package|native-lib|dist> [--check]"
            );
            return ExitCode::from(2);
        }
    };
    let result = match command {
        "schema" => schema::run(rest),
        "bindings" => bindings::run(rest),
        "test" => test::run(rest),
        "bench" => bench::run(rest),
        "package" => package::run(rest),
        "native-lib" => native_lib::run(rest),
        "dist" => dist::run(rest),
        other => Err(format!(
            "unknown command `{other}`; expected schema, bindings, test, bench, package, native-lib or dist"
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask {command}: {message}");
            ExitCode::FAILURE
        }
    }
}
