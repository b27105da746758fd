//! `gatehouse wire ...` and `gatehouse schema ...`: output and exit codes, bad input included.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use crate::common::{agenta_fixture, own_sample, BIN};

fn run(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut input = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            // A command that fails early (a usage error) may exit before reading its input:
            // its exit code is what is checked, a closed pipe is not a failure.
            if let Err(err) = input.write_all(text.as_bytes()) {
                assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe, "{err}");
            }
        }
    }
    child.wait_with_output().unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const WITH_SECRET: &str = r#"{"agent":{"llm":{"model":"anthropic/claude-sonnet-4-5"},
 "mcps":[{"name":"notion","connection":{"type":"http","url":"https://mcp.example/sse",
  "headers":{"Authorization":"Bearer sk-live-1234"},
  "credentials":{"type":"header_secret_refs","headers":{"authorization":"NOTION_TOKEN"}}}}],
 "tools":[{"name":"t","call":{"method":"POST","path":"/x","authorization":"Bearer tok-5678"}}]}}"#;

#[test]
fn stamp_strips_credentials_and_keeps_secret_refs() {
    let out = run(&["wire", "stamp"], Some(WITH_SECRET));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stamped: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let connection = &stamped["agent"]["mcps"][0]["connection"];
    assert!(connection.get("headers").is_none());
    assert_eq!(
        connection["credentials"]["headers"]["authorization"],
        "NOTION_TOKEN"
    );
    assert!(stamped["agent"]["tools"][0]["call"]
        .get("authorization")
        .is_none());
    assert_eq!(
        stamped["agent"]["llm"]["model"],
        "anthropic/claude-sonnet-4-5"
    );
    let text = stdout(&out);
    assert!(!text.contains("sk-live-1234") && !text.contains("tok-5678"));
    // Without --explain, nothing on stderr.
    assert_eq!(stderr(&out), "");
}

#[test]
fn stamp_explain_lists_labels_never_values() {
    let out = run(&["wire", "stamp", "--explain"], Some(WITH_SECRET));
    assert_eq!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert!(err.contains("stripped: connection.headers"), "{err}");
    assert!(err.contains("stripped: call.authorization"), "{err}");
    assert!(err.contains("measured: "), "{err}");
    assert!(!err.contains("sk-live-1234") && !err.contains("tok-5678"));
}

#[test]
fn stamp_agenta_compatible_lets_a_capitalized_header_through() {
    let input = r#"{"agent":{"mcps":[{"name":"n","connection":{"Headers":{"x":"1"},"headers":{"y":"2"}}}]}}"#;
    let strict = run(&["wire", "stamp"], Some(input));
    let strict: serde_json::Value = serde_json::from_slice(&strict.stdout).unwrap();
    assert_eq!(
        strict["agent"]["mcps"][0]["connection"],
        serde_json::json!({})
    );
    let agenta = run(&["wire", "stamp", "--agenta-compatible"], Some(input));
    assert_eq!(agenta.status.code(), Some(0));
    let agenta: serde_json::Value = serde_json::from_slice(&agenta.stdout).unwrap();
    assert_eq!(
        agenta["agent"]["mcps"][0]["connection"],
        serde_json::json!({"Headers": {"x": "1"}})
    );
}

