//! Row 6: a respond through the Rust client beside the same respond through each
//! binding (Python, Kotlin, Swift), each binding run by its own driver program on fresh
//! gates of the same server.

use std::path::PathBuf;
use std::process::Command;

use serde::Serialize;
use serde_json::{json, Value};

use gatehouse_server::testing::TestServer;

use super::{client_for, client_respond, create_gates, micros, summary, LiveConfig, Runtimes};
use crate::stats::Summary;
use crate::BenchError;

/// Where the Kotlin binding's Maven project and the native library are.
#[derive(Debug, Clone)]
pub struct KotlinFfi {
    /// `bindings/kotlin` (its test sources hold `RespondCostBench.kt`).
    pub project_dir: PathBuf,
    /// The folder holding the release `libgatehouse_ffi.so` the jar carries.
    pub lib_dir: PathBuf,
}

/// Where the Swift binding's benchmark package and the native library are.
#[derive(Debug, Clone)]
pub struct SwiftFfi {
    /// `bench/swift` (the `RespondCostBench` executable, depending on the root package).
    pub package_dir: PathBuf,
    /// The folder holding the release `libgatehouse_ffi.so` it links.
    pub lib_dir: PathBuf,
}

/// Where the Python binding and its driver script are.
#[derive(Debug, Clone)]
pub struct PythonFfi {
    /// The Python interpreter.
    pub python: String,
    /// `bench/python/ffi_respond.py`.
    pub script: PathBuf,
    /// The directory holding the importable `gatehouse` package (with its native library).
    pub package_dir: PathBuf,
}

/// Row 6: the FFI.
#[derive(Debug, Clone, Serialize)]
pub struct FfiReport {
    /// Measured responds per side.
    pub iterations: usize,
    /// Through the Rust client, microseconds.
    pub rust_us: Summary,
    /// Through the Python binding, microseconds (when measured).
    pub python_us: Option<Summary>,
    /// `python median - rust median`, microseconds (when measured).
    pub added_us: Option<f64>,
    /// CPU time of the whole Python process (its thread and the binding's runtime) per
    /// measured call, microseconds (when measured).
    pub python_cpu_us_per_call: Option<f64>,
    /// Why the Python side was not measured.
    pub not_measured: Option<String>,
    /// The Python version that ran the binding.
    pub python_version: Option<String>,
    /// Through the Kotlin binding (JVM, JNA), microseconds (when measured).
    pub kotlin_us: Option<Summary>,
    /// `kotlin median - rust median`, microseconds (when measured).
    pub kotlin_added_us: Option<f64>,
    /// CPU time of the whole JVM per measured call, microseconds (when measured).
    pub kotlin_cpu_us_per_call: Option<f64>,
    /// The JVM that ran the Kotlin binding.
    pub jvm: Option<String>,
    /// Why the Kotlin side was not measured.
    pub kotlin_not_measured: Option<String>,
    /// Through the Swift binding (release build, `async`/`await`), microseconds.
    pub swift_us: Option<Summary>,
    /// `swift median - rust median`, microseconds (when measured).
    pub swift_added_us: Option<f64>,
    /// CPU time of the whole Swift process per measured call, microseconds.
    pub swift_cpu_us_per_call: Option<f64>,
    /// The Swift toolchain that built the driver.
    pub swift_version: Option<String>,
    /// Why the Swift side was not measured.
    pub swift_not_measured: Option<String>,
}

/// What every binding driver prints (one JSON object): its timed calls and the CPU time
/// per call, in nanoseconds, and what ran it (the Python driver names its Python, the
/// Kotlin driver its JVM; the Swift driver neither).
#[derive(Debug, serde::Deserialize)]
struct DriverSamples {
    samples_ns: Vec<f64>,
    process_cpu_ns_per_call: Option<f64>,
    python: Option<String>,
    jvm: Option<String>,
}

impl DriverSamples {
    /// In microseconds; the version is what the driver named as running it.
    fn into_run(self) -> BindingRun {
        BindingRun {
            samples_us: self.samples_ns.iter().map(|ns| ns / 1000.0).collect(),
            cpu_us_per_call: self.process_cpu_ns_per_call.map(|ns| ns / 1000.0),
            version: self.python.or(self.jvm),
        }
    }
}

/// A driver's stdout and stderr, as one text.
fn all_output(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).to_string() + &String::from_utf8_lossy(&output.stderr)
}

/// The last line of what a failed driver wrote, for its error.
fn last_line(text: &str) -> String {
    // Maven ends with colour resets and a help footer: the first `[ERROR]` line says what
    // failed; otherwise the last line with text once the escape codes are gone.
    let lines: Vec<String> = text.lines().map(strip_ansi).collect();
    lines
        .iter()
        .find(|line| line.starts_with("[ERROR]") && line.len() > "[ERROR] ".len())
        .or_else(|| lines.iter().rev().find(|line| !line.trim().is_empty()))
        .map_or_else(|| "no output".to_string(), |line| line.trim().to_string())
}

