//! The client against Agenta's behaviour as seen live (scripted servers written from it;
//! the recordings themselves are replayed by the CLI's `agenta_replay` tests):
//! - Agenta ignores `Idempotency-Key` (a re-send of a taken answer meets 409) and leaves
//!   `data.resolution` null on respond, so after a lost respond outcome the row read back
//!   cannot show whose answer landed: `AnswerOwnerUnknown`, never `AlreadyAnswered`,
//!   which needs a recorded answer that differs from ours.

use std::time::Duration;

use crate::common::*;
use gatehouse_client::{Answer, Client, Error, ErrorKind, Operation, Upstream};
use gatehouse_wire::interaction::InteractionStatus;

const ID: &str = "01a24fc2-b8ec-75b0-bcf5-27348bf53078";

fn agenta_client(url: &str, attempts: u32) -> Client {
    Client::builder(url)
        .upstream(Upstream::Agenta)
        .api_key(TEST_KEY)
        .project_id(TEST_PROJECT)
        .timeout(Duration::from_secs(5))
        .retry_policy(quick_retries(attempts))
        .build()
        .unwrap()
}

fn not_pending() -> Vec<u8> {
    json(
        409,
        serde_json::json!({"detail": "Interaction is no longer pending"}),
    )
}

fn bad_gateway() -> Vec<u8> {
    json(
        502,
        serde_json::json!({"detail": "proxy fault injected: bad gateway"}),
    )
}

fn row_answer(status: &str, resolution: serde_json::Value) -> Vec<u8> {
    json(
        200,
        serde_json::json!({"count": 1, "interaction": row_json(ID, status, resolution)}),
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
                (_, "GET") => reply(stream, row_answer(status, resolution)).await,
                (0, _) if first == "drop" => drop(stream),
                (0, _) => reply(stream, bad_gateway()).await,
                _ if resend == "409" => reply(stream, not_pending()).await,
                _ => reply(stream, bad_gateway()).await,
            }
        }
    })
    .await
}

fn methods(server: &RawServer) -> Vec<String> {
    server.requests().iter().map(|r| r.method.clone()).collect()
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
    assert_eq!(methods(&server), ["POST", "POST", "GET"]);
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
    assert_eq!(methods(&server), ["POST", "POST", "POST", "GET"]);
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
    let row = client(&server.url, 3)
        .interactions()
        .respond(ID, &Answer::approve())
        .await
        .unwrap();
    assert_eq!(row.status, Some(InteractionStatus::Responded));
    // No answer recorded at all is unknowable there too.
    let server = lost_respond("502", "409", "responded", serde_json::Value::Null).await;
    let err = client(&server.url, 3)
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
