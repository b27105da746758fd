//! The route registry (`gatehouse_wire::routes::OPERATIONS`) and the OpenAPI document
//! generated from it, against the real router, both ways: every routed path and method
//! is registered, every registered operation answers; the served document is the
//! committed `schema/openapi.json`. Also the regression tests of what schemathesis
//! (`tests/schemathesis`) found.

use std::collections::{BTreeMap, BTreeSet};

use crate::common::Harness;
use gatehouse_server::testing::TestServerOptions;
use gatehouse_wire::routes::{Family, Method, OPERATIONS};
use serde_json::Value;

/// `(path, methods)` of every route of `router`, read from its `Debug` rendering (axum
/// offers no other way to list a router's routes). The fallbacks are left out.
fn routed(router: &axum::Router) -> BTreeMap<String, BTreeSet<String>> {
    let text = format!("{router:?}");
    let main = text
        .split("fallback_router:")
        .next()
        .expect("a Router's Debug starts with its path router");
    let (routes, node) = main
        .split_once("node: Node { paths: {")
        .expect("axum's Router Debug shape changed: update `routed` in tests/it/openapi.rs");
    // RouteId(N): "path"
    let mut paths = BTreeMap::new();
    for entry in node.split("RouteId(").skip(1) {
        let (id, rest) = entry.split_once(')').unwrap();
        let path = rest.split('"').nth(1).unwrap();
        paths.insert(id.to_string(), path.to_string());
    }
    // RouteId(N): MethodRouter(MethodRouter { ... allow_header: Bytes(b"GET,HEAD") })
    let mut methods: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for entry in routes.split("RouteId(").skip(1) {
        let (id, rest) = entry.split_once(')').unwrap();
        let allow = rest
            .split("allow_header: Bytes(b\"")
            .nth(1)
            .and_then(|tail| tail.split('"').next())
            .unwrap_or_else(|| panic!("route {id} shows no allow header: {rest}"));
        let set = allow
            .split(',')
            .filter(|m| *m != "HEAD") // axum answers HEAD for every GET
            .map(str::to_string)
            .collect();
        methods.insert(id.to_string(), set);
    }
    assert!(!paths.is_empty(), "no route read from the router's Debug");
    paths
        .into_iter()
        .map(|(id, path)| {
            let set = methods
                .remove(&id)
                .unwrap_or_else(|| panic!("{path}: no method router"));
            (path, set)
        })
        .collect()
}

/// What the registry says a host with or without the execution service routes.
fn registered(execution: bool) -> BTreeMap<String, BTreeSet<String>> {
    let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for op in OPERATIONS {
        if op.family == Family::AgentPlat && !execution {
            continue;
        }
        map.entry(op.path.to_string())
            .or_default()
            .insert(op.method.as_str().to_string());
    }
    map
}

#[tokio::test]
async fn the_router_routes_exactly_the_registered_operations() {
    for execution in [true, false] {
        let h = Harness::with(TestServerOptions {
            execution,
            agenta_contract: gatehouse_server::AgentaContract::Durable,
            ..TestServerOptions::default()
        })
        .await;
        let router = gatehouse_server::api::router(h.server.server.state().clone());
        let routed = routed(&router);
        let registered = registered(execution);
        let missing: Vec<_> = routed
            .iter()
            .filter(|(path, methods)| registered.get(*path) != Some(methods))
            .collect();
        assert!(
            missing.is_empty(),
            "routed but not registered in gatehouse_wire::routes::OPERATIONS (execution: {execution}): {missing:?}"
        );
        let absent: Vec<_> = registered
            .iter()
            .filter(|(path, methods)| routed.get(*path) != Some(methods))
            .collect();
        assert!(
            absent.is_empty(),
            "registered but not routed (execution: {execution}): {absent:?}"
        );
        h.server.shutdown().await;
    }
}

/// True for an operation at AgentPlat's root paths: its tenant travels in a header, and a
/// wrong method answers AgentPlat's unknown-route 404 (its host's behaviour), not 405.
fn at_agentplat_root(op: &gatehouse_wire::routes::Operation) -> bool {
    op.params
        .iter()
        .any(|p| p.name == gatehouse_wire::execution::TENANT_HEADER)
}

