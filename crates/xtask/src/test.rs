//! `cargo xtask test`: every test of the project, in one command.
//!
//! 1. `cargo test --workspace` (wire contract, server, client, CLI with the demo, FFI).
//! 2. The JSON Schema and the OpenAPI document used from Python (`tests/python`:
//!    pytest, jsonschema, openapi-spec-validator).
//! 3. Schemathesis against a live `gatehouse serve` (`tests/schemathesis/run.py`:
//!    fixed seed, fixed examples per operation, a time cap).
//! 4. The JSON Schema used from TypeScript (`tests/typescript`: `npm ci`, then ajv
//!    under node's test runner).
//! 5. The server suite again on PostgreSQL 15, on a throwaway cluster this command
//!    starts and stops itself, and the crash and webhook tests' two-instance scenarios on it
//!    (skipped with a notice when PostgreSQL is not installed, a failure under CI=true).
//! 6. The bindings: regenerated and compared with the committed ones, then the
//!    packages a user installs (a Python wheel built by maturin, a Kotlin jar, each with
//!    the native library inside) built and tested from a fresh virtual environment and a
//!    fresh Maven project against a live `gatehouse serve` (`bindings/run-tests.sh`).
//!
//! At the end, one line lists the upstream conformance suites that were skipped
//! (fixtures not found) and how to run them.
//!
//! `--no-bindings` stops after step 5; `--postgres-only` runs step 5 alone.
//! Every Python step runs in one virtual environment under cargo's target directory
//! (`python-venv`, made with `python3 -m venv` on first use) with requirements-dev.txt
//! installed in it; nothing is pip-installed into the system's Python (Debian's refuses
//! that, PEP 668). `bindings/run-tests.sh` gets it as `$GATEHOUSE_PYTHON`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::postgres::{postgres_bin_dir, PostgresCluster};
use crate::util::{cargo, profile_dir, run_command, target_dir, workspace_root};

/// The environment variable every upstream conformance suite (Rust, Python, TypeScript)
/// appends a skipped suite to (`gatehouse_fixtures::SKIP_LOG_ENV`).
const SKIP_LOG_ENV: &str = "GATEHOUSE_SKIPPED_SUITES";

/// The virtual environment of the Python steps, under cargo's target directory (the same
/// folder `bindings/run-tests.sh` uses when run by hand).
const PYTHON_VENV: &str = "python-venv";

/// `cargo xtask test --help`.
const USAGE: &str = "usage: cargo xtask test [--no-bindings | --postgres-only]

Runs every test of the project (steps 1-6 in crates/xtask/src/test.rs):
  the Rust workspace, the schema and OpenAPI from Python, schemathesis against a live
  server, the schema from TypeScript, the server suite on PostgreSQL 15, the bindings.

  --no-bindings    stop after step 5 (no wheel, jar or Swift package)
  --postgres-only  run step 5 alone (the server suite on a throwaway PostgreSQL cluster)
  -h, --help       print this and exit

Environment: CI=true makes every upstream conformance suite required;
GATEHOUSE_FIXTURES=<folder with agenta/ and agentplat/> points them at the fixtures.";

pub fn run(args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return Ok(());
    }
    check_args(args)?;
    let root = workspace_root();
    if args.iter().any(|a| a == "--postgres-only") {
        return server_suite_on_postgres(&root);
    }
    // Every step (and every process it starts) logs a skipped upstream suite here; the
    // summary line at the end reads it back.
    let skip_log = std::env::temp_dir().join(format!(
        "gatehouse-skipped-suites-{}.log",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&skip_log);
    std::env::set_var(SKIP_LOG_ENV, &skip_log);
    let result = run_steps(&root, args);
    eprintln!("{}", skipped_summary(&skip_log));
    let _ = std::fs::remove_file(&skip_log);
    result
}

/// An unknown flag is refused before anything compiles: a typo must not start a
/// 20-minute run that ignores it.
fn check_args(args: &[String]) -> Result<(), String> {
    match args
        .iter()
        .find(|a| !matches!(a.as_str(), "--no-bindings" | "--postgres-only"))
    {
        Some(unknown) => Err(format!("unknown argument `{unknown}`\n{USAGE}")),
        None => Ok(()),
    }
}

/// One line: which upstream conformance suites were skipped, and how to run them.
fn skipped_summary(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut suites: Vec<&str> = Vec::new();
    let mut folders: Vec<&str> = Vec::new();
    for line in text.lines() {
        let mut fields = line.split('\t');
        let (Some(suite), Some(upstream)) = (fields.next(), fields.next()) else {
            continue;
        };
        if !suites.contains(&suite) {
            suites.push(suite);
        }
        if !folders.contains(&upstream) {
            folders.push(upstream);
        }
    }
    if suites.is_empty() {
        return "xtask test: every upstream conformance suite ran (Agenta and AgentPlat fixtures found)"
            .to_string();
    }
    suites.sort_unstable();
    format!(
        "xtask test: {} upstream conformance suite(s) SKIPPED, their fixtures ({}) not found: {}. \
         Run them with GATEHOUSE_FIXTURES=<folder holding agenta/ and agentplat/> cargo xtask test \
         (or lay shared/fixtures beside the checkout); under CI=true they are required.",
        suites.len(),
        folders.join(", "),
        suites.join("; ")
    )
}