/// `line` without its ANSI escape sequences (`ESC [ ... letter`).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for next in chars.by_ref() {
                if next.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A binding driver's config file (the server to answer, the gates, the warm-up count,
/// and `extra` keys), in a temp dir that lives as long as the returned guard.
fn driver_config(
    driver: &str,
    server: &TestServer,
    ids: &[String],
    warmup: usize,
    extra: serde_json::Map<String, Value>,
) -> Result<(tempfile::TempDir, PathBuf), BenchError> {
    let dir = tempfile::tempdir().map_err(|source| BenchError::Io {
        what: format!("creating a temp dir for the {driver} driver"),
        source,
    })?;
    let path = dir.path().join("driver_config.json");
    let mut config = json!({
        "base_url": server.base_url,
        "api_key": server.api_key,
        "project_id": server.project_id,
        "ids": ids,
        "warmup": warmup,
    });
    if let Value::Object(map) = &mut config {
        map.extend(extra);
    }
    std::fs::write(&path, config.to_string()).map_err(|source| BenchError::Io {
        what: format!("writing {}", path.display()),
        source,
    })?;
    Ok((dir, path))
}

/// Responds the Kotlin driver makes before it measures (the JIT's warm-up).
const KOTLIN_JIT_WARMUP: usize = 1500;

/// The Kotlin binding's timed responds (`RespondCostBench.kt`, run by Maven on the test
/// classpath against the release library).
fn kotlin_responds(
    kotlin: &KotlinFfi,
    server: &TestServer,
    ids: &[String],
    warmup: usize,
) -> Result<BindingRun, BenchError> {
    let (_dir, config_path) = driver_config("Kotlin", server, ids, warmup, Default::default())?;
    let output = Command::new("mvn")
        .current_dir(&kotlin.project_dir)
        .args(["-B", "-q", "--no-transfer-progress"])
        .arg(format!("-Dgatehouse.lib.dir={}", kotlin.lib_dir.display()))
        // The library is built already; and the pom's cargo steps would take `exec.args`
        // (the driver's config below) as their own arguments.
        .args([
            "-Dgatehouse.cargo.skip=true",
            "-Dgatehouse.server.skip=true",
        ])
        .args([
            "test-compile",
            "org.codehaus.mojo:exec-maven-plugin:3.5.0:java",
            "-Dexec.classpathScope=test",
            "-Dexec.mainClass=dev.gatehouse.RespondCostBenchKt",
        ])
        .arg(format!("-Dexec.args={}", config_path.display()))
        .output()
        .map_err(|e| BenchError::Kotlin(format!("cannot start mvn: {e}")))?;
    if !output.status.success() {
        return Err(BenchError::Kotlin(format!(
            "the Kotlin driver exited with {}: {}",
            output.status,
            last_line(&all_output(&output))
        )));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .rev()
        // Maven writes colour resets around a program's output even when piped: the
        // JSON is what lies between the first `{"` and the last `}` of its line.
        .find_map(|l| l.get(l.find("{\"")?..=l.rfind('}')?))
        .ok_or_else(|| BenchError::Kotlin("the Kotlin driver printed no JSON".into()))?;
    let parsed: DriverSamples = serde_json::from_str(line).map_err(|source| BenchError::Json {
        what: "reading the Kotlin driver's output".into(),
        source,
    })?;
    Ok(parsed.into_run())
}

/// The Swift binding's timed responds (`bench/swift`'s `RespondCostBench`, built in
/// release mode against the release library).
fn swift_responds(
    swift: &SwiftFfi,
    server: &TestServer,
    ids: &[String],
    warmup: usize,
) -> Result<BindingRun, BenchError> {
    let exited = |what: &str, output: &std::process::Output| {
        BenchError::Swift(format!(
            "{what} exited with {}: {}",
            output.status,
            last_line(&all_output(output))
        ))
    };
    let build = Command::new("swift")
        .current_dir(&swift.package_dir)
        .env("GATEHOUSE_FFI_LIB_DIR", &swift.lib_dir)
        .args(["build", "-c", "release", "--product", "RespondCostBench"])
        .output()
        .map_err(|e| BenchError::Swift(format!("cannot start swift: {e}")))?;
    if !build.status.success() {
        return Err(exited("swift build", &build));
    }
    let (_dir, config_path) = driver_config("Swift", server, ids, warmup, Default::default())?;
    // The library folder first on the loader's path: under `cargo run` (and so
    // `cargo xtask bench`) cargo's debug folders are there, whose libgatehouse_ffi.so
    // would win over the driver's runpath and may be a build of other sources.
    let mut library_path = std::ffi::OsString::from(&swift.lib_dir);
    if let Some(inherited) = std::env::var_os("LD_LIBRARY_PATH") {
        library_path.push(":");
        library_path.push(inherited);
    }
    let output = Command::new(swift.package_dir.join(".build/release/RespondCostBench"))
        .env("LD_LIBRARY_PATH", library_path)
        .arg(&config_path)
        .output()
        .map_err(|e| BenchError::Swift(format!("cannot start RespondCostBench: {e}")))?;
    if !output.status.success() {
        return Err(exited("RespondCostBench", &output));
    }
    let parsed: DriverSamples =
        serde_json::from_slice(&output.stdout).map_err(|source| BenchError::Json {
            what: "reading the Swift driver's output".into(),
            source,
        })?;
    let version = Command::new("swift")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            all_output(&o)
                .lines()
                .find(|l| l.contains("Swift version"))
                .map(|l| l.trim().to_string())
        });
    Ok(BindingRun {
        version,
        ..parsed.into_run()
    })
}