/// `request` with the headers `op` needs beyond the key: the tenant on AgentPlat's root
/// paths (the test server's project).
fn with_tenant(
    op: &gatehouse_wire::routes::Operation,
    request: reqwest::RequestBuilder,
    project: &str,
) -> reqwest::RequestBuilder {
    if at_agentplat_root(op) {
        request.header(gatehouse_wire::execution::TENANT_HEADER, project)
    } else {
        request
    }
}

/// A concrete path for a registered one: each `{name}` filled.
fn concrete(path: &str) -> String {
    path.replace("{id}", "019fac94-0000-7000-8000-00000000abcd")
        .replace("{room_id}", "room-1")
        .replace("{session_id}", "session-1")
}

#[tokio::test]
async fn every_registered_operation_answers_and_other_methods_get_405() {
    let h = served().await;
    for op in OPERATIONS {
        let mut url = h.url(&concrete(op.path));
        if op.path.ends_with("/watch") {
            url.push_str("&session_id=session-1");
        }
        let request = match op.method {
            Method::Get => h.http.get(&url),
            Method::Post => h.http.post(&url).body("{}"),
        };
        // Only the status and headers are read: a stream is dropped unread.
        let response = with_tenant(op, request, &h.server.project_id)
            .header("Authorization", h.server.authorization())
            .header("Content-Type", "application/json")
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        assert_ne!(status, 405, "{} {}", op.method.as_str(), op.path);
        if status == 404 {
            let body: Value = response.json().await.unwrap();
            let code = body["code"]
                .as_str()
                .or(body["error"]["gatehouseCode"].as_str());
            assert_ne!(
                code,
                Some("ROUTE_NOT_FOUND"),
                "{} {} is registered but not routed",
                op.method.as_str(),
                op.path
            );
        }
        let other = match op.method {
            Method::Get => h.http.delete(&url),
            Method::Post => h.http.put(&url),
        };
        let answer = with_tenant(op, other, &h.server.project_id)
            .header("Authorization", h.server.authorization())
            .send()
            .await
            .unwrap();
        let status = answer.status().as_u16();
        if at_agentplat_root(op) {
            assert_eq!(status, 404, "another method on {}", op.path);
            let body: Value = answer.json().await.unwrap();
            assert_eq!(body["error"]["code"], "NOT_FOUND", "{}: {body}", op.path);
        } else {
            assert_eq!(status, 405, "another method on {}", op.path);
        }
    }
    h.server.shutdown().await;
}

