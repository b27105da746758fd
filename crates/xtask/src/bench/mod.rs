//! `cargo xtask bench [--quick] [--no-mobile]`: run every benchmark side by side and
//! rewrite BENCHMARKS.md.
//!
//! 1. `cargo bench -p gatehouse-bench --bench micro --no-run` (the criterion target and
//!    the bench driver) and `cargo xtask native-lib`'s build (the release library the
//!    bindings load, the one the packages ship);
//! 2. `gatehouse-bench prepare-stamp`: the stamp inputs shared with Agenta, and
//!    Gatehouse's outputs on them;
//! 3. `cargo bench -p gatehouse-bench --bench micro` (criterion, into
//!    `<target>/gatehouse-bench/criterion`): stamping, typed vs untyped `/run` parsing;
//! 4. `bench/python/agenta_stamp.py`: Agenta's own `stamp_effective_parameters` from the
//!    `agenta==0.125.1` wheel (downloaded with `pip download --no-deps` into
//!    `<target>/gatehouse-bench/agenta`), parity and timing;
//! 5. `gatehouse-bench live`: respond, respond with metrics on vs off, approve-all,
//!    contention, FFI (with
//!    `bench/python/ffi_respond.py`, the Kotlin binding's `RespondCostBench.kt`, run by
//!    Maven, and the Swift binding's `bench/swift` where a Swift toolchain exists), the floor, and the sustained respond load against
//!    the resume workers (SQLite, and a PostgreSQL cluster started for it), and row 14's
//!    fan-out (10,000 watch streams on a server child, both databases);
//! 6. the mobile library (`cargo xtask native-lib --profile mobile`), a stripped copy, `cargo tree`;
//! 7. BENCHMARKS.md: the table, then `bench/NOTES.md` (the profiling notes) verbatim
//!    (rendered by [`report`] from the outputs of steps 3 to 6).
//!
//! `<target>` is cargo's target directory (`CARGO_TARGET_DIR` when set; see
//! [`crate::util::target_dir`]); every built artifact is read from it too.
//!
//! `--quick` runs tiny counts and writes `<target>/gatehouse-bench/BENCHMARKS.quick.md`
//! instead (a smoke test of the pipeline; its numbers mean nothing).
//! `--no-mobile` skips step 6 (the row then says so).
//! `--render-only` skips steps 1 to 5 and renders from the outputs of the last run (step
//! 6 then measures the existing mobile library without rebuilding it), under that run's
//! date, commit and duration (`<target>/gatehouse-bench/context.json`): for editing
//! bench/NOTES.md after a run.

mod report;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{cargo, profile_dir, read_json, run_command, target_dir, workspace_root};
use report::{render, Context, Mobile};

const AGENTA_WHEEL: &str = "agenta-0.125.1-py3-none-any.whl";

struct Options {
    quick: bool,
    mobile: bool,
    render_only: bool,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        quick: false,
        mobile: true,
        render_only: false,
    };
    for arg in args {
        match arg.as_str() {
            "--quick" => options.quick = true,
            "--no-mobile" => options.mobile = false,
            "--render-only" => options.render_only = true,
            other => {
                return Err(format!(
                    "unknown argument `{other}`; usage: cargo xtask bench [--quick] [--no-mobile] [--render-only]"
                ))
            }
        }
    }
    Ok(options)
}

