//! `gatehouse wire stamp|validate|row|fingerprint`: check wire documents offline.

use std::io::Read;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use gatehouse_wire::effective::{stamp_python_text, NotStamped, PythonStampError, StampPolicy};
use gatehouse_wire::fingerprint::{config_fingerprint_of_value, read_run_body, FingerprintVariant};
use gatehouse_wire::pyjson::{parse_js, PyValue, JS_MAX_DEPTH};
use gatehouse_wire::redact::Redaction;
use serde_json::Value;

use crate::exit::{CliError, CliResult, Exit};

/// `gatehouse wire ...`
#[derive(Debug, Args)]
pub struct WireArgs {
    #[command(subcommand)]
    command: WireCommand,
}

#[derive(Debug, Subcommand)]
enum WireCommand {
    /// Stamp a config as `effectiveParameters` (A2): redact credentials, apply the size cap.
    ///
    /// Reads the parameters as Python's `json.loads` does and prints the stamp on stdout as
    /// Python's `json.dumps` writes it: the exact text Agenta measures (its length is the
    /// measured size). When nothing would be stamped (empty, not an object, over the cap) it
    /// says why on stderr and exits 3.
    Stamp {
        /// The size cap in bytes (Python `json.dumps` measure, after redaction).
        #[arg(long, value_name = "N")]
        max_bytes: Option<usize>,
        /// List the stripped fields (labels only, never their values) and the measured size on stderr.
        #[arg(long)]
        explain: bool,
        /// Apply Agenta's redaction rule exactly (case-sensitive keys, only `agent.mcps` and
        /// `agent.tools`) instead of Gatehouse's stricter one (CONTRACT.md C2).
        #[arg(long)]
        agenta_compatible: bool,
        /// Stamp many configs in one process (JSON Lines): each input line is one config's
        /// text as a JSON string; each output line is its result, in order:
        /// `{"stamped": TEXT, "measured_bytes": N, "stripped": [...]}`,
        /// `{"not_stamped": "empty" | "not_an_object" | "over_cap", "measured_bytes": N}`
        /// (`measured_bytes` only over the cap) or `{"not_json": MESSAGE}`. Exits 0 unless
        /// an input line is not a JSON string.
        #[arg(long, conflicts_with = "explain")]
        batch: bool,
        /// The parameters JSON file (with `--batch`, the JSON Lines file); `-` or absent
        /// reads stdin.
        file: Option<PathBuf>,
    },
    /// Validate a document against Gatehouse's JSON Schema for a wire type.
    ///
    /// Reads the document as the upstreams' parsers do (JavaScript's `JSON.parse`): a lone
    /// surrogate escape and duplicate keys (the last wins) are read, not refused. Prints each error with its JSON path; exits 1 when the document is invalid.
    Validate {
        /// The wire type (see `gatehouse schema list`).
        #[arg(long = "type", short = 't', value_name = "T")]
        type_name: String,
        /// Validate many documents in one process (JSON Lines): each input line is one
        /// document, each output line its result, in order: `{"valid": true}`,
        /// `{"errors": ["PATH: ERROR", ...]}` or `{"not_json": MESSAGE}`. Exits 0 unless
        /// the input cannot be read.
        #[arg(long)]
        batch: bool,
        /// The document (with `--batch`, the JSON Lines file); `-` reads stdin.
        file: PathBuf,
    },
    /// Print a row response (`{count, interaction}`, A4) as Gatehouse's server answers it,
    /// which is how Agenta's API answers it: compact, every number spelled as pydantic
    /// spells it (`0.00001`, `1e-7`, `1e+16`).
    Row {
        /// Render many responses in one process (JSON Lines): each input line is one
        /// document, each output line its result, in order: `{"rendered": TEXT}` or
        /// `{"invalid": MESSAGE}`. Exits 0 unless the input cannot be read.
        #[arg(long)]
        batch: bool,
        /// The response JSON file (with `--batch`, the JSON Lines file); `-` or absent
        /// reads stdin.
        file: Option<PathBuf>,
    },
    /// Print the `configFingerprint` (A3) of a `/run` request: the hash Agenta's runner
    /// computes (PR #5689 head by default), lowercase hex on stdout. The request is read as
    /// the runner's `JSON.parse` reads it (lone surrogates kept, the last of duplicate keys, a
    /// blank body as `{}`) and hashed whether or not it is a valid `/run` request, as the
    /// runner hashes it (a note on stderr says when it is not); exit 1 when `JSON.parse`
    /// refuses it or the runner's hash throws on it (a `null` MCP server, say).
    Fingerprint {
        /// Which runner's hash: `pr-head` (default; hashes the workflow revision and the
        /// draft flag) or `main` (Agenta main 753af3838e, which does not).
        #[arg(long, value_enum, default_value_t = Variant::PrHead)]
        variant: Variant,
        /// The run request JSON file; `-` or absent reads stdin.
        file: Option<PathBuf>,
    },
}