#[tokio::test]
async fn the_served_document_is_the_committed_one_and_needs_no_key() {
    let h = served().await;
    let response = h
        .http
        .get(format!("{}/api/openapi.json", h.server.base_url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "application/json"
    );
    let served: Value = response.json().await.unwrap();
    let committed_path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../schema")
        .join(gatehouse_wire::openapi::FILE_NAME);
    let committed: Value =
        serde_json::from_str(&std::fs::read_to_string(&committed_path).unwrap()).unwrap();
    assert_eq!(
        served, committed,
        "schema/openapi.json is stale: run `cargo xtask schema`"
    );
    assert_eq!(served["openapi"], "3.1.0");
    h.server.shutdown().await;
}

// ---- Regression tests of what schemathesis found (tests/schemathesis) ----------------

/// Found by schemathesis: `[null, null]` was read as a query request (serde reads a
/// struct from an array, fields by position) and answered 200. Every JSON body of the
/// API is an object; an array, a string or a number is a 422 naming the body (400 on
/// AgentPlat's routes), never a success.
#[tokio::test]
async fn a_json_body_that_is_not_an_object_is_rejected_on_every_route() {
    let h = served().await;
    for op in OPERATIONS.iter().filter(|op| op.request.is_some()) {
        for body in ["[null, null]", "[]", "\"text\"", "7", "null"] {
            let response = with_tenant(
                op,
                h.http.post(h.url(&concrete(op.path))),
                &h.server.project_id,
            )
            .header("Authorization", h.server.authorization())
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
            let status = response.status().as_u16();
            let expected = op.family.validation_status();
            assert_eq!(status, expected, "{} with {body}", op.path);
            let answer: Value = response.json().await.unwrap();
            let code = answer["code"]
                .as_str()
                .or(answer["error"]["gatehouseCode"].as_str());
            assert!(
                matches!(code, Some("VALIDATION_ERROR" | "BAD_REQUEST")),
                "{} with {body}: {answer}",
                op.path
            );
        }
    }
    h.server.shutdown().await;
}

/// Found by schemathesis: an `after` whose second byte is inside a multi-byte character
/// panicked the event stream (and the events listing) with a 500. Now it is what any
/// other bad `after` is: a 400 on the listing, a failure frame on the stream.
#[tokio::test]
async fn an_after_with_multibyte_characters_is_a_bad_sequence_not_a_panic() {
    let h = served().await;
    let after = "%5D%C3%A0%EA%9E%AD%C3%B9+i";
    for (path, expected) in [
        ("/api/rooms/r/execution-sessions/s/events", 400),
        ("/api/rooms/r/execution-sessions/s/events/stream", 200),
    ] {
        let response = h
            .http
            .get(format!("{}&after={after}&after=", h.url(path)))
            .header("Authorization", h.server.authorization())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), expected, "{path}");
        let text = response.text().await.unwrap();
        assert!(!text.contains("INTERNAL_ERROR"), "{path}: {text}");
    }
    h.server.shutdown().await;
}

/// Found by schemathesis: `/run` kept a content block of a kind it does not know (the
/// reader is tolerant) and echoed it in its transcript, an answer the document (and
/// Agenta's reader) refuses. A runner refuses such a request instead, naming the block.
#[tokio::test]
async fn run_refuses_a_content_block_kind_it_cannot_answer_with() {
    let h = served().await;
    let body = serde_json::json!({
        "harness": "pi_core", "sandbox": "local", "sessionId": null, "agentsMd": null,
        "model": null, "context": null, "telemetry": null, "tools": [], "customTools": [],
        "toolCallback": null, "permissions": {"default": "ask"},
        "messages": [{"role": "user", "content": [{"type": "AAA", "text": "hi"}]}]
    });
    let response = h
        .http
        .post(format!("{}/run", h.server.base_url))
        .header("Authorization", h.server.authorization())
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 422);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(
        answer["detail"][0]["loc"],
        serde_json::json!(["body", "messages", 0, "content", 0, "type"])
    );
    h.server.shutdown().await;
}

/// Found by schemathesis: an invoke naming a saved agent revision it cannot be bound to
/// answered a status the document did not list. An empty revision id names none (the
/// run is bound to its draft), an unknown one is 404, both documented.
#[tokio::test]
async fn an_invoke_naming_an_unknown_revision_is_a_documented_404() {
    let h = served().await;
    let (status, body) = h
        .post(
            "/api/invoke",
            serde_json::json!({"references": {"workflow_revision": {"id": ""}},
                               "data": {"inputs": {"messages": []}}}),
        )
        .await;
    assert_eq!(status, 200, "an empty id names no revision: {body}");
    let (status, body) = h
        .post(
            "/api/invoke",
            serde_json::json!({"references": {"workflow_revision": {"id": "019fac94-0000-7000-8000-00000000dead"}},
                               "data": {"inputs": {"messages": []}}}),
        )
        .await;
    assert_eq!(status, 404, "{body}");
    let document = gatehouse_wire::openapi::document();
    assert!(document["paths"]["/api/invoke"]["post"]["responses"]["404"].is_object());
    assert!(document["paths"]["/api/invoke"]["post"]["responses"]["409"].is_object());
    h.server.shutdown().await;
}

/// A host as `gatehouse serve` starts by default (Agenta's durable contract: every
/// registered route is served).
async fn served() -> Harness {
    Harness::with(TestServerOptions {
        agenta_contract: gatehouse_server::AgentaContract::Durable,
        ..TestServerOptions::default()
    })
    .await
}