pub fn run(args: &[String]) -> Result<(), String> {
    let options = parse(args)?;
    let root = workspace_root();
    let target = target_dir(&root)?;
    let out = target.join("gatehouse-bench");
    fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let started = std::time::Instant::now();
    let criterion_home = out.join("criterion");
    let agenta_report = out.join("agenta.json");
    let live_report = out.join("live.json");
    if !options.render_only {
        measure(&root, &target, &out, &options)?;
    }

    // 6. The mobile library.
    let mobile = if options.mobile {
        Some(mobile_library(&root, &target, &out, !options.render_only)?)
    } else {
        None
    };

    // 7. The report. A render-only pass keeps the measured run's date, commit and
    // duration (`context.json`, written when the run finished measuring).
    let context_path = out.join(if options.quick {
        "context.quick.json"
    } else {
        "context.json"
    });
    let context = if options.render_only {
        let text = fs::read_to_string(&context_path).map_err(|e| {
            format!(
                "cannot read {} (run `cargo xtask bench` without --render-only first): {e}",
                context_path.display()
            )
        })?;
        serde_json::from_str::<Context>(&text)
            .map_err(|e| format!("cannot read {}: {e}", context_path.display()))?
    } else {
        let context = Context::gather(&root, started.elapsed(), options.quick);
        let text = serde_json::to_string_pretty(&context)
            .map_err(|e| format!("cannot serialize the run's context: {e}"))?;
        fs::write(&context_path, text)
            .map_err(|e| format!("cannot write {}: {e}", context_path.display()))?;
        context
    };
    let markdown = render(
        &context,
        &criterion_home,
        &read_json(&agenta_report)?,
        &read_json(&live_report)?,
        mobile.as_ref(),
        &root.join("bench/NOTES.md"),
    )?;
    let target = if options.quick {
        out.join("BENCHMARKS.quick.md")
    } else {
        root.join("BENCHMARKS.md")
    };
    fs::write(&target, markdown).map_err(|e| format!("cannot write {}: {e}", target.display()))?;
    eprintln!(
        "xtask bench: wrote {} in {:.0} s",
        target.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Steps 1 to 5: build, then run every measurement into `out`.
fn measure(root: &Path, target: &Path, out: &Path, options: &Options) -> Result<(), String> {
    let root = root.to_path_buf();
    // 1. Build. `cargo bench --no-run` builds the criterion target and the driver binary
    // with one feature set, so step 3 rebuilds nothing; the FFI library is built on its
    // own (its features stay its own, as in the bindings).
    run_command(cargo().current_dir(&root).args([
        "bench",
        "-p",
        "gatehouse-bench",
        "--bench",
        "micro",
        "--no-run",
    ]))?;
    crate::native_lib::build(&root, target, crate::native_lib::PROFILE)?;
    let driver = profile_dir(target, "bench").join("gatehouse-bench");

    // 2. Stamp inputs and Gatehouse's outputs.
    let inputs = out.join("inputs");
    run_command(
        Command::new(&driver)
            .current_dir(&root)
            .arg("prepare-stamp")
            .arg("--dir")
            .arg(&inputs)
            .args(["--generated", if options.quick { "20" } else { "200" }]),
    )?;

    // 3. Criterion.
    let criterion_home = out.join("criterion");
    if criterion_home.exists() {
        fs::remove_dir_all(&criterion_home)
            .map_err(|e| format!("cannot clear {}: {e}", criterion_home.display()))?;
    }
    let mut bench = cargo();
    bench
        .current_dir(&root)
        .env("CRITERION_HOME", &criterion_home)
        .args(["bench", "-p", "gatehouse-bench", "--bench", "micro", "--"]);
    if options.quick {
        bench.args([
            "--warm-up-time",
            "0.2",
            "--measurement-time",
            "0.5",
            "--sample-size",
            "10",
        ]);
    }
    run_command(&mut bench)?;

    // 4. Agenta's Python implementation.
    let wheel = ensure_agenta_wheel(&out.join("agenta"))?;
    let agenta_report = out.join("agenta.json");
    let mut agenta = Command::new("python3");
    agenta
        .current_dir(&root)
        .arg("bench/python/agenta_stamp.py")
        .arg("--wheel")
        .arg(&wheel)
        .arg("--inputs")
        .arg(&inputs)
        .arg("--out")
        .arg(&agenta_report);
    if options.quick {
        agenta.arg("--quick");
    }
    eprintln!("+ {agenta:?}");
    let status = agenta
        .status()
        .map_err(|e| format!("cannot start python3: {e}"))?;
    // 1 = a parity mismatch: the report is written and the table shows it.
    if !status.success() && status.code() != Some(1) {
        return Err(format!("bench/python/agenta_stamp.py failed with {status}"));
    }

    // 5. Live benchmarks, with the Python binding over the release library.
    let package = prepare_python_package(&root, target, out)?;
    let live_report = out.join("live.json");
    let mut live = Command::new(&driver);
    live.current_dir(&root)
        .arg("live")
        .arg("--out")
        .arg(&live_report)
        .args(["--python", "python3", "--ffi-script"])
        .arg(root.join("bench/python/ffi_respond.py"));
    if let Some(package) = &package {
        live.arg("--python-package").arg(package);
    }
    // The Kotlin side of the binding row, over the same release library.
    let release = profile_dir(target, "release");
    if answers("mvn") && release.join("libgatehouse_ffi.so").exists() {
        live.arg("--kotlin-project")
            .arg(root.join("bindings/kotlin"))
            .arg("--kotlin-lib-dir")
            .arg(&release);
    } else {
        eprintln!("xtask bench: Maven or the release library is missing; the Kotlin binding is not measured (the row says so)");
    }
    // The Swift side, where the machine has a Swift toolchain.
    if answers("swift") && release.join("libgatehouse_ffi.so").exists() {
        live.arg("--swift-package")
            .arg(root.join("bench/swift"))
            .arg("--swift-lib-dir")
            .arg(&release);
    } else {
        eprintln!("xtask bench: no Swift toolchain (or no release library); the Swift binding is not measured (the row says so)");
    }
    if options.quick {
        live.arg("--quick");
    }
    // Row 9 runs on a PostgreSQL cluster of its own too, when PostgreSQL is installed.
    let cluster = match crate::postgres::postgres_bin_dir() {
        Some(bin) => Some(crate::postgres::PostgresCluster::start(&bin)?),
        None => {
            eprintln!(
                "xtask bench: PostgreSQL not installed; the sustained-load row runs on SQLite only"
            );
            None
        }
    };
    if let Some(cluster) = &cluster {
        live.arg("--postgres-url").arg(cluster.url());
    }
    let result = run_command(&mut live);
    if let Some(cluster) = cluster {
        cluster.stop();
    }
    result
}

/// The agenta 0.125.1 wheel, downloaded once (`pip download --no-deps`).
fn ensure_agenta_wheel(dir: &Path) -> Result<PathBuf, String> {
    let wheel = dir.join(AGENTA_WHEEL);
    if wheel.exists() {
        return Ok(wheel);
    }
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    run_command(
        Command::new("python3")
            .args([
                "-m",
                "pip",
                "download",
                "--no-deps",
                "agenta==0.125.1",
                "-d",
            ])
            .arg(dir),
    )?;
    if wheel.exists() {
        Ok(wheel)
    } else {
        Err(format!("pip download did not produce {}", wheel.display()))
    }
}

/// True when `tool --version` runs and succeeds (the tool is installed).
fn answers(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// A copy of the package `bindings/python/gatehouse` (the facade, and the generated module
/// in `_ffi/`) with the release library beside the module, as the wheel lays them out;
/// `None` (the FFI row then says why) when the binding is not generated yet.
fn prepare_python_package(
    root: &Path,
    target: &Path,
    out: &Path,
) -> Result<Option<PathBuf>, String> {
    let source = root.join("bindings/python/gatehouse");
    let library = profile_dir(target, "release").join("libgatehouse_ffi.so");
    if !source.join("_ffi/gatehouse_ffi.py").exists() || !library.exists() {
        eprintln!("xtask bench: the Python binding or the release library is missing; the FFI row will say so");
        return Ok(None);
    }
    let package_root = out.join("pybinding");
    let package = package_root.join("gatehouse");
    copy_python_files(&source, &package)?;
    copy_python_files(&source.join("_ffi"), &package.join("_ffi"))?;
    fs::copy(&library, package.join("_ffi/libgatehouse_ffi.so"))
        .map_err(|e| format!("cannot copy {}: {e}", library.display()))?;
    Ok(Some(package_root))
}

/// Copy the `.py` files of the folder `from` (not its subfolders) into `to`.
fn copy_python_files(from: &Path, to: &Path) -> Result<(), String> {
    fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let entries = fs::read_dir(from).map_err(|e| format!("cannot list {}: {e}", from.display()))?;
    for entry in entries {
        let path = entry
            .map_err(|e| format!("cannot list {}: {e}", from.display()))?
            .path();
        if path.extension().is_some_and(|ext| ext == "py") {
            if let Some(name) = path.file_name() {
                fs::copy(&path, to.join(name))
                    .map_err(|e| format!("cannot copy {}: {e}", path.display()))?;
            }
        }
    }
    Ok(())
}

fn mobile_library(root: &Path, target: &Path, out: &Path, build: bool) -> Result<Mobile, String> {
    if build {
        crate::native_lib::build(root, target, crate::native_lib::MOBILE_PROFILE)?;
    }
    let library =
        profile_dir(target, crate::native_lib::MOBILE_PROFILE).join("libgatehouse_ffi.so");
    let copy = out.join("libgatehouse_ffi.mobile.stripped.so");
    fs::copy(&library, &copy).map_err(|e| format!("cannot copy {}: {e}", library.display()))?;
    run_command(Command::new("strip").arg(&copy))?;
    let size = |path: &Path| {
        fs::metadata(path)
            .map(|m| m.len())
            .map_err(|e| format!("cannot stat {}: {e}", path.display()))
    };
    let tree = cargo()
        .current_dir(root)
        .args([
            "tree",
            "-p",
            "gatehouse-ffi",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .output()
        .map_err(|e| format!("cannot run cargo tree: {e}"))?;
    if !tree.status.success() {
        return Err(format!("cargo tree failed with {}", tree.status));
    }
    let text = String::from_utf8_lossy(&tree.stdout);
    // `sort -u | wc -l` of the listing, and the distinct crates (the `(*)` repeat
    // markers and the root itself left out).
    let lines: std::collections::BTreeSet<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    let crates: std::collections::BTreeSet<String> = text
        .lines()
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            Some(format!("{} {}", parts.next()?, parts.next()?))
        })
        .filter(|c| !c.starts_with("gatehouse-ffi "))
        .collect();
    Ok(Mobile {
        unstripped_bytes: size(&library)?,
        stripped_bytes: size(&copy)?,
        dependencies: crates.len(),
        dependency_lines: lines.len(),
    })
}
