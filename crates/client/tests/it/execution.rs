//! The execution sub-client against the reference server (and hostile hosts), over real
//! HTTP: requested is not applied; applied only with the persisted evidence.

use std::time::Duration;

use crate::common::*;
use futures::StreamExt;
use gatehouse_client::{
    Answer, Client, Error, InterventionOutcome, InterventionRequest, InterventionState, Operation,
};
use gatehouse_server::testing::{TestServer, TestServerOptions};
use gatehouse_wire::capabilities::Capability;
use gatehouse_wire::execution::{
    Checkpoint, ExecutionEventType, ExecutionRef, ExecutionSessionStatus, InterventionStatus,
};
use gatehouse_wire::invoke::{InvokeData, InvokeInputs, InvokeRequest, TurnStatus};
use gatehouse_wire::run::ChatMessage;
use serde_json::json;

/// A run that asks before `Bash`: it parks at the gate, its session paused.
fn gated_config() -> serde_json::Map<String, serde_json::Value> {
    match json!({"agent": {"llm": {"model": "m-exec"}, "runner": {"permissions": {"default": "ask"}}}})
    {
        serde_json::Value::Object(map) => map,
        _ => unreachable!(),
    }
}

/// Invoke a gated run: its execution ref and the gate id.
async fn park(c: &Client, task: &str) -> (ExecutionRef, String) {
    let answer = c
        .service()
        .invoke(&InvokeRequest {
            session_id: Some(task.to_string()),
            references: None,
            data: InvokeData {
                inputs: InvokeInputs {
                    messages: vec![ChatMessage::text("user", "list files")],
                    ..Default::default()
                },
                parameters: Some(gated_config()),
                ..Default::default()
            },
        })
        .await
        .unwrap();
    assert_eq!(answer.status, TurnStatus::Parked, "{answer:?}");
    let execution = answer
        .execution
        .expect("the invoke answer names the execution session");
    (execution, answer.interaction_ids[0].clone())
}

async fn server_and_client() -> (TestServer, Client) {
    let server = reference_server().await;
    let c = client_for(&server);
    (server, c)
}

/// The recipe: request (Requested, not applied while the run waits), the run reaches
/// the checkpoint, the persisted application is read back; a stale revision is a typed
/// conflict and nothing is applied for it.
#[tokio::test]
async fn requested_then_applied_with_persisted_evidence() {
    let (_server, c) = server_and_client().await;
    let (ex, gate) = park(&c, "c-recipe").await;
    let session = c
        .execution()
        .get_session(&ex.room_id, &ex.session_id)
        .await
        .unwrap();
    assert_eq!(session.status, ExecutionSessionStatus::Paused);
    assert_eq!(session.revision, ex.revision);

    let handle = c
        .execution()
        .request_intervention(
            &ex.room_id,
            &ex.session_id,
            InterventionRequest::new(session.revision, "stop", Checkpoint::PreAction),
        )
        .await
        .unwrap();
    assert_eq!(handle.state(), InterventionState::Requested);
    assert!(
        uuid::Uuid::parse_str(handle.operation_id()).is_ok(),
        "a client-generated UUID"
    );
    // While the run is parked nothing is applied: a short wait is not a success.
    let early = handle
        .wait_applied(Duration::from_millis(60))
        .await
        .unwrap();
    assert_eq!(early, InterventionOutcome::TimedOut);

    // Stale revision: typed conflict, nothing recorded.
    let stale = c
        .execution()
        .request_intervention(
            &ex.room_id,
            &ex.session_id,
            InterventionRequest::new(session.revision, "be brief", Checkpoint::PreStep),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            stale,
            Error::RevisionConflict {
                operation: Operation::RequestIntervention,
                ..
            }
        ),
        "{stale:?}"
    );
    let now = c
        .execution()
        .get_session(&ex.room_id, &ex.session_id)
        .await
        .unwrap();
    assert_eq!(now.interventions.len(), 1);

    c.interactions()
        .respond(&gate, &Answer::approve())
        .await
        .unwrap();
    let outcome = handle.wait_applied(Duration::from_secs(10)).await.unwrap();
    let InterventionOutcome::Applied { evidence } = outcome else {
        panic!("not applied: {outcome:?}");
    };
    assert_eq!(evidence.event_type, ExecutionEventType::InterventionApplied);
    assert_eq!(
        evidence.operation_id.as_deref(),
        Some(handle.operation_id())
    );
    assert_eq!(evidence.checkpoint, Some(Checkpoint::PreAction));
    let done = c
        .execution()
        .get_session(&ex.room_id, &ex.session_id)
        .await
        .unwrap();
    assert_eq!(done.status, ExecutionSessionStatus::Canceled);
    assert_eq!(
        done.applied_evidence(handle.operation_id()),
        Some(&evidence)
    );
    assert!(matches!(
        handle.refresh().await.unwrap(),
        InterventionState::Applied { .. }
    ));
    let applied: Vec<_> = c
        .execution()
        .events(&ex.room_id, &ex.session_id, Some(0))
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.event_type == ExecutionEventType::InterventionApplied)
        .collect();
    assert_eq!(applied.len(), 1);
    let turns = c.service().turns("c-recipe").await.unwrap();
    let output = turns.turns[1].output.clone().unwrap_or_default();
    assert!(
        !output.contains("ran Bash"),
        "the stop prevented the tool: {output}"
    );
}

