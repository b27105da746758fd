//! Step 7 of `cargo xtask bench`: BENCHMARKS.md from the measurements (criterion's
//! samples, Agenta's and the live driver's JSON reports, the mobile library's figures),
//! the run's context, and `bench/NOTES.md`. Reads files and formats; runs nothing but
//! `date`, `git` and `rustc --version` for the header.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::stats::Summary;
use crate::util::read_json;

const MOBILE_TARGET_BYTES: u64 = 6_000_000;

/// Row 7's figures.
pub(super) struct Mobile {
    pub(super) unstripped_bytes: u64,
    pub(super) stripped_bytes: u64,
    pub(super) dependencies: usize,
    pub(super) dependency_lines: usize,
}

/// When, where and on what the numbers were taken.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Context {
    date: String,
    commit: String,
    machine: String,
    rustc: String,
    elapsed_s: f64,
    quick: bool,
}

fn command_text(program: &str, args: &[&str], dir: &Path) -> Option<String> {
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

impl Context {
    pub(super) fn gather(root: &Path, elapsed: std::time::Duration, quick: bool) -> Self {
        let date = command_text("date", &["-u", "+%Y-%m-%d %H:%M UTC"], root)
            .unwrap_or_else(|| "unknown".into());
        let head = command_text("git", &["rev-parse", "--short=12", "HEAD"], root)
            .unwrap_or_else(|| "unknown".into());
        let dirty = command_text(
            "git",
            &["status", "--porcelain", "--untracked-files=no"],
            root,
        )
        .is_some_and(|s| !s.is_empty());
        let commit = if dirty {
            format!("{head} (with uncommitted changes in the working tree)")
        } else {
            head
        };
        let cpu = fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split(':').nth(1))
                    .map(|s| s.trim().to_string())
            })
            .unwrap_or_else(|| "unknown CPU".into());
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0);
        let rustc = command_text("rustc", &["--version"], root).unwrap_or_default();
        Self {
            date,
            commit,
            machine: format!("{cores} cores, {cpu}, {}", std::env::consts::OS),
            rustc,
            elapsed_s: elapsed.as_secs_f64(),
            quick,
        }
    }
}

/// `IQR p25–p75; range min–max`.
fn spread(stats: &Summary) -> String {
    format!(
        "IQR {}–{}; range {}–{}",
        time(stats.p25),
        time(stats.p75),
        time(stats.min),
        time(stats.max)
    )
}

/// Order statistics of one criterion benchmark's per-iteration times, in nanoseconds,
/// from `$CRITERION_HOME/<id>/new/sample.json`.
fn criterion_stats(home: &Path, id: &str) -> Result<Summary, String> {
    let path = home.join(id).join("new/sample.json");
    let sample = read_json(&path)?;
    let iters = sample["iters"].as_array();
    let times = sample["times"].as_array();
    let (Some(iters), Some(times)) = (iters, times) else {
        return Err(format!("{} has no iters/times", path.display()));
    };
    let per_iter: Vec<f64> = iters
        .iter()
        .zip(times)
        .filter_map(|(i, t)| Some(t.as_f64()? / i.as_f64()?))
        .collect();
    Summary::of(&per_iter).ok_or_else(|| format!("{} has no samples", path.display()))
}

/// A duration in nanoseconds, in a readable unit.
fn time(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.2} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

fn f(value: &Value, key: &str) -> f64 {
    value[key].as_f64().unwrap_or(f64::NAN)
}

/// `median` and `IQR p25–p75` of a live summary given in `unit_ns` nanoseconds.
fn live_time(summary: &Value, unit_ns: f64) -> (String, String) {
    (
        time(f(summary, "median") * unit_ns),
        format!(
            "IQR {}–{}",
            time(f(summary, "p25") * unit_ns),
            time(f(summary, "p75") * unit_ns)
        ),
    )
}

fn met(ok: bool) -> &'static str {
    if ok {
        "yes"
    } else {
        "**no**"
    }
}

/// `N.Nx faster` or, below 1, `N.Nx slower`.
fn faster(speedup: f64) -> String {
    if speedup >= 1.0 {
        format!("{speedup:.1}x faster")
    } else {
        format!("{:.1}x slower", 1.0 / speedup)
    }
}

fn mb_per_s(bytes: f64, ns: f64) -> f64 {
    bytes / ns * 1e3 // bytes per ns * 1e9 / 1e6
}

struct Table {
    text: String,
}

impl Table {
    fn new() -> Self {
        let mut text = String::new();
        text.push_str("| # | Benchmark | Gatehouse (median) | Spread | Compared with (median) | Ratio | Target | Met? |\n");
        text.push_str("|---|---|---|---|---|---|---|---|\n");
        Self { text }
    }

    #[allow(clippy::too_many_arguments)]
    fn row(
        &mut self,
        number: &str,
        what: &str,
        ours: &str,
        spread: &str,
        theirs: &str,
        ratio: &str,
        target: &str,
        ok: &str,
    ) {
        let _ = writeln!(
            self.text,
            "| {number} | {what} | {ours} | {spread} | {theirs} | {ratio} | {target} | {ok} |"
        );
    }
}

