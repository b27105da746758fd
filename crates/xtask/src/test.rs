//! `cargo xtask test`: every test of the project, in one command.
//!
//! 1. `cargo test --workspace` (wire contract, server, client, CLI with the demo, FFI).
//! 2. The JSON Schema and the OpenAPI document used from Python (`tests/python`:
//!    pytest, jsonschema, openapi-spec-validator).
//!    Then a Python client generated from `schema/openapi.json` by openapi-python-client
//!    (into a temporary folder), used against a live `gatehouse serve`
//!    (`tests/openapi_client`).
//!    Then the upstream conformance suite against Agenta's SDK itself
//!    (`tests/agenta_oracle/run.py`: thousands of generated configs stamped by
//!    `agenta==0.125.1`'s own function and by `gatehouse wire stamp --batch`; its
//!    `request_to_wire` bodies; rows rendered by the FastAPI and pydantic it pins), in its own
//!    virtual environment (`agenta-venv`: the SDK pulls litellm, openai, daytona and pins
//!    FastAPI, about 450 MB, kept apart from the test tools' environment).
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
//! Before anything compiles, every tool the chosen steps run is looked for ([`TOOLS`]);
//! a missing one stops the run at once with one message naming each and how to install
//! it (PostgreSQL and faketime only under CI=true, elsewhere their tests are skipped;
//! swift never: one line says its suite is skipped).
//! Every Python step runs in one virtual environment under cargo's target directory
//! (`python-venv`, made with `python3 -m venv` on first use) with requirements-dev.txt
//! installed in it; nothing is pip-installed into the system's Python (Debian's refuses
//! that, PEP 668). `bindings/run-tests.sh` gets it as `$GATEHOUSE_PYTHON`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::postgres::{postgres_bin_dir, PostgresCluster};
use crate::util::{cargo, profile_dir, run_command, target_dir, workspace_root};

/// The environment variable every upstream conformance suite (Rust, Python, TypeScript)
/// appends a skipped suite to (`gatehouse_fixtures::SKIP_LOG_ENV`).
const SKIP_LOG_ENV: &str = "GATEHOUSE_SKIPPED_SUITES";

/// The virtual environment of the Python steps, under cargo's target directory (the same
/// folder `bindings/run-tests.sh` uses when run by hand).
const PYTHON_VENV: &str = "python-venv";

/// The virtual environment of the Agenta SDK oracle (`tests/agenta_oracle`), under cargo's
/// target directory.
const AGENTA_VENV: &str = "agenta-venv";

/// `cargo xtask test --help`.
const USAGE: &str = "usage: cargo xtask test [--no-bindings | --postgres-only]

Runs every test of the project (steps 1-6 in crates/xtask/src/test.rs):
  the Rust workspace, the schema and OpenAPI from Python (and a client generated from
  the OpenAPI document, against a live server), schemathesis against a live server, the
  schema from TypeScript, the server suite on PostgreSQL 15, the bindings.
Every tool it runs (python3 with venv, node, npm, PostgreSQL, faketime, cc, mvn, javac,
swift) is looked for first; a missing one stops it before anything compiles.

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
    check_tools(args)?;
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

/// How much a step needs a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    /// Its step fails without it.
    Required,
    /// Its tests skip themselves without it (one line says so), except under `CI=true`.
    RequiredUnderCi,
    /// Its suite is skipped without it, even under CI (no toolchain on most machines).
    Optional,
}

/// How to tell that a tool is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    /// The command runs and exits 0.
    Runs(&'static [&'static str]),
    /// PostgreSQL's server binaries (`initdb`, `pg_ctl`) under /usr/lib/postgresql.
    PostgresServer,
}

/// A tool a step of `cargo xtask test` runs, beside cargo.
#[derive(Debug, Clone, Copy)]
struct Tool {
    name: &'static str,
    probe: Probe,
    /// The steps that run it.
    used_by: &'static str,
    /// How to install it (Debian/Ubuntu).
    install: &'static str,
    need: Need,
    /// Only the bindings step (step 6) runs it.
    bindings_only: bool,
}