#[test]
fn stamp_reads_a_file_argument() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("params.json");
    std::fs::write(&path, r#"{"agent":{"llm":{"model":"m"}}}"#).unwrap();
    let out = run(&["wire", "stamp", path.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stamped: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stamped, serde_json::json!({"agent":{"llm":{"model":"m"}}}));
}

#[test]
fn stamp_says_why_nothing_is_stamped_and_exits_3() {
    let empty = run(&["wire", "stamp"], Some("{}"));
    assert_eq!(empty.status.code(), Some(3));
    assert!(stderr(&empty).contains("empty"), "{}", stderr(&empty));
    assert_eq!(stdout(&empty), "");

    let null = run(&["wire", "stamp"], Some("null"));
    assert_eq!(null.status.code(), Some(3));
    assert!(stderr(&null).contains("empty"));

    let array = run(&["wire", "stamp"], Some("[1, 2]"));
    assert_eq!(array.status.code(), Some(3));
    assert!(stderr(&array).contains("not a JSON object"));

    // {"a": "xxxxxxxxxx"} measures 19 bytes in Python's json.dumps.
    let over = run(
        &["wire", "stamp", "--max-bytes", "18"],
        Some(r#"{"a":"xxxxxxxxxx"}"#),
    );
    assert_eq!(over.status.code(), Some(3));
    let err = stderr(&over);
    assert!(
        err.contains("19 bytes") && err.contains("cap of 18 bytes"),
        "{err}"
    );
    assert_eq!(stdout(&over), "");

    let at_cap = run(
        &["wire", "stamp", "--max-bytes", "19"],
        Some(r#"{"a":"xxxxxxxxxx"}"#),
    );
    assert_eq!(at_cap.status.code(), Some(0), "{}", stderr(&at_cap));
}

#[test]
fn stamp_bad_input_exits_1() {
    let invalid = run(&["wire", "stamp"], Some("{not json"));
    assert_eq!(invalid.status.code(), Some(1));
    assert!(stderr(&invalid).contains("stdin is not valid JSON"));

    let missing = run(&["wire", "stamp", "/definitely/not/here.json"], None);
    assert_eq!(missing.status.code(), Some(1));
    assert!(stderr(&missing).contains("cannot read /definitely/not/here.json"));

    let usage = run(&["wire", "stamp", "--max-bytes", "lots"], Some("{}"));
    assert_eq!(usage.status.code(), Some(2));
}

// upstream conformance: Agenta /run goldens through `gatehouse wire validate`
#[test]
fn validate_accepts_the_upstream_goldens() {
    for name in [
        "run_request.pi_core.json",
        "run_request.claude.json",
        "run_request.codex.json",
    ] {
        let Some(path) = agenta_fixture("Agenta /run goldens (gatehouse wire validate)", name)
        else {
            return;
        };
        let out = run(
            &[
                "wire",
                "validate",
                "--type",
                "RunRequest",
                path.to_str().unwrap(),
            ],
            None,
        );
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stdout(&out));
        assert!(stdout(&out).starts_with("valid: "));
    }
}

#[test]
fn validate_accepts_our_own_samples() {
    for name in [
        "RunRequest.session_run_all_keys.json",
        "RunRequest.adhoc_minimal.json",
    ] {
        let path = own_sample(name);
        let out = run(
            &[
                "wire",
                "validate",
                "--type",
                "RunRequest",
                path.to_str().unwrap(),
            ],
            None,
        );
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stdout(&out));
        assert!(stdout(&out).starts_with("valid: "));
    }
}

#[test]
fn validate_prints_each_error_with_its_json_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("row.json");
    std::fs::write(
        &path,
        r#"{"session_id": 7, "token": "t", "kind": "user_approval", "flags": {}}"#,
    )
    .unwrap();
    let out = run(
        &[
            "wire",
            "validate",
            "--type",
            "SessionInteraction",
            path.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.lines().any(|l| l.starts_with("/session_id: ")),
        "{text}"
    );
    assert!(stderr(&out).contains("invalid: "));
}

#[test]
fn validate_bad_input() {
    let unknown = run(&["wire", "validate", "--type", "Nope", "x.json"], None);
    assert_eq!(unknown.status.code(), Some(2));
    let err = stderr(&unknown);
    assert!(err.contains("unknown type name 'Nope'"), "{err}");
    assert!(
        err.contains("RunRequest") && err.contains("SessionInteraction"),
        "{err}"
    );

    let missing = run(
        &[
            "wire",
            "validate",
            "--type",
            "RunRequest",
            "/definitely/not/here.json",
        ],
        None,
    );
    assert_eq!(missing.status.code(), Some(1));
    assert!(stderr(&missing).contains("cannot read"));

    let invalid = run(
        &["wire", "validate", "--type", "RunRequest", "-"],
        Some("[1,"),
    );
    assert_eq!(invalid.status.code(), Some(1));
    assert!(stderr(&invalid).contains("not valid JSON"));

    let no_type = run(&["wire", "validate", "x.json"], None);
    assert_eq!(no_type.status.code(), Some(2));
}

#[test]
fn fingerprint_ignores_effective_parameters_and_follows_the_model() {
    let golden =
        std::fs::read_to_string(own_sample("RunRequest.session_run_all_keys.json")).unwrap();
    let base = run(&["wire", "fingerprint"], Some(&golden));
    assert_eq!(base.status.code(), Some(0), "{}", stderr(&base));
    let print = stdout(&base);
    let print = print.trim();
    assert_eq!(print.len(), 64);
    assert!(print
        .chars()
        .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));

    let mut value: serde_json::Value = serde_json::from_str(&golden).unwrap();
    value.as_object_mut().unwrap().remove("effectiveParameters");
    let without = run(&["wire", "fingerprint"], Some(&value.to_string()));
    assert_eq!(stdout(&without).trim(), print);

    value["model"] = serde_json::json!("some/other-model");
    let other = run(&["wire", "fingerprint"], Some(&value.to_string()));
    assert_ne!(stdout(&other).trim(), print);
}

