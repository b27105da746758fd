//! The client against deliberately hostile or broken local servers: every failure is
//! a typed error, never a panic, and retries happen only where they are safe.

use std::time::Duration;

use crate::common::*;
use futures::StreamExt;
use gatehouse_client::{Answer, Client, Error, Operation, Upstream, WatchUpdate};
use gatehouse_wire::capabilities::Capability;
use gatehouse_wire::interaction::{InteractionStatus, WatchEvent};
use tokio::io::AsyncWriteExt;

const ID: &str = "019fac94-0000-7000-8000-000000000001";

#[tokio::test]
async fn html_error_page_is_a_server_error_with_a_bounded_snippet_and_reads_are_retried() {
    let page = format!(
        "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>{}</body></html>",
        "padding ".repeat(2000)
    );
    let server = serve(move |_, _, stream| {
        let page = page.clone();
        async move { reply(stream, response(502, "text/html", page.as_bytes())).await }
    })
    .await;
    let err = client(&server.url, 3)
        .interactions()
        .get(ID)
        .await
        .unwrap_err();
    match &err {
        Error::Server {
            operation: Operation::GetInteraction,
            status: 502,
            body,
            code: None,
        } => {
            assert!(body.starts_with("<!DOCTYPE html>"), "{body}");
            assert!(
                body.chars().count() <= 300,
                "snippet not bounded: {}",
                body.len()
            );
        }
        other => panic!("expected Server, got {other:?}"),
    }
    assert!(err.is_retryable());
    assert_eq!(
        server.connection_count(),
        3,
        "a read is retried up to max_attempts"
    );
}

#[tokio::test]
async fn html_400_is_invalid_and_html_404_is_not_found() {
    let server = serve(|index, _, stream| async move {
        let status = if index == 0 { 400 } else { 404 };
        reply(
            stream,
            response(
                status,
                "text/html",
                b"<html><body><h1>Bad</h1></body></html>",
            ),
        )
        .await
    })
    .await;
    let c = client(&server.url, 3);
    let err = c.interactions().get(ID).await.unwrap_err();
    assert!(
        matches!(&err, Error::Invalid { status: 400, detail, .. } if detail.contains("<h1>Bad</h1>")),
        "{err:?}"
    );
    let err = c.interactions().get(ID).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotFound {
                operation: Operation::GetInteraction,
                ..
            }
        ),
        "{err:?}"
    );
    // Neither is retried, and an HTML 404 is not taken for an absent route.
    assert_eq!(server.connection_count(), 2);
    assert_eq!(c.capabilities().known(Capability::Interactions), None);
}

#[tokio::test]
async fn truncated_json_is_a_decode_error_with_path_and_snippet() {
    let server = serve(|_, _, stream| async move {
        let body = br#"{"count": 1, "interaction": {"id": "i1", "session_id": "s", "token": "t", "kind": "user_appro"#;
        reply(stream, response(200, "application/json", body)).await
    })
    .await;
    let err = client(&server.url, 3)
        .interactions()
        .get(ID)
        .await
        .unwrap_err();
    match &err {
        Error::Decode {
            operation: Operation::GetInteraction,
            status: 200,
            path,
            snippet,
            ..
        } => {
            assert!(path.starts_with("interaction"), "{path}");
            assert!(snippet.contains("session_id"), "{snippet}");
        }
        other => panic!("expected Decode, got {other:?}"),
    }
    assert!(!err.is_retryable());
    assert_eq!(
        server.connection_count(),
        1,
        "a decode error is not retried"
    );
}

#[tokio::test]
async fn wrong_shape_names_the_field_path() {
    let server = serve(|_, _, stream| async move {
        let mut row = row_json("i1", "pending", serde_json::Value::Null);
        // An unknown kind is kept (a tolerant reader); a kind of the wrong type is not.
        row["kind"] = serde_json::json!({"secret": "telepathy"});
        reply(
            stream,
            json(200, serde_json::json!({"count": 1, "interaction": row})),
        )
        .await
    })
    .await;
    let err = client(&server.url, 1)
        .interactions()
        .get(ID)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Decode { path, .. } if path == "interaction.kind"),
        "{err:?}"
    );
    // The offending value itself is not echoed in the reason.
    assert!(
        !err.to_string().contains("telepathy")
            || matches!(&err, Error::Decode { snippet, .. } if snippet.contains("telepathy"))
    );
}

