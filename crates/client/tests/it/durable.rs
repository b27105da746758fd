//! Agenta's durable contract (issue 33, item 2) against scripted local hosts: which
//! contract a host speaks (from its capabilities, pinned, cached), the durable respond and
//! its outcomes, approve-all by turn, the durable Stop and how it settled, the snapshot and
//! the replayable events. Bodies are Agenta's recorded examples where they exist
//! (`agenta/durable/examples`, read at run time; skipped with one line when absent).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::*;
use futures::StreamExt;
use gatehouse_client::{
    AgentaContract, Answer, Client, Error, Operation, RespondOptions, RespondOutcome,
    SessionEventUpdate, StopOutcome, Upstream,
};
use gatehouse_wire::capabilities::Capability;
use gatehouse_wire::interaction::{InteractionStatus, SessionInteraction};
use gatehouse_wire::routes;
use gatehouse_wire::sessions::{RelayCloseReason, SessionExecutionState};
use tokio::io::AsyncWriteExt;

const GATE: &str = "0196a001-0000-7000-8000-000000000001";
const GATE_2: &str = "0196a001-0000-7000-8000-000000000002";
const TURN: &str = "7d3f2c1e-5b6a-4c8d-9e0f-a1b2c3d4e5f6";
const SESSION: &str = "sess_demo_01";

/// The `response` of an example of Agenta's durable contract: (status, body).
fn example(name: &str) -> Option<(u16, serde_json::Value)> {
    let text = gatehouse_fixtures::read_text(
        gatehouse_fixtures::Upstream::Agenta,
        "durable client contract",
        &format!("durable/examples/{name}"),
    )?;
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let status = value["response"]["status"].as_u64().unwrap() as u16;
    Some((status, value["response"]["body"].clone()))
}

/// The SSE text of the events example's frames.
fn events_example() -> Option<Vec<String>> {
    let text = gatehouse_fixtures::read_text(
        gatehouse_fixtures::Upstream::Agenta,
        "durable client contract",
        "durable/examples/events.stream.json",
    )?;
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    Some(
        value["response"]["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|frame| frame["raw"].as_str().unwrap().to_string())
            .collect(),
    )
}

fn client_with(url: &str, upstream: Upstream, contract: Option<AgentaContract>) -> Client {
    let mut builder = client_builder(url, 3)
        .upstream(upstream)
        .stream_idle_timeout(Duration::from_secs(5));
    if let Some(contract) = contract {
        builder = builder.agenta_contract(contract);
    }
    builder.build().unwrap()
}

fn gate(id: &str, turn: Option<&str>) -> SessionInteraction {
    serde_json::from_value(serde_json::json!({
        "id": id, "session_id": SESSION, "turn_id": turn, "token": format!("tok-{id}"),
        "kind": "user_approval", "status": "pending"
    }))
    .unwrap()
}

fn discovery(durable: bool) -> Vec<u8> {
    let names: Vec<&str> = Capability::ALL
        .iter()
        .filter(|c| durable || **c != Capability::DurableApprovals)
        .map(|c| c.as_str())
        .collect();
    json(
        200,
        serde_json::json!({"service": "stub", "version": "0", "capabilities": names}),
    )
}

// ---- 1. which contract ------------------------------------------------------------

#[tokio::test]
async fn a_gatehouse_host_says_its_contract_in_discovery_once() {
    let Some((_, continuation)) = example("respond.202.continuation.json") else {
        return;
    };
    let server = serve(move |_, req, stream| {
        let continuation = continuation.clone();
        async move {
            let answer = if req.path() == routes::GET_CAPABILITIES.path {
                discovery(true)
            } else {
                json(202, continuation)
            };
            reply(stream, answer).await
        }
    })
    .await;
    let client = client_with(&server.url, Upstream::Gatehouse, None);
    assert_eq!(client.agenta_contract(), None);
    for _ in 0..2 {
        let outcome = client
            .interactions()
            .respond_outcome(GATE, &Answer::approve(), &RespondOptions::new())
            .await
            .unwrap();
        assert!(
            matches!(outcome, RespondOutcome::Continued { .. }),
            "{outcome:?}"
        );
    }
    assert_eq!(client.agenta_contract(), Some(AgentaContract::Durable));
    let requests = server.requests();
    let discoveries = requests
        .iter()
        .filter(|r| r.path() == routes::GET_CAPABILITIES.path)
        .count();
    assert_eq!(discoveries, 1, "discovery is read once");
    // Every durable respond carries a key, a fresh one per call.
    let keys: Vec<&str> = requests
        .iter()
        .filter(|r| r.method == "POST")
        .map(|r| r.header("Idempotency-Key").unwrap())
        .collect();
    assert_eq!(keys.len(), 2);
    assert_ne!(keys[0], keys[1]);
}

#[tokio::test]
async fn a_host_whose_discovery_lacks_the_capability_keeps_the_legacy_respond() {
    let server = serve(|_, req, stream| async move {
        let answer = if req.path() == routes::GET_CAPABILITIES.path {
            discovery(false)
        } else {
            row_answer(
                GATE,
                "responded",
                serde_json::json!({"answer": {"approved": true}}),
            )
        };
        reply(stream, answer).await
    })
    .await;
    let client = client_with(&server.url, Upstream::Gatehouse, None);
    let outcome = client
        .interactions()
        .respond_outcome(GATE, &Answer::approve(), &RespondOptions::new())
        .await
        .unwrap();
    assert!(
        matches!(outcome, RespondOutcome::Answered { .. }),
        "{outcome:?}"
    );
    assert_eq!(client.agenta_contract(), Some(AgentaContract::Legacy));
    // Stop is refused without a request on a legacy host.
    let before = server.requests().len();
    let err = client.sessions().stop(SESSION, None).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::CapabilityUnavailable {
                operation: Operation::CancelSession,
                capability: Some(Capability::DurableApprovals)
            }
        ),
        "{err:?}"
    );
    assert_eq!(server.requests().len(), before);
}

