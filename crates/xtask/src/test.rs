//! `cargo xtask test`: every test of the project, in one command.
//!
//! 1. `cargo test --workspace` (wire contract, server, client, CLI with the demo, FFI).
//! 2. The JSON Schema used from Python (`tests/python`, pytest + jsonschema).
//! 3. The bindings: regenerated and compared with the committed ones, then the
//!    Python and Kotlin binding tests against a live `gatehouse serve`.
//!
//! Python test dependencies are installed from requirements-dev.txt when missing.

use std::process::Command;

use crate::util::{cargo, run_command, workspace_root};

pub fn run(args: &[String]) -> Result<(), String> {
    let skip_bindings = args.iter().any(|a| a == "--no-bindings");
    let root = workspace_root();

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

/// Install requirements-dev.txt when one of its modules is missing.
fn ensure_python_test_deps(root: &std::path::Path) -> Result<(), String> {
    let probe = Command::new("python3")
        .current_dir(root)
        .args(["-c", "import pytest, jsonschema"])
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
