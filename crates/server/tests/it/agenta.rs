//! The server against Agenta's own documents and models:
//!
//! - every `/run` request Agenta's SDK wrote (the recorded corpus) is accepted by `POST /run`
//!   (skipped, one line, when the corpus is not laid out);
//! - every row the server writes is one Agenta's `SessionInteraction` model accepts (actor
//!   ids are UUIDs; `data.parameters` a non-empty object or `null`), checked against the
//!   committed JSON Schema;
//! - request bodies are checked as leniently (respond) and as strictly (transition,
//!   windowing, enums) as Agenta's router and models check them.

use crate::common::Harness;
use serde_json::{json, Value};

fn committed_schema(file: &str) -> jsonschema::Validator {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../schema")
        .join(file);
    let document: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&document).unwrap()
}

fn assert_valid_row_response(body: &Value) {
    let validator = committed_schema("interaction_response.schema.json");
    let errors: Vec<String> = validator
        .iter_errors(body)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "Agenta would refuse this row: {errors:?}\n{body}"
    );
}

async fn post_run(h: &Harness, text: &str) -> (u16, Value) {
    let response = h
        .http
        .post(format!("{}/run", h.server.base_url))
        .header("Authorization", format!("Bearer {}", h.server.api_key))
        .header("Content-Type", "application/json")
        .body(text.to_string())
        .send()
        .await
        .unwrap();
    crate::common::decode(response).await
}

#[tokio::test]
async fn post_run_accepts_every_request_agenta_wrote() {
    let Some(dir) = gatehouse_fixtures::require(
        gatehouse_fixtures::Upstream::Agenta,
        "recorded /run requests against POST /run",
    ) else {
        return;
    };
    let text = std::fs::read_to_string(dir.join("recorded/run_requests.ndjson")).unwrap();
    let h = Harness::legacy().await;
    let mut count = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let record: Value = serde_json::from_str(line).unwrap();
        let id = record["id"].as_str().unwrap();
        let request = serde_json::to_string(&record["request"]).unwrap();
        let (status, body) = post_run(&h, &request).await;
        assert_eq!(status, 200, "{id}: {body}");
        assert!(body.get("ok").is_some(), "{id}: {body}");
        count += 1;
    }
    assert!(count >= 30, "only {count} requests");
}

fn gate(session: &str, token: &str, kind: &str, parameters: Option<Value>) -> Value {
    let mut data = json!({
        "request": {"tool": "Bash", "args": {"command": "ls"}, "tool_call_id": format!("call-{token}")},
        "references": {"workflow": {"slug": "wf"}}
    });
    if let Some(parameters) = parameters {
        data["parameters"] = parameters;
    }
    json!({"session_id": session, "turn_id": "t-1", "token": token, "kind": kind, "data": data})
}