#[tokio::test]
async fn body_cut_short_is_a_transport_error() {
    let server = serve(|_, _, mut stream| async move {
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{\"count\": 1, \"inter")
            .await;
        let _ = stream.shutdown().await;
    })
    .await;
    let err = client(&server.url, 2)
        .interactions()
        .get(ID)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Transport {
                operation: Operation::GetInteraction,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(server.connection_count(), 2);
}

#[tokio::test]
async fn slow_body_past_the_timeout_is_a_timeout() {
    let server = serve(|_, _, mut stream| async move {
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 40\r\n\r\n{\"count\"")
            .await;
        tokio::time::sleep(Duration::from_secs(5)).await;
        let _ = stream.write_all(b": 0, \"interactions\": []}            ").await;
    })
    .await;
    let c = Client::builder(&server.url)
        .api_key(TEST_KEY)
        .timeout(Duration::from_millis(300))
        .retry_policy(quick_retries(2))
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let err = c
        .interactions()
        .query(&Default::default(), None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Timeout { operation: Operation::QueryInteractions, after } if after == Duration::from_millis(300)),
        "{err:?}"
    );
    assert!(err.is_retryable());
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "gave up in time"
    );
    assert_eq!(server.connection_count(), 2);
}

#[tokio::test]
async fn reset_connection_is_a_transport_error_with_its_source_chain() {
    let server = serve(|_, _, stream| async move { reset(stream) }).await;
    let err = client(&server.url, 3)
        .interactions()
        .get(ID)
        .await
        .unwrap_err();
    match &err {
        Error::Transport {
            operation: Operation::GetInteraction,
            detail,
            source,
        } => {
            assert!(!detail.is_empty());
            assert!(std::error::Error::source(&err).is_some());
            let _ = source;
        }
        other => panic!("expected Transport, got {other:?}"),
    }
    assert_eq!(server.connection_count(), 3);
}