/// `--variant` of `wire fingerprint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Variant {
    /// Agenta PR #5689 head (3561f72e86).
    PrHead,
    /// Agenta main (753af3838e).
    Main,
}

/// Run a `wire` subcommand.
pub fn run(args: WireArgs) -> CliResult {
    match args.command {
        WireCommand::Stamp {
            max_bytes,
            explain,
            agenta_compatible,
            batch,
            file,
        } => {
            let mut policy = StampPolicy::default();
            if let Some(max) = max_bytes {
                policy.max_bytes = max;
            }
            if agenta_compatible {
                policy.redaction = Redaction::AgentaCompatible;
            }
            if batch {
                stamp_batch(file.as_deref(), &policy)
            } else {
                stamp(file.as_deref(), &policy, explain)
            }
        }
        WireCommand::Validate {
            type_name,
            batch,
            file,
        } => {
            if batch {
                validate_batch(&type_name, &file)
            } else {
                validate(&type_name, &file)
            }
        }
        WireCommand::Row { batch, file } => row(file.as_deref(), batch),
        WireCommand::Fingerprint { variant, file } => {
            let variant = match variant {
                Variant::PrHead => FingerprintVariant::PrHead,
                Variant::Main => FingerprintVariant::Main,
            };
            fingerprint(file.as_deref(), variant)
        }
    }
}

/// Read a file, or stdin for `None` / `-`.
pub fn read_input(file: Option<&Path>) -> CliResult<Vec<u8>> {
    match file {
        None => read_stdin(),
        Some(path) if path == Path::new("-") => read_stdin(),
        Some(path) => std::fs::read(path)
            .map_err(|err| CliError::other(format!("cannot read {}: {err}", path.display()))),
    }
}

fn read_stdin() -> CliResult<Vec<u8>> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|err| CliError::other(format!("cannot read stdin: {err}")))?;
    Ok(bytes)
}

fn source_name(file: Option<&Path>) -> String {
    match file {
        None => "stdin".to_string(),
        Some(path) if path == Path::new("-") => "stdin".to_string(),
        Some(path) => path.display().to_string(),
    }
}

/// Read a document as the upstreams' own parsers do (JavaScript's `JSON.parse`, which
/// Agenta's runner reads a `/run` body with, and which takes what Python's `json.loads`
/// takes but `NaN` and `Infinity`): a lone surrogate escape is kept, the last of duplicate
/// keys wins. Returns the tolerant value and its form for the typed readers and the schema
/// (a lone surrogate there is U+FFFD).
fn read_tolerant(bytes: &[u8], source: &str) -> CliResult<(PyValue, Value)> {
    let text = std::str::from_utf8(bytes)
        .map_err(|err| CliError::other(format!("{source} is not UTF-8 text: {err}")))?;
    let value = parse_js(text)
        .map_err(|err| CliError::other(format!("{source} is not valid JSON: {err}")))?;
    let json = value
        .to_json_lossy(JS_MAX_DEPTH)
        .map_err(|err| CliError::other(format!("{source} is not valid JSON: {err}")))?;
    Ok((value, json))
}

