//! The inputs every benchmark shares: Agenta's fixtures, the 64 KiB config, and the
//! deterministic set of configs on which Gatehouse's stamp and Agenta's must agree.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use gatehouse_wire::pyjson::python_json_dumps_len;

use crate::BenchError;

/// The cap of the 64 KiB benchmark config: its measured size stays at or under this.
pub const CONFIG_64K_CAP: usize = 65536;

/// The stamp vectors that exercise the two documented C2 departures (case-insensitive
/// credential keys, bare-template `mcps`/`tools`). Agenta and Gatehouse differ on them on
/// purpose, so they are left out of the shared parity set.
pub const C2_DEPARTURE_CASES: [&str; 2] = [
    "key_match_is_case_sensitive_Authorization_survives",
    "bare_template_top_level_mcps_not_redacted",
];

/// The JSON text a config arrives as (compact, as a client sends it): what the `read_stamp`
/// benchmarks read, on both sides (`gatehouse-bench prepare-stamp` writes it for Python).
pub fn config_text(config: &Value) -> String {
    serde_json::to_string(config).unwrap_or_default()
}

/// The `/run` request goldens, by short name (`run_request.<name>.json`).
pub const RUN_REQUEST_GOLDENS: [&str; 4] = ["pi_core", "claude", "codex", "attachment"];

/// The workspace root (two levels above this crate).
pub fn workspace_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or(manifest)
}

/// Agenta's fixture folder, as the conformance suites find it (`gatehouse_fixtures`):
/// `$GATEHOUSE_FIXTURES/agenta`, else `shared/fixtures/agenta` beside the checkout.
pub fn fixtures_dir() -> PathBuf {
    gatehouse_fixtures::fixtures_root().join(gatehouse_fixtures::Upstream::Agenta.folder())
}

/// Read a fixture file's bytes.
pub fn read_fixture(name: &str) -> Result<Vec<u8>, BenchError> {
    let path = fixtures_dir().join(name);
    std::fs::read(&path).map_err(|source| BenchError::Io {
        what: format!("reading fixture {}", path.display()),
        source,
    })
}

/// Parse a fixture file as JSON.
pub fn fixture_json(name: &str) -> Result<Value, BenchError> {
    let bytes = read_fixture(name)?;
    serde_json::from_slice(&bytes).map_err(|source| BenchError::Json {
        what: format!("parsing fixture {name}"),
        source,
    })
}

/// One named stamp input.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedInput {
    /// A unique name.
    pub name: String,
    /// The parameters to stamp.
    pub input: Value,
}

/// The cases of `effective_config.stamp.vectors.derived.json`, in file order.
pub fn stamp_vector_cases() -> Result<Vec<NamedInput>, BenchError> {
    let vectors = fixture_json("effective_config.stamp.vectors.derived.json")?;
    let cases = vectors
        .get("cases")
        .and_then(Value::as_array)
        .ok_or_else(|| BenchError::Invalid("the stamp vectors have no `cases` list".into()))?;
    cases
        .iter()
        .map(|case| {
            let name = case
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| BenchError::Invalid("a stamp vector case has no name".into()))?;
            let input = case.get("input").cloned().ok_or_else(|| {
                BenchError::Invalid(format!("stamp vector case {name} has no input"))
            })?;
            Ok(NamedInput {
                name: name.to_string(),
                input,
            })
        })
        .collect()
}

/// The 178-byte golden blob: the first case of the stamp vectors.
pub fn golden_blob() -> Result<Value, BenchError> {
    stamp_vector_cases()?
        .into_iter()
        .next()
        .map(|case| case.input)
        .ok_or_else(|| BenchError::Invalid("the stamp vectors are empty".into()))
}