/// Every tool of a full run (crates/xtask/src/test.rs, postgres.rs, bindings.rs,
/// bindings/run-tests.sh, and the server's tests that start one themselves).
const TOOLS: &[Tool] = &[
    Tool {
        name: "python3 with venv",
        probe: Probe::Runs(&["python3", "-c", "import ensurepip, venv"]),
        used_by: "the Python steps (their virtual environment)",
        install: "apt-get install python3 python3-venv",
        need: Need::Required,
        bindings_only: false,
    },
    Tool {
        name: "node (20 or newer)",
        probe: Probe::Runs(&[
            "node",
            "-e",
            "process.exit(Number(process.versions.node.split('.')[0]) >= 20 ? 0 : 1)",
        ]),
        used_by: "the TypeScript schema tests (tests/typescript)",
        install: "apt-get install nodejs npm",
        need: Need::Required,
        bindings_only: false,
    },
    Tool {
        name: "npm",
        probe: Probe::Runs(&["npm", "--version"]),
        used_by: "the TypeScript schema tests (tests/typescript)",
        install: "apt-get install npm",
        need: Need::Required,
        bindings_only: false,
    },
    Tool {
        name: "PostgreSQL (initdb, pg_ctl)",
        probe: Probe::PostgresServer,
        used_by: "the server suite on PostgreSQL (step 5)",
        install: "apt-get install postgresql-15",
        need: Need::RequiredUnderCi,
        bindings_only: false,
    },
    Tool {
        name: "faketime",
        probe: Probe::Runs(&["faketime", "-f", "+1s", "true"]),
        used_by: "the server's clock-skew test (which installs it itself when run as root)",
        install: "apt-get install faketime",
        need: Need::RequiredUnderCi,
        bindings_only: false,
    },
    Tool {
        name: "C compiler (cc)",
        probe: Probe::Runs(&["cc", "--version"]),
        used_by: "the Swift header check (bindings/swift/check.py)",
        install: "apt-get install build-essential",
        need: Need::Required,
        bindings_only: true,
    },
    Tool {
        name: "nm and strip",
        probe: Probe::Runs(&["sh", "-c", "command -v nm && command -v strip"]),
        used_by: "the mobile library check (bindings/check-mobile-lib.sh)",
        install: "apt-get install binutils",
        need: Need::Required,
        bindings_only: true,
    },
    Tool {
        name: "mvn",
        probe: Probe::Runs(&["mvn", "--version"]),
        used_by: "the Kotlin jar and its tests (bindings/kotlin)",
        install: "apt-get install maven",
        need: Need::Required,
        bindings_only: true,
    },
    Tool {
        name: "javac (a JDK, 17 or newer)",
        probe: Probe::Runs(&["javac", "-version"]),
        used_by: "the Kotlin jar and its tests (bindings/kotlin)",
        install: "apt-get install openjdk-17-jdk-headless",
        need: Need::Required,
        bindings_only: true,
    },
    Tool {
        name: "swift",
        probe: Probe::Runs(&["swift", "--version"]),
        used_by: "the Swift package's suite",
        install: "a Swift toolchain from swift.org",
        need: Need::Optional,
        bindings_only: true,
    },
];

/// What the tool check found: the missing tools that stop the run, and one line per
/// missing tool whose tests are skipped.
#[derive(Debug, Default, PartialEq, Eq)]
struct ToolReport {
    missing: Vec<String>,
    skipped: Vec<String>,
}