/// Stamp as Agenta's Python does (`json.loads`, redact, `json.dumps`, measure): the text
/// printed is the exact `json.dumps` text Agenta measures, so its length is the measured size.
fn stamp(file: Option<&Path>, policy: &StampPolicy, explain: bool) -> CliResult {
    let source = source_name(file);
    let bytes = read_input(file)?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|err| CliError::other(format!("{source} is not UTF-8 text: {err}")))?;
    match stamp_python_text(text, policy) {
        Ok(stamped) => {
            if explain {
                if stamped.stripped.is_empty() {
                    eprintln!("stripped: nothing");
                } else {
                    for label in &stamped.stripped {
                        eprintln!("stripped: {label}");
                    }
                }
                eprintln!(
                    "measured: {} bytes (cap {})",
                    stamped.measured_bytes, policy.max_bytes
                );
            }
            println!("{}", stamped.text);
            Ok(())
        }
        Err(PythonStampError::NotJson(err)) => Err(CliError::other(format!(
            "{source} is not valid JSON (as Python's json.loads reads it): {err}"
        ))),
        Err(PythonStampError::NotStamped(why)) => {
            let message = match why {
                NotStamped::Empty => "not stamped: the parameters are empty".to_string(),
                NotStamped::NotAnObject => {
                    "not stamped: the parameters are not a JSON object".to_string()
                }
                NotStamped::OverCap {
                    measured_bytes,
                    max_bytes,
                } => format!(
                    "not stamped: {measured_bytes} bytes after redaction is over the cap of {max_bytes} bytes (dropped whole, never truncated)"
                ),
            };
            Err(CliError::new(Exit::Conflict, message))
        }
    }
}

/// `wire stamp --batch`: one result line per input line (see the flag's help), written as
/// the inputs are read, so thousands of configs cost one process.
fn stamp_batch(file: Option<&Path>, policy: &StampPolicy) -> CliResult {
    use std::io::Write;
    let source = source_name(file);
    let bytes = read_input(file)?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|err| CliError::other(format!("{source} is not UTF-8 text: {err}")))?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let config: String = serde_json::from_str(line).map_err(|err| {
            CliError::other(format!(
                "{source} line {}: not a JSON string holding a config's text: {err}",
                index + 1
            ))
        })?;
        let result = match stamp_python_text(&config, policy) {
            Ok(stamped) => serde_json::json!({
                "stamped": stamped.text,
                "measured_bytes": stamped.measured_bytes,
                "stripped": stamped.stripped,
            }),
            Err(PythonStampError::NotJson(err)) => serde_json::json!({"not_json": err.to_string()}),
            Err(PythonStampError::NotStamped(NotStamped::Empty)) => {
                serde_json::json!({"not_stamped": "empty"})
            }
            Err(PythonStampError::NotStamped(NotStamped::NotAnObject)) => {
                serde_json::json!({"not_stamped": "not_an_object"})
            }
            Err(PythonStampError::NotStamped(NotStamped::OverCap { measured_bytes, .. })) => {
                serde_json::json!({"not_stamped": "over_cap", "measured_bytes": measured_bytes})
            }
        };
        writeln!(out, "{result}")
            .map_err(|err| CliError::other(format!("cannot write stdout: {err}")))?;
    }
    out.flush()
        .map_err(|err| CliError::other(format!("cannot write stdout: {err}")))?;
    Ok(())
}

/// The compiled schema of a wire type.
fn type_validator(type_name: &str) -> CliResult<jsonschema::Validator> {
    let entry = crate::schema::entry(type_name)?;
    jsonschema::validator_for(&entry.schema).map_err(|err| {
        CliError::other(format!(
            "the schema for {type_name} does not compile: {err}"
        ))
    })
}

/// Each schema error of `document` as `PATH: ERROR` (`/` for the document itself).
fn schema_errors(validator: &jsonschema::Validator, document: &Value) -> Vec<String> {
    validator
        .iter_errors(document)
        .map(|err| {
            let path = err.instance_path().to_string();
            let path = if path.is_empty() {
                "/".to_string()
            } else {
                path
            };
            format!("{path}: {err}")
        })
        .collect()
}