/// The `/run` request of a session run as the service tier builds it, without its
/// `effectiveParameters`: what the "config in, body bytes out" benchmark (row 1) writes
/// around the stamp, and what Agenta's side serializes too (`run_body_base.json`).
pub fn run_body_base() -> gatehouse_wire::run::RunRequest {
    use gatehouse_wire::run::{ChatMessage, Harness, RunRequest, Sandbox};
    RunRequest::new(
        Harness::PiCore,
        Sandbox::Local,
        "anthropic/claude-sonnet-4-5",
        vec![
            ChatMessage::text("user", "List the files in the release folder, then tag it."),
            ChatMessage::text("assistant", "I will list them first."),
        ],
    )
    .with_session_id(Some("48268312-6a5e-4f0e-9d77-0c1d2e3f4a5b".to_string()))
    .with_turn_id("019fac94-0000-7000-8000-0000000003e9")
    .with_project_id("019fac94-0000-7000-8000-000000000000")
}

/// The `data.parameters` of the gates the live benchmarks open: a config of our own
/// with the golden blob's shape and measured size (178 B), so the live rows need no
/// upstream fixture.
pub fn gate_parameters() -> Value {
    json!({"agent": {
        "instructions": "Answer briefly, ask first.",
        "llm": {"model": "anthropic/claude-sonnet-4-5", "provider": "anthropic"},
        "runner": {"permissions": {"default": "ask"}}
    }})
}

/// A tiny deterministic generator (64-bit LCG, Knuth's constants): the same inputs on
/// every machine and every run, with no dependency.
#[derive(Debug, Clone)]
pub struct Lcg(u64);