#[tokio::test]
async fn writes_are_not_retried_on_transport_errors() {
    let server = serve(|_, _, stream| async move { reset(stream) }).await;
    let req = gatehouse_wire::interaction::TransitionRequest {
        session_id: "s".into(),
        token: "t".into(),
        status: InteractionStatus::Resolved,
        resolution: None,
    };
    let err = client(&server.url, 3)
        .interactions()
        .transition(&req)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Transport {
                operation: Operation::TransitionInteraction,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(server.connection_count(), 1);
}

#[tokio::test]
async fn status_and_body_shapes_map_to_typed_errors() {
    let server = serve(|_, req, stream| async move {
        let body = match req.path() {
            "/api/sessions/interactions/u/respond" => json(401, serde_json::json!({"detail": "Invalid API key"})),
            "/api/sessions/interactions/f/respond" => json(403, serde_json::json!({"error": {"code": "FORBIDDEN", "message": "nope"}})),
            "/api/sessions/interactions/v/respond" => json(422, serde_json::json!({"detail": [{"loc": ["body", "answer"], "msg": "field required", "type": "missing"}]})),
            "/api/sessions/interactions/c/respond" => not_pending(),
            "/api/sessions/interactions/g/respond" => json(409, serde_json::json!({"detail": "x", "code": "ALREADY_ANSWERED"})),
            "/api/sessions/interactions/b/respond" => response(413, "text/plain", b"too big"),
            _ => json(404, serde_json::json!({"detail": "Interaction not found"})),
        };
        reply(stream, body).await
    })
    .await;
    let i = legacy_client(&server.url, 3).interactions();
    let a = Answer::approve();
    assert!(matches!(
        i.respond("u", &a).await,
        Err(Error::Unauthorized {
            operation: Operation::RespondInteraction,
            ..
        })
    ));
    assert!(matches!(
        i.respond("f", &a).await,
        Err(Error::Forbidden { .. })
    ));
    match i.respond("v", &a).await {
        Err(Error::Validation {
            status: 422,
            detail,
            ..
        }) => assert_eq!(detail, "body.answer: field required"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        i.respond("c", &a).await,
        Err(Error::AlreadyAnswered { .. })
    ));
    assert!(matches!(
        i.respond("g", &a).await,
        Err(Error::AlreadyAnswered { .. })
    ));
    assert!(matches!(
        i.respond("b", &a).await,
        Err(Error::PayloadTooLarge { .. })
    ));
    assert!(matches!(
        i.respond("missing", &a).await,
        Err(Error::NotFound { .. })
    ));
    assert_eq!(server.connection_count(), 7, "no 4xx is retried");
}

#[tokio::test]
async fn rate_limit_is_retried_after_retry_after() {
    let server = serve(|index, _, stream| async move {
        if index == 0 {
            let mut r = b"HTTP/1.1 429 Too Many Requests\r\nretry-after: 0\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_vec();
            r.truncate(r.len());
            reply(stream, r).await
        } else {
            reply(stream, json(200, serde_json::json!({"count": 0, "interactions": []}))).await
        }
    })
    .await;
    let rows = client(&server.url, 3)
        .interactions()
        .list_pending(None)
        .await
        .unwrap();
    assert!(rows.is_empty());
    assert_eq!(server.connection_count(), 2);
}

#[tokio::test]
async fn route_not_found_is_learned_once_then_fails_without_network() {
    let server = serve(|_, req, stream| async move {
        let body = if req.path() == "/api/capabilities" {
            json(404, serde_json::json!({"detail": "Not Found"}))
        } else {
            json(
                404,
                serde_json::json!({"error": {"code": "NOT_FOUND", "message": "Route not found"}}),
            )
        };
        reply(stream, body).await
    })
    .await;
    let c = client(&server.url, 3);
    // Discovery route absent: learned once.
    let err = c.capabilities().get().await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::CapabilityUnavailable {
                capability: None,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(c.capabilities().get().await.is_err());
    assert_eq!(server.connection_count(), 1);
    // Presence unknown without discovery: require says Ok, the first call learns.
    c.capabilities()
        .require(Capability::InteractionWatch)
        .await
        .unwrap();
    assert_eq!(server.connection_count(), 1);
    let mut watch = c.interactions().watch("s-1");
    let first = watch.next().await.unwrap();
    assert!(
        matches!(
            first,
            Err(Error::CapabilityUnavailable {
                capability: Some(Capability::InteractionWatch),
                operation: Operation::WatchInteractions
            })
        ),
        "{first:?}"
    );
    assert!(
        watch.next().await.is_none(),
        "the stream ends after a fatal error"
    );
    assert_eq!(server.connection_count(), 2);
    // From now on: no network at all.
    let mut again = c.interactions().watch("s-1");
    assert!(matches!(
        again.next().await,
        Some(Err(Error::CapabilityUnavailable { .. }))
    ));
    assert!(matches!(
        c.capabilities().require(Capability::InteractionWatch).await,
        Err(Error::CapabilityUnavailable { .. })
    ));
    assert_eq!(
        c.capabilities().known(Capability::InteractionWatch),
        Some(false)
    );
    // A clone shares the cache.
    let clone = c.clone();
    assert!(matches!(
        clone.interactions().watch("s-2").next().await,
        Some(Err(Error::CapabilityUnavailable { .. }))
    ));
    assert_eq!(server.connection_count(), 2);
}

#[tokio::test]
async fn discovery_answer_is_cached_and_absent_capabilities_fail_fast() {
    let server = serve(|_, _, stream| async move {
        reply(stream, json(200, serde_json::json!({
            "service": "gatehouse", "version": "0.1.0", "capabilities": ["interactions", "invoke"], "newField": 1
        })))
        .await
    })
    .await;
    let c = client(&server.url, 3);
    c.capabilities()
        .require(Capability::Interactions)
        .await
        .unwrap();
    let caps = c.capabilities().get().await.unwrap();
    assert!(caps.has(Capability::Invoke));
    assert_eq!(server.connection_count(), 1, "cached");
    assert!(matches!(
        c.capabilities().require(Capability::Execution).await,
        Err(Error::CapabilityUnavailable {
            capability: Some(Capability::Execution),
            ..
        })
    ));
    let mut watch = c.interactions().watch("s");
    assert!(matches!(
        watch.next().await,
        Some(Err(Error::CapabilityUnavailable { .. }))
    ));
    assert_eq!(
        server.connection_count(),
        1,
        "no request for an absent capability"
    );
}

#[tokio::test]
async fn respond_that_landed_before_the_connection_dropped_is_a_success() {
    // 1st respond: read, then drop the connection (the answer "landed");
    // 2nd respond (same key): 409; GET: the row holds our answer.
    let server = serve(|index, req, stream| async move {
        match (index, req.method.as_str()) {
            (0, _) => drop(stream),
            (_, "POST") => reply(stream, not_pending()).await,
            _ => reply(
                stream,
                row_answer(
                    ID,
                    "responded",
                    serde_json::json!({"answer": {"approved": false, "message": "not on prod"}}),
                ),
            )
            .await,
        }
    })
    .await;
    let row = legacy_client(&server.url, 3)
        .interactions()
        .respond(ID, &Answer::deny("not on prod"))
        .await
        .unwrap();
    assert_eq!(row.status, Some(InteractionStatus::Responded));
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{requests:?}");
    let k0 = requests[0].header("idempotency-key").unwrap();
    let k1 = requests[1].header("idempotency-key").unwrap();
    assert_eq!(k0, k1, "the re-send carries the same key");
    assert!(uuid::Uuid::parse_str(k0).is_ok());
    assert_eq!(requests[2].method, "GET");
}

#[tokio::test]
async fn respond_after_a_drop_with_someone_elses_answer_is_already_answered() {
    let server = serve(|index, req, stream| async move {
        match (index, req.method.as_str()) {
            (0, _) => drop(stream),
            (_, "POST") => reply(stream, not_pending()).await,
            _ => {
                reply(
                    stream,
                    row_answer(
                        ID,
                        "responded",
                        serde_json::json!({"answer": {"approved": true}}),
                    ),
                )
                .await
            }
        }
    })
    .await;
    let err = client(&server.url, 3)
        .interactions()
        .respond(ID, &Answer::deny("stop"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::AlreadyAnswered {
                operation: Operation::RespondInteraction,
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn first_try_409_is_already_answered_without_a_re_read() {
    let server = serve(|_, _, stream| async move { reply(stream, not_pending()).await }).await;
    let err = legacy_client(&server.url, 3)
        .interactions()
        .respond(ID, &Answer::approve())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::AlreadyAnswered { .. }));
    assert_eq!(server.connection_count(), 1);
}

#[tokio::test]
async fn respond_that_never_gets_through_reports_the_transport_error() {
    let server = serve(|_, _, stream| async move { reset(stream) }).await;
    let err = legacy_client(&server.url, 2)
        .interactions()
        .respond(ID, &Answer::approve())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Transport {
                operation: Operation::RespondInteraction,
                ..
            }
        ),
        "{err:?}"
    );
    // Two sends (same key), then one read-back attempt (itself retried as a read).
    assert_eq!(server.methods(), ["POST", "POST", "GET", "GET"]);
}

#[tokio::test]
async fn approve_all_reports_every_target_even_when_some_fail() {
    let server = serve(|_, req, stream| async move {
        let id = req
            .path()
            .trim_start_matches("/api/sessions/interactions/")
            .trim_end_matches("/respond")
            .to_string();
        let body = if id.starts_with("fresh") {
            row_answer(
                &id,
                "responded",
                serde_json::json!({"answer": {"approved": true}}),
            )
        } else if id.starts_with("done") {
            not_pending()
        } else if id.starts_with("broken") {
            response(500, "text/html", b"<html>oops</html>")
        } else {
            json(404, serde_json::json!({"detail": "Interaction not found"}))
        };
        reply(stream, body).await
    })
    .await;
    let ids: Vec<String> = [
        "fresh-1",
        "done-1",
        "unknown-1",
        "fresh-2",
        "broken-1",
        "done-2",
        "fresh-1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let report = client(&server.url, 1)
        .interactions()
        .approve_all_with(&ids, &Answer::approve().tool_call_id("ignored"), 3)
        .await;
    let answered: Vec<_> = report
        .answered
        .iter()
        .map(|r| r.id.clone().unwrap())
        .collect();
    assert_eq!(answered, ["fresh-1", "fresh-2"]);
    assert_eq!(report.already_answered, ["done-1", "done-2"]);
    assert_eq!(report.failed.len(), 2);
    assert!(matches!(&report.failed[0], (id, Error::NotFound { .. }) if id == "unknown-1"));
    assert!(
        matches!(&report.failed[1], (id, Error::Server { status: 500, .. }) if id == "broken-1")
    );
    assert!(!report.all_already_answered());
    assert_eq!(report.total(), 6, "duplicates answered once");
    for req in server.requests().into_iter().filter(|r| r.method == "POST") {
        let body: serde_json::Value = serde_json::from_slice(&req.body).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"answer": {"approved": true}}),
            "tool_call_id is not broadcast"
        );
    }
}