#[test]
fn fingerprint_bad_input() {
    let invalid = run(&["wire", "fingerprint"], Some("nope"));
    assert_eq!(invalid.status.code(), Some(1));
    assert!(stderr(&invalid).contains("not valid JSON"));

    // Not a /run request, but the runner hashes it: the hash, and a note.
    let wrong = run(&["wire", "fingerprint"], Some(r#"{"x": 1}"#));
    assert_eq!(wrong.status.code(), Some(0), "{}", stderr(&wrong));
    assert!(stderr(&wrong).contains("not a valid /run request"));
    let empty = run(&["wire", "fingerprint"], Some("{}"));
    assert_eq!(
        stdout(&wrong),
        stdout(&empty),
        "unknown keys are not hashed"
    );
    // A blank body is `{}` to the runner.
    let blank = run(&["wire", "fingerprint"], Some(" \n"));
    assert_eq!(blank.status.code(), Some(0), "{}", stderr(&blank));
    assert_eq!(stdout(&blank), stdout(&empty));
    // Where the runner's hash throws, no hash.
    for body in ["null", r#"{"mcpServers": 5}"#, r#"{"mcpServers": [null]}"#] {
        let thrown = run(&["wire", "fingerprint"], Some(body));
        assert_eq!(thrown.status.code(), Some(1), "{body}");
        assert!(
            stderr(&thrown).contains("cannot hash"),
            "{body}: {}",
            stderr(&thrown)
        );
    }

    let missing = run(&["wire", "fingerprint", "/definitely/not/here.json"], None);
    assert_eq!(missing.status.code(), Some(1));
}

#[test]
fn schema_list_and_print() {
    let list = run(&["schema", "list"], None);
    assert_eq!(list.status.code(), Some(0));
    let text = stdout(&list);
    assert!(text.starts_with("NAME"));
    assert!(
        text.contains("SessionInteraction") && text.contains("session_interaction.schema.json")
    );

    let json = run(&["schema", "list", "--json"], None);
    let names: Vec<String> = serde_json::from_slice(&json.stdout).unwrap();
    assert!(names.iter().any(|n| n == "RunRequest"));

    let print = run(&["schema", "print", "SessionInteraction"], None);
    assert_eq!(print.status.code(), Some(0));
    let schema: serde_json::Value = serde_json::from_slice(&print.stdout).unwrap();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );

    let unknown = run(&["schema", "print", "Nope"], None);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("valid names: "));
}