#[tokio::test]
async fn an_agenta_host_says_its_contract_in_a_session_snapshot() {
    let (Some((_, snapshot)), Some((_, continuation))) = (
        example("snapshot.200.parked_on_two_gates.json"),
        example("respond.202.continuation.json"),
    ) else {
        return;
    };
    let server = serve(move |_, req, stream| {
        let (snapshot, continuation) = (snapshot.clone(), continuation.clone());
        async move {
            let answer = if req.method == "GET" {
                json(200, snapshot)
            } else {
                json(202, continuation)
            };
            reply(stream, answer).await
        }
    })
    .await;
    let client = client_with(&server.url, Upstream::Agenta, None);
    let outcome = client
        .interactions()
        .respond_to(
            &gate(GATE, Some(TURN)),
            &Answer::approve().tool_call_id("call_01"),
        )
        .await
        .unwrap();
    let RespondOutcome::Continued {
        command, execution, ..
    } = outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(command.id, "0196a002-0000-7000-8000-000000000010");
    assert_eq!(execution.state, SessionExecutionState::PendingDelivery);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path(), format!("/api/sessions/{SESSION}"));
    assert_eq!(
        requests[1].path(),
        format!("/api/sessions/interactions/{GATE}/respond")
    );
    // The answer expects the turn the person saw.
    assert_eq!(
        requests[1].json(),
        serde_json::json!({"answer": {"approved": true, "tool_call_id": "call_01"}, "expected_execution_id": TURN})
    );
    assert!(requests[1].header("Idempotency-Key").is_some());
    // Known now: the legacy signature speaks the durable contract too, with no snapshot.
    let row = client
        .interactions()
        .respond(GATE, &Answer::approve())
        .await
        .unwrap();
    assert_eq!(row.status, Some(InteractionStatus::Responded));
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn an_agenta_host_without_the_snapshot_route_is_a_legacy_one() {
    let server = serve(|_, req, stream| async move {
        let answer = if req.method == "GET" {
            json(404, serde_json::json!({"detail": "Not Found"}))
        } else {
            row_answer(
                GATE,
                "responded",
                serde_json::json!({"answer": {"approved": true}}),
            )
        };
        reply(stream, answer).await
    })
    .await;
    let client = client_with(&server.url, Upstream::Agenta, None);
    let outcome = client
        .interactions()
        .respond_to(&gate(GATE, Some(TURN)), &Answer::approve())
        .await
        .unwrap();
    assert!(
        matches!(outcome, RespondOutcome::Answered { .. }),
        "{outcome:?}"
    );
    assert_eq!(client.agenta_contract(), Some(AgentaContract::Legacy));
    // The legacy body: no expectation, no durable keys.
    let requests = server.requests();
    assert_eq!(
        requests[1].json(),
        serde_json::json!({"answer": {"approved": true}})
    );
}