/// What a binding driver measured.
struct BindingRun {
    samples_us: Vec<f64>,
    cpu_us_per_call: Option<f64>,
    version: Option<String>,
}

/// The Python binding's timed responds over `ids`; its per-call samples in microseconds.
fn python_responds(
    python: &PythonFfi,
    server: &TestServer,
    ids: &[String],
    warmup: usize,
) -> Result<BindingRun, BenchError> {
    let mut extra = serde_json::Map::new();
    extra.insert("package_dir".into(), json!(python.package_dir));
    let (_dir, config_path) = driver_config("Python", server, ids, warmup, extra)?;
    let output = Command::new(&python.python)
        .arg(&python.script)
        .arg(&config_path)
        .output()
        .map_err(|e| BenchError::Python(format!("cannot start {}: {e}", python.python)))?;
    if !output.status.success() {
        return Err(BenchError::Python(format!(
            "{} exited with {}: {}",
            python.script.display(),
            output.status,
            // The script's traceback: its stdout is the JSON answer.
            last_line(&String::from_utf8_lossy(&output.stderr))
        )));
    }
    let parsed: DriverSamples =
        serde_json::from_slice(&output.stdout).map_err(|source| BenchError::Json {
            what: "reading the FFI driver's output".into(),
            source,
        })?;
    Ok(parsed.into_run())
}

/// One binding's share of row 6: its summary and added time, or why it was not measured.
struct Figures {
    us: Option<Summary>,
    added_us: Option<f64>,
    cpu_us_per_call: Option<f64>,
    version: Option<String>,
    not_measured: Option<String>,
}

fn figures(
    run: Result<BindingRun, String>,
    rust_median: f64,
    what: &str,
) -> Result<Figures, BenchError> {
    Ok(match run {
        Ok(run) => {
            let us = summary(&run.samples_us, what)?;
            Figures {
                added_us: Some(us.median - rust_median),
                us: Some(us),
                cpu_us_per_call: run.cpu_us_per_call,
                version: run.version,
                not_measured: None,
            }
        }
        Err(reason) => Figures {
            us: None,
            added_us: None,
            cpu_us_per_call: None,
            version: None,
            not_measured: Some(reason),
        },
    })
}