#[test]
fn stamp_prints_the_exact_text_python_writes() {
    // Big integers digit for digit, `-0` as 0, floats as `repr`, NaN as Python writes it.
    let input = r#"{"agent": {"llm": {"seed": 123456789012345678901234567890, "t": -0, "x": 1E+16, "y": NaN}, "s": "\ud800é"}}"#;
    let out = run(&["wire", "stamp", "--agenta-compatible"], Some(input));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let python = r#"{"agent": {"llm": {"seed": 123456789012345678901234567890, "t": 0, "x": 1e+16, "y": NaN}, "s": "\ud800\u00e9"}}"#;
    assert_eq!(stdout(&out), format!("{python}\n"));
    // The printed text is what was measured: at its length it is stamped, one byte less not.
    let cap = python.len().to_string();
    let at = run(&["wire", "stamp", "--max-bytes", &cap], Some(input));
    assert_eq!(at.status.code(), Some(0), "{}", stderr(&at));
    let below = (python.len() - 1).to_string();
    let over = run(&["wire", "stamp", "--max-bytes", &below], Some(input));
    assert_eq!(over.status.code(), Some(3));
    assert!(
        stderr(&over).contains(&format!("{} bytes", python.len())),
        "{}",
        stderr(&over)
    );
    // What Python's json.loads refuses is refused (exit 1).
    for refused in ["\u{feff}{}", "{} {}", "{\"a\": 1,}", "[01]"] {
        let out = run(&["wire", "stamp"], Some(refused));
        assert_eq!(out.status.code(), Some(1), "{refused:?}");
    }
}