#[tokio::test]
async fn a_pinned_contract_asks_nothing() {
    let Some((_, continuation)) = example("respond.202.continuation.json") else {
        return;
    };
    let server = serve(move |_, _, stream| {
        let continuation = continuation.clone();
        async move { reply(stream, json(202, continuation)).await }
    })
    .await;
    let client = client_with(
        &server.url,
        Upstream::Gatehouse,
        Some(AgentaContract::Durable),
    );
    let row = client
        .interactions()
        .respond(GATE, &Answer::approve())
        .await
        .unwrap();
    assert_eq!(row.id.as_deref(), Some(GATE));
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "no discovery, no snapshot");
    assert_eq!(
        requests[0].json(),
        serde_json::json!({"answer": {"approved": true}})
    );

    let legacy = client_with(&server.url, Upstream::Agenta, Some(AgentaContract::Legacy));
    let err = legacy
        .sessions()
        .resume_continuation(SESSION)
        .await
        .unwrap_err();
    assert_eq!(
        err.kind(),
        gatehouse_client::ErrorKind::CapabilityUnavailable
    );
    assert_eq!(server.requests().len(), 1);
}

// ---- 2. the durable respond -------------------------------------------------------

async fn respond_once(
    status: u16,
    body: serde_json::Value,
) -> (Result<RespondOutcome, Error>, RawServer) {
    let server = serve(move |_, _, stream| {
        let body = body.clone();
        async move { reply(stream, json(status, body)).await }
    })
    .await;
    let client = client_with(&server.url, Upstream::Agenta, Some(AgentaContract::Durable));
    let options = RespondOptions::new().expected_execution_id(TURN);
    let result = client
        .interactions()
        .respond_outcome(GATE, &Answer::approve(), &options)
        .await;
    (result, server)
}

#[tokio::test]
async fn each_durable_202_is_its_outcome() {
    let Some((status, body)) = example("respond.202.second_answer_same_verdict.json") else {
        return;
    };
    let (result, _) = respond_once(status, body).await;
    let outcome = result.unwrap();
    assert!(
        matches!(&outcome, RespondOutcome::AlreadyRecorded { execution, .. } if execution.state == SessionExecutionState::Terminal),
        "{outcome:?}"
    );

    let (status, body) = example("respond.202.delivery_failed_recoverable.json").unwrap();
    let (result, _) = respond_once(status, body).await;
    assert!(
        matches!(result.unwrap(), RespondOutcome::Continued { execution, .. } if execution.state == SessionExecutionState::Recoverable)
    );

    // A partial answer of a turn's parallel gates: no command, awaiting the others.
    let (status, mut body) = example("respond.202.continuation.json").unwrap();
    body["command"] = serde_json::Value::Null;
    body["execution"] = serde_json::json!({"id": TURN, "state": "awaiting_interactions"});
    let (result, _) = respond_once(status, body).await;
    assert!(matches!(
        result.unwrap(),
        RespondOutcome::AwaitingOtherGates { .. }
    ));
}

/// Whether an error is the one expected.
type IsExpected = fn(&Error) -> bool;

