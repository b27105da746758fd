//! `gatehouse-bench`: the non-criterion half of `cargo xtask bench`.
//!
//! ```text
//! gatehouse-bench prepare-stamp --dir DIR [--generated N]
//!     writes DIR/golden.json, DIR/config_64k.json (and their compact texts,
//!     DIR/golden.text.json and DIR/config_64k.text.json), DIR/shared_inputs.json and
//!     DIR/rust_outputs.json (Gatehouse's stamp of every shared input)
//! gatehouse-bench live --out FILE [--quick] [--python PY --ffi-script PATH --python-package DIR]
//!     runs the live-server benchmarks and writes their report as JSON
//! gatehouse-bench approve-all [--quick] [--rtt-ms MS]
//!     runs only the approve-all benchmark (over bare loopback, or behind the delay
//!     proxy with a round trip of MS) and prints its report (for profiling it under
//!     strace/perf)
//! gatehouse-bench metrics-overhead [--quick]
//!     runs only row 10 (a respond with metrics on vs off) and prints its report
//! gatehouse-bench scale [--quick] [--postgres-url URL] [--sizes N,N,...]
//!     runs only row 11 (the API as history grows, SQLite and, given a URL, PostgreSQL)
//!     and prints its report
//! gatehouse-bench latency [--quick] [--postgres-url URL] [--samples N] [--seconds S]
//!     runs only rows 12 and 13 (answer -> resume idle and under row 9's load, gate ->
//!     webhook under that load; SQLite and, given a URL, PostgreSQL) and prints their
//!     reports
//! gatehouse-bench fanout [--quick] [--postgres-url URL] [--watchers N --sessions N] [--gates N]
//!     runs only row 14 (watch streams held open on a server child: its memory per
//!     watcher, gate -> last watcher, respond beside them; SQLite and, given a URL,
//!     PostgreSQL) and prints its reports
//! gatehouse-bench ffi --out FILE [--quick] [the binding flags of live, and
//!         --kotlin-project DIR --kotlin-lib-dir DIR --swift-package DIR --swift-lib-dir DIR]
//!     runs only row 6 (the Rust client beside each binding given) and writes its report
//! ```

// A command-line tool: it prints its reports and its usage errors.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use gatehouse_bench::inputs::{config_64k, golden_blob, inputs_to_json, shared_stamp_inputs};
use gatehouse_bench::live::{report_json, run_all, KotlinFfi, LiveConfig, PythonFfi, SwiftFfi};
use gatehouse_bench::{stamp_outputs, BenchError};

