//! The client against Agenta's behaviour as seen live (scripted servers written from it;
//! the recordings themselves are replayed by the CLI's `agenta_replay` tests):
//! - Agenta ignores `Idempotency-Key` (a re-send of a taken answer meets 409) and leaves
//!   `data.resolution` null on respond, so after a lost respond outcome the row read back
//!   cannot show whose answer landed: `AnswerOwnerUnknown`, never `AlreadyAnswered`,
//!   which needs a recorded answer that differs from ours;
//! - under an API key Agenta answers for the key's project whatever `?project_id=`
//!   says: rows of another project are refused (`ProjectMismatch`), never returned;
//! - its watch frames (`retry:`, `ready` with `{}`, `interaction` without an id,
//!   heartbeats) are read without a failure.

use std::time::Duration;

use crate::common::*;
use futures::StreamExt;
use gatehouse_client::{Answer, Client, Error, ErrorKind, Operation, Upstream, WatchUpdate};
use gatehouse_wire::interaction::{InteractionQuery, InteractionStatus, WatchEvent};

const ID: &str = "01a24fc2-b8ec-75b0-bcf5-27348bf53078";
const OTHER_PROJECT: &str = "74acd281-606f-4e43-b2a9-1f40f2dff3b3";

fn agenta_client(url: &str, attempts: u32) -> Client {
    upstream_client(url, Upstream::Agenta, attempts)
}

fn bad_gateway() -> Vec<u8> {
    json(
        502,
        serde_json::json!({"detail": "proxy fault injected: bad gateway"}),
    )
}

/// A host that takes the first respond but loses its answer (`first`: a 502 or a
/// dropped connection), answers every re-send with `resend`, and reads the row back as
/// `status` with `resolution`.
async fn lost_respond(
    first: &'static str,
    resend: &'static str,
    status: &'static str,
    resolution: serde_json::Value,
) -> RawServer {
    serve(move |index, req, stream| {
        let resolution = resolution.clone();
        async move {
            match (index, req.method.as_str()) {
                (_, "GET") => reply(stream, row_answer(ID, status, resolution)).await,
                (0, _) if first == "drop" => drop(stream),
                (0, _) => reply(stream, bad_gateway()).await,
                _ if resend == "409" => reply(stream, not_pending()).await,
                _ => reply(stream, bad_gateway()).await,
            }
        }
    })
    .await
}

#[tokio::test]
async fn a_502_on_a_taken_answer_then_409_and_no_resolution_is_owner_unknown() {
    let server = lost_respond("502", "409", "responded", serde_json::Value::Null).await;
    let err = agenta_client(&server.url, 3)
        .interactions()
        .respond(ID, &Answer::approve())
        .await
        .unwrap_err();
    match &err {
        Error::AnswerOwnerUnknown {
            operation: Operation::RespondInteraction,
            interaction_id,
            ..
        } => assert_eq!(interaction_id, ID),
        other => panic!("expected AnswerOwnerUnknown, got {other:?}"),
    }
    assert_eq!(err.kind(), ErrorKind::AnswerOwnerUnknown);
    assert_eq!(err.kind().as_str(), "answer_owner_unknown");
    assert!(
        !err.is_retryable(),
        "a retry cannot tell whose answer it was"
    );
    assert!(
        err.to_string()
            .contains("answered; whose answer is not knowable from this host"),
        "{err}"
    );
    assert_eq!(server.methods(), ["POST", "POST", "GET"]);
    let requests = server.requests();
    assert_eq!(
        requests[0].header("idempotency-key"),
        requests[1].header("idempotency-key")
    );
}

#[tokio::test]
async fn a_dropped_connection_then_409_and_no_resolution_is_owner_unknown() {
    let server = lost_respond("drop", "409", "responded", serde_json::Value::Null).await;
    let err = agenta_client(&server.url, 3)
        .interactions()
        .respond(ID, &Answer::deny("not on prod"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AnswerOwnerUnknown, "{err:?}");
}

#[tokio::test]
async fn every_attempt_502_on_an_answered_row_is_owner_unknown_not_the_502() {
    let server = lost_respond("502", "502", "responded", serde_json::Value::Null).await;
    let err = agenta_client(&server.url, 3)
        .interactions()
        .respond(ID, &Answer::deny(""))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AnswerOwnerUnknown, "{err:?}");
    assert_eq!(server.methods(), ["POST", "POST", "POST", "GET"]);
}