#[tokio::test]
async fn each_durable_refusal_is_its_error_and_none_is_retried() {
    let cases: [(&str, IsExpected); 4] = [
        (
            "respond.409.execution_mismatch.stale_expected.json",
            |e| matches!(e, Error::StaleExecution { current_execution_id: Some(id), .. } if id == TURN),
        ),
        (
            "respond.409.execution_terminal.no_longer_pending.json",
            |e| {
                matches!(
                    e,
                    Error::AlreadyAnswered {
                        interaction_status: Some(InteractionStatus::Cancelled),
                        ..
                    }
                )
            },
        ),
        ("respond.409.execution_terminal.source_settled.json", |e| {
            matches!(
                e,
                Error::TurnNotContinuable {
                    execution_state: Some(SessionExecutionState::Terminal),
                    ..
                }
            )
        }),
        (
            "respond.422.idempotency_key_required.json",
            |e| matches!(e, Error::Validation { field: Some(f), reason: Some(r), .. } if f == "Idempotency-Key" && r == "required"),
        ),
    ];
    for (name, expected) in cases {
        let Some((status, body)) = example(name) else {
            return;
        };
        let (result, server) = respond_once(status, body).await;
        let err = result.unwrap_err();
        assert!(expected(&err), "{name}: {err:?}");
        assert_eq!(server.connection_count(), 1, "{name} is not retried");
    }
    let reused =
        serde_json::json!({"code": "idempotency_key_reused", "message": "m", "retryable": false});
    let (result, server) = respond_once(409, reused).await;
    assert!(matches!(
        result.unwrap_err(),
        Error::IdempotencyKeyReused { .. }
    ));
    assert_eq!(server.connection_count(), 1);
}

#[tokio::test]
async fn an_unknown_outcome_is_resent_under_the_same_key() {
    let Some((_, continuation)) = example("respond.202.continuation.json") else {
        return;
    };
    let server = serve(move |index, _, stream| {
        let continuation = continuation.clone();
        async move {
            if index == 0 {
                reset(stream);
            } else {
                reply(stream, json(202, continuation)).await
            }
        }
    })
    .await;
    let client = client_with(&server.url, Upstream::Agenta, Some(AgentaContract::Durable));
    let options = RespondOptions::new().idempotency_key("respond-7f1c2b");
    let outcome = client
        .interactions()
        .respond_outcome(GATE, &Answer::approve(), &options)
        .await
        .unwrap();
    assert!(matches!(outcome, RespondOutcome::Continued { .. }));
    let keys: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.header("Idempotency-Key").unwrap().to_string())
        .collect();
    assert_eq!(keys, ["respond-7f1c2b", "respond-7f1c2b"]);
}

#[tokio::test]
async fn an_accepted_answer_that_does_not_read_is_never_a_failure_and_html_is_typed() {
    let (result, _) = respond_once(202, serde_json::json!({"interaction": "garbage"})).await;
    let err = result.unwrap_err();
    assert!(
        matches!(
            &err,
            Error::AcceptedUnreadable {
                status: 202,
                operation_id: Some(_),
                ..
            }
        ),
        "{err:?}"
    );
    let server = serve(|_, _, stream| async move {
        reply(
            stream,
            response(502, "text/html", b"<html>bad gateway</html>"),
        )
        .await
    })
    .await;
    let client = client_with(&server.url, Upstream::Agenta, Some(AgentaContract::Durable));
    let err = client
        .interactions()
        .respond_outcome(GATE, &Answer::approve(), &RespondOptions::new())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Server { status: 502, .. }), "{err:?}");
    let keys: std::collections::HashSet<String> = server
        .requests()
        .iter()
        .map(|r| r.header("Idempotency-Key").unwrap().to_string())
        .collect();
    assert_eq!(keys.len(), 1, "every re-send under one key");
}

// ---- 3. approve-all by turn -------------------------------------------------------