/// `wire validate --batch`: one result line per input line (see the flag's help).
fn validate_batch(type_name: &str, file: &Path) -> CliResult {
    use std::io::Write;
    let validator = type_validator(type_name)?;
    let source = source_name(Some(file));
    let bytes = read_input(Some(file))?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|err| CliError::other(format!("{source} is not UTF-8 text: {err}")))?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        // Each line read as `validate` reads one document (the runner's `JSON.parse`).
        let read = parse_js(line)
            .map_err(|err| err.to_string())
            .and_then(|value| {
                value
                    .to_json_lossy(JS_MAX_DEPTH)
                    .map_err(|err| err.to_string())
            });
        let result = match read {
            Ok(document) => {
                let errors = schema_errors(&validator, &document);
                if errors.is_empty() {
                    serde_json::json!({"valid": true})
                } else {
                    serde_json::json!({"errors": errors})
                }
            }
            Err(err) => serde_json::json!({"not_json": err}),
        };
        writeln!(out, "{result}")
            .map_err(|err| CliError::other(format!("cannot write stdout: {err}")))?;
    }
    out.flush()
        .map_err(|err| CliError::other(format!("cannot write stdout: {err}")))?;
    Ok(())
}

fn validate(type_name: &str, file: &Path) -> CliResult {
    let validator = type_validator(type_name)?;
    let source = source_name(Some(file));
    let (_, document) = read_tolerant(&read_input(Some(file))?, &source)?;
    let errors = schema_errors(&validator, &document);
    if errors.is_empty() {
        println!("valid: {source} is a valid {type_name}");
        Ok(())
    } else {
        for line in &errors {
            println!("{line}");
        }
        Err(CliError::other(format!(
            "invalid: {source} has {} error(s) against {type_name}",
            errors.len()
        )))
    }
}

/// One row response as Agenta's API renders it, or why it is not one.
fn render_row(document: &str) -> Result<String, String> {
    let row: gatehouse_wire::interaction::InteractionResponse =
        gatehouse_wire::from_json_slice(document.as_bytes()).map_err(|err| err.to_string())?;
    gatehouse_wire::agenta_api_json::to_agenta_api_json(&row).map_err(|err| err.to_string())
}

/// `wire row [--batch]`.
fn row(file: Option<&Path>, batch: bool) -> CliResult {
    use std::io::Write;
    let source = source_name(file);
    let bytes = read_input(file)?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|err| CliError::other(format!("{source} is not UTF-8 text: {err}")))?;
    if !batch {
        let rendered = render_row(text)
            .map_err(|err| CliError::other(format!("{source} is not a row response: {err}")))?;
        println!("{rendered}");
        return Ok(());
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let result = match render_row(line) {
            Ok(rendered) => serde_json::json!({"rendered": rendered}),
            Err(err) => serde_json::json!({"invalid": err}),
        };
        writeln!(out, "{result}")
            .map_err(|err| CliError::other(format!("cannot write stdout: {err}")))?;
    }
    out.flush()
        .map_err(|err| CliError::other(format!("cannot write stdout: {err}")))?;
    Ok(())
}

fn fingerprint(file: Option<&Path>, variant: FingerprintVariant) -> CliResult {
    let source = source_name(file);
    let bytes = read_input(file)?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|err| CliError::other(format!("{source} is not UTF-8 text: {err}")))?;
    // The hash of what the runner's JSON.parse reads (a blank body is `{}` there), valid
    // `/run` request or not: the runner hashes before anything checks the request.
    let request = read_run_body(text)
        .map_err(|err| CliError::other(format!("{source} is not valid JSON: {err}")))?;
    let hash = config_fingerprint_of_value(&request, variant)
        .map_err(|err| CliError::other(format!("{source}: {err}")))?;
    if let Ok(document) = request.to_json_lossy(JS_MAX_DEPTH) {
        if let Err(err) =
            gatehouse_wire::from_json_value::<gatehouse_wire::run::RunRequest>(document)
        {
            eprintln!(
                "note: {source} is not a valid /run request ({err}); the runner hashes what it reads all the same"
            );
        }
    }
    println!("{hash}");
    Ok(())
}
