//! Property tests (fuzzing, bounded and seeded so CI runs them briefly and the same way
//! every time) over what decodes untrusted input: the request body decoders, the
//! identifier limits, the API key spec, the detector of hyper's own answers, the stamp,
//! and the whole server over raw TCP (mutated requests must answer JSON and leave it
//! serving).
//!
//! `GATEHOUSE_FUZZ_CASES=N` runs more cases, `GATEHOUSE_FUZZ_SEED=S` another seed (a
//! failure prints the minimal input; rerun with the same seed to reproduce).

use std::time::Duration;

use axum::response::IntoResponse;
use gatehouse_server::api::extract::{check_identifiers, check_uri_identifiers, decode_json};
use gatehouse_server::error::ApiError;
use gatehouse_server::http::{auto_error_head_start, json_error_response};
use gatehouse_server::ApiKey;
use gatehouse_wire::effective::{stamp_effective_parameters, NotStamped, StampPolicy};
use gatehouse_wire::error::GatehouseCode;
use gatehouse_wire::pyjson::python_json_dumps_len;
use gatehouse_wire::redact::{redact_effective_parameters, Redaction};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use serde_json::Value;

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `cases` per property by default (brief, for CI), one fixed seed, nothing persisted.
fn config(cases: u32) -> Config {
    Config {
        cases: env_number("GATEHOUSE_FUZZ_CASES", u64::from(cases)) as u32,
        rng_seed: RngSeed::Fixed(env_number("GATEHOUSE_FUZZ_SEED", 0x6a7e_4f75)),
        failure_persistence: None,
        ..Config::default()
    }
}

/// Keys the stamp and the decoders care about, and some that nothing does.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "agent", "mcps", "tools", "headers", "Headers", "authorization", "Authorization",
            "connection", "call", "credentials", "llm", "model", "name", "url", "inputSchema",
            "properties", "env", "api_key", "token", "session_id", "turn_id", "id", "slug",
            "data", "inputs", "messages", "role", "content", "parameters", "references",
            "workflow", "answer", "approved", "tokens", "status", "kind", "query", "windowing",
        ])
        .prop_map(str::to_string),
        1 => "[a-zA-Z_]{1,8}",
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::String),
        (0usize..400).prop_map(|n| Value::String("x".repeat(n))),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

/// Every rejection of a decoder is a 400 or a 422 whose answer is a JSON envelope.
fn assert_clean_rejection(err: ApiError) {
    assert!(
        matches!(
            err.code,
            GatehouseCode::BadRequest | GatehouseCode::ValidationError
        ),
        "{err}"
    );
    let response = err.into_response();
    assert_eq!(
        response.headers()["content-type"],
        "application/json",
        "a rejection answers JSON"
    );
}

fn decode_every_request_type(bytes: &[u8]) {
    use gatehouse_wire::execution::RequestInterventionBody;
    use gatehouse_wire::interaction::{
        CancelStaleRequest, CreateInteractionRequest, InteractionQueryRequest, RespondRequest,
        TransitionRequest,
    };
    use gatehouse_wire::invoke::{CommitRevisionRequest, InvokeRequest};
    use gatehouse_wire::run::RunRequest;
    macro_rules! each {
        ($($t:ty),*) => {$(
            if let Err(err) = decode_json::<$t>(bytes, None) {
                assert_clean_rejection(err);
            }
            if let Err(err) = decode_json::<$t>(bytes, Some("{}")) {
                assert_clean_rejection(err);
            }
        )*};
    }
    each!(
        InvokeRequest,
        RespondRequest,
        CreateInteractionRequest,
        TransitionRequest,
        CancelStaleRequest,
        InteractionQueryRequest,
        CommitRevisionRequest,
        RequestInterventionBody,
        RunRequest
    );
}