#[tokio::test]
async fn an_equal_recorded_answer_on_a_host_ignoring_the_key_is_owner_unknown() {
    // Another device may have sent the same approval: equal is no evidence it is ours.
    let server = lost_respond(
        "502",
        "409",
        "responded",
        serde_json::json!({"answer": {"approved": true}}),
    )
    .await;
    let err = agenta_client(&server.url, 3)
        .interactions()
        .respond(ID, &Answer::approve())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AnswerOwnerUnknown, "{err:?}");
}

#[tokio::test]
async fn a_different_recorded_answer_is_already_answered() {
    for resolution in [
        serde_json::json!({"answer": {"approved": false}}),
        // A runner's resolution of someone else's denial.
        serde_json::json!({"verdict": "denied", "tool_call_id": "toolu_01"}),
    ] {
        let server = lost_respond("502", "409", "resolved", resolution).await;
        let err = agenta_client(&server.url, 3)
            .interactions()
            .respond(ID, &Answer::approve())
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
    // Every re-send failed and the row holds someone else's answer: settled, not a 502.
    let server = lost_respond(
        "502",
        "502",
        "responded",
        serde_json::json!({"answer": {"approved": false, "message": "no"}}),
    )
    .await;
    let err = agenta_client(&server.url, 2)
        .interactions()
        .respond(ID, &Answer::approve())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyAnswered, "{err:?}");
}

#[tokio::test]
async fn a_row_still_pending_after_every_502_reports_the_502() {
    let server = lost_respond("502", "502", "pending", serde_json::Value::Null).await;
    let err = agenta_client(&server.url, 2)
        .interactions()
        .respond(ID, &Answer::approve())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Server { status: 502, .. }), "{err:?}");
}

#[tokio::test]
async fn gatehouse_keeps_taking_an_equal_recorded_answer_as_ours() {
    // Gatehouse's server replays a re-send under its key and records the answer it took.
    let server = lost_respond(
        "502",
        "409",
        "responded",
        serde_json::json!({"answer": {"approved": true}}),
    )
    .await;
    let row = legacy_client(&server.url, 3)
        .interactions()
        .respond(ID, &Answer::approve())
        .await
        .unwrap();
    assert_eq!(row.status, Some(InteractionStatus::Responded));
    // No answer recorded at all is unknowable there too.
    let server = lost_respond("502", "409", "responded", serde_json::Value::Null).await;
    let err = legacy_client(&server.url, 3)
        .interactions()
        .respond(ID, &Answer::approve())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AnswerOwnerUnknown, "{err:?}");
}

#[tokio::test]
async fn a_first_try_409_stays_already_answered() {
    // Nothing of ours can have landed before: the gate was answered by someone else.
    let server = serve(|_, _, stream| async move { reply(stream, not_pending()).await }).await;
    let err = agenta_client(&server.url, 3)
        .interactions()
        .respond(ID, &Answer::approve())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyAnswered);
    assert_eq!(server.connection_count(), 1);
}

/// A row of `project`.
fn row_of_project(id: &str, project: Option<&str>) -> serde_json::Value {
    let mut row = row_json(id, "pending", serde_json::Value::Null);
    row["project_id"] = project.map_or(serde_json::Value::Null, |p| p.into());
    row
}

/// A host that answers every query and get with rows of `project`.
async fn host_of_project(project: Option<&'static str>) -> RawServer {
    serve(move |_, req, stream| async move {
        let body = if req.method == "GET" {
            serde_json::json!({"count": 1, "interaction": row_of_project(ID, project)})
        } else {
            serde_json::json!({"count": 2, "interactions": [
                row_of_project(ID, Some(TEST_PROJECT)),
                row_of_project("01a24fc2-b963-7852-aec5-cf7d3c16ce53", project),
            ]})
        };
        reply(stream, json(200, body)).await
    })
    .await
}

#[tokio::test]
async fn rows_of_another_project_are_refused_naming_both_projects() {
    let server = host_of_project(Some(OTHER_PROJECT)).await;
    let c = agenta_client(&server.url, 1);
    let err = c.interactions().list_pending(None).await.unwrap_err();
    match &err {
        Error::ProjectMismatch {
            operation: Operation::QueryInteractions,
            asked,
            answered,
        } => {
            assert_eq!(asked, TEST_PROJECT);
            assert_eq!(answered, OTHER_PROJECT);
        }
        other => panic!("expected ProjectMismatch, got {other:?}"),
    }
    assert!(err.to_string().contains(TEST_PROJECT) && err.to_string().contains(OTHER_PROJECT));
    assert_eq!(err.kind().as_str(), "project_mismatch");
    assert!(!err.is_retryable());
    let err = c
        .interactions()
        .query(&InteractionQuery::default(), None)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ProjectMismatch);
    let err = c.interactions().get(ID).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::ProjectMismatch {
                operation: Operation::GetInteraction,
                ..
            }
        ),
        "{err:?}"
    );
    // The same on Gatehouse's upstream: the rule is about the rows, not the host.
    let err = client(&server.url, 1)
        .interactions()
        .get(ID)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ProjectMismatch);
}