#[tokio::test]
async fn replayed_operation_id_returns_the_session_and_another_payload_conflicts() {
    let (_server, c) = server_and_client().await;
    let (ex, _gate) = park(&c, "c-replay").await;
    let first = c
        .execution()
        .request_intervention(
            &ex.room_id,
            &ex.session_id,
            InterventionRequest::new(ex.revision, "be brief", Checkpoint::PreStep)
                .operation_id("op-r"),
        )
        .await
        .unwrap();
    // Same id and payload, stale revision: the same session back.
    let replay = c
        .execution()
        .request_intervention(
            &ex.room_id,
            &ex.session_id,
            InterventionRequest::new(ex.revision, "be brief", Checkpoint::PreStep)
                .operation_id("op-r"),
        )
        .await
        .unwrap();
    assert_eq!(replay.session().revision, first.session().revision);
    assert_eq!(replay.session().interventions.len(), 1);
    assert_eq!(replay.state(), InterventionState::Requested);
    let err = c
        .execution()
        .request_intervention(
            &ex.room_id,
            &ex.session_id,
            InterventionRequest::new(first.session().revision, "stop", Checkpoint::PreStep)
                .operation_id("op-r"),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::OperationConflict { .. }), "{err:?}");
    assert!(!err.is_retryable());
    // A missing session is NotFound, not an absent capability.
    let err = c
        .execution()
        .get_session(&ex.room_id, "no-such-session")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    assert_eq!(c.capabilities().known(Capability::Execution), None);
}

/// The answer to the first POST is lost: the client re-sends the SAME operation id and
/// the server replays, so there is one intervention.
#[tokio::test]
async fn a_lost_answer_is_retried_as_a_replay() {
    let server = reference_server().await;
    let (ex, _gate) = park(&client_for(&server), "c-lost").await;
    let posts = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = posts.clone();
    let proxy = proxy(&server.base_url, move |req| {
        if req.method == "POST" && seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            ProxyAction::ForwardThenDrop
        } else {
            ProxyAction::Forward
        }
    })
    .await;
    let c = client_via(&server, &proxy.url);
    let handle = c
        .execution()
        .request_intervention(
            &ex.room_id,
            &ex.session_id,
            InterventionRequest::new(ex.revision, "be brief", Checkpoint::PreStep),
        )
        .await
        .unwrap();
    let sent: Vec<serde_json::Value> = proxy
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    assert_eq!(sent.len(), 2, "one re-send");
    assert_eq!(sent[0]["operationId"], sent[1]["operationId"]);
    assert_eq!(sent[0]["operationId"], handle.operation_id());
    assert_eq!(handle.session().interventions.len(), 1);
    assert_eq!(handle.session().revision, ex.revision + 1);
}