impl Lcg {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Self(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    /// The next 64 random bits (the high half of the state is the best mixed).
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let x = self.0;
        (x >> 32) ^ (x << 32) ^ (x >> 17)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// One element of `items` (non-empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

const WORDS: [&str; 16] = [
    "fetch",
    "issue",
    "ticket",
    "repository",
    "branch",
    "deploy",
    "query",
    "summary",
    "page",
    "comment",
    "label",
    "owner",
    "status",
    "window",
    "cursor",
    "limit",
];

/// One tool spec with a JSON-Schema input, the bulk of a real builder config.
fn tool_spec(index: usize, rng: &mut Lcg) -> Value {
    let verb = rng.pick(&WORDS);
    let noun = rng.pick(&WORDS);
    let mut properties = Map::new();
    let fields = 3 + rng.below(5) as usize;
    for field in 0..fields {
        let name = format!("{}_{field}", rng.pick(&WORDS));
        let schema = match rng.below(4) {
            0 => {
                json!({"type": "string", "description": format!("The {} to {verb}, e.g. \"{noun}-42\".", rng.pick(&WORDS))})
            }
            1 => json!({"type": "integer", "minimum": 0, "maximum": 1000, "default": 25}),
            2 => {
                json!({"type": "array", "items": {"type": "string"}, "description": "Zero or more labels (café, naïve → ok)."})
            }
            _ => json!({"type": "boolean", "default": false}),
        };
        properties.insert(name, schema);
    }
    let required: Vec<Value> = properties
        .keys()
        .take(2)
        .cloned()
        .map(Value::from)
        .collect();
    json!({
        "name": format!("{verb}_{noun}_{index}"),
        "description": format!("Use this tool to {verb} a {noun}. It returns JSON with the {} and the {}; never guess an id.", rng.pick(&WORDS), rng.pick(&WORDS)),
        "inputSchema": {"type": "object", "properties": Value::Object(properties), "required": required, "additionalProperties": false},
        "call": {"method": "POST", "path": format!("/tools/{verb}/{noun}"), "body": {"source": "agent"}},
        "timeoutMs": 30000,
        "readOnly": index % 3 == 0,
        "permission": if index % 4 == 0 { "ask" } else { "allow" }
    })
}

/// A realistic builder config of just under 64 KiB: instructions, model, permissions, an
/// MCP server whose static `connection.headers` is stripped by redaction, and tools with
/// JSON-Schema inputs. Its measured size after redaction (Python's `json.dumps` bytes) is
/// in `CONFIG_64K_CAP - 64 ..= CONFIG_64K_CAP`, and it is the same on every run.
pub fn config_64k() -> Value {
    let mut rng = Lcg::new(64);
    let mcps = json!([{
        "name": "notion",
        "connection": {
            "type": "http",
            "url": "https://mcp.example/sse",
            "headers": {"authorization": "Bearer sk-live-not-a-real-secret"},
            "credentials": {"type": "header_secret_refs", "headers": {"authorization": "NOTION_TOKEN"}}
        }
    }]);
    let mut config = json!({
        "agent": {
            "instructions": "You are a careful release assistant. Read the ticket, check the branch, and ask before you deploy.",
            "llm": {"model": "anthropic/claude-sonnet-4-5", "provider": "anthropic", "temperature": 0.2, "max_tokens": 8192},
            "runner": {"permissions": {"default": "ask", "rules": [{"pattern": "Read(*)", "permission": "allow"}]}},
            "mcps": mcps,
            "tools": [],
            "padding_note": ""
        }
    });
    let measured = |config: &Value| {
        // Redaction consumes its input; the candidate config is kept, so measure a copy.
        let redacted = gatehouse_wire::redact::redact_effective_parameters(
            config.as_object().cloned().unwrap_or_default(),
            gatehouse_wire::redact::Redaction::Gatehouse,
        )
        .0;
        python_json_dumps_len(&Value::Object(redacted))
    };
    let mut index = 0;
    loop {
        let tool = tool_spec(index, &mut rng);
        let mut next = config.clone();
        if let Some(tools) = next["agent"]["tools"].as_array_mut() {
            tools.push(tool);
        }
        if measured(&next) > CONFIG_64K_CAP - 64 {
            break;
        }
        config = next;
        index += 1;
    }
    // Pad with plain ASCII up to 8 bytes under the cap.
    let gap = CONFIG_64K_CAP.saturating_sub(8 + measured(&config));
    config["agent"]["padding_note"] = Value::String("x".repeat(gap));
    config
}

fn random_string(rng: &mut Lcg) -> Value {
    const PIECES: [&str; 12] = [
        "plain",
        "café",
        "naïve",
        "→ arrow",
        "emoji 😀",
        "quote \" mark",
        "back\\slash",
        "line\nbreak",
        "tab\there",
        "ctl \u{1}\u{1f}",
        "del \u{7f}",
        "€ 𝄞",
    ];
    let n = 1 + rng.below(3);
    let mut s = String::new();
    for _ in 0..n {
        s.push_str(rng.pick::<&str>(&PIECES));
        s.push(' ');
    }
    Value::String(s)
}

fn random_scalar(rng: &mut Lcg) -> Value {
    const FLOATS: [f64; 10] = [
        0.1,
        0.2,
        1e-7,
        1e16,
        123.456,
        100.0,
        -2.5,
        0.0001,
        1.5e300,
        0.30000000000000004,
    ];
    match rng.below(6) {
        0 => Value::Null,
        1 => Value::Bool(rng.chance(50)),
        2 => json!(rng.below(2_000_000) as i64 - 1_000_000),
        3 => json!(*rng.pick(&FLOATS)),
        _ => random_string(rng),
    }
}

fn credential_value(rng: &mut Lcg) -> Value {
    match rng.below(4) {
        0 => Value::Null, // popped but not counted (Agenta's rule)
        1 => json!({"authorization": "Bearer sk-test", "x-api-key": "k"}),
        2 => json!("Bearer sk-test"),
        _ => json!({}),
    }
}

/// A tool or MCP entry with the shapes redaction cares about: lowercase credential keys
/// (present, null, absent), nested `connection`/`call`, `credentials`, an input-schema
/// property named `headers`, and other keys around them.
fn random_entry(rng: &mut Lcg) -> Value {
    if rng.chance(10) {
        return random_scalar(rng); // non-object entries are left alone
    }
    let mut entry = Map::new();
    entry.insert("name".into(), json!(format!("entry-{}", rng.below(1000))));
    if rng.chance(40) {
        entry.insert("headers".into(), credential_value(rng));
    }
    if rng.chance(20) {
        entry.insert("description".into(), random_string(rng));
    }
    if rng.chance(30) {
        entry.insert("authorization".into(), credential_value(rng));
    }
    for nested in ["connection", "call"] {
        if rng.chance(50) {
            let mut inner = Map::new();
            inner.insert("url".into(), json!("https://svc.example/api"));
            if rng.chance(50) {
                inner.insert("headers".into(), credential_value(rng));
            }
            if rng.chance(30) {
                inner.insert("authorization".into(), credential_value(rng));
            }
            if rng.chance(40) {
                inner.insert(
                    "credentials".into(),
                    json!({"type": "header_secret_refs", "headers": {"authorization": "VAULT_KEY"}}),
                );
            }
            inner.insert("timeout".into(), random_scalar(rng));
            let value = if rng.chance(10) {
                random_scalar(rng) // a non-object `connection` is not walked
            } else {
                Value::Object(inner)
            };
            entry.insert(nested.into(), value);
        }
    }
    if rng.chance(30) {
        entry.insert(
            "inputSchema".into(),
            json!({"type": "object", "properties": {"headers": {"type": "object"}, "authorization": {"type": "string"}}}),
        );
    }
    entry.insert("extra".into(), random_scalar(rng));
    Value::Object(entry)
}

/// A random config outside the C2 departures: credential keys only in lowercase, lists
/// only under `agent`.
fn random_config(rng: &mut Lcg) -> Value {
    let mut agent = Map::new();
    if rng.chance(70) {
        agent.insert("instructions".into(), random_string(rng));
    }
    if rng.chance(70) {
        agent.insert(
            "llm".into(),
            json!({"model": "openai/gpt-5", "temperature": random_scalar(rng)}),
        );
    }
    for list in ["mcps", "tools"] {
        if rng.chance(75) {
            let value = if rng.chance(10) {
                random_scalar(rng) // a non-list is not walked
            } else {
                let n = rng.below(5);
                Value::Array((0..n).map(|_| random_entry(rng)).collect())
            };
            agent.insert(list.into(), value);
        }
    }
    if rng.chance(20) {
        agent.insert(
            "headers".into(),
            json!({"authorization": "kept: not in a list"}),
        );
    }
    let mut top = Map::new();
    if rng.chance(30) {
        top.insert("name".into(), random_string(rng));
    }
    let agent_value = if rng.chance(8) {
        random_scalar(rng) // `agent` that is not an object: nothing is walked
    } else {
        Value::Object(agent)
    };
    top.insert("agent".into(), agent_value);
    if rng.chance(30) {
        top.insert(
            "meta".into(),
            json!({"n": random_scalar(rng), "list": [random_scalar(rng), random_scalar(rng)]}),
        );
    }
    Value::Object(top)
}

/// The shared parity set: every stamp vector except the C2 departures, the cap boundary
/// (65536 B stamped, 65537 B dropped), the golden blob and the 64 KiB config, and
/// `generated` random configs outside the departures.
pub fn shared_stamp_inputs(generated: usize) -> Result<Vec<NamedInput>, BenchError> {
    let mut inputs: Vec<NamedInput> = stamp_vector_cases()?
        .into_iter()
        .filter(|case| !C2_DEPARTURE_CASES.contains(&case.name.as_str()))
        .collect();
    inputs.push(NamedInput {
        name: "cap_boundary_exactly_65536_stamped".into(),
        input: json!({"agent": {"instructions": "x".repeat(65505)}}),
    });
    inputs.push(NamedInput {
        name: "cap_boundary_65537_dropped".into(),
        input: json!({"agent": {"instructions": "x".repeat(65506)}}),
    });
    inputs.push(NamedInput {
        name: "config_64k".into(),
        input: config_64k(),
    });
    let mut rng = Lcg::new(2026);
    for i in 0..generated {
        inputs.push(NamedInput {
            name: format!("generated_{i:03}"),
            input: random_config(&mut rng),
        });
    }
    Ok(inputs)
}

/// `[{"name", "input"}...]`, the file format the Python side reads.
pub fn inputs_to_json(inputs: &[NamedInput]) -> Value {
    Value::Array(
        inputs
            .iter()
            .map(|i| json!({"name": i.name, "input": i.input}))
            .collect(),
    )
}