/// Sort the tools a run with `args` needs into missing and skipped, `found` telling
/// whether one is there; `under_ci` (`CI=true`) makes the CI-only ones required.
fn tool_report(
    tools: &[Tool],
    args: &[String],
    under_ci: bool,
    found: impl Fn(&Tool) -> bool,
) -> ToolReport {
    let postgres_only = args.iter().any(|a| a == "--postgres-only");
    let no_bindings = args.iter().any(|a| a == "--no-bindings");
    let mut report = ToolReport::default();
    for tool in tools {
        let runs = if postgres_only {
            tool.probe == Probe::PostgresServer
        } else {
            !(no_bindings && tool.bindings_only)
        };
        if !runs || found(tool) {
            continue;
        }
        let line = format!(
            "{}: needed by {}; install: {}",
            tool.name, tool.used_by, tool.install
        );
        match tool.need {
            Need::Required => report.missing.push(line),
            Need::RequiredUnderCi if under_ci => report.missing.push(line),
            Need::RequiredUnderCi | Need::Optional => {
                report.skipped.push(format!("{line}. Not found: skipped"));
            }
        }
    }
    report
}

/// Whether `tool` is on this machine.
fn tool_found(tool: &Tool) -> bool {
    match tool.probe {
        Probe::PostgresServer => postgres_bin_dir().is_some(),
        Probe::Runs(command) => {
            let Some((program, args)) = command.split_first() else {
                return false;
            };
            Command::new(program)
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
        }
    }
}

/// Every tool the run needs is looked for before anything compiles: a missing npm or mvn
/// must not surface after 20 minutes of cargo. Missing required tools stop the run with
/// one message naming each and how to install it; each optional one gets a line.
fn check_tools(args: &[String]) -> Result<(), String> {
    let under_ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let report = tool_report(TOOLS, args, under_ci, tool_found);
    for line in &report.skipped {
        eprintln!("xtask test: {line}");
    }
    if report.missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "missing tools, nothing was run:\n  - {}{}",
        report.missing.join("\n  - "),
        if under_ci {
            "\n(CI=true: PostgreSQL and faketime are required too)"
        } else {
            ""
        }
    ))
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
        "xtask test: {} upstream conformance suite(s) SKIPPED, their fixtures or upstream code ({}) not found: {}. \
         Run them with GATEHOUSE_FIXTURES=<folder holding agenta/ and agentplat/> cargo xtask test \
         (or lay shared/fixtures beside the checkout; the SDK oracle needs PyPI); under CI=true they are required.",
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
    // A client generated from schema/openapi.json (openapi-python-client), against a
    // live server.
    run_command(
        Command::new(&python)
            .current_dir(&root)
            .env("GATEHOUSE_BIN", &server_binary)
            .args(["-m", "pytest", "-q", "tests/openapi_client"]),
    )?;
    agenta_oracle_suite(&root, &server_binary)?;

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