/// A run that ends before the checkpoint: rejected with the server's reason, never a success.
#[tokio::test]
async fn run_ending_before_the_checkpoint_is_reported_rejected() {
    let (_server, c) = server_and_client().await;
    let (ex, gate) = park(&c, "c-unreached").await;
    let handle = c
        .execution()
        .request_intervention(
            &ex.room_id,
            &ex.session_id,
            InterventionRequest::new(ex.revision, "stop", Checkpoint::PreAction),
        )
        .await
        .unwrap();
    c.interactions()
        .respond(&gate, &Answer::deny("not now"))
        .await
        .unwrap();
    let outcome = handle.wait_applied(Duration::from_secs(10)).await.unwrap();
    match &outcome {
        InterventionOutcome::Rejected { reason } => {
            assert_eq!(
                reason,
                "the run completed before reaching checkpoint pre_action"
            )
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
    assert!(!outcome.is_applied());
    let session = c
        .execution()
        .get_session(&ex.room_id, &ex.session_id)
        .await
        .unwrap();
    assert_eq!(session.status, ExecutionSessionStatus::Completed);
    assert!(session.applied_evidence(handle.operation_id()).is_none());
    // A terminal session refuses new requests: typed, not a generic conflict.
    let err = c
        .execution()
        .request_intervention(
            &ex.room_id,
            &ex.session_id,
            InterventionRequest::new(session.revision, "stop", Checkpoint::PreStep),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::SessionNotActive { .. }), "{err:?}");
}

#[tokio::test]
async fn watch_events_streams_the_log_until_reconciliation() {
    let (_server, c) = server_and_client().await;
    let (ex, gate) = park(&c, "c-watch").await;
    let mut stream = c
        .execution()
        .watch_events(&ex.room_id, &ex.session_id, None);
    let first = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(first.sequence, 1);
    assert_eq!(first.event_type, ExecutionEventType::SessionOpened);
    let handle = c
        .execution()
        .request_intervention(
            &ex.room_id,
            &ex.session_id,
            InterventionRequest::new(ex.revision, "be brief", Checkpoint::PreStep),
        )
        .await
        .unwrap();
    c.interactions()
        .respond(&gate, &Answer::approve())
        .await
        .unwrap();
    let rest: Vec<_> = tokio::time::timeout(Duration::from_secs(10), stream.collect::<Vec<_>>())
        .await
        .expect("the stream ends after reconciliation");
    let events: Vec<_> = rest.into_iter().map(|e| e.unwrap()).collect();
    let sequences: Vec<u64> = events.iter().map(|e| e.sequence).collect();
    assert_eq!(
        sequences,
        (2..2 + events.len() as u64).collect::<Vec<_>>(),
        "in order, each once"
    );
    let applied = events
        .iter()
        .find(|e| e.event_type == ExecutionEventType::InterventionApplied)
        .expect("applied event");
    assert_eq!(applied.operation_id.as_deref(), Some(handle.operation_id()));
    assert_eq!(
        events.last().unwrap().event_type,
        ExecutionEventType::SessionReconciled
    );
    // Resuming after a sequence replays only what follows.
    let tail: Vec<_> = c
        .execution()
        .watch_events(&ex.room_id, &ex.session_id, Some(applied.sequence))
        .collect::<Vec<_>>()
        .await;
    assert_eq!(
        tail.first().unwrap().as_ref().unwrap().sequence,
        applied.sequence + 1
    );
}

/// `--no-execution`: the first call learns the absence from the route-not-found 404,
/// every later call fails without a request; nothing is retried.
#[tokio::test]
async fn without_execution_the_capability_is_unavailable_after_one_request() {
    let server = reference_server_with(TestServerOptions {
        execution: false,
        ..Default::default()
    })
    .await;
    let proxy = proxy(&server.base_url, |_| ProxyAction::Forward).await;
    let c = client_via(&server, &proxy.url);
    let err = c
        .execution()
        .get_session("room-x", "es-x")
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::CapabilityUnavailable {
                operation: Operation::GetExecutionSession,
                capability: Some(Capability::Execution)
            }
        ),
        "{err:?}"
    );
    assert!(!err.is_retryable());
    let err = c
        .execution()
        .request_intervention(
            "room-x",
            "es-x",
            InterventionRequest::new(1, "stop", Checkpoint::PreStep),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::CapabilityUnavailable { .. }),
        "{err:?}"
    );
    let err = c
        .execution()
        .events("room-x", "es-x", None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::CapabilityUnavailable { .. }),
        "{err:?}"
    );
    assert_eq!(
        proxy.requests().len(),
        1,
        "one request, no retry loop: {:?}",
        proxy.requests()
    );
    assert_eq!(c.capabilities().known(Capability::Execution), Some(false));

    // With discovery read first, no execution request is sent at all.
    let proxy2 = crate::common::proxy(&server.base_url, |_| ProxyAction::Forward).await;
    let c2 = client_via(&server, &proxy2.url);
    assert!(!c2
        .capabilities()
        .get()
        .await
        .unwrap()
        .has(Capability::Execution));
    let err = c2
        .execution()
        .get_session("room-x", "es-x")
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::CapabilityUnavailable { .. }),
        "{err:?}"
    );
    let requests = proxy2.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path(), "/api/capabilities");
}