#[tokio::test]
async fn watch_types_events_and_reconnects_after_a_drop() {
    // Fires when the second connection's writes fail: the client went away.
    let (gone_tx, gone_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let server = serve(move |index, req, mut stream| {
        let gone_tx = gone_tx.clone();
        async move {
        assert_eq!(req.header("accept"), Some("text/event-stream"));
        let _ = stream.write_all(SSE_HEAD.as_bytes()).await;
        let body = if index == 0 {
            "retry: 10\n\nevent: ready\ndata: {\"type\":\"ready\",\"session_id\":\"s-1\"}\n\n: heartbeat\n\nevent: interaction\ndata: {\"type\":\"interaction\",\"session_id\":\"s-1\",\"status\":\"pending\"}\n\nevent: mystery\ndata: {}\n\n"
        } else {
            "event: lifecycle\r\ndata: {\"type\":\"lifecycle\",\"session_id\":\"s-1\",\"state\":\"ended\"}\r\n\r\n"
        };
        let _ = stream.write_all(body.as_bytes()).await;
        if index == 0 {
            let _ = stream.shutdown().await; // the server drops the stream
        } else {
            // Heartbeats until the client hangs up.
            while stream.write_all(b": heartbeat\n\n").await.is_ok() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let _ = gone_tx.send(());
        }
    }})
    .await;
    let mut gone_rx = gone_rx;
    let c = client(&server.url, 3);
    let mut watch = c.interactions().watch("s-1");
    let mut seen = Vec::new();
    while seen.len() < 6 {
        let update = tokio::time::timeout(Duration::from_secs(5), watch.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        seen.push(update);
    }
    assert!(matches!(seen[0], WatchUpdate::Connected));
    assert!(
        matches!(&seen[1], WatchUpdate::Event(WatchEvent::Ready { session_id: Some(s) }) if s == "s-1")
    );
    assert!(matches!(
        &seen[2],
        WatchUpdate::Event(WatchEvent::Interaction {
            status: InteractionStatus::Pending,
            ..
        })
    ));
    assert!(
        matches!(
            &seen[3],
            WatchUpdate::Reconnecting {
                attempt: 1,
                error: Error::Transport { .. }
            }
        ),
        "{:?}",
        seen[3]
    );
    assert!(matches!(seen[4], WatchUpdate::Connected));
    assert!(matches!(
        &seen[5],
        WatchUpdate::Event(WatchEvent::Lifecycle { .. })
    ));
    let requests = server.requests();
    assert!(
        requests[0].target.contains("session_id=s-1"),
        "{}",
        requests[0].target
    );
    drop(watch);
    tokio::time::timeout(Duration::from_secs(5), gone_rx.recv())
        .await
        .expect("dropping the watch closes its connection");
    assert_eq!(server.connection_count(), 2, "and nothing reconnects");
}

#[tokio::test]
async fn watch_ends_with_an_error_on_unauthorized() {
    let server = serve(|_, _, stream| async move {
        reply(
            stream,
            json(
                401,
                serde_json::json!({"detail": "Invalid API key", "code": "UNAUTHORIZED"}),
            ),
        )
        .await
    })
    .await;
    let mut watch = client(&server.url, 3).interactions().watch("s-1");
    assert!(matches!(
        watch.next().await,
        Some(Err(Error::Unauthorized { .. }))
    ));
    assert!(watch.next().await.is_none());
}

/// An AgentPlat session document as AgentPlat answers it (no agent registry).
fn agentplat_session(revision: u64, operation_id: &str) -> serde_json::Value {
    serde_json::json!({
        "tenantId": "tenant-1", "roomId": "room-1", "sessionId": "exec-1", "runId": "run-1",
        "taskId": "task-1", "participantId": "agent-1", "revision": revision, "status": "active",
        "interventions": [{"operationId": operation_id, "requestedByParticipantId": "human-1",
            "instruction": "be brief", "checkpoint": "pre_step", "status": "pending", "attempts": 0,
            "requestedAt": "2026-01-01T00:00:00Z"}],
        "events": [{"sequence": 1, "type": "session_opened", "occurredAt": "2026-01-01T00:00:00Z"}],
        "createdAt": "2026-01-01T00:00:00Z", "updatedAt": "2026-01-01T00:00:00Z"
    })
}

fn agentplat_client(url: &str) -> Client {
    Client::builder(format!("{url}/prefix"))
        .upstream(Upstream::AgentPlat)
        .project_id(TEST_PROJECT)
        .tenant("tenant-1")
        .participant_id("human-1")
        .retry_policy(gatehouse_client::RetryPolicy::none())
        .build()
        .unwrap()
}

#[tokio::test]
async fn an_agentplat_upstream_sends_root_paths_the_tenant_and_the_participant() {
    let server = serve(|_, req, stream| async move {
        let body = serde_json::json!({"data": agentplat_session(1, "op-1")});
        reply(stream, json(202, body)).await;
        drop(req);
    })
    .await;
    let handle = agentplat_client(&server.url)
        .execution()
        .request_intervention(
            "room 1",
            "exec-1",
            gatehouse_client::InterventionRequest::new(
                0,
                "be brief",
                gatehouse_wire::execution::Checkpoint::PreStep,
            )
            .operation_id("op-1"),
        )
        .await
        .unwrap();
    assert_eq!(handle.session().agent_revision_id, None);
    let requests = server.requests.lock().unwrap().clone();
    let req = &requests[0];
    assert_eq!(req.method, "POST");
    // AgentPlat's root path under the base URL's prefix; no project_id.
    assert_eq!(
        req.target,
        "/prefix/rooms/room%201/execution-sessions/exec-1/interventions"
    );
    assert_eq!(req.header("x-agentplat-tenant-id"), Some("tenant-1"));
    assert_eq!(req.header("authorization"), None);
    let body: serde_json::Value = serde_json::from_slice(&req.body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"expectedRevision": 0, "operationId": "op-1",
            "requestedByParticipantId": "human-1", "instruction": "be brief", "checkpoint": "pre_step"})
    );
}