proptest! {
    #![proptest_config(config(256))]

    /// Arbitrary bytes: every decoder answers a typed JSON rejection or a value.
    #[test]
    fn decoders_take_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        decode_every_request_type(&bytes);
    }

    /// Arbitrary JSON documents (shaped like the API's): the same, and the identifier
    /// check holds exactly when no identifier is over the limit.
    #[test]
    fn decoders_take_any_json(value in json_value()) {
        let bytes = serde_json::to_vec(&value).unwrap();
        decode_every_request_type(&bytes);
        if let Err(err) = check_identifiers(&value) {
            prop_assert_eq!(err.code, GatehouseCode::ValidationError);
            prop_assert!(err.detail[0]["msg"].as_str().unwrap().contains("at most"));
        }
    }

    /// Any URI hyper would hand over: the identifier check answers, never panics.
    #[test]
    fn uri_identifiers_take_any_path(path in "(/[^ ?#]{0,300}){0,4}(\\?[^ #]{0,300})?") {
        if let Ok(uri) = path.parse::<axum::http::Uri>() {
            if let Err(err) = check_uri_identifiers(&uri) {
                prop_assert_eq!(err.code, GatehouseCode::ValidationError);
            }
        }
    }

    /// Any key spec: parsed or refused; a parsed one has a secret, and an error never
    /// repeats the secret.
    #[test]
    fn key_specs_parse_or_refuse(spec in "\\PC{0,40}") {
        match ApiKey::parse(&spec) {
            Ok(key) => prop_assert!(!key.secret.is_empty()),
            Err(err) => {
                // The spec's parts as documented: the binding after the last `@`, the
                // actor before the first `=`.
                let credential = spec.trim().rsplit_once('@').map_or(spec.trim(), |(c, _)| c);
                if let Some((actor, secret)) = credential.split_once('=') {
                    let secret = secret.trim();
                    if secret.len() >= 8 && !actor.contains(secret) {
                        prop_assert!(!err.to_string().contains(secret), "{}", err);
                    }
                }
            }
        }
    }

    /// The detector of hyper's own answer never panics on any output, and never takes a
    /// JSON error the server wrote for one.
    #[test]
    fn auto_answer_detection_is_exact(
        bytes in prop::collection::vec(any::<u8>(), 0..600),
        status in 400u16..600,
    ) {
        let _ = auto_error_head_start(&bytes);
        let ours = json_error_response(status, GatehouseCode::BadRequest, "x");
        prop_assert_eq!(auto_error_head_start(&ours), None);
        let mut after = bytes;
        after.extend_from_slice(&ours);
        prop_assert_eq!(auto_error_head_start(&after), None);
    }

    /// The stamp: never panics; a stamp is within the cap and measured exactly; redaction
    /// is idempotent (nothing it keeps would be stripped again); over the cap means over.
    #[test]
    fn the_stamp_holds_its_promises(value in json_value(), max in 0usize..4096) {
        let policy = StampPolicy { max_bytes: max, redaction: Redaction::Gatehouse };
        match stamp_effective_parameters(value.clone(), &policy) {
            Ok(stamped) => {
                prop_assert!(stamped.measured_bytes <= max);
                prop_assert_eq!(
                    stamped.measured_bytes,
                    python_json_dumps_len(&Value::Object(stamped.parameters.clone()))
                );
                let (again, stripped) =
                    redact_effective_parameters(stamped.parameters.clone(), Redaction::Gatehouse);
                prop_assert!(stripped.is_empty(), "{:?}", stripped);
                prop_assert_eq!(again, stamped.parameters);
            }
            Err(NotStamped::OverCap { measured_bytes, max_bytes }) => {
                prop_assert!(measured_bytes > max_bytes);
            }
            Err(NotStamped::Empty) => {
                prop_assert!(value.is_null() || value.as_object().is_some_and(|o| o.is_empty()));
            }
            Err(NotStamped::NotAnObject) => prop_assert!(!value.is_object()),
        }
    }
}

