//! Every request the client sends is a route of the registry (`gatehouse_wire::routes`):
//! every public call, on every upstream, against a stub that records what it is sent.
//! The stub answers discovery with every capability and everything else with a 400, so
//! each call sends its first request and stops; only the requests are checked.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::common::*;
use futures::StreamExt;
use gatehouse_client::{
    Answer, Client, Error, InterventionRequest, Operation, RespondOptions, Upstream,
};
use gatehouse_wire::capabilities::Capability;
use gatehouse_wire::execution::Checkpoint;
use gatehouse_wire::interaction::{
    CancelStaleRequest, CreateInteractionRequest, InteractionKind, InteractionQuery,
    InteractionStatus, SessionInteraction, TransitionRequest, Windowing,
};
use gatehouse_wire::invoke::{CommitRevisionRequest, InvokeRequest, SlugRef, ToolTurn};
use gatehouse_wire::routes::{self, Method, Param};
use gatehouse_wire::run::{ChatMessage, Harness, RunRequest, Sandbox};

const ID: &str = "019fac94-0000-7000-8000-000000000001";
/// A room id that must be percent-encoded as one segment.
const ROOM: &str = "room 1/a";
const SESSION: &str = "es-1";

/// A stub host: discovery lists every capability, every other request gets a 400.
async fn stub() -> RawServer {
    serve(|_, req, stream| async move {
        let answer = if req.path() == routes::GET_CAPABILITIES.path {
            let names: Vec<&str> = Capability::ALL.iter().map(|c| c.as_str()).collect();
            json(
                200,
                serde_json::json!({"service": "stub", "version": "0", "capabilities": names}),
            )
        } else {
            json(400, serde_json::json!({"detail": "stub"}))
        };
        reply(stream, answer).await
    })
    .await
}

fn client_of(url: &str, upstream: Upstream) -> Client {
    Client::builder(url)
        .upstream(upstream)
        .api_key(TEST_KEY)
        .project_id(TEST_PROJECT)
        .tenant("tenant-1")
        .participant_id("human-1")
        .timeout(Duration::from_secs(5))
        .retry_policy(quick_retries(1))
        .build()
        .unwrap()
}

fn run_request() -> RunRequest {
    RunRequest::new(
        Harness::Claude,
        Sandbox::Local,
        "m-1",
        vec![ChatMessage::text("user", "hi")],
    )
}

/// Call every public method of `client` that sends something. Their errors are the
/// stub's 400s (or, where the upstream has no such route, a local refusal).
async fn call_everything(client: &Client) {
    let interactions = client.interactions();
    let query = InteractionQuery {
        status: Some(InteractionStatus::Pending),
        ..InteractionQuery::default()
    };
    let window = Windowing {
        limit: Some(5),
        ..Windowing::default()
    };
    let _ = interactions.query(&query, Some(&window)).await;
    let _ = interactions.query_all(&query).await;
    let _ = interactions.query_all_with(&query, window.clone()).await;
    let _ = interactions.list_pending(Some("s-1")).await;
    let _ = interactions.get(ID).await;
    let _ = interactions.respond(ID, &Answer::approve()).await;
    let _ = interactions
        .respond_with_idempotency_key(ID, &Answer::deny("no"), "key-1")
        .await;
    let ids = vec![
        ID.to_string(),
        "019fac94-0000-7000-8000-000000000002".to_string(),
    ];
    let _ = interactions.approve_all(&ids, &Answer::approve()).await;
    let _ = interactions
        .approve_all_with(&ids, &Answer::approve(), 1)
        .await;
    let create = CreateInteractionRequest {
        session_id: "s-1".into(),
        turn_id: Some("t-1".into()),
        token: "tok-1".into(),
        kind: InteractionKind::UserApproval,
        data: None,
        flags: None,
        tags: None,
        meta: None,
    };
    let _ = interactions.create(&create).await;
    let transition = TransitionRequest {
        session_id: "s-1".into(),
        token: "tok-1".into(),
        status: InteractionStatus::Cancelled,
        resolution: None,
    };
    let _ = interactions.transition(&transition).await;
    let cancel = CancelStaleRequest {
        session_id: "s-1".into(),
        turn_id: "t-2".into(),
        tokens: None,
    };
    let _ = interactions.cancel_stale(&cancel).await;
    let options = RespondOptions::new()
        .idempotency_key("key-2")
        .expected_execution_id("t-1")
        .session_id("s-1");
    let _ = interactions
        .respond_outcome(ID, &Answer::approve(), &options)
        .await;
    let gate: SessionInteraction = serde_json::from_value(serde_json::json!({
        "id": ID, "session_id": "s-1", "turn_id": "t-1", "token": "tok-1",
        "kind": "user_approval", "status": "pending"
    }))
    .unwrap();
    let _ = interactions.respond_to(&gate, &Answer::approve()).await;
    let _ = interactions
        .approve_gates(std::slice::from_ref(&gate), &Answer::approve())
        .await;

    let sessions = client.sessions();
    let _ = sessions.contract(Some("s-1")).await;
    let _ = sessions.snapshot("s-1").await;
    let _ = sessions.events("s-1", 3).next().await;
    let _ = sessions.stop("s-1", Some("t-1")).await;
    let _ = sessions
        .stop_with_idempotency_key("s-1", None, "stop-1")
        .await;
    let _ = sessions.resume_continuation("s-1").await;
    let _ = interactions.watch("s-1").next().await;

    let _ = client.runs().run(&run_request()).await;
    let _ = client.runs().stream(&run_request()).next().await;

    let service = client.service();
    let invoke = InvokeRequest {
        session_id: Some("s-1".into()),
        references: None,
        data: Default::default(),
    };
    let _ = service.invoke(&invoke).await;
    let _ = service.invoke_tool(&ToolTurn::new("hi", "Bash")).await;
    let _ = service.turns("s-1").await;
    let commit = CommitRevisionRequest {
        workflow: SlugRef { slug: "w".into() },
        variant: SlugRef {
            slug: "w.default".into(),
        },
        parameters: Default::default(),
    };
    let _ = service.commit_revision(&commit).await;
    let _ = service.webhook_deliveries(Some("pending"), Some(10)).await;

    let capabilities = client.capabilities();
    let _ = capabilities.refresh().await;
    let _ = capabilities.get().await;
    let _ = capabilities.require(Capability::Execution).await;

    let execution = client.execution();
    let _ = execution.get_session(ROOM, SESSION).await;
    let _ = execution
        .change_authority(ROOM, SESSION, 3, Some("auth-2".into()), None)
        .await;
    let _ = execution.events(ROOM, SESSION, Some(2)).await;
    let _ = execution.events(ROOM, SESSION, None).await;
    let _ = execution.events_after_text(ROOM, SESSION, "7").await;
    let _ = execution.watch_events(ROOM, SESSION, Some(1)).next().await;
    let _ = execution.watch_events(ROOM, SESSION, None).next().await;
    let stop = InterventionRequest::new(3, "stop", Checkpoint::PreAction).operation_id("op-1");
    let _ = execution.request_intervention(ROOM, SESSION, stop).await;
    let _ = execution.intervention(ROOM, SESSION, "op-1").await;
}