/// An authorized request with a JSON text body (or none), its answer as text.
async fn raw(
    h: &Harness,
    method: reqwest::Method,
    path: &str,
    body: Option<&str>,
) -> (u16, String) {
    let mut request = h
        .http
        .request(method, h.url(path))
        .header("Authorization", h.server.authorization());
    if let Some(body) = body {
        request = request
            .header("Content-Type", "application/json")
            .body(body.to_string());
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// Every answer that carries a row writes its numbers as Agenta's API (pydantic through
/// FastAPI) writes them, whatever spelling the row was given in: `1e-05` as `0.00001`,
/// `1.5e-07` as `1.5e-7`, `1E+16` as `1e+16`; big integers digit for digit.
#[tokio::test]
async fn rows_spell_their_numbers_as_agentas_api_does() {
    let h = Harness::legacy().await;
    let big = "123456789012345678901234567890";
    let create = format!(
        r#"{{"session_id": "floats", "turn_id": "t-1", "token": "tok-floats", "kind": "user_approval",
        "data": {{"request": {{"tool": "Bash", "args": {{"timeout": 2.50E+1}}, "tool_call_id": "call-1"}},
                 "parameters": {{"agent": {{"llm": {{"temperature": 1e-05, "top_p": 1.5e-07, "n": 1E+16, "seed": {big}}}}}}}}},
        "tags": {{"lr": 1e-05}}, "meta": {{"eps": 1.5e-07, "zero": -0}}}}"#
    );
    let rendered = [
        r#""args":{"timeout":25.0}"#.to_string(),
        format!(r#""llm":{{"temperature":0.00001,"top_p":1.5e-7,"n":1e+16,"seed":{big}}}"#),
        r#""tags":{"lr":0.00001}"#.to_string(),
        r#""meta":{"eps":1.5e-7,"zero":0}"#.to_string(),
    ];
    let check = |what: &str, status: u16, text: &str| {
        assert_eq!(status, 200, "{what}: {text}");
        for part in &rendered {
            assert!(text.contains(part.as_str()), "{what}: no {part} in {text}");
        }
        for python in ["e-05", "e-07", "E+16", "2.50E"] {
            assert!(!text.contains(python), "{what}: {python} in {text}");
        }
    };
    let (status, text) = raw(
        &h,
        reqwest::Method::POST,
        "/api/sessions/interactions/",
        Some(&create),
    )
    .await;
    check("create", status, &text);
    let id = serde_json::from_str::<Value>(&text).unwrap()["interaction"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, text) = raw(
        &h,
        reqwest::Method::GET,
        &format!("/api/sessions/interactions/{id}"),
        None,
    )
    .await;
    check("fetch", status, &text);
    let query = r#"{"query": {"session_id": "floats"}}"#;
    let (status, text) = raw(
        &h,
        reqwest::Method::POST,
        "/api/sessions/interactions/query",
        Some(query),
    )
    .await;
    check("query", status, &text);
    let batch = format!(r#"{{"answers": [{{"id": "{id}", "answer": {{"approved": false}}}}]}}"#);
    let (status, text) = raw(
        &h,
        reqwest::Method::POST,
        "/api/sessions/interactions/respond-batch",
        Some(&batch),
    )
    .await;
    check("respond-batch", status, &text);
}

#[tokio::test]
async fn rows_are_rows_agentas_model_accepts() {
    let h = Harness::legacy().await;
    let big = "123456789012345678901234567890";
    let with_big: Value = serde_json::from_str(&format!(
        r#"{{"agent": {{"llm": {{"seed": {big}, "temperature": -0.0}}}}}}"#
    ))
    .unwrap();
    for (token, parameters) in [
        ("with-stamp", Some(with_big)),
        ("empty-stamp", Some(json!({}))),
        ("null-stamp", Some(Value::Null)),
        ("no-stamp", None),
    ] {
        let (status, body) = h
            .post(
                "/api/sessions/interactions/",
                gate("rows", token, "user_approval", parameters.clone()),
            )
            .await;
        assert_eq!(status, 200, "{token}: {body}");
        assert_valid_row_response(&body);
        let row = &body["interaction"];
        for key in ["created_by_id", "id", "project_id"] {
            let value = row[key].as_str().unwrap();
            assert!(
                gatehouse_wire::interaction::is_uuid(value),
                "{key}: {value}"
            );
        }
        match token {
            // Big integers and floats survive digit for digit.
            "with-stamp" => {
                let text = serde_json::to_string(&row["data"]["parameters"]).unwrap();
                assert!(text.contains(big) && text.contains("-0.0"), "{text}");
            }
            // A stamp is never `{}`: no stamp renders `null`, as Agenta renders it.
            _ => assert!(row["data"]["parameters"].is_null(), "{token}: {row}"),
        }
        let id = row["id"].as_str().unwrap().to_string();
        let (status, again) = h.get(&format!("/api/sessions/interactions/{id}")).await;
        assert_eq!(status, 200);
        assert_valid_row_response(&again);
    }
    // After respond the updater is a UUID too.
    let (_, body) = h
        .post(
            "/api/sessions/interactions/",
            gate("rows", "answered", "user_approval", None),
        )
        .await;
    let id = body["interaction"]["id"].as_str().unwrap().to_string();
    let (status, answered) = h.respond(&id, true).await;
    assert_eq!(status, 200, "{answered}");
    assert_valid_row_response(&answered);
    let updater = answered["interaction"]["updated_by_id"].as_str().unwrap();
    assert_eq!(updater, gatehouse_server::auth::actor_uuid("tester"));
}

#[tokio::test]
async fn respond_takes_any_answer_object_as_agenta_does() {
    let h = Harness::legacy().await;
    // `answer = body.answer or {}`: an empty body object, a null answer, an empty answer.
    for (token, body) in [
        ("r-1", json!({})),
        ("r-2", json!({"answer": null})),
        ("r-3", json!({"answer": {}})),
        ("r-4", json!({"answer": {"approved": 1, "message": 7}})),
    ] {
        let (_, created) = h
            .post(
                "/api/sessions/interactions/",
                gate("respond", token, "user_approval", None),
            )
            .await;
        let id = created["interaction"]["id"].as_str().unwrap().to_string();
        let (status, answered) = h
            .post(
                &format!("/api/sessions/interactions/{id}/respond"),
                body.clone(),
            )
            .await;
        assert_eq!(status, 200, "{body}: {answered}");
        assert_eq!(answered["interaction"]["status"], "responded", "{body}");
        assert_eq!(
            answered["interaction"]["data"]["resolution"]["answer"],
            body.get("answer")
                .filter(|a| !a.is_null())
                .cloned()
                .unwrap_or(json!({})),
            "{body}"
        );
    }
    // The answer must still be an object.
    let (_, created) = h
        .post(
            "/api/sessions/interactions/",
            gate("respond", "r-5", "user_approval", None),
        )
        .await;
    let id = created["interaction"]["id"].as_str().unwrap().to_string();
    let (status, body) = h
        .post(
            &format!("/api/sessions/interactions/{id}/respond"),
            json!({"answer": [true]}),
        )
        .await;
    assert_eq!(status, 422, "{body}");
}

async fn transition(h: &Harness, body: Value) -> (u16, Value) {
    h.post("/api/sessions/interactions/transition", body).await
}

#[tokio::test]
async fn transition_is_checked_as_agentas_router_checks_it() {
    let h = Harness::legacy().await;
    for token in ["a-1", "a-2"] {
        h.post(
            "/api/sessions/interactions/",
            gate("tr", token, "user_approval", None),
        )
        .await;
    }
    h.post(
        "/api/sessions/interactions/",
        gate("tr", "q-1", "user_input", None),
    )
    .await;
    // A resolution goes with `responded` or `resolved` only (the request model).
    let (status, body) = transition(
        &h,
        json!({"session_id": "tr", "token": "a-1", "status": "cancelled",
               "resolution": {"verdict": "denied", "tool_call_id": "call-a-1"}}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    // An approval resolution is exactly `{verdict, tool_call_id}`.
    for (resolution, loc, kind) in [
        (json!({"verdict": "approved"}), "tool_call_id", "missing"),
        (
            json!({"verdict": "approved", "tool_call_id": "call-a-1", "note": "x"}),
            "note",
            "extra_forbidden",
        ),
        (
            json!({"verdict": "maybe", "tool_call_id": "call-a-1"}),
            "verdict",
            "literal_error",
        ),
        (
            json!({"verdict": "approved", "tool_call_id": null}),
            "tool_call_id",
            "string_type",
        ),
    ] {
        let (status, body) = transition(
            &h,
            json!({"session_id": "tr", "token": "a-1", "status": "resolved", "resolution": resolution}),
        )
        .await;
        assert_eq!(status, 422, "{resolution}: {body}");
        assert_eq!(
            body["detail"][0]["loc"],
            json!(["body", "resolution", loc]),
            "{body}"
        );
        assert_eq!(body["detail"][0]["type"], kind, "{body}");
    }
    // `resolved` is for approval rows only.
    let (status, body) = transition(
        &h,
        json!({"session_id": "tr", "token": "q-1", "status": "resolved"}),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    // An unknown token on a resolving transition is a 404.
    let (status, _) = transition(
        &h,
        json!({"session_id": "tr", "token": "nope", "status": "resolved"}),
    )
    .await;
    assert_eq!(status, 404);
    // An unknown status is refused (Agenta's enum).
    let (status, body) = transition(
        &h,
        json!({"session_id": "tr", "token": "a-1", "status": "done"}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    // The strict shape passes, and is stored as sent.
    let (status, body) = transition(
        &h,
        json!({"session_id": "tr", "token": "a-2", "status": "resolved",
               "resolution": {"verdict": "approved", "tool_call_id": "call-a-2"}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_valid_row_response(&body);
    assert_eq!(
        body["interaction"]["data"]["resolution"],
        json!({"verdict": "approved", "tool_call_id": "call-a-2"})
    );
}

#[tokio::test]
async fn query_windowing_and_enums_are_checked_as_agentas_models_check_them() {
    let h = Harness::legacy().await;
    for (windowing, loc, kind) in [
        (json!({"rate": 2.0}), "rate", "value_error"),
        (json!({"rate": -0.1}), "rate", "value_error"),
        (json!({"interval": 0}), "interval", "value_error"),
        (json!({"next": "not-a-uuid"}), "next", "uuid_parsing"),
        (
            json!({"newest": "yesterday"}),
            "newest",
            "datetime_from_date_parsing",
        ),
    ] {
        let (status, body) = h
            .post(
                "/api/sessions/interactions/query",
                json!({"windowing": windowing}),
            )
            .await;
        assert_eq!(status, 422, "{windowing}: {body}");
        assert_eq!(body["detail"][0]["loc"], json!(["body", "windowing", loc]));
        assert_eq!(body["detail"][0]["type"], kind);
    }
    let (status, body) = h
        .post(
            "/api/sessions/interactions/query",
            json!({"windowing": {"rate": 1.0, "interval": 5, "next": "019fac94-5b91-71d2-9d4b-5486013e6e9b",
                                 "newest": "2026-07-29T06:34:12.345678Z"}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    for query in [json!({"kind": "telepathy"}), json!({"status": "done"})] {
        let (status, body) = h
            .post("/api/sessions/interactions/query", json!({"query": query}))
            .await;
        assert_eq!(status, 422, "{query}: {body}");
        assert_eq!(body["detail"][0]["type"], "enum");
    }
    let (status, body) = h
        .post(
            "/api/sessions/interactions/",
            gate("enums", "k-1", "telepathy", None),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["detail"][0]["loc"], json!(["body", "kind"]));
}