fn hostile_session(status: &str, intervention_status: &str, with_event: bool) -> serde_json::Value {
    let mut events = vec![
        json!({"sequence": 1, "type": "session_opened", "occurredAt": "2026-11-29T10:00:00Z"}),
    ];
    if with_event {
        events.push(json!({"sequence": 2, "type": "intervention_applied", "occurredAt": "2026-11-29T10:00:01Z",
                           "operationId": "op-h", "checkpoint": "pre_step"}));
    }
    json!({"data": {
        "tenantId": "t", "roomId": "r", "sessionId": "s", "runId": "run", "taskId": "task",
        "participantId": "agent", "agentRevisionId": "rev", "agentRevisionDigest": "sha256:00",
        "revision": 3, "status": status,
        "interventions": [{"operationId": "op-h", "requestedByParticipantId": "me", "instruction": "stop",
                           "checkpoint": "pre_step", "status": intervention_status, "attempts": 1,
                           "requestedAt": "2026-11-29T10:00:00Z"}],
        "events": events
    }})
}

/// A host that says `applied` without the persisted `intervention_applied` event cannot
/// make the client report success.
#[tokio::test]
async fn applied_status_without_the_event_is_not_a_success() {
    let host = serve(|_, req, stream| async move {
        let body = if req.method == "POST" {
            json(202, hostile_session("active", "pending", false))
        } else {
            json(200, hostile_session("completed", "applied", false))
        };
        reply(stream, body).await;
    })
    .await;
    let c = client(&host.url, 1);
    let handle = c
        .execution()
        .request_intervention(
            "r",
            "s",
            InterventionRequest::new(2, "stop", Checkpoint::PreStep).operation_id("op-h"),
        )
        .await
        .unwrap();
    assert_eq!(handle.state(), InterventionState::Requested);
    let outcome = handle.wait_applied(Duration::from_secs(5)).await.unwrap();
    assert_eq!(
        outcome,
        InterventionOutcome::UnresolvedAtTerminal {
            status: ExecutionSessionStatus::Completed
        }
    );

    // With the event it is applied.
    let honest = serve(|_, _req, stream| async move {
        reply(
            stream,
            json(200, hostile_session("completed", "applied", true)),
        )
        .await;
    })
    .await;
    let session = client(&honest.url, 1)
        .execution()
        .get_session("r", "s")
        .await
        .unwrap();
    assert_eq!(session.interventions[0].status, InterventionStatus::Applied);
    assert!(matches!(
        InterventionState::of(&session, "op-h"),
        Some(InterventionState::Applied { .. })
    ));
    // And an upstream AgentPlat 409 without Gatehouse's code is still typed from its message.
    let upstream = serve(|_, _req, stream| async move {
        reply(stream, json(409, json!({"error": {"code": "CONFLICT", "message": "Execution session revision conflict"}}))).await;
    })
    .await;
    let err = client(&upstream.url, 1)
        .execution()
        .request_intervention(
            "r",
            "s",
            InterventionRequest::new(1, "stop", Checkpoint::PreStep),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::RevisionConflict { .. }), "{err:?}");
}