/// The registered operation of each request `server` received; fails on any other.
fn operations_sent(server: &RawServer) -> BTreeSet<&'static str> {
    let mut seen = BTreeSet::new();
    for req in server.requests() {
        let method = match req.method.as_str() {
            "GET" => Method::Get,
            "POST" => Method::Post,
            other => panic!("{other} {} is no method of the registry", req.target),
        };
        let Some(op) = routes::matching(method, req.path()) else {
            panic!(
                "{} {} is not a registered operation (gatehouse_wire::routes::OPERATIONS)",
                req.method, req.target
            );
        };
        let query = req.target.split_once('?').map(|(_, q)| q).unwrap_or("");
        for key in query.split('&').filter_map(|pair| pair.split('=').next()) {
            // `project_id` goes with every `/api` call; any other key is a declared one.
            let declared = |p: &Param| p.location == routes::In::Query && p.name == key;
            assert!(
                key.is_empty() || key == "project_id" || op.params.iter().any(declared),
                "{}: query key {key} is not a parameter of {}",
                req.target,
                op.id
            );
        }
        seen.insert(op.id);
    }
    seen
}

/// The operations a host of kind `upstream` is sent by [`call_everything`]. AgentPlat
/// serves no interactions, no invoke, no discovery and no Agenta session paths; Agenta no
/// discovery, no batch answer and no execution sessions: those calls are refused without
/// a request.
fn expected_operations(upstream: Upstream) -> BTreeSet<&'static str> {
    const INTERACTIONS: [&str; 7] = [
        "queryInteractions",
        "getInteraction",
        "respondToInteraction",
        "createInteraction",
        "transitionInteraction",
        "cancelStaleInteractions",
        "watchSession",
    ];
    // Agenta's durable session control (the durable respond is `respondToInteraction`).
    const SESSIONS: [&str; 4] = [
        "cancelSession",
        "getSessionSnapshot",
        "watchSessionEvents",
        "resumeSessionContinuation",
    ];
    const SERVICE: [&str; 4] = [
        "invoke",
        "listTurns",
        "commitRevision",
        "listWebhookDeliveries",
    ];
    let interactions_and_service = INTERACTIONS.into_iter().chain(SERVICE).chain(SESSIONS);
    match upstream {
        Upstream::Gatehouse => interactions_and_service
            .chain([
                "run",
                "respondToInteractions",
                "getCapabilities",
                "getExecutionSession",
                "changeExecutionAuthority",
                "listExecutionEvents",
                "streamExecutionEvents",
                "requestIntervention",
            ])
            .collect(),
        Upstream::AgentPlat => BTreeSet::from([
            "run",
            "getExecutionSessionAtRoot",
            "listExecutionEventsAtRoot",
            "streamExecutionEventsAtRoot",
            "requestInterventionAtRoot",
        ]),
        Upstream::Agenta => interactions_and_service.chain(["run"]).collect(),
        other => panic!("no expectation for the {other} upstream"),
    }
}

#[tokio::test]
async fn every_call_on_every_upstream_is_a_registered_operation() {
    for upstream in Upstream::ALL {
        let server = stub().await;
        call_everything(&client_of(&server.url, upstream)).await;
        assert_eq!(
            operations_sent(&server),
            expected_operations(upstream),
            "{upstream}"
        );
    }
}

#[tokio::test]
async fn a_path_value_is_one_percent_encoded_segment() {
    let server = stub().await;
    let client = client_of(&server.url, Upstream::AgentPlat);
    let _ = client.execution().get_session(ROOM, SESSION).await;
    let paths: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.path().to_string())
        .collect();
    assert_eq!(paths, ["/rooms/room%201%2Fa/execution-sessions/es-1"]);
}

#[tokio::test]
async fn an_authority_change_on_agentplat_is_refused_without_a_request() {
    // AgentPlat has no authority route (it is Gatehouse's, under `/api`): sending one
    // would answer route-not-found and teach the client that execution is absent.
    let server = stub().await;
    let client = client_of(&server.url, Upstream::AgentPlat);
    let err = client
        .execution()
        .change_authority(ROOM, SESSION, 3, Some("auth-2".into()), None)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Config {
                operation: Operation::ChangeExecutionAuthority,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(server.requests().is_empty());
    assert_eq!(client.capabilities().known(Capability::Execution), None);
}