fn run_steps(root: &Path, args: &[String]) -> Result<(), String> {
    let skip_bindings = args.iter().any(|a| a == "--no-bindings");
    let root = root.to_path_buf();

    // Build the binary first so the CLI tests and the binding tests find it.
    run_command(
        cargo()
            .current_dir(&root)
            .args(["build", "-p", "gatehouse-cli"]),
    )?;
    run_command(cargo().current_dir(&root).args(["test", "--workspace"]))?;

    let python = dev_python(&root)?;
    run_command(Command::new(&python).current_dir(&root).args([
        "-m",
        "pytest",
        "-q",
        "tests/python",
    ]))?;

    let server_binary = profile_dir(&target_dir(&root)?, "dev").join("gatehouse");
    run_command(
        Command::new(&python)
            .current_dir(&root)
            .arg("tests/schemathesis/run.py")
            .arg("--bin")
            .arg(&server_binary),
    )?;

    typescript_tests(&root)?;

    server_suite_on_postgres(&root)?;

    if skip_bindings {
        eprintln!("xtask test: --no-bindings given, binding tests skipped");
        return Ok(());
    }
    crate::bindings::run(&["--check".to_string()])?;
    run_command(
        Command::new("bash")
            .current_dir(&root)
            .env("GATEHOUSE_PYTHON", &python)
            .arg("bindings/run-tests.sh"),
    )?;
    Ok(())
}

/// `tests/typescript`: install exactly the locked packages (`npm ci`), then build and run
/// the tests (`npm test`: tsc, then node's test runner).
fn typescript_tests(root: &Path) -> Result<(), String> {
    let dir = root.join("tests/typescript");
    let npm_found = Command::new("npm")
        .arg("--version")
        .output()
        .map(|out| out.status.success())
        .unwrap_or(false);
    if !npm_found {
        return Err(
            "npm (Node.js 20 or newer) is needed for the TypeScript schema tests (tests/typescript)"
                .to_string(),
        );
    }
    run_command(Command::new("npm").current_dir(&dir).args([
        "ci",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
    ]))?;
    run_command(Command::new("npm").current_dir(&dir).args(["test"]))
}

/// The Python of every Python step: `<target>/python-venv/bin/python`, the environment
/// made with `python3 -m venv` when it is missing, requirements-dev.txt installed into it
/// (pip only checks what is already there: no download once it is complete).
fn dev_python(root: &Path) -> Result<PathBuf, String> {
    let venv = target_dir(root)?.join(PYTHON_VENV);
    let python = venv.join("bin").join("python");
    if !python.is_file() {
        run_command(Command::new("python3").args(["-m", "venv"]).arg(&venv)).map_err(|e| {
            format!("{e} (python3 with its venv module is required for the Python tests)")
        })?;
    }
    run_command(Command::new(&python).current_dir(root).args([
        "-m",
        "pip",
        "install",
        "-q",
        "-r",
        "requirements-dev.txt",
    ]))?;
    Ok(python)
}

/// `cargo test -p gatehouse-server` with `GATEHOUSE_TEST_DATABASE_URL` pointing at a
/// PostgreSQL cluster started here and stopped afterwards, whatever the outcome.
fn server_suite_on_postgres(root: &Path) -> Result<(), String> {
    let Some(bin) = postgres_bin_dir() else {
        if std::env::var_os("CI").is_some() {
            return Err(
                "PostgreSQL server binaries not found under /usr/lib/postgresql \
                        (apt-get install postgresql-15)"
                    .to_string(),
            );
        }
        eprintln!(
            "xtask test: PostgreSQL not installed, the server suite ran on SQLite only \
             (apt-get install postgresql-15 to run it on Postgres too)"
        );
        return Ok(());
    };
    let cluster = PostgresCluster::start(&bin)?;
    let result = run_command(
        cargo()
            .current_dir(root)
            .env("GATEHOUSE_TEST_DATABASE_URL", cluster.url())
            .args(["test", "-p", "gatehouse-server"]),
    )
    .and_then(|()| {
        // Two `gatehouse serve` processes on one PostgreSQL database, one stopped and
        // one killed mid-resume (crates/cli/tests/it/crash.rs: the `crash` module of the
        // CLI's one test binary), and two delivering webhooks from one outbox
        // (crates/cli/tests/it/webhooks.rs).
        run_command(
            cargo()
                .current_dir(root)
                .env("GATEHOUSE_TEST_DATABASE_URL", cluster.url())
                .args([
                    "test",
                    "-p",
                    "gatehouse-cli",
                    "--test",
                    "it",
                    "--",
                    "crash::",
                    "webhooks::",
                ]),
        )
    });
    cluster.stop();
    result
}

#[cfg(test)]
mod tests {
    use super::check_args;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn known_flags_pass_and_anything_else_is_refused() {
        assert!(check_args(&args(&[])).is_ok());
        assert!(check_args(&args(&["--no-bindings"])).is_ok());
        assert!(check_args(&args(&["--postgres-only"])).is_ok());
        let refused = check_args(&args(&["--no-binding"])).unwrap_err();
        assert!(
            refused.contains("unknown argument `--no-binding`"),
            "{refused}"
        );
        assert!(check_args(&args(&["--no-bindings", "extra"])).is_err());
    }
}
