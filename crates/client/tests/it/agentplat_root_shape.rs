//! The client reads both shapes of Gatehouse's server: AgentPlat's own JSON and SSE
//! framing on the root paths (`Upstream::AgentPlat`, the tenant header) and Gatehouse's
//! richer shape under `/api`, and reports the same session, intervention and events
//! from each.

use std::time::Duration;

use crate::common::*;
use futures::StreamExt;
use gatehouse_client::{Answer, Client, InterventionOutcome, InterventionRequest, Upstream};
use gatehouse_wire::execution::{Checkpoint, ExecutionEvent, ExecutionEventType};
use gatehouse_wire::invoke::{InvokeData, InvokeInputs, InvokeRequest, TurnStatus};
use gatehouse_wire::run::ChatMessage;
use serde_json::json;

/// What both shapes must agree on about an event.
fn event_keys(events: &[ExecutionEvent]) -> Vec<(u64, String, Option<String>)> {
    events
        .iter()
        .map(|e| {
            (
                e.sequence,
                e.event_type.as_str().to_string(),
                e.operation_id.clone(),
            )
        })
        .collect()
}

async fn all_events(client: &Client, room: &str, session: &str) -> Vec<ExecutionEvent> {
    let stream = client.execution().watch_events(room, session, None);
    let events: Vec<_> = tokio::time::timeout(Duration::from_secs(20), stream.collect())
        .await
        .expect("the stream ended after session_reconciled");
    events.into_iter().map(|e| e.unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_root_paths_and_api_read_as_the_same_session() {
    let server = reference_server().await;
    let api = client_for(&server);
    let root = Client::builder(&server.base_url)
        .upstream(Upstream::AgentPlat)
        .api_key(&server.api_key)
        .tenant(&server.project_id)
        .build()
        .unwrap();
    let parameters = match json!({"agent": {"llm": {"model": "m-root"}, "runner": {"permissions": {"default": "ask"}}}})
    {
        serde_json::Value::Object(map) => map,
        _ => unreachable!(),
    };
    let answer = api
        .service()
        .invoke(&InvokeRequest {
            session_id: Some("task-root-shape".to_string()),
            references: None,
            data: InvokeData {
                inputs: InvokeInputs {
                    messages: vec![ChatMessage::text("user", "list files")],
                    ..Default::default()
                },
                parameters: Some(parameters),
                ..Default::default()
            },
        })
        .await
        .unwrap();
    assert_eq!(answer.status, TurnStatus::Parked, "{answer:?}");
    let execution = answer.execution.expect("an execution session");
    let (room, session) = (execution.room_id.as_str(), execution.session_id.as_str());

    // Requested through the root paths, read back through both.
    let at_root = root.execution().get_session(room, session).await.unwrap();
    let handle = root
        .execution()
        .request_intervention(
            room,
            session,
            InterventionRequest::new(at_root.revision, "be brief", Checkpoint::PreStep)
                .operation_id("op-root"),
        )
        .await
        .unwrap();
    api.interactions()
        .respond(&answer.interaction_ids[0], &Answer::approve())
        .await
        .unwrap();
    let outcome = handle.wait_applied(Duration::from_secs(20)).await.unwrap();
    let InterventionOutcome::Applied { evidence } = outcome else {
        panic!("not applied: {outcome:?}");
    };
    assert_eq!(evidence.event_type, ExecutionEventType::InterventionApplied);
    // The root shape carries no Gatehouse detail; /api does.
    assert!(evidence.details.is_none(), "{evidence:?}");
    let api_handle = api
        .execution()
        .intervention(room, session, "op-root")
        .await
        .unwrap();
    let InterventionOutcome::Applied { evidence: rich } = api_handle
        .wait_applied(Duration::from_secs(20))
        .await
        .unwrap()
    else {
        panic!("not applied under /api");
    };
    assert!(rich.details.is_some(), "{rich:?}");
    assert_eq!(rich.sequence, evidence.sequence);

    let from_root = all_events(&root, room, session).await;
    let from_api = all_events(&api, room, session).await;
    assert_eq!(event_keys(&from_root), event_keys(&from_api));
    let root_doc = root.execution().get_session(room, session).await.unwrap();
    let api_doc = api.execution().get_session(room, session).await.unwrap();
    assert_eq!(event_keys(&root_doc.events), event_keys(&from_root));
    assert_eq!(root_doc.revision, api_doc.revision);
    assert_eq!(root_doc.status, api_doc.status);
    assert!(root_doc.runtime_profile.is_none() && api_doc.runtime_profile.is_some());
    assert_eq!(
        root_doc.interventions[0].status,
        api_doc.interventions[0].status
    );
    server.shutdown().await;
}