#[tokio::test]
async fn approve_gates_sends_one_answers_request_per_turn_and_chunk() {
    let Some((_, continuation)) = example("respond.202.continuation.json") else {
        return;
    };
    let server = serve(move |_, _, stream| {
        let continuation = continuation.clone();
        async move { reply(stream, json(202, continuation)).await }
    })
    .await;
    let client = client_with(&server.url, Upstream::Agenta, Some(AgentaContract::Durable));
    let mut gates = vec![
        gate(GATE, Some(TURN)),
        gate("g-other-turn", Some("turn-2")),
        gate(GATE_2, Some(TURN)),
        gate(GATE, Some(TURN)), // a duplicate: answered once
    ];
    // 150 more gates of a third turn: two requests (100 + 50).
    gates.extend((0..150).map(|i| gate(&format!("g3-{i:03}"), Some("turn-3"))));
    let report = client
        .interactions()
        .approve_gates(&gates, &Answer::approve().tool_call_id("ignored"))
        .await;
    assert_eq!(report.gates.len(), 153);
    assert_eq!(report.failed().count(), 0);
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let mut bodies: Vec<serde_json::Value> = requests.iter().map(Req::json).collect();
    bodies.sort_by_key(|b| b["answers"].as_array().map(Vec::len).unwrap_or(0));
    let sizes: Vec<usize> = bodies
        .iter()
        .map(|b| b["answers"].as_array().unwrap().len())
        .collect();
    assert_eq!(sizes, [1, 2, 50, 100]);
    let first_turn = bodies
        .iter()
        .find(|b| b["expected_execution_id"] == TURN)
        .unwrap();
    assert_eq!(
        first_turn["answers"],
        serde_json::json!([
            {"interaction_id": GATE, "answer": {"approved": true}},
            {"interaction_id": GATE_2, "answer": {"approved": true}},
        ])
    );
    // The path names the request's first gate.
    let anchors: Vec<String> = requests.iter().map(|r| r.path().to_string()).collect();
    assert!(anchors.contains(&format!("/api/sessions/interactions/{GATE}/respond")));
}

#[tokio::test]
async fn approve_gates_on_a_legacy_host_fans_out_as_before() {
    let server = serve(|_, req, stream| async move {
        let id = req.path().split('/').nth(4).unwrap_or_default().to_string();
        reply(
            stream,
            row_answer(
                &id,
                "responded",
                serde_json::json!({"answer": {"approved": true}}),
            ),
        )
        .await
    })
    .await;
    let client = client_with(&server.url, Upstream::Agenta, Some(AgentaContract::Legacy));
    let gates = [gate(GATE, Some(TURN)), gate(GATE_2, Some(TURN))];
    let report = client
        .interactions()
        .approve_gates(&gates, &Answer::approve())
        .await;
    assert_eq!(report.answered().count(), 2);
    assert!(report
        .gates
        .iter()
        .all(|g| matches!(g.result, Ok(RespondOutcome::Answered { .. }))));
    assert_eq!(server.requests().len(), 2);
}

// ---- 4. Stop ----------------------------------------------------------------------

/// A durable host for Stop: the cancel answers `stop`; the snapshot reads `stopping`
/// for `stopping_reads` reads, then `idle`; the events replay `events`.
async fn stop_host(
    stop: (u16, serde_json::Value),
    stopping_reads: usize,
    events: Vec<String>,
) -> RawServer {
    let snapshots = Arc::new(AtomicUsize::new(0));
    serve(move |_, req, stream| {
        let (stop, events, snapshots) = (stop.clone(), events.clone(), snapshots.clone());
        async move {
            let answer = if req.method == "POST" {
                json(stop.0, stop.1)
            } else if req.path().ends_with("/events") {
                sse(&events)
            } else {
                let n = snapshots.fetch_add(1, Ordering::SeqCst);
                let state = if n < stopping_reads {
                    "stopping"
                } else {
                    "idle"
                };
                json(
                    200,
                    serde_json::json!({
                        "execution_state": {"id": TURN, "state": state},
                        "pending": {"inputs": [], "interactions": []},
                        "read": {"latest_sequence": 42, "history_complete": true},
                        "capabilities": {"durable_approvals": true, "queue": false, "steer": false}
                    }),
                )
            };
            reply(stream, answer).await
        }
    })
    .await
}

