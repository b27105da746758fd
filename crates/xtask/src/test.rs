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
//!    starts and stops itself, and the crash tests' two-instance scenario on it
//!    (skipped with a notice when PostgreSQL is not installed, a failure under CI=true).
//! 6. The bindings: regenerated and compared with the committed ones, then the
//!    packages a user installs (a Python wheel, a Kotlin jar, each with the native
//!    library inside) built and tested from a fresh virtual environment and a fresh
//!    Maven project against a live `gatehouse serve` (`bindings/run-tests.sh`).
//!
//! At the end, one line lists the upstream conformance suites that were skipped
//! (fixtures not found) and how to run them.
//!
//! `--no-bindings` stops after step 5; `--postgres-only` runs step 5 alone.
//! Python test dependencies are installed from requirements-dev.txt when missing.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{cargo, profile_dir, run_command, target_dir, workspace_root};

/// The environment variable every upstream conformance suite (Rust, Python, TypeScript)
/// appends a skipped suite to (`gatehouse_fixtures::SKIP_LOG_ENV`).
const SKIP_LOG_ENV: &str = "GATEHOUSE_SKIPPED_SUITES";

pub fn run(args: &[String]) -> Result<(), String> {
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

    ensure_python_test_deps(&root)?;
    run_command(Command::new("python3").current_dir(&root).args([
        "-m",
        "pytest",
        "-q",
        "tests/python",
    ]))?;

    let server_binary = profile_dir(&target_dir(&root)?, "dev").join("gatehouse");
    run_command(
        Command::new("python3")
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

/// Install requirements-dev.txt when one of its modules is missing.
fn ensure_python_test_deps(root: &std::path::Path) -> Result<(), String> {
    let probe = Command::new("python3")
        .current_dir(root)
        .args([
            "-c",
            "import pytest, jsonschema, openapi_spec_validator, schemathesis",
        ])
        .status()
        .map_err(|e| format!("python3 is required for the schema and binding tests: {e}"))?;
    if probe.success() {
        return Ok(());
    }
    run_command(Command::new("python3").current_dir(root).args([
        "-m",
        "pip",
        "install",
        "-q",
        "-r",
        "requirements-dev.txt",
    ]))
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
        // one killed mid-resume (crates/cli/tests/crash.rs).
        run_command(
            cargo()
                .current_dir(root)
                .env("GATEHOUSE_TEST_DATABASE_URL", cluster.url())
                .args(["test", "-p", "gatehouse-cli", "--test", "crash"]),
        )
    });
    cluster.stop();
    result
}

/// The newest `/usr/lib/postgresql/<version>/bin` holding `initdb` and `pg_ctl`.
fn postgres_bin_dir() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| entry.ok().map(|e| e.path().join("bin")))
        .filter(|bin| bin.join("initdb").is_file() && bin.join("pg_ctl").is_file())
        .collect();
    dirs.sort();
    dirs.pop()
}

/// A throwaway cluster in a temporary folder, listening on 127.0.0.1 only.
struct PostgresCluster {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    as_postgres_user: bool,
}

impl PostgresCluster {
    fn start(bin: &Path) -> Result<Self, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| format!("no free port for PostgreSQL: {e}"))?;
        let dir = std::env::temp_dir().join(format!("gatehouse-pg-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {dir:?}: {e}"))?;
        // initdb refuses to run as root: run the cluster as the `postgres` user then.
        let as_postgres_user = is_root();
        if as_postgres_user {
            run_command(Command::new("chown").arg("postgres:postgres").arg(&dir))?;
        }
        let cluster = Self {
            bin: bin.to_path_buf(),
            dir,
            port,
            as_postgres_user,
        };
        let data = cluster.dir.join("data");
        let log = cluster.dir.join("server.log");
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {port} -k {} -c fsync=off -c max_connections=200",
            cluster.dir.display()
        );
        let started = run_command(
            cluster
                .pg("initdb")
                .args([
                    "-A",
                    "trust",
                    "-U",
                    "gatehouse",
                    "-E",
                    "UTF8",
                    "--no-sync",
                    "-D",
                ])
                .arg(&data),
        )
        .and_then(|()| {
            run_command(
                cluster
                    .pg("pg_ctl")
                    .arg("-D")
                    .arg(&data)
                    .arg("-l")
                    .arg(&log)
                    .args(["-o", &options, "-w", "-t", "60", "start"]),
            )
        });
        if let Err(e) = started {
            let log_text = std::fs::read_to_string(&log).unwrap_or_default();
            cluster.stop();
            return Err(format!("{e}\n{log_text}"));
        }
        Ok(cluster)
    }

    fn url(&self) -> String {
        format!("postgres://gatehouse@127.0.0.1:{}/postgres", self.port)
    }

    fn pg(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        if self.as_postgres_user {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        } else {
            Command::new(program)
        }
    }

    fn stop(self) {
        let data = self.dir.join("data");
        if data.exists() {
            let _ = self
                .pg("pg_ctl")
                .arg("-D")
                .arg(&data)
                .args(["-m", "fast", "-w", "stop"])
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
        .unwrap_or(false)
}