/// Row 6: respond through the Rust client, then through the Python binding, then the
/// Rust client again, then the Kotlin and Swift bindings, each on fresh gates of the same
/// server.
pub fn bench_ffi(rt: &Runtimes, config: &LiveConfig) -> Result<FfiReport, BenchError> {
    let server = rt.spawn_server()?;
    let client = client_for(&server)?;
    let n = config.ffi_iterations;
    let half = n / 2;
    let warm = config.warmup;
    let result = (|| {
        // The JVM's JIT needs a much longer warm-up than the others: profiled (perf, JFR),
        // C1/C2 compile on the two cores through the first ~1000 responds (the first 250
        // cost 6.7 ms of JVM CPU each, calls 1000 to 1250 under 1 ms), so a short warm-up
        // measures the compiler, not the binding.
        let kotlin_warm = (warm * 4).max(KOTLIN_JIT_WARMUP);
        let (rust_ids, python_ids, kotlin_ids, swift_ids) = rt.driver.block_on(async {
            let rust = create_gates(&client, "bench-ffi-rust", n + 2 * warm).await?;
            let python = create_gates(&client, "bench-ffi-python", n + warm).await?;
            let kotlin = if config.kotlin_ffi.is_some() {
                create_gates(&client, "bench-ffi-kotlin", n + kotlin_warm).await?
            } else {
                Vec::new()
            };
            let swift = if config.swift_ffi.is_some() {
                create_gates(&client, "bench-ffi-swift", n + warm).await?
            } else {
                Vec::new()
            };
            Ok::<_, BenchError>((rust, python, kotlin, swift))
        })?;
        let measure_rust = |ids: &[String]| {
            rt.driver.block_on(async {
                let mut samples = Vec::new();
                for (i, id) in ids.iter().enumerate() {
                    let elapsed = client_respond(&client, id).await?;
                    if i >= warm {
                        samples.push(micros(elapsed));
                    }
                }
                Ok::<_, BenchError>(samples)
            })
        };
        let mut rust_us = measure_rust(&rust_ids[..half + warm])?;
        let python = match &config.python_ffi {
            None => Err("no Python binding given".to_string()),
            Some(python) => {
                python_responds(python, &server, &python_ids, warm).map_err(|e| e.to_string())
            }
        };
        rust_us.extend(measure_rust(&rust_ids[half + warm..])?);
        let kotlin = match &config.kotlin_ffi {
            None => Err("no Kotlin binding given".to_string()),
            Some(kotlin) => kotlin_responds(kotlin, &server, &kotlin_ids, kotlin_warm)
                .map_err(|e| e.to_string()),
        };
        let swift = match &config.swift_ffi {
            None => Err("no Swift toolchain (the swift machine kind has one)".to_string()),
            Some(swift) => {
                swift_responds(swift, &server, &swift_ids, warm).map_err(|e| e.to_string())
            }
        };
        let rust_us = summary(&rust_us, "rust respond")?;
        let python = figures(python, rust_us.median, "python respond")?;
        let kotlin = figures(kotlin, rust_us.median, "kotlin respond")?;
        let swift = figures(swift, rust_us.median, "swift respond")?;
        Ok::<_, BenchError>(FfiReport {
            iterations: n,
            rust_us,
            python_us: python.us,
            added_us: python.added_us,
            python_cpu_us_per_call: python.cpu_us_per_call,
            not_measured: python.not_measured,
            python_version: python.version,
            kotlin_us: kotlin.us,
            kotlin_added_us: kotlin.added_us,
            kotlin_cpu_us_per_call: kotlin.cpu_us_per_call,
            jvm: kotlin.version,
            kotlin_not_measured: kotlin.not_measured,
            swift_us: swift.us,
            swift_added_us: swift.added_us,
            swift_cpu_us_per_call: swift.cpu_us_per_call,
            swift_version: swift.version,
            swift_not_measured: swift.not_measured,
        })
    })();
    rt.stop_server(server);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_drivers_line_is_what_maven_said_failed_not_a_colour_reset() {
        let maven = "\u{1b}[0m\u{1b}[0m[INFO] Scanning\n\u{1b}[0m[ERROR] Failed to execute goal: JSONObject[\"base_url\"] not found\n[ERROR] \n[ERROR] Re-run Maven\n\u{1b}[0m\u{1b}[0m\n";
        assert_eq!(
            last_line(maven),
            "[ERROR] Failed to execute goal: JSONObject[\"base_url\"] not found"
        );
        assert_eq!(
            last_line("built\n\u{1b}[1mswift: oops\u{1b}[0m\n\n"),
            "swift: oops"
        );
        assert_eq!(last_line(""), "no output");
    }

    #[test]
    fn each_drivers_answer_reads_in_microseconds_with_what_ran_it() {
        let read = |text: &str| {
            serde_json::from_str::<DriverSamples>(text)
                .expect("a driver's answer parses")
                .into_run()
        };
        let python = read(
            r#"{"samples_ns": [2000.0], "process_cpu_ns_per_call": 500.0, "python": "3.12.1"}"#,
        );
        assert_eq!(python.samples_us, vec![2.0]);
        assert_eq!(python.cpu_us_per_call, Some(0.5));
        assert_eq!(python.version.as_deref(), Some("3.12.1"));
        let kotlin = read(
            r#"{"samples_ns": [1000.0], "process_cpu_ns_per_call": null, "jvm": "OpenJDK 17"}"#,
        );
        assert_eq!(kotlin.cpu_us_per_call, None);
        assert_eq!(kotlin.version.as_deref(), Some("OpenJDK 17"));
        let swift = read(r#"{"samples_ns": [3000.0]}"#);
        assert_eq!(swift.samples_us, vec![3.0]);
        assert_eq!(swift.version, None);
    }

    #[test]
    fn a_failed_drivers_error_names_its_last_line() {
        assert_eq!(
            last_line("Traceback\n  File x\nValueError: boom\n\n"),
            "ValueError: boom"
        );
        assert_eq!(last_line("  \n"), "no output");
    }
}