pub(super) fn render(
    context: &Context,
    criterion: &Path,
    agenta: &Value,
    live: &Value,
    mobile: Option<&Mobile>,
    notes: &Path,
) -> Result<String, String> {
    let mut table = Table::new();

    // Row 1: stamping (a config read with its measure), text in -> stamp out, and config in
    // -> /run body bytes out.
    let timings = &agenta["timings"];
    for (label, id, py_key) in [
        ("stamp, 178 B golden blob", "stamp/golden_178B", "golden"),
        ("stamp, 64 KiB config", "stamp/config_64KiB", "config_64k"),
    ] {
        let ours = criterion_stats(criterion, id)?;
        let py = &timings[py_key];
        let bytes = f(py, "input_bytes");
        let py_median = f(py, "median_ns");
        let speedup = py_median / ours.median;
        table.row(
            "1",
            &format!(
                "{label} ({bytes:.0} B measured), as read by `MeasuredConfig`: time/call, throughput"
            ),
            &format!(
                "{} ({:.0} MB/s)",
                time(ours.median),
                mb_per_s(bytes, ours.median)
            ),
            &spread(&ours),
            &format!(
                "Agenta 0.125.1 Python: {} ({:.0} MB/s; IQR {}–{})",
                time(py_median),
                mb_per_s(bytes, py_median),
                time(f(py, "p25_ns")),
                time(f(py, "p75_ns"))
            ),
            &faster(speedup),
            "≥ 20x faster",
            met(speedup >= 20.0),
        );
    }
    for (label, id, py_key, stamp_key) in [
        (
            "text in, stamp out (`MeasuredConfig::from_json` + `stamp_measured`), 178 B golden blob",
            "read_stamp/golden_178B",
            "read_golden",
            "golden",
        ),
        (
            "text in, stamp out (`MeasuredConfig::from_json` + `stamp_measured`), 64 KiB config",
            "read_stamp/config_64KiB",
            "read_config_64k",
            "config_64k",
        ),
        (
            "config in, `/run` body bytes out (stamp + the request around it), 178 B golden blob",
            "run_body/golden_178B",
            "body_golden",
            "golden",
        ),
        (
            "config in, `/run` body bytes out (stamp + the request around it), 64 KiB config",
            "run_body/config_64KiB",
            "body_config_64k",
            "config_64k",
        ),
    ] {
        let ours = criterion_stats(criterion, id)?;
        let py = &timings[py_key];
        let py_median = f(py, "median_ns");
        let bytes = f(&timings[stamp_key], "input_bytes");
        let speedup = py_median / ours.median;
        let theirs = if py_key.starts_with("read_") {
            "`json.loads` + `stamp_effective_parameters`"
        } else {
            "`stamp_effective_parameters` + `json.dumps(request).encode()`"
        };
        table.row(
            "1",
            &format!("{label} ({bytes:.0} B stamp): time/call"),
            &time(ours.median),
            &spread(&ours),
            &format!(
                "Agenta 0.125.1 Python, {theirs}: {} (IQR {}–{})",
                time(py_median),
                time(f(py, "p25_ns")),
                time(f(py, "p75_ns"))
            ),
            &faster(speedup),
            "report (no target)",
            "—",
        );
    }
    let parity = &agenta["parity"];
    let compared = parity["compared"].as_u64().unwrap_or(0);
    let matched = parity["matched"].as_u64().unwrap_or(0);
    let mismatches = parity["mismatches"].as_array().map(Vec::len).unwrap_or(0);
    let skipped = parity["skipped_c2_departures"]
        .as_array()
        .map(Vec::len)
        .unwrap_or(0);
    table.row(
        "1",
        "stamp parity: same stamped JSON (values and key order) and measured size on a shared input set",
        &format!("{matched} of {compared} identical"),
        &format!("{mismatches} mismatches; {skipped} inputs skipped as C2 departures"),
        "Agenta 0.125.1 `stamp_effective_parameters`",
        "—",
        "identical outside C2",
        met(compared > 0 && matched == compared && mismatches == 0),
    );

    // Row 2: typed vs untyped /run.
    for name in ["pi_core", "claude", "codex", "attachment"] {
        let typed = criterion_stats(criterion, &format!("run_request/typed/{name}"))?;
        let untyped = criterion_stats(criterion, &format!("run_request/untyped/{name}"))?;
        let ratio = typed.median / untyped.median;
        table.row(
            "2",
            &format!("parse + re-serialize `run_request.{name}.json`: typed `RunRequest`"),
            &time(typed.median),
            &spread(&typed),
            &format!(
                "`serde_json::Value`: {} (IQR {}–{})",
                time(untyped.median),
                time(untyped.p25),
                time(untyped.p75)
            ),
            &format!("{ratio:.2}x the untyped time"),
            "≤ 1.5x",
            met(ratio <= 1.5),
        );
    }

    // Row 3: respond round trip.
    let respond = &live["respond"];
    let (client_median, client_spread) = live_time(&respond["client_us"], 1e3);
    let (bare_median, bare_spread) = live_time(&respond["bare_us"], 1e3);
    let overhead = f(respond, "overhead_pct");
    table.row(
        "3",
        &format!(
            "one respond round trip through `gatehouse-client` (SQLite server on loopback, fresh gate each; {} per side, interleaved)",
            respond["iterations"]
        ),
        &client_median,
        &client_spread,
        &format!("bare reqwest POST, same body and headers: {bare_median} ({bare_spread})"),
        &format!("{overhead:+.1}% client overhead"),
        "< 10%",
        met(overhead < 10.0),
    );
    respond_p99_row(
        &mut table,
        "3",
        "one respond round trip through `gatehouse-client`, its 99th percentile (the row above's samples)",
        &respond["client_us"],
        &format!(
            "bare reqwest POST, same run: p99 {}",
            time(f(&respond["bare_us"], "p99") * 1e3)
        ),
    );

    // Row 4: approve-all, on bare loopback and over a simulated round trip.
    for key in ["approve_all", "approve_all_rtt"] {
        let approve = &live[key];
        let (par_median, par_spread) = live_time(&approve["parallel_ms"], 1e6);
        let (seq_median, seq_spread) = live_time(&approve["sequential_ms"], 1e6);
        let (fan_median, _) = live_time(&approve["fanout_ms"], 1e6);
        let speedup = f(approve, "speedup");
        let (over, target) = match approve["simulated_rtt_ms"].as_f64() {
            Some(rtt) => (
                format!(", over a simulated {rtt:.0} ms round trip (a loopback delay proxy; the phone case)"),
                50.0,
            ),
            None => (", bare loopback".to_string(), 5.0),
        };
        let how = if approve["batched"].as_bool() == Some(true) {
            "one `respond-batch` request per 500 gates"
        } else {
            "NOT batched (the host did not advertise `interaction_batch`)"
        };
        table.row(
            "4",
            &format!(
                "approve-all of {} pending gates, `approve_all` ({how}; {} rounds per side){over}",
                approve["gates"], approve["reps"]
            ),
            &par_median,
            &format!(
                "{par_spread}; the bounded fan-out it does against Agenta (bound {}): {fan_median}, {:.1}x faster than one by one; process CPU per round: batch {}, sequential {}",
                approve["concurrency"],
                f(approve, "fanout_speedup"),
                time(f(approve, "parallel_cpu_ms") * 1e6),
                time(f(approve, "sequential_cpu_ms") * 1e6),
            ),
            &format!("one by one, sequential (Agenta's mobile app): {seq_median} ({seq_spread})"),
            &faster(speedup),
            &format!("≥ {target:.0}x faster"),
            met(speedup >= target),
        );
    }
    approve_all_floor_row(&mut table, &live["approve_all_rtt"], &live["floor"]);

    // Row 5: contention.
    for (key, label) in [
        ("contention_spread", "spread over"),
        ("contention_single", "all on"),
    ] {
        let c = &live[key];
        let gates = c["gates"].as_u64().unwrap_or(0);
        let winners: Vec<u64> = c["winners"]
            .as_array()
            .map(|w| w.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default();
        let all_exact = !winners.is_empty() && winners.iter().all(|w| *w == gates);
        let throughput = &c["throughput_rps"];
        let latency = &c["latency_ms"];
        table.row(
            "5",
            &format!(
                "{} concurrent responds {label} {gates} gate{} ({} rounds, fresh server each)",
                c["requests"],
                if gates == 1 { "" } else { "s" },
                c["rounds"]
            ),
            &format!("{:.0} responds/s", f(throughput, "median")),
            &format!(
                "throughput {:.0}–{:.0}/s; latency p50 {}, p99 {}",
                f(throughput, "min"),
                f(throughput, "max"),
                time(f(latency, "median") * 1e6),
                time(f(latency, "p99") * 1e6)
            ),
            "—",
            &format!("winners per round: {winners:?}"),
            &format!(
                "exactly {gates} winner{}",
                if gates == 1 { "" } else { "s" }
            ),
            met(all_exact),
        );
    }

    // Row 6: FFI.
    let ffi = &live["ffi"];
    let (rust_median, rust_spread) = live_time(&ffi["rust_us"], 1e3);
    let python_title = format!(
        "one respond through the Python binding (uniffi, asyncio; Python {}; release library), {} calls",
        ffi["python_version"].as_str().unwrap_or("?"),
        ffi["iterations"]
    );
    let kotlin_title = format!(
        "one respond through the Kotlin binding (uniffi, JNA, `runBlocking`; {}; release library), {} calls after a JIT warm-up",
        ffi["jvm"].as_str().unwrap_or("?"),
        ffi["iterations"]
    );
    let swift_title = format!(
        "one respond through the Swift binding (uniffi, `async`/`await`; {}; release library), {} calls",
        ffi["swift_version"].as_str().unwrap_or("?"),
        ffi["iterations"]
    );
    for binding in [
        FfiRow {
            name: "Python",
            title: python_title,
            not_measured: "not_measured",
            samples: "python_us",
            cpu: "Python process CPU per call (its thread and the binding's runtime)",
            cpu_us: "python_cpu_us_per_call",
            compared: "the Rust client, same server",
            added_us: "added_us",
        },
        FfiRow {
            name: "Kotlin",
            title: kotlin_title,
            not_measured: "kotlin_not_measured",
            samples: "kotlin_us",
            cpu: "JVM process CPU per call (its threads and the binding's runtime)",
            cpu_us: "kotlin_cpu_us_per_call",
            compared: "the Rust client, same server, same run",
            added_us: "kotlin_added_us",
        },
        FfiRow {
            name: "Swift",
            title: swift_title,
            not_measured: "swift_not_measured",
            samples: "swift_us",
            cpu: "Swift process CPU per call (its thread and the binding's runtime)",
            cpu_us: "swift_cpu_us_per_call",
            compared: "the Rust client, same server, same run",
            added_us: "swift_added_us",
        },
    ] {
        match ffi[binding.not_measured].as_str() {
            None => {
                let (median, spread) = live_time(&ffi[binding.samples], 1e3);
                table.row(
                    "6",
                    &binding.title,
                    &median,
                    &format!(
                        "{spread}; {}: {}",
                        binding.cpu,
                        time(f(ffi, binding.cpu_us) * 1e3)
                    ),
                    &format!("{}: {rust_median} ({rust_spread})", binding.compared),
                    &format!("{:+.0} µs per call", f(ffi, binding.added_us)),
                    "report (no target)",
                    "—",
                );
            }
            Some(reason) => table.row(
                "6",
                &format!("one respond through the {} binding", binding.name),
                &format!("not measured: {reason}"),
                "—",
                &format!("the Rust client: {rust_median} ({rust_spread})"),
                "—",
                "report (no target)",
                "—",
            ),
        }
    }

    // Row 7: mobile library.
    match mobile {
        Some(m) => table.row(
            "7",
            "mobile library `libgatehouse_ffi.so` (x86_64 Linux, profile `mobile`: LTO, 1 CGU, opt z), stripped",
            &format!("{} bytes ({:.2} MB)", m.stripped_bytes, m.stripped_bytes as f64 / 1e6),
            &format!(
                "unstripped {:.2} MB; {} dependencies (distinct crates, normal edges; `cargo tree … | sort -u | wc -l` = {})",
                m.unstripped_bytes as f64 / 1e6,
                m.dependencies,
                m.dependency_lines
            ),
            "—",
            &format!("{:.0}% of the budget", m.stripped_bytes as f64 / MOBILE_TARGET_BYTES as f64 * 100.0),
            "< 6 MB (6,000,000 bytes)",
            met(m.stripped_bytes < MOBILE_TARGET_BYTES),
        ),
        None => table.row(
            "7",
            "mobile library size",
            "not measured: --no-mobile",
            "—",
            "—",
            "—",
            "< 6 MB",
            "—",
        ),
    }

    // Row 8: the floor.
    let floor = &live["floor"];
    let (http_median, http_spread) = live_time(&floor["http_empty_us"], 1e3);
    let (sql_median, sql_spread) = live_time(&floor["sqlite_commit_us"], 1e3);
    let floor_sum_us =
        f(&floor["http_empty_us"], "median") + f(&floor["sqlite_commit_us"], "median");
    let bare_respond_us = f(&respond["bare_us"], "median");
    table.row(
        "8",
        &format!(
            "floor: loopback POST to an empty axum handler (same reqwest setup), {} calls",
            floor["iterations"]
        ),
        &http_median,
        &http_spread,
        "—",
        &format!(
            "a bare respond is {:.1}x this",
            bare_respond_us / f(&floor["http_empty_us"], "median")
        ),
        "reference",
        "—",
    );
    table.row(
        "8",
        "floor: one SQLite commit, WAL, synchronous=NORMAL (`BEGIN IMMEDIATE; INSERT; COMMIT`, sqlx, the server's settings)",
        &sql_median,
        &sql_spread,
        "—",
        &format!(
            "HTTP + commit floor = {}; a bare respond is {:.1}x it",
            time(floor_sum_us * 1e3),
            bare_respond_us / floor_sum_us
        ),
        "reference",
        "—",
    );

    table.row(
        "8",
        &format!(
            "diagnostic: {} writers running respond-shaped transactions at once ({} in all; `BEGIN IMMEDIATE`, SELECT, UPDATE, 2 INSERTs, COMMIT), queueing on SQLite's busy handler (the server's pool settings)",
            floor["concurrent_writers"], floor["concurrent_commits"]
        ),
        &format!("{:.0} tx/s", f(floor, "busy_handler_commits_per_s")),
        &format!(
            "one writer alone: {:.0} tx/s",
            f(floor, "sequential_respond_tx_per_s")
        ),
        &format!(
            "same writers queued on an async mutex before `BEGIN IMMEDIATE`: {:.0} tx/s",
            f(floor, "async_mutex_commits_per_s")
        ),
        &format!(
            "busy handler = {:.2}x the mutex throughput",
            f(floor, "busy_handler_commits_per_s") / f(floor, "async_mutex_commits_per_s")
        ),
        "reference",
        "—",
    );

    // Row 9: sustained responds against the resume workers.
    for run in live["sustained"].as_array().cloned().unwrap_or_default() {
        let ratio = f(&run, "ratio");
        let backlog: Vec<u64> = run["backlog"]
            .as_array()
            .map(|b| b.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default();
        let peak = backlog.iter().copied().max().unwrap_or(0);
        // "Does not grow": the end of the load holds no more than its first half's peak
        // plus one second of responds.
        let half = &backlog[..backlog.len() / 2];
        let early_peak = half.iter().copied().max().unwrap_or(0);
        let bounded = run["backlog_end"].as_u64().unwrap_or(u64::MAX)
            <= early_peak + f(&run, "responds_per_s").ceil() as u64;
        table.row(
            "9",
            &format!(
                "sustained responds, {} clients for {:.0} s (each: a run parks, the client answers), {} resume workers, {}",
                run["clients"],
                f(&run, "seconds"),
                run["workers"],
                run["backend"].as_str().unwrap_or("?")
            ),
            &format!("{:.0} resumes/s", f(&run, "resumes_per_s")),
            &format!(
                "backlog of answered gates per second: {backlog:?} (peak {peak}, {} at the end, drained in {})",
                run["backlog_end"],
                time(f(&run, "drain_ms") * 1e6)
            ),
            &format!("{:.0} responds/s ({} answered)", f(&run, "responds_per_s"), run["responds"]),
            &format!("resumes/s = {ratio:.2}x responds/s; backlog {}", if bounded { "bounded" } else { "GROWING" }),
            "≥ 0.9x, backlog bounded",
            met(ratio >= 0.9 && bounded),
        );
    }

    // Row 10: a respond with metrics on vs off.
    let overhead = &live["metrics_overhead"];
    let (on_median, on_spread) = live_time(&overhead["metrics_on_us"], 1e3);
    let (off_median, off_spread) = live_time(&overhead["metrics_off_us"], 1e3);
    let pct = f(overhead, "overhead_pct");
    table.row(
        "10",
        &format!(
            "one respond round trip through `gatehouse-client`, server recording metrics (`/metrics`, the default; SQLite on loopback, fresh gate each; {} per side, interleaved)",
            overhead["iterations"]
        ),
        &on_median,
        &on_spread,
        &format!("the same server with `--metrics false`, same run: {off_median} ({off_spread})"),
        &format!("{pct:+.1}% metrics overhead"),
        "< 3%",
        met(pct < 3.0),
    );
    respond_p99_row(
        &mut table,
        "10",
        "one respond round trip to the server recording metrics, its 99th percentile (the row above's samples)",
        &overhead["metrics_on_us"],
        &format!(
            "metrics off, same run: p99 {}",
            time(f(&overhead["metrics_off_us"], "p99") * 1e3)
        ),
    );

    // Row 11: the API as history grows, each figure against its empty-database figure.
    for run in live["scale"].as_array().cloned().unwrap_or_default() {
        let points = run["points"].as_array().cloned().unwrap_or_default();
        let Some(empty) = points.first() else {
            continue;
        };
        let medians = |point: &Value| -> Vec<(String, f64, f64)> {
            point["calls"]
                .as_array()
                .map(|calls| {
                    calls
                        .iter()
                        .map(|call| {
                            (
                                call[0].as_str().unwrap_or("?").to_string(),
                                f(&call[1], "median"),
                                f(&call[1], "p99"),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let empty_calls = medians(empty);
        for point in points.iter().skip(1) {
            let calls = medians(point);
            let mut worst = (String::new(), 0.0f64);
            let mut figures = Vec::new();
            for ((name, median, p99), (_, empty_median, empty_p99)) in
                calls.iter().zip(&empty_calls)
            {
                let ratio = median / empty_median;
                if ratio > worst.1 {
                    worst = (name.clone(), ratio);
                }
                figures.push(format!(
                    "{name} {} ({ratio:.2}x; p99 {} vs {})",
                    time(median * 1e3),
                    time(p99 * 1e3),
                    time(empty_p99 * 1e3)
                ));
            }
            let rss = f(point, "rss_bytes") / f(empty, "rss_bytes");
            table.row(
                "11",
                &format!(
                    "scale, {}: the API over {} gates of history (generated straight into the database in {:.0} s; {} calls per figure, one after the other, pages of 20)",
                    run["backend"].as_str().unwrap_or("?"),
                    point["gates"],
                    f(point, "generate_s"),
                    run["samples"]
                ),
                &format!("worst: {} at {:.2}x", worst.0, worst.1),
                &format!("{}; resident memory {:.0} MiB ({rss:.2}x)", figures.join("; "), f(point, "rss_bytes") / 1048576.0),
                &format!(
                    "the same server empty: {}",
                    empty_calls
                        .iter()
                        .map(|(name, median, _)| format!("{name} {}", time(median * 1e3)))
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
                &format!("{:.2}x at worst", worst.1.max(rss)),
                "each ≤ 1.5x its empty figure",
                met(worst.1 <= 1.5 && rss <= 1.5),
            );
        }
    }

    // Row 12: answer -> the resume acting on it, idle and under row 9's load.
    let idle = live["resume_idle"].as_array().cloned().unwrap_or_default();
    let loaded = live["sustained"].as_array().cloned().unwrap_or_default();
    for run in &idle {
        resume_latency_row(
            &mut table,
            &run["latency"],
            &format!(
                "idle, {}: one answer at a time, the resume waited for",
                run["backend"].as_str().unwrap_or("?")
            ),
        );
    }
    for run in &loaded {
        resume_latency_row(
            &mut table,
            &run["resume_latency"],
            &format!(
                "under row 9's load, {} ({} clients, {:.0} s; every answer of the window)",
                run["backend"].as_str().unwrap_or("?"),
                run["clients"],
                f(run, "seconds")
            ),
        );
    }

    // Row 13: gate opened -> webhook received, under row 9's load with an endpoint.
    for run in live["sustained_webhooks"]
        .as_array()
        .cloned()
        .unwrap_or_default()
    {
        let latency = &run["webhook_latency"];
        let samples = &latency["opened_to_received_ms"];
        let p99 = f(samples, "p99");
        table.row(
            "13",
            &format!(
                "gate opened -> its `interaction.opened` webhook received by a local receiver, under row 9's load ({} clients, {:.0} s), {}: the event's `timestamp` (written in the gate's transaction) to the arrival, {} gates",
                run["clients"],
                f(&run, "seconds"),
                run["backend"].as_str().unwrap_or("?"),
                latency["received"]
            ),
            &format!("p50 {}", time(f(samples, "median") * 1e6)),
            &format!(
                "p99 {} (n = {}; {} never arrived); IQR {}–{}, max {}",
                time(p99 * 1e6),
                samples["n"],
                latency["missing"],
                time(f(samples, "p25") * 1e6),
                time(f(samples, "p75") * 1e6),
                time(f(samples, "max") * 1e6)
            ),
            &format!(
                "row 9's load with the endpoint: {:.0} resumes/s for {:.0} responds/s ({:.2}x)",
                f(&run, "resumes_per_s"),
                f(&run, "responds_per_s"),
                f(&run, "ratio")
            ),
            "—",
            "p99 ≤ 250 ms",
            met(p99 <= 250.0),
        );
    }

    // Row 14: many watch streams on one server (a child process of its own).
    for run in live["fanout"].as_array().cloned().unwrap_or_default() {
        fanout_row(&mut table, &run);
    }

    // Where a stamp's time goes.
    let mut parts = String::new();
    parts.push_str("\n### Where a stamp's time goes (criterion, same run)\n\n");
    parts.push_str("| input | `stamp_measured` (row 1) | `stamp_borrowed` (walks the whole config) | `stamp_effective_parameters` (takes the config: its free included) | serde_json's reading of the text | the measuring reading (`MeasuredConfig::from_json`) | one deep `Value::clone` | drop one owned copy | `python_json_dumps_len` alone | `redact_effective_parameters` alone |\n");
    parts.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
    for (label, name) in [
        ("178 B golden", "golden_178B"),
        ("64 KiB config", "config_64KiB"),
    ] {
        let whole = criterion_stats(criterion, &format!("stamp/{name}"))?;
        let walk = criterion_stats(criterion, &format!("stamp_parts/walk/{name}"))?;
        let read_plain = criterion_stats(criterion, &format!("stamp_parts/read_plain/{name}"))?;
        let read_measured =
            criterion_stats(criterion, &format!("stamp_parts/read_measured/{name}"))?;
        let owned = criterion_stats(criterion, &format!("stamp_owned/{name}"))?;
        let clone = criterion_stats(criterion, &format!("stamp_parts/clone/{name}"))?;
        let drop = criterion_stats(criterion, &format!("stamp_parts/drop/{name}"))?;
        let measure = criterion_stats(criterion, &format!("stamp_parts/measure/{name}"))?;
        let redact = criterion_stats(criterion, &format!("stamp_parts/redact/{name}"))?;
        let _ = writeln!(
            parts,
            "| {label} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            time(whole.median),
            time(walk.median),
            time(owned.median),
            time(read_plain.median),
            time(read_measured.median),
            time(clone.median),
            time(drop.median),
            time(measure.median),
            time(redact.median)
        );
    }

    let mut md = String::new();
    md.push_str("# Gatehouse benchmarks\n\n");
    md.push_str(
        "Generated by `cargo xtask bench` (crates/xtask/src/bench/); do not edit by hand. ",
    );
    md.push_str(
        "Each ratio is measured side by side in the same run. The notes after the table are ",
    );
    md.push_str("bench/NOTES.md, copied verbatim.\n\n");
    if context.quick {
        md.push_str("**QUICK SMOKE RUN: tiny iteration counts, the numbers mean nothing.**\n\n");
    }
    let _ = writeln!(md, "- Date: {}", context.date);
    let _ = writeln!(md, "- Commit: {}", context.commit);
    let _ = writeln!(md, "- Machine: {}", context.machine);
    let _ = writeln!(
        md,
        "- Toolchain: {}; Python {} ({})",
        context.rustc,
        agenta["python"].as_str().unwrap_or("?"),
        agenta["python_implementation"].as_str().unwrap_or("?")
    );
    let _ = writeln!(
        md,
        "- Whole run: {:.0} s (builds included)",
        context.elapsed_s
    );
    md.push_str("- Spread: IQR = interquartile range (25th–75th percentile) of the samples; ");
    md.push_str("criterion samples are per-iteration means of one sample each.\n\n");
    md.push_str(&table.text);
    md.push_str(&parts);
    md.push('\n');
    match fs::read_to_string(notes) {
        Ok(text) => md.push_str(&text),
        Err(e) => {
            let _ = writeln!(md, "(bench/NOTES.md could not be read: {e})");
        }
    }
    Ok(md)
}

/// A respond's 99th percentile (a live summary in microseconds) against its target of
/// 5 ms on loopback (issue 38).
/// Row 4 against its floor (issue 38 item 4): over the simulated round trip, a batch can
/// at best cost one round trip plus, per gate, the single-gate commit floor of row 8 (what
/// answering them one transaction each would cost the database alone). Target: within 1.2x.
fn approve_all_floor_row(table: &mut Table, approve: &Value, floor: &Value) {
    let (Some(rtt_ms), Some(gates)) = (
        approve["simulated_rtt_ms"].as_f64(),
        approve["gates"].as_f64(),
    ) else {
        return;
    };
    let commit_us = f(&floor["sqlite_commit_us"], "median");
    let batch_ms = f(&approve["parallel_ms"], "median");
    let floor_ms = rtt_ms + gates * commit_us / 1e3;
    let ratio = batch_ms / floor_ms;
    table.row(
        "4",
        &format!(
            "approve-all of {gates:.0} gates over the simulated {rtt_ms:.0} ms round trip, against its floor: one round trip + {gates:.0} x the single-gate commit floor (row 8)"
        ),
        &time(batch_ms * 1e6),
        &format!(
            "floor = {rtt_ms:.0} ms + {gates:.0} x {} = {}; the batch is one transaction, not {gates:.0}",
            time(commit_us * 1e3),
            time(floor_ms * 1e6)
        ),
        "—",
        &format!("{ratio:.2}x the floor"),
        "≤ 1.2x the floor",
        met(ratio <= 1.2),
    );
}

fn respond_p99_row(table: &mut Table, number: &str, what: &str, samples: &Value, theirs: &str) {
    let p99_us = f(samples, "p99");
    table.row(
        number,
        what,
        &format!("p99 {}", time(p99_us * 1e3)),
        &format!(
            "n = {}; p50 {}, max {}",
            samples["n"],
            time(f(samples, "median") * 1e3),
            time(f(samples, "max") * 1e3)
        ),
        theirs,
        "—",
        "p99 ≤ 5 ms",
        met(p99_us <= 5000.0),
    );
}

/// Row 12 for one backend and condition: a `ResumeLatency` of the live report.
fn resume_latency_row(table: &mut Table, latency: &Value, condition: &str) {
    let started = &latency["to_started_ms"];
    let ledger = &latency["to_ledger_ms"];
    let worst_p99 = f(started, "p99").max(f(ledger, "p99"));
    let ms = |summary: &Value, key: &str| time(f(summary, key) * 1e6);
    table.row(
        "12",
        &format!(
            "answer -> resumed turn started (its `execution.started`), {condition}: from the respond's acknowledgement at the client to the server's own timestamp (same host clock, µs), {} answers",
            latency["answers"]
        ),
        &format!("p50 {}", ms(started, "median")),
        &format!(
            "p99 {} (n = {}; {} without timestamps); IQR {}–{}, max {}",
            ms(started, "p99"),
            started["n"],
            latency["missing"],
            ms(started, "p25"),
            ms(started, "p75"),
            ms(started, "max")
        ),
        &format!(
            "-> the approved tool's ledger row: p50 {}, p99 {}; Temporal Cloud signal p99 91 ms, Restate ~50 ms (published)",
            ms(ledger, "median"),
            ms(ledger, "p99")
        ),
        "—",
        "p99 ≤ 50 ms (both)",
        met(worst_p99 <= 50.0),
    );
}

/// Row 14 for one backend: a `FanoutReport` of the live report. Met when the memory
/// per held watcher, the last watcher's p99 and the respond's p99 beside them are all
/// within their targets and no watcher or event was lost.
fn fanout_row(table: &mut Table, run: &Value) {
    let last = &run["to_last_watcher_ms"];
    let first = &run["to_first_watcher_ms"];
    let per_watcher = f(run, "rss_per_watcher_bytes");
    let ratio = f(run, "respond_p99_ratio");
    let idle = &run["respond_idle"]["client_us"];
    let watching = &run["respond_watching"]["client_us"];
    let refused = run["refused"].as_u64().unwrap_or(u64::MAX);
    let missing = run["missing"].as_u64().unwrap_or(u64::MAX);
    let ms = |summary: &Value, key: &str| time(f(summary, key) * 1e6);
    let us = |summary: &Value, key: &str| time(f(summary, key) * 1e3);
    table.row(
        "14",
        &format!(
            "fan-out, {}: {} session watch streams (raw HTTP/1.1 SSE readers from {} loopback addresses) over {} sessions on one server in a child process (open-file limit {}, as the bench set it before starting it; its caps derived from it, the stream cap set to the watchers with `--max-watchers`, every other setting its default); {} gates opened one every 50 ms in watched sessions: the gate's `created_at` -> its event at the last of its session's watchers",
            run["backend"].as_str().unwrap_or("?"),
            run["watchers"],
            run["source_addresses"],
            run["sessions"],
            run["open_files"],
            run["gates"]
        ),
        &format!(
            "{:.1} KiB per idle watcher; last watcher p99 {}",
            per_watcher / 1024.0,
            ms(last, "p99")
        ),
        &format!(
            "{} refused by the stream cap, {} events missing; server resident {:.0} -> {:.0} MiB (private {:.1} KiB per watcher); last watcher p50 {}, max {}; first watcher p50 {}, p99 {}; connected in {:.1} s",
            refused,
            missing,
            f(run, "rss_before_bytes") / 1048576.0,
            f(run, "rss_watching_bytes") / 1048576.0,
            f(run, "private_per_watcher_bytes") / 1024.0,
            ms(last, "median"),
            ms(last, "max"),
            ms(first, "median"),
            ms(first, "p99"),
            f(run, "connect_s")
        ),
        &format!(
            "row 3's respond on the same server: p99 {} (p50 {}) while they watch vs p99 {} (p50 {}) before they connected",
            us(watching, "p99"),
            us(watching, "median"),
            us(idle, "p99"),
            us(idle, "median")
        ),
        &format!("respond p99 {ratio:.2}x"),
        "≤ 16 KiB per watcher; last watcher p99 ≤ 1 s; respond p99 ≤ 1.5x",
        met(per_watcher <= 16384.0
            && f(last, "p99") <= 1000.0
            && ratio <= 1.5
            && refused == 0
            && missing == 0),
    );
}

/// One binding's row 6: its title and where its figures are in the live report.
struct FfiRow {
    name: &'static str,
    title: String,
    not_measured: &'static str,
    samples: &'static str,
    cpu: &'static str,
    cpu_us: &'static str,
    compared: &'static str,
    added_us: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn criterion_stats_are_order_statistics_of_the_per_iteration_times() {
        let home = std::env::temp_dir().join(format!("xtask-report-{}", std::process::id()));
        let dir = home.join("group/case/new");
        fs::create_dir_all(&dir).unwrap();
        // Per iteration: 10, 20, 40, 30 ns.
        fs::write(
            dir.join("sample.json"),
            r#"{"iters": [1, 2, 4, 1], "times": [10, 40, 160, 30]}"#,
        )
        .unwrap();
        let stats = criterion_stats(&home, "group/case");
        fs::remove_dir_all(&home).unwrap();
        let stats = stats.unwrap();
        assert_eq!(
            (stats.min, stats.p25, stats.median, stats.p75, stats.max),
            (10.0, 17.5, 25.0, 32.5, 40.0)
        );
        assert_eq!(spread(&stats), "IQR 18 ns–32 ns; range 10 ns–40 ns");
    }

    #[test]
    fn the_fanout_row_is_met_only_with_every_target_and_nothing_lost() {
        let summary = |median: f64, p99: f64| serde_json::json!({"n": 200, "median": median, "p25": median, "p75": median, "p99": p99, "min": 0.0, "max": p99});
        let run = |per_watcher: f64, refused: u64, ratio: f64| {
            serde_json::json!({
                "backend": "sqlite", "watchers": 10000, "refused": refused, "sessions": 1000,
                "source_addresses": 100, "open_files": 65536, "connect_s": 1.5, "gates": 200,
                "missing": 0, "rss_before_bytes": 1e7, "rss_watching_bytes": 1.5e8,
                "rss_per_watcher_bytes": per_watcher, "private_per_watcher_bytes": per_watcher,
                "to_first_watcher_ms": summary(5.0, 30.0), "to_last_watcher_ms": summary(20.0, 60.0),
                "respond_idle": {"client_us": summary(800.0, 2000.0)},
                "respond_watching": {"client_us": summary(900.0, 2000.0 * ratio)},
                "respond_p99_ratio": ratio,
            })
        };
        let mut table = Table::new();
        fanout_row(&mut table, &run(12_000.0, 0, 1.2));
        fanout_row(&mut table, &run(17_000.0, 0, 1.2));
        fanout_row(&mut table, &run(12_000.0, 44, 1.2));
        fanout_row(&mut table, &run(12_000.0, 0, 5.0));
        let rows: Vec<&str> = table.text.lines().skip(2).collect();
        assert!(
            rows[0].contains("11.7 KiB per idle watcher; last watcher p99 60.00 ms")
                && rows[0].ends_with("| yes |"),
            "{}",
            rows[0]
        );
        for row in &rows[1..] {
            assert!(row.ends_with("| **no** |"), "{row}");
        }
    }

    #[test]
    fn the_latency_rows_judge_the_99th_percentile_against_their_targets() {
        let summary = |median: f64, p99: f64| serde_json::json!({"n": 100, "median": median, "p25": median, "p75": median, "p99": p99, "min": 0.0, "max": p99});
        let mut table = Table::new();
        // Microseconds: a 700 µs median, a 6 ms p99 (missed), then a 4 ms p99 (met).
        respond_p99_row(&mut table, "3", "respond", &summary(700.0, 6000.0), "bare");
        respond_p99_row(&mut table, "3", "respond", &summary(700.0, 4000.0), "bare");
        // Milliseconds: the started p99 is met, the ledger's is not: the row is missed.
        let latency = serde_json::json!({
            "answers": 100, "missing": 0,
            "to_started_ms": summary(3.0, 40.0), "to_ledger_ms": summary(5.0, 60.0),
        });
        resume_latency_row(&mut table, &latency, "idle, sqlite");
        let rows: Vec<&str> = table.text.lines().skip(2).collect();
        assert!(
            rows[0].contains("p99 6.00 ms") && rows[0].ends_with("| **no** |"),
            "{}",
            rows[0]
        );
        assert!(
            rows[1].contains("p99 4.00 ms") && rows[1].ends_with("| yes |"),
            "{}",
            rows[1]
        );
        assert!(
            rows[2].contains("p50 3.00 ms") && rows[2].contains("p99 60.00 ms"),
            "{}",
            rows[2]
        );
        assert!(rows[2].ends_with("| **no** |"), "{}", rows[2]);
    }
}