#[tokio::test]
async fn a_stop_is_stopped_only_when_the_events_say_so() {
    let (Some(stop), Some(frames)) = (example("cancel.202.json"), events_example()) else {
        return;
    };
    let server = stop_host(stop, 2, frames).await;
    let client = client_with(&server.url, Upstream::Agenta, Some(AgentaContract::Durable));
    let sessions = client.sessions();
    let requested = sessions.stop(SESSION, Some(TURN)).await.unwrap();
    assert!(requested.is_stopping());
    assert_eq!(requested.command.id, "0196a002-0000-7000-8000-000000000020");
    let outcome = sessions
        .wait_for_stop(SESSION, &requested, Duration::from_secs(10))
        .await
        .unwrap();
    assert!(
        matches!(&outcome, StopOutcome::Stopped { execution_id, .. } if execution_id == TURN),
        "{outcome:?}"
    );
    let requests = server.requests();
    let post = &requests[0];
    assert_eq!(
        post.json(),
        serde_json::json!({"expected_execution_id": TURN})
    );
    assert!(post.header("Idempotency-Key").is_some());
    // The events were read after the log's end while the turn still stopped.
    let events = requests
        .iter()
        .find(|r| r.path().ends_with("/events"))
        .unwrap();
    assert!(events.target.ends_with("after=42"), "{}", events.target);
}