#[tokio::test]
async fn an_accepted_write_whose_answer_cannot_be_read_says_it_landed() {
    let server = serve(|index, _, stream| async move {
        let body = match index {
            // Accepted, but not a session document.
            0 => serde_json::json!({"data": {"sessionId": 7}}),
            // Accepted, and a session that does not show the request.
            _ => serde_json::json!({"data": agentplat_session(1, "someone-else")}),
        };
        reply(stream, json(202, body)).await
    })
    .await;
    let execution = agentplat_client(&server.url).execution();
    for _ in 0..2 {
        let err = execution
            .request_intervention(
                "room-1",
                "exec-1",
                gatehouse_client::InterventionRequest::new(
                    0,
                    "be brief",
                    gatehouse_wire::execution::Checkpoint::PreStep,
                )
                .operation_id("op-9"),
            )
            .await
            .unwrap_err();
        match &err {
            Error::AcceptedUnreadable {
                operation: Operation::RequestIntervention,
                status: 202,
                operation_id,
                ..
            } => assert_eq!(operation_id.as_deref(), Some("op-9")),
            other => panic!("expected AcceptedUnreadable, got {other:?}"),
        }
        assert!(err.to_string().contains("so it landed"), "{err}");
        assert!(!err.is_retryable());
    }
    assert_eq!(
        server.connection_count(),
        2,
        "an accepted write is not re-sent"
    );
}