#[tokio::test]
async fn rows_of_the_asked_project_or_naming_none_pass() {
    // The asked project spelled in capitals is the same UUID.
    let upper: &'static str = Box::leak(TEST_PROJECT.to_uppercase().into_boxed_str());
    for project in [Some(TEST_PROJECT), Some(upper), None] {
        let server = host_of_project(project).await;
        let c = agenta_client(&server.url, 1);
        assert_eq!(c.interactions().list_pending(None).await.unwrap().len(), 2);
        c.interactions().get(ID).await.unwrap();
    }
    // A client that asks for no project takes the key's project's rows.
    let server = host_of_project(Some(OTHER_PROJECT)).await;
    let c = Client::builder(&server.url)
        .upstream(Upstream::Agenta)
        .api_key(TEST_KEY)
        .build()
        .unwrap();
    assert_eq!(c.interactions().list_pending(None).await.unwrap().len(), 2);
    c.interactions().get(ID).await.unwrap();
}

/// Agenta's watch frames, as its SSE route writes them (`retry:`, a `ready` with `{}`,
/// `interaction` events without an id and with a respond folded into `resolved`, a
/// heartbeat comment).
#[tokio::test]
async fn agentas_watch_frames_read_without_a_failure() {
    let server = serve(|_, _, mut stream| async move {
        use tokio::io::AsyncWriteExt;
        let frames = concat!(
            "retry: 5000\n\n",
            "event: ready\ndata: {}\n\n",
            "event: interaction\ndata: {\"type\": \"interaction\", \"session_id\": \"s-1\", \"status\": \"pending\"}\n\n",
            ": heartbeat\n\n",
            "event: interaction\ndata: {\"type\": \"interaction\", \"session_id\": \"s-1\", \"status\": \"resolved\"}\n\n",
        );
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\n\r\n";
        let _ = stream.write_all(head.as_bytes()).await;
        let _ = stream.write_all(frames.as_bytes()).await;
        let _ = stream.flush().await;
        // Stay open, as Agenta does, until the client hangs up.
        tokio::time::sleep(Duration::from_secs(30)).await;
    })
    .await;
    let mut watch = agenta_client(&server.url, 1).interactions().watch("s-1");
    let mut updates = Vec::new();
    while updates.len() < 4 {
        let update = tokio::time::timeout(Duration::from_secs(5), watch.next())
            .await
            .expect("an update in time")
            .expect("the watch goes on")
            .expect("no failed read");
        updates.push(update);
    }
    assert!(matches!(updates[0], WatchUpdate::Connected), "{updates:?}");
    assert!(
        matches!(
            updates[1],
            WatchUpdate::Event(WatchEvent::Ready { session_id: None })
        ),
        "{updates:?}"
    );
    let statuses: Vec<_> = updates[2..]
        .iter()
        .map(|u| match u {
            WatchUpdate::Event(WatchEvent::Interaction {
                session_id,
                status,
                interaction_id: None,
            }) if session_id == "s-1" => status.clone(),
            other => panic!("expected an interaction event without id, got {other:?}"),
        })
        .collect();
    assert_eq!(
        statuses,
        [InteractionStatus::Pending, InteractionStatus::Resolved]
    );
    let watch_request = &server.requests()[0];
    assert_eq!(watch_request.path(), "/api/sessions/streams/watch");
    assert_eq!(
        watch_request.header("authorization"),
        Some(format!("ApiKey {TEST_KEY}").as_str())
    );
}

#[tokio::test]
async fn a_409_after_a_lost_outcome_with_the_row_out_of_reach_is_owner_unknown() {
    // The re-send meets 409 and the read-back fails: nothing shows whose answer it was.
    let server = serve(|index, req, stream| async move {
        match (index, req.method.as_str()) {
            (_, "GET") => reply(stream, bad_gateway()).await,
            (0, _) => reply(stream, bad_gateway()).await,
            _ => reply(stream, not_pending()).await,
        }
    })
    .await;
    let err = agenta_client(&server.url, 2)
        .interactions()
        .respond(ID, &Answer::approve())
        .await
        .unwrap_err();
    match &err {
        Error::AnswerOwnerUnknown { detail, .. } => {
            assert!(detail.contains("could not be read back"), "{detail}")
        }
        other => panic!("expected AnswerOwnerUnknown, got {other:?}"),
    }
}