fn main() -> ExitCode {
    // Row 14's server child is this executable again: serve, and nothing else.
    if gatehouse_server::testing::serve_child_if_asked(gatehouse_bench::live::FANOUT_SERVER_ENTRY) {
        return ExitCode::SUCCESS;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("prepare-stamp") => prepare_stamp(&args[1..]),
        Some("live") => live(&args[1..]),
        Some("approve-all") => approve_all_only(&args[1..]),
        Some("ffi") => ffi_only(&args[1..]),
        Some("metrics-overhead") => metrics_overhead_only(&args[1..]),
        Some("scale") => scale_only(&args[1..]),
        Some("latency") => latency_only(&args[1..]),
        Some("fanout") => fanout_only(&args[1..]),
        _ => Err(BenchError::Invalid(
            "usage: gatehouse-bench <prepare-stamp --dir DIR | live --out FILE [--quick]>".into(),
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("gatehouse-bench: {err}");
            ExitCode::FAILURE
        }
    }
}

/// The value after `--name`, if given.
fn flag_value(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

/// The values after `--first` and `--second`, when both are given.
fn flag_pair(args: &[String], first: &str, second: &str) -> Option<(String, String)> {
    flag_value(args, first).zip(flag_value(args, second))
}

/// The full run's counts, or the smoke run's with `--quick`.
fn counts(args: &[String]) -> LiveConfig {
    if args.iter().any(|a| a == "--quick") {
        LiveConfig::quick()
    } else {
        LiveConfig::full()
    }
}

fn write_json(path: &Path, value: &serde_json::Value) -> Result<(), BenchError> {
    let text = serde_json::to_string_pretty(value).map_err(|source| BenchError::Json {
        what: format!("serializing {}", path.display()),
        source,
    })?;
    std::fs::write(path, text).map_err(|source| BenchError::Io {
        what: format!("writing {}", path.display()),
        source,
    })
}

fn prepare_stamp(args: &[String]) -> Result<(), BenchError> {
    let dir = PathBuf::from(
        flag_value(args, "--dir").ok_or_else(|| BenchError::Invalid("--dir is required".into()))?,
    );
    let generated = match flag_value(args, "--generated") {
        Some(n) => n
            .parse()
            .map_err(|_| BenchError::Invalid(format!("--generated {n} is not a count")))?,
        None => 200,
    };
    std::fs::create_dir_all(&dir).map_err(|source| BenchError::Io {
        what: format!("creating {}", dir.display()),
        source,
    })?;
    write_json(&dir.join("golden.json"), &golden_blob()?)?;
    write_json(&dir.join("config_64k.json"), &config_64k())?;
    // The texts the `read_stamp` rows read, byte for byte the ones the Rust side reads.
    for (file, config) in [
        ("golden.text.json", golden_blob()?),
        ("config_64k.text.json", config_64k()),
    ] {
        let path = dir.join(file);
        std::fs::write(&path, gatehouse_bench::inputs::config_text(&config)).map_err(|source| {
            BenchError::Io {
                what: format!("writing {}", path.display()),
                source,
            }
        })?;
    }
    let base =
        serde_json::to_value(gatehouse_bench::inputs::run_body_base()).map_err(|source| {
            BenchError::Json {
                what: "serializing the /run body base".into(),
                source,
            }
        })?;
    write_json(&dir.join("run_body_base.json"), &base)?;
    let inputs = shared_stamp_inputs(generated)?;
    write_json(&dir.join("shared_inputs.json"), &inputs_to_json(&inputs))?;
    write_json(&dir.join("rust_outputs.json"), &stamp_outputs(&inputs))?;
    eprintln!(
        "gatehouse-bench: {} shared stamp inputs written to {}",
        inputs.len(),
        dir.display()
    );
    Ok(())
}

fn approve_all_only(args: &[String]) -> Result<(), BenchError> {
    let config = counts(args);
    let rt = gatehouse_bench::live::Runtimes::new()?;
    let rtt = match flag_value(args, "--rtt-ms") {
        None => None,
        Some(ms) => Some(std::time::Duration::from_millis(
            ms.parse()
                .map_err(|e| BenchError::Invalid(format!("--rtt-ms {ms}: {e}")))?,
        )),
    };
    let report = gatehouse_bench::live::bench_approve_all_over(&rt, &config, rtt)?;
    let text = serde_json::to_string_pretty(&report).map_err(|source| BenchError::Json {
        what: "serializing the approve-all report".into(),
        source,
    })?;
    println!("{text}");
    Ok(())
}

/// Row 10 alone: print its report.
fn metrics_overhead_only(args: &[String]) -> Result<(), BenchError> {
    let config = counts(args);
    let rt = gatehouse_bench::live::Runtimes::new()?;
    let report = gatehouse_bench::live::bench_metrics_overhead(&rt, &config)?;
    let text = serde_json::to_string_pretty(&report).map_err(|source| BenchError::Json {
        what: "serializing the metrics overhead report".into(),
        source,
    })?;
    println!("{text}");
    Ok(())
}

fn scale_only(args: &[String]) -> Result<(), BenchError> {
    let config = counts(args);
    let sizes = match flag_value(args, "--sizes") {
        Some(list) => list
            .split(',')
            .map(|n| n.trim().parse::<u64>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| BenchError::Invalid(format!("--sizes: {e}")))?,
        None => config.scale_sizes.clone(),
    };
    let rt = gatehouse_bench::live::Runtimes::new()?;
    let mut reports = vec![gatehouse_bench::live::bench_scale(
        &rt,
        &sizes,
        config.scale_samples,
        None,
    )?];
    if let Some(url) = flag_value(args, "--postgres-url") {
        reports.push(gatehouse_bench::live::bench_scale(
            &rt,
            &sizes,
            config.scale_samples,
            Some(&url),
        )?);
    }
    let text = serde_json::to_string_pretty(&reports).map_err(|source| BenchError::Json {
        what: "serializing the scale report".into(),
        source,
    })?;
    println!("{text}");
    Ok(())
}

/// Rows 12 and 13 alone (with row 9's figures of the same runs): print their reports.
fn latency_only(args: &[String]) -> Result<(), BenchError> {
    let mut config = counts(args);
    config.postgres_url = flag_value(args, "--postgres-url");
    if let Some(n) = flag_value(args, "--samples") {
        config.resume_idle_samples = n
            .parse()
            .map_err(|_| BenchError::Invalid(format!("--samples {n} is not a count")))?;
    }
    if let Some(s) = flag_value(args, "--seconds") {
        let seconds: u64 = s
            .parse()
            .map_err(|_| BenchError::Invalid(format!("--seconds {s} is not a count")))?;
        config.sustained_for = std::time::Duration::from_secs(seconds);
    }
    let rt = gatehouse_bench::live::Runtimes::new()?;
    let mut backends = vec![None];
    backends.extend(config.postgres_url.as_deref().map(Some));
    let mut reports = Vec::new();
    for postgres in backends {
        reports.push(serde_json::json!({
            "idle": gatehouse_bench::live::bench_resume_idle(&rt, &config, postgres)?,
            "sustained": gatehouse_bench::live::bench_sustained(&rt, &config, postgres, false)?,
            "sustained_webhooks": gatehouse_bench::live::bench_sustained(&rt, &config, postgres, true)?,
        }));
    }
    let text = serde_json::to_string_pretty(&reports).map_err(|source| BenchError::Json {
        what: "serializing the latency report".into(),
        source,
    })?;
    println!("{text}");
    Ok(())
}

/// The count after `--name`, if given.
fn count_flag(args: &[String], name: &str) -> Result<Option<usize>, BenchError> {
    flag_value(args, name)
        .map(|n| {
            n.parse()
                .map_err(|_| BenchError::Invalid(format!("{name} {n} is not a count")))
        })
        .transpose()
}

/// Row 14 alone: print its reports.
fn fanout_only(args: &[String]) -> Result<(), BenchError> {
    let mut config = counts(args);
    config.postgres_url = flag_value(args, "--postgres-url");
    if let Some(n) = count_flag(args, "--watchers")? {
        config.fanout_watchers = n;
    }
    if let Some(n) = count_flag(args, "--sessions")? {
        config.fanout_sessions = n;
    }
    if let Some(n) = count_flag(args, "--gates")? {
        config.fanout_gates = n;
    }
    let rt = gatehouse_bench::live::Runtimes::new()?;
    let mut backends = vec![None];
    backends.extend(config.postgres_url.as_deref().map(Some));
    let mut reports = Vec::new();
    for postgres in backends {
        reports.push(gatehouse_bench::live::bench_fanout(&rt, &config, postgres)?);
    }
    let text = serde_json::to_string_pretty(&reports).map_err(|source| BenchError::Json {
        what: "serializing the fan-out report".into(),
        source,
    })?;
    println!("{text}");
    Ok(())
}

/// The binding drivers of row 6 (`--ffi-script`, `--python-package`, `--python`,
/// `--kotlin-project`, `--kotlin-lib-dir`, `--swift-package`, `--swift-lib-dir`) and
/// `--postgres-url`, into `config`.
fn binding_flags(args: &[String], config: &mut LiveConfig) {
    // Absolute: Maven and SwiftPM run in their own project's folder.
    let absolute = |dir: String| std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.into());
    if let Some((script, package_dir)) = flag_pair(args, "--ffi-script", "--python-package") {
        config.python_ffi = Some(PythonFfi {
            python: flag_value(args, "--python").unwrap_or_else(|| "python3".into()),
            script: PathBuf::from(script),
            package_dir: PathBuf::from(package_dir),
        });
    }
    config.postgres_url = flag_value(args, "--postgres-url");
    if let Some((project_dir, lib_dir)) = flag_pair(args, "--kotlin-project", "--kotlin-lib-dir") {
        config.kotlin_ffi = Some(KotlinFfi {
            project_dir: absolute(project_dir),
            lib_dir: absolute(lib_dir),
        });
    }
    if let Some((package_dir, lib_dir)) = flag_pair(args, "--swift-package", "--swift-lib-dir") {
        config.swift_ffi = Some(SwiftFfi {
            package_dir: absolute(package_dir),
            lib_dir: absolute(lib_dir),
        });
    }
}

/// `--out FILE`, and the config `--quick` and the binding flags make.
fn out_and_config(args: &[String]) -> Result<(PathBuf, LiveConfig), BenchError> {
    let out = PathBuf::from(
        flag_value(args, "--out").ok_or_else(|| BenchError::Invalid("--out is required".into()))?,
    );
    let mut config = counts(args);
    binding_flags(args, &mut config);
    Ok((out, config))
}

/// `ffi --out FILE [--quick] [binding flags]`: row 6 alone (the Rust client beside each
/// binding, same server, same run), for measuring a binding without the whole suite.
fn ffi_only(args: &[String]) -> Result<(), BenchError> {
    let (out, config) = out_and_config(args)?;
    let rt = gatehouse_bench::live::Runtimes::new()?;
    let report = gatehouse_bench::live::bench_ffi(&rt, &config)?;
    let value = serde_json::to_value(&report).map_err(|source| BenchError::Json {
        what: "serializing the FFI report".into(),
        source,
    })?;
    write_json(&out, &value)
}

fn live(args: &[String]) -> Result<(), BenchError> {
    let (out, config) = out_and_config(args)?;
    let report = run_all(&config, |step| eprintln!("gatehouse-bench live: {step}"))?;
    write_json(&out, &report_json(&report)?)
}