#[test]
fn stamp_batch_answers_one_line_per_config_as_the_single_stamp_does() {
    let configs = [
        r#"{"agent": {"mcps": [{"name": "n", "headers": {"authorization": "Bearer k"}}], "x": 1e-05}}"#,
        r#"{"agent": {"llm": {"seed": 123456789012345678901234567890, "y": NaN}, "s": "\ud800"}}"#,
        "[]",
        "{}",
        "null",
        r#"{"pad": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}"#,
        "{bad",
    ];
    let input: String = configs
        .iter()
        .map(|c| format!("{}\n", serde_json::to_string(c).unwrap()))
        .collect();
    let out = run(
        &[
            "wire",
            "stamp",
            "--batch",
            "--agenta-compatible",
            "--max-bytes",
            "100",
        ],
        Some(&input),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(results.len(), configs.len());
    let first = r#"{"agent": {"mcps": [{"name": "n"}], "x": 1e-05}}"#;
    assert_eq!(
        results[0],
        serde_json::json!({"stamped": first, "measured_bytes": first.len(), "stripped": ["headers"]})
    );
    let second =
        r#"{"agent": {"llm": {"seed": 123456789012345678901234567890, "y": NaN}, "s": "\ud800"}}"#;
    assert_eq!(results[1]["stamped"], second);
    // Each stamped line is what the single stamp prints.
    let single = run(
        &["wire", "stamp", "--agenta-compatible", "--max-bytes", "100"],
        Some(configs[1]),
    );
    assert_eq!(stdout(&single), format!("{second}\n"));
    assert_eq!(
        results[2],
        serde_json::json!({"not_stamped": "not_an_object"})
    );
    assert_eq!(results[3], serde_json::json!({"not_stamped": "empty"}));
    assert_eq!(results[4], serde_json::json!({"not_stamped": "empty"}));
    assert_eq!(
        results[5],
        serde_json::json!({"not_stamped": "over_cap", "measured_bytes": 106})
    );
    assert!(results[6]["not_json"].is_string(), "{}", results[6]);
    // A line that is not a JSON string is a usage error, named by its line.
    let bad = run(&["wire", "stamp", "--batch"], Some("\"{}\"\n{}\n"));
    assert_eq!(bad.status.code(), Some(1));
    assert!(stderr(&bad).contains("line 2"), "{}", stderr(&bad));
}

#[test]
fn validate_batch_answers_one_line_per_document() {
    let valid = r#"{"harness":"mock","sandbox":"local","sessionId":"s-1","agentsMd":null,"model":"m","messages":[{"role":"user","content":"hi"}],"context":null,"telemetry":null}"#;
    let input = format!("{valid}\n{{\"harness\": 3}}\n\n{{bad\n");
    let out = run(
        &["wire", "validate", "--type", "RunRequest", "--batch", "-"],
        Some(&input),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(results.len(), 3, "the blank line is skipped");
    assert_eq!(results[0], serde_json::json!({"valid": true}));
    let errors = results[1]["errors"].as_array().unwrap();
    assert!(
        errors
            .iter()
            .any(|e| e.as_str().unwrap().starts_with("/harness: ")),
        "{errors:?}"
    );
    assert!(results[2]["not_json"].is_string(), "{}", results[2]);
    // The single-document form agrees on the valid one.
    let single = run(
        &["wire", "validate", "--type", "RunRequest", "-"],
        Some(valid),
    );
    assert_eq!(single.status.code(), Some(0), "{}", stderr(&single));
}

#[test]
fn row_prints_a_row_as_agentas_api_renders_it() {
    let given = r#"{"count": 1, "interaction": {"session_id": "s", "token": "t", "kind": "user_approval", "tags": {"lr": 1e-05, "n": 1E+16}, "meta": {"eps": 1.5e-07, "big": 123456789012345678901234567890}}}"#;
    let out = run(&["wire", "row"], Some(given));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rendered = stdout(&out);
    assert!(
        rendered.contains(r#""tags":{"lr":0.00001,"n":1e+16},"meta":{"eps":1.5e-7,"big":123456789012345678901234567890}"#),
        "{rendered}"
    );
    // Every key of the row is written, `null` when unset, as Agenta's model writes it.
    assert!(
        rendered.contains(
            r#""data":null,"flags":{"delivered_in_band":false,"delivered_webhook":false}"#
        ),
        "{rendered}"
    );
    let batch = run(
        &["wire", "row", "--batch"],
        Some(&format!("{given}\n{{\"count\": \"x\"}}\n")),
    );
    assert_eq!(batch.status.code(), Some(0), "{}", stderr(&batch));
    let lines: Vec<serde_json::Value> = stdout(&batch)
        .split('\n')
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(
        lines[0],
        serde_json::json!({"rendered": rendered.trim_end()})
    );
    assert!(
        lines[1]["invalid"].as_str().unwrap().contains("count"),
        "{}",
        lines[1]
    );
    let bad = run(&["wire", "row"], Some("[]"));
    assert_eq!(bad.status.code(), Some(1));
}

#[test]
fn fingerprint_offers_mains_variant() {
    let golden =
        std::fs::read_to_string(own_sample("RunRequest.session_run_all_keys.json")).unwrap();
    let head = run(&["wire", "fingerprint"], Some(&golden));
    let explicit = run(
        &["wire", "fingerprint", "--variant", "pr-head"],
        Some(&golden),
    );
    let main = run(&["wire", "fingerprint", "--variant", "main"], Some(&golden));
    assert_eq!(stdout(&head), stdout(&explicit));
    assert_ne!(stdout(&head), stdout(&main));
    // Main does not hash the revision: changing it moves only the PR-head hash.
    let mut value: serde_json::Value = serde_json::from_str(&golden).unwrap();
    value["runContext"]["workflow"]["revision"]["id"] = serde_json::json!("rev-other");
    let changed = value.to_string();
    let head2 = run(&["wire", "fingerprint"], Some(&changed));
    let main2 = run(
        &["wire", "fingerprint", "--variant", "main"],
        Some(&changed),
    );
    assert_ne!(stdout(&head), stdout(&head2));
    assert_eq!(stdout(&main), stdout(&main2));
    let bad = run(&["wire", "fingerprint", "--variant", "v2"], Some(&golden));
    assert_eq!(bad.status.code(), Some(2));
}

/// Agenta's recorded stamp vectors through the command, as a held-out vector would be run:
/// `wire stamp --agenta-compatible --max-bytes N` prints Agenta's output text, or exits 3
/// naming Agenta's measured size.
#[test]
fn the_command_gives_agentas_stamp_on_every_recorded_vector() {
    let Some(dir) = gatehouse_fixtures::require(
        gatehouse_fixtures::Upstream::Agenta,
        "recorded stamp vectors through `gatehouse wire stamp`",
    ) else {
        return;
    };
    let text = std::fs::read_to_string(dir.join("recorded/stamp_vectors.json")).unwrap();
    let file: serde_json::Value = serde_json::from_str(&text).unwrap();
    let vectors = file["vectors"].as_array().unwrap();
    let mut mismatches = Vec::new();
    for vector in vectors {
        let name = vector["name"].as_str().unwrap();
        let cap = vector["cap"].to_string();
        let input = vector["input_text"].as_str().unwrap();
        let out = run(
            &["wire", "stamp", "--agenta-compatible", "--max-bytes", &cap],
            Some(input),
        );
        let ok = match vector["result"].as_str().unwrap() {
            "stamped" => {
                out.status.code() == Some(0)
                    && stdout(&out) == format!("{}\n", vector["output_text"].as_str().unwrap())
            }
            _ => match vector["measured_size"].as_u64() {
                Some(size) => {
                    out.status.code() == Some(3) && stderr(&out).contains(&format!("{size} bytes"))
                }
                None => out.status.code() == Some(3),
            },
        };
        if !ok {
            mismatches.push(format!(
                "{name} (cap {cap}): {}{}",
                stdout(&out),
                stderr(&out)
            ));
        }
    }
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}

/// Agenta's recorded fingerprint vectors through `wire fingerprint` (both variants).
#[test]
fn the_command_gives_the_runners_fingerprint_on_every_recorded_vector() {
    let Some(dir) = gatehouse_fixtures::require(
        gatehouse_fixtures::Upstream::Agenta,
        "recorded fingerprint vectors through `gatehouse wire fingerprint`",
    ) else {
        return;
    };
    let text = std::fs::read_to_string(dir.join("recorded/fingerprint_vectors.json")).unwrap();
    let file: serde_json::Value = serde_json::from_str(&text).unwrap();
    for vector in file["vectors"].as_array().unwrap() {
        let id = vector["id"].as_str().unwrap();
        let request = vector["request"].to_string();
        let head = run(&["wire", "fingerprint"], Some(&request));
        assert_eq!(
            stdout(&head).trim(),
            vector["config_fingerprint"].as_str().unwrap(),
            "{id}: {}",
            stderr(&head)
        );
        let main = run(
            &["wire", "fingerprint", "--variant", "main"],
            Some(&request),
        );
        assert_eq!(
            stdout(&main).trim(),
            vector["config_fingerprint_main_753af38"].as_str().unwrap(),
            "{id}"
        );
    }
}

/// `/run` bodies Agenta's runner reads and hashes although a strict JSON reader refuses them
/// (lone surrogate escapes, duplicate keys, a non-string `is_draft` or `revision.version`),
/// from the project's own vectors (`tests/data/tolerant_json.vectors.json`, Node's
/// `JSON.parse` and the runner's hash): `wire validate` accepts each, `wire fingerprint`
/// prints the runner's hash for both variants.
#[test]
fn validate_and_fingerprint_read_what_the_runner_reads() {
    let path = gatehouse_fixtures::workspace_root().join("tests/data/tolerant_json.vectors.json");
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let bodies = file["run_bodies"].as_array().unwrap();
    // A process per call: every fifth body (60) covers each kind several times.
    let mut surrogates = 0;
    for case in bodies.iter().step_by(5) {
        let text = case["text"].as_str().unwrap();
        surrogates += usize::from(text.contains("\\ud8") || text.contains("\\udc"));
        let valid = run(
            &["wire", "validate", "--type", "RunRequest", "-"],
            Some(text),
        );
        assert_eq!(valid.status.code(), Some(0), "{text}: {}", stdout(&valid));
        let head = run(&["wire", "fingerprint"], Some(text));
        assert_eq!(
            stdout(&head).trim(),
            case["fingerprint"].as_str().unwrap(),
            "{text}: {}",
            stderr(&head)
        );
        let main = run(&["wire", "fingerprint", "--variant", "main"], Some(text));
        assert_eq!(
            stdout(&main).trim(),
            case["fingerprint_main"].as_str().unwrap(),
            "{text}"
        );
    }
    assert!(surrogates >= 10, "{surrogates}");

    // JSON.parse refuses NaN, so the runner never hashes it.
    let nan = run(&["wire", "fingerprint"], Some(r#"{"harness": NaN}"#));
    assert_eq!(nan.status.code(), Some(1));
    assert!(stderr(&nan).contains("not valid JSON"));
}

/// The lines of README.md's ```bash blocks, comments and all.
fn readme_bash_lines() -> Vec<String> {
    let readme = std::fs::read_to_string(gatehouse_fixtures::workspace_root().join("README.md"))
        .expect("README.md is readable");
    let mut lines = Vec::new();
    let mut in_bash = false;
    for line in readme.lines() {
        let fence = line.trim_start();
        if in_bash {
            if fence.starts_with("```") {
                in_bash = false;
            } else {
                lines.push(line.to_string());
            }
        } else if fence == "```bash" {
            in_bash = true;
        }
    }
    lines
}

/// The file after `< ` in a command line, if it reads one from a file.
fn stdin_file(line: &str) -> Option<&str> {
    let command = line.split(" #").next().unwrap_or(line);
    let (_, after) = command.split_once(" < ")?;
    after.split_whitespace().next()
}

#[test]
fn every_file_a_readme_command_reads_exists() {
    let root = gatehouse_fixtures::workspace_root();
    let named: Vec<String> = readme_bash_lines()
        .iter()
        .filter_map(|line| stdin_file(line).map(str::to_string))
        .collect();
    assert!(
        named.iter().any(|file| file == "examples/params.json"),
        "the command line's quick start reads examples/params.json: {named:?}"
    );
    for file in &named {
        assert!(
            root.join(file).is_file(),
            "README.md has a command reading {file}, which the repository does not have"
        );
    }
}

/// The quick start's `gatehouse wire stamp --explain < examples/params.json`, run as
/// written from the repository's root: the sample's three credentials are stripped and
/// named by path, never shown.
#[test]
fn the_readme_stamp_command_runs_on_the_sample_params() {
    let lines = readme_bash_lines();
    let line = lines
        .iter()
        .find(|line| line.starts_with("gatehouse wire stamp --explain < "))
        .expect("the command line's quick start has its wire stamp line");
    let file = stdin_file(line).expect("it reads a file");
    let command = line.split(" < ").next().unwrap_or_default();
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();
    let root = gatehouse_fixtures::workspace_root();
    let input = std::fs::File::open(root.join(file))
        .unwrap_or_else(|err| panic!("README.md reads {file}: {err}"));
    let out = Command::new(BIN)
        .current_dir(&root)
        .args(&args)
        .stdin(input)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let explained = stderr(&out);
    for label in [
        "agent.llm.api_key",
        "call.authorization",
        "connection.headers",
    ] {
        assert!(
            explained.contains(&format!("stripped: {label}")),
            "{explained}"
        );
    }
    let stamped: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        stamped["agent"]["mcps"][0]["connection"]["credentials"]["headers"]["authorization"],
        "NOTION_TOKEN"
    );
    let sample = std::fs::read_to_string(root.join(file)).unwrap();
    assert!(
        sample.contains("not-a-real-key"),
        "the sample carries credentials"
    );
    assert!(!stdout(&out).contains("not-a-real-key") && !explained.contains("not-a-real-key"));
}