/// The upstream conformance suite against Agenta's SDK (`tests/agenta_oracle/run.py`),
/// with the SDK from PyPI installed into its own environment
/// (`tests/agenta_oracle/requirements.txt`). When the SDK cannot be installed (PyPI out of
/// reach), the suite is skipped with one line outside CI and fails under `CI=true`, as an
/// upstream suite without its fixtures does.
fn agenta_oracle_suite(root: &Path, gatehouse: &Path) -> Result<(), String> {
    const SUITE: &str = "Agenta SDK oracle (tests/agenta_oracle)";
    let venv = target_dir(root)?.join(AGENTA_VENV);
    let python = venv.join("bin").join("python");
    let installed = (|| {
        if !python.is_file() {
            run_command(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
        }
        run_command(Command::new(&python).current_dir(root).args([
            "-m",
            "pip",
            "install",
            "-q",
            "-r",
            "tests/agenta_oracle/requirements.txt",
        ]))
    })();
    if let Err(err) = installed {
        if ci_required() {
            return Err(format!(
                "{SUITE}: agenta==0.125.1 could not be installed from PyPI ({err}); CI=true makes it required"
            ));
        }
        eprintln!(
            "xtask test: skipped upstream conformance suite {SUITE:?}: agenta==0.125.1 could not be installed from PyPI ({err})"
        );
        if let Some(log) = std::env::var_os(SKIP_LOG_ENV) {
            use std::io::Write;
            if let Ok(mut out) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
            {
                let _ = writeln!(
                    out,
                    "{SUITE}\tagenta==0.125.1 from PyPI\t{}",
                    venv.display()
                );
            }
        }
        return Ok(());
    }
    run_command(
        Command::new(&python)
            .current_dir(root)
            .arg("tests/agenta_oracle/run.py")
            .arg("--bin")
            .arg(gatehouse),
    )
}

/// `CI=true` (or `1`, `yes`): every upstream conformance suite is required (the rule of
/// `gatehouse_fixtures::required`).
fn ci_required() -> bool {
    matches!(
        std::env::var("CI")
            .as_deref()
            .map(str::to_ascii_lowercase)
            .as_deref(),
        Ok("true" | "1" | "yes")
    )
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
pub fn dev_python(root: &Path) -> Result<PathBuf, String> {
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
    use super::{check_args, tool_report, Probe, ToolReport, TOOLS};

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

    fn names(lines: &[String]) -> Vec<&str> {
        lines
            .iter()
            .map(|line| line.split(':').next().unwrap())
            .collect()
    }

    #[test]
    fn every_tool_found_means_nothing_missing_and_nothing_skipped() {
        for ci in [false, true] {
            assert_eq!(
                tool_report(TOOLS, &args(&[]), ci, |_| true),
                ToolReport::default()
            );
        }
    }

    #[test]
    fn a_missing_required_tool_is_named_with_how_to_install_it() {
        let report = tool_report(TOOLS, &args(&[]), false, |tool| tool.name != "npm");
        assert_eq!(
            report.missing,
            vec!["npm: needed by the TypeScript schema tests (tests/typescript); install: apt-get install npm"]
        );
        assert!(report.skipped.is_empty());
    }

    #[test]
    fn postgres_and_faketime_are_skipped_outside_ci_and_required_under_it() {
        let missing =
            |tool: &super::Tool| tool.name != "faketime" && tool.probe != Probe::PostgresServer;
        let outside = tool_report(TOOLS, &args(&[]), false, missing);
        assert!(outside.missing.is_empty(), "{outside:?}");
        assert_eq!(
            names(&outside.skipped),
            vec!["PostgreSQL (initdb, pg_ctl)", "faketime"]
        );
        let under_ci = tool_report(TOOLS, &args(&[]), true, missing);
        assert_eq!(
            names(&under_ci.missing),
            vec!["PostgreSQL (initdb, pg_ctl)", "faketime"]
        );
        assert!(under_ci.skipped.is_empty());
    }

    #[test]
    fn swift_is_optional_even_under_ci() {
        let report = tool_report(TOOLS, &args(&[]), true, |tool| tool.name != "swift");
        assert!(report.missing.is_empty(), "{report:?}");
        assert_eq!(names(&report.skipped), vec!["swift"]);
        assert!(report.skipped[0].ends_with("Not found: skipped"));
    }

    #[test]
    fn the_flags_narrow_the_tools_looked_for() {
        let nothing = |_: &super::Tool| false;
        let full = tool_report(TOOLS, &args(&[]), false, nothing);
        assert!(names(&full.missing).contains(&"mvn"));
        let no_bindings = tool_report(TOOLS, &args(&["--no-bindings"]), false, nothing);
        let missing = names(&no_bindings.missing);
        assert!(!missing.contains(&"mvn") && !missing.contains(&"javac (a JDK, 17 or newer)"));
        assert!(missing.contains(&"npm") && missing.contains(&"python3 with venv"));
        assert!(!names(&no_bindings.skipped).contains(&"swift"));
        let postgres_only = tool_report(TOOLS, &args(&["--postgres-only"]), true, nothing);
        assert_eq!(
            names(&postgres_only.missing),
            vec!["PostgreSQL (initdb, pg_ctl)"]
        );
        assert!(postgres_only.skipped.is_empty());
    }
}