#[tokio::test]
async fn a_stop_without_an_outcome_event_is_not_called_stopped() {
    let Some(stop) = example("cancel.202.json") else {
        return;
    };
    // Settled per the snapshot, but the log holds nothing about it.
    let ready = vec![
        "retry: 10\n\n".to_string(),
        "event: ready\ndata: {}\n\n".to_string(),
    ];
    let server = stop_host(stop.clone(), 0, ready).await;
    let client = client_with(&server.url, Upstream::Agenta, Some(AgentaContract::Durable));
    let requested = client.sessions().stop(SESSION, None).await.unwrap();
    let outcome = client
        .sessions()
        .wait_for_stop(SESSION, &requested, Duration::from_secs(5))
        .await
        .unwrap();
    assert!(
        matches!(
            outcome,
            StopOutcome::Unresolved {
                timed_out: false,
                state: SessionExecutionState::Idle,
                ..
            }
        ),
        "{outcome:?}"
    );

    // Still stopping at the timeout: unresolved, timed out.
    let server = stop_host(stop, usize::MAX, Vec::new()).await;
    let client = client_with(&server.url, Upstream::Agenta, Some(AgentaContract::Durable));
    let requested = client.sessions().stop(SESSION, None).await.unwrap();
    let outcome = client
        .sessions()
        .wait_for_stop(SESSION, &requested, Duration::from_millis(300))
        .await
        .unwrap();
    assert!(
        matches!(
            outcome,
            StopOutcome::Unresolved {
                timed_out: true,
                state: SessionExecutionState::Stopping,
                ..
            }
        ),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn a_stop_with_nothing_running_and_a_stale_stop() {
    let (Some(not_running), Some(stale)) = (
        example("cancel.200.not_running.json"),
        example("cancel.409.stale_expected.json"),
    ) else {
        return;
    };
    let server = stop_host(not_running, 0, Vec::new()).await;
    let client = client_with(&server.url, Upstream::Agenta, Some(AgentaContract::Durable));
    let requested = client.sessions().stop(SESSION, None).await.unwrap();
    assert!(!requested.is_stopping());
    let outcome = client
        .sessions()
        .wait_for_stop(SESSION, &requested, Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!(outcome, StopOutcome::NotRunning);
    assert_eq!(
        server.requests().len(),
        1,
        "the 200 says it; nothing is read"
    );

    let server = stop_host(stale, 0, Vec::new()).await;
    let client = client_with(&server.url, Upstream::Agenta, Some(AgentaContract::Durable));
    let err = client
        .sessions()
        .stop(SESSION, Some(TURN))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::StaleExecution { operation: Operation::CancelSession, current_execution_id: Some(id), .. } if id == "9a8b7c6d-0000-4000-8000-00000000beef"),
        "{err:?}"
    );
    assert_eq!(server.connection_count(), 1);
}

// ---- 5. snapshot, events, resume --------------------------------------------------

#[tokio::test]
async fn the_events_resume_after_the_last_sequence_seen_and_end_on_a_final_close() {
    let Some(frames) = events_example() else {
        return;
    };
    let server = serve(move |index, _, mut stream| {
        let frames = frames.clone();
        async move {
            if index == 0 {
                // The replayed event, then the connection drops.
                let _ = stream.write_all(SSE_HEAD.as_bytes()).await;
                let _ = stream.write_all(frames[0].as_bytes()).await;
                let _ = stream.write_all(frames[1].as_bytes()).await;
                let _ = stream.shutdown().await;
            } else {
                // The replay repeats sequence 43; then ready, a live frame, the close.
                reply(stream, sse(&frames)).await
            }
        }
    })
    .await;
    let client = client_with(&server.url, Upstream::Agenta, Some(AgentaContract::Durable));
    let updates: Vec<SessionEventUpdate> = client
        .sessions()
        .events(SESSION, 42)
        .map(|u| u.unwrap())
        .collect()
        .await;
    let kinds: Vec<&str> = updates
        .iter()
        .map(|u| match u {
            SessionEventUpdate::Connected { .. } => "connected",
            SessionEventUpdate::Event(_) => "event",
            SessionEventUpdate::Ready => "ready",
            SessionEventUpdate::Frame(_) => "frame",
            SessionEventUpdate::Reconnecting { .. } => "reconnecting",
            SessionEventUpdate::Closed(_) => "closed",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "connected",
            "event",
            "reconnecting",
            "connected",
            "ready",
            "frame",
            "closed"
        ]
    );
    assert!(matches!(
        updates.last(),
        Some(SessionEventUpdate::Closed(close)) if close.reason == RelayCloseReason::AuthorizationRevoked
    ));
    let targets: Vec<String> = server.requests().iter().map(|r| r.target.clone()).collect();
    assert!(targets[0].contains("after=42"), "{targets:?}");
    assert!(targets[1].contains("after=43"), "{targets:?}");
}

#[tokio::test]
async fn garbage_in_the_events_is_a_typed_error() {
    let server = serve(|_, _, stream| async move {
        let frames = ["data: {\"kind\":\"event\",\"sequence\":\"x\"}\n\n".to_string()];
        reply(stream, sse(&frames)).await
    })
    .await;
    let client = client_with(&server.url, Upstream::Agenta, Some(AgentaContract::Durable));
    let mut events = client.sessions().events(SESSION, 0);
    assert!(matches!(
        events.next().await,
        Some(Ok(SessionEventUpdate::Connected { after: 0 }))
    ));
    let err = events.next().await.unwrap().unwrap_err();
    assert!(
        matches!(
            err,
            Error::Decode {
                operation: Operation::WatchSessionEvents,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(events.next().await.is_none());
}

#[tokio::test]
async fn the_snapshot_and_the_resume_read_as_recorded() {
    let (Some((_, snapshot)), Some((_, resumed))) = (
        example("snapshot.200.parked_on_two_gates.json"),
        example("continuations.resume.200.json"),
    ) else {
        return;
    };
    let server = serve(move |_, req, stream| {
        let (snapshot, resumed) = (snapshot.clone(), resumed.clone());
        async move {
            let answer = if req.method == "GET" {
                json(200, snapshot)
            } else {
                json(200, resumed)
            };
            reply(stream, answer).await
        }
    })
    .await;
    let client = client_with(&server.url, Upstream::Agenta, None);
    let read = client.sessions().snapshot(SESSION).await.unwrap();
    assert_eq!(read.pending.interactions.len(), 2);
    assert_eq!(read.read.map(|r| r.latest_sequence), Some(42));
    assert_eq!(client.agenta_contract(), Some(AgentaContract::Durable));
    assert!(client
        .sessions()
        .resume_continuation(SESSION)
        .await
        .unwrap());
    let paths: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.path().to_string())
        .collect();
    assert_eq!(
        paths,
        [
            format!("/api/sessions/{SESSION}"),
            format!("/api/sessions/{SESSION}/continuations/resume")
        ]
    );
}