/// Valid requests the HTTP fuzzer mutates (none opens an endless stream).
fn templates(project: &str, key: &str) -> Vec<Vec<u8>> {
    let request = |method: &str, path: &str, body: &str| {
        format!(
            "{method} {path}?project_id={project} HTTP/1.1\r\nHost: x\r\nAuthorization: ApiKey {key}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    };
    vec![
        request("GET", "/api/capabilities", ""),
        request(
            "POST",
            "/api/sessions/interactions/query",
            r#"{"query":{"session_id":"s"}}"#,
        ),
        request(
            "POST",
            "/api/invoke",
            r#"{"session_id":"fz","data":{"inputs":{"messages":[{"role":"user","content":"hi"}]},"parameters":{"agent":{"runner":{"permissions":{"default":"deny"}}}}}}"#,
        ),
        request(
            "POST",
            "/api/sessions/interactions/",
            r#"{"session_id":"s","token":"t","kind":"user_approval"}"#,
        ),
        request(
            "POST",
            "/api/sessions/interactions/00000000-0000-7000-8000-000000000000/respond",
            r#"{"answer":{"approved":true}}"#,
        ),
        request(
            "POST",
            "/api/sessions/interactions/cancel-stale",
            r#"{"session_id":"s","turn_id":"t","tokens":["a","b"]}"#,
        ),
        request("GET", "/api/sessions/s/turns", ""),
        request("GET", "/api/rooms/r/execution-sessions/s", ""),
        request(
            "POST",
            "/run",
            r#"{"harness":"pi-core","sandbox":"local","messages":[]}"#,
        ),
    ]
}

#[derive(Debug, Clone)]
enum Mutation {
    Replace(usize, u8),
    Insert(usize, Vec<u8>),
    Remove(usize, usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Replace(at, byte)),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(at, bytes)| Mutation::Insert(at, bytes)),
        (any::<usize>(), 1usize..16).prop_map(|(at, n)| Mutation::Remove(at, n)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let len = bytes.len().max(1);
        match m {
            Mutation::Replace(at, byte) => {
                if !bytes.is_empty() {
                    let at = at % bytes.len();
                    bytes[at] = *byte;
                }
            }
            Mutation::Insert(at, more) => {
                let at = at % len.min(bytes.len() + 1);
                bytes.splice(at..at, more.iter().copied());
            }
            Mutation::Remove(at, n) => {
                if !bytes.is_empty() {
                    let at = at % bytes.len();
                    let end = (at + n).min(bytes.len());
                    bytes.drain(at..end);
                }
            }
            Mutation::Truncate(at) => bytes.truncate(at % len),
        }
    }
    bytes
}

/// The first answer in `received`: status, head, body (by `content-length`).
fn first_answer(received: &[u8]) -> Option<(u16, String, Vec<u8>)> {
    let split = received.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&received[..split]).to_lowercase();
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let length: usize = head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        (name.trim() == "content-length").then(|| value.trim().parse().ok())?
    })?;
    let body = received.get(split + 4..split + 4 + length)?.to_vec();
    Some((status, head, body))
}

/// Mutated requests over raw TCP: whatever comes back is JSON (an error in the JSON
/// envelope), and the server keeps serving.
#[test]
fn the_server_answers_mutated_requests_with_json() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let h = runtime.block_on(crate::common::Harness::start());
    let addr = h.server.server.local_addr();
    let templates = templates(&h.server.project_id, &h.server.api_key);
    let mut runner = proptest::test_runner::TestRunner::new(config(96));
    let strategy = (0..templates.len(), prop::collection::vec(mutation(), 1..4));
    let result = runner.run(&strategy, |(which, mutations)| {
        let request = mutate(templates[which].clone(), &mutations);
        let received = runtime.block_on(async {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            let _ = stream.write_all(&request).await;
            let _ = stream.shutdown().await;
            let mut received = Vec::new();
            let read =
                tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut received))
                    .await;
            prop_assert!(read.is_ok(), "the server must finish the connection");
            Ok(received)
        })?;
        if received.is_empty() || request.starts_with(b"HEAD") {
            // Nothing to answer (an incomplete request the client gave up on).
            return Ok(());
        }
        let Some((status, head, body)) = first_answer(&received) else {
            return Err(TestCaseError::fail(format!(
                "not an HTTP answer with a length: {:?}",
                String::from_utf8_lossy(&received)
            )));
        };
        prop_assert!(head.contains("content-type: application/json"), "{}", head);
        let value: Value = serde_json::from_slice(&body)
            .map_err(|e| TestCaseError::fail(format!("{status}: body is not JSON: {e}")))?;
        if status >= 400 {
            prop_assert!(
                value.get("code").is_some() || value.get("error").is_some(),
                "{} {}",
                status,
                value
            );
            prop_assert!(
                status != 500,
                "a mutated request is never a server fault: {}",
                value
            );
        }
        Ok(())
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
    let (status, _) = runtime.block_on(h.get("/api/capabilities"));
    assert_eq!(status, 200);
    runtime.block_on(h.server.shutdown());
}