/// A batch refused for the caller (an expired key) fails every gate with that refusal
/// and is not re-sent gate by gate: each single respond would be refused the same way.
#[tokio::test]
async fn a_batch_refused_for_the_caller_is_not_answered_one_by_one() {
    let server = serve(|_, req, stream| async move {
        let body = if req.path() == "/api/capabilities" {
            json(200, serde_json::json!({"service": "gatehouse", "version": "9", "capabilities": ["interactions", "interaction_batch"]}))
        } else {
            json(401, serde_json::json!({"detail": "Invalid API key"}))
        };
        reply(stream, body).await
    })
    .await;
    let ids: Vec<String> = (0..5).map(|n| format!("gate-{n}")).collect();
    let report = client(&server.url, 1)
        .interactions()
        .approve_all(&ids, &Answer::approve())
        .await;
    assert!(report.answered.is_empty());
    assert_eq!(report.failed.len(), 5);
    assert!(report
        .failed
        .iter()
        .all(|(_, err)| matches!(err, Error::Unauthorized { .. })));
    let posts = server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .count();
    assert_eq!(posts, 1, "the refused batch alone");
}

/// A host that advertises `interaction_batch` gets one batch request for many gates
/// (each gate with its own idempotency key), and each gate its own outcome; a host that
/// does not (or whose batch route is absent) gets one respond per gate, under the same
/// keys.
#[tokio::test]
async fn approve_all_uses_one_batch_where_advertised_and_fans_out_elsewhere() {
    let server = serve(|_, req, stream| async move {
        let body = if req.path() == "/api/capabilities" {
            json(200, serde_json::json!({"service": "gatehouse", "version": "9", "capabilities": ["interactions", "interaction_batch", "teleport"]}))
        } else if req.path() == "/api/sessions/interactions/respond-batch" {
            let sent: serde_json::Value = serde_json::from_slice(&req.body).unwrap();
            let results: Vec<serde_json::Value> = sent["answers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|item| {
                    let id = item["id"].as_str().unwrap();
                    assert!(item["idempotency_key"].as_str().is_some_and(|k| !k.is_empty()));
                    if id.starts_with("fresh") {
                        serde_json::json!({"id": id, "outcome": "answered", "interaction": row_json(id, "responded", serde_json::json!({"answer": {"approved": true}}))})
                    } else if id.starts_with("done") {
                        serde_json::json!({"id": id, "outcome": "already_answered", "error": {"code": "ALREADY_ANSWERED", "detail": "Interaction is no longer pending"}})
                    } else {
                        serde_json::json!({"id": id, "outcome": "not_found", "error": {"code": "NOT_FOUND", "detail": "Interaction not found"}})
                    }
                })
                .collect();
            json(200, serde_json::json!({"count": results.len(), "results": results}))
        } else {
            json(500, serde_json::json!({"detail": "unexpected"}))
        };
        reply(stream, body).await
    })
    .await;
    let ids: Vec<String> = ["fresh-1", "done-1", "gone-1", "fresh-2"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let report = client(&server.url, 1)
        .interactions()
        .approve_all(&ids, &Answer::approve())
        .await;
    let answered: Vec<_> = report
        .answered
        .iter()
        .map(|r| r.id.clone().unwrap())
        .collect();
    assert_eq!(answered, ["fresh-1", "fresh-2"]);
    assert_eq!(report.already_answered, ["done-1"]);
    assert!(matches!(&report.failed[..], [(id, Error::NotFound { .. })] if id == "gone-1"));
    let posts: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    assert_eq!(posts.len(), 1, "one round trip for every gate");

    // A host without the route (Agenta): the batch answers route-not-found, and the gates
    // are answered one by one.
    let server = serve(|_, req, stream| async move {
        let body = if req.path() == "/api/sessions/interactions/respond-batch"
            || req.path() == "/api/capabilities"
        {
            json(404, serde_json::json!({"detail": "Not Found"}))
        } else {
            let id = req
                .path()
                .trim_start_matches("/api/sessions/interactions/")
                .trim_end_matches("/respond")
                .to_string();
            row_answer(
                &id,
                "responded",
                serde_json::json!({"answer": {"approved": true}}),
            )
        };
        reply(stream, body).await
    })
    .await;
    let report = client(&server.url, 1)
        .interactions()
        .approve_all(&ids, &Answer::approve())
        .await;
    assert_eq!(report.answered.len(), 4, "{:?}", report.failed);
    let singles = server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path().ends_with("/respond"))
        .count();
    assert_eq!(singles, 4);
}
