//! `/run` against scripted local runners: NDJSON streams, plain JSON results, broken
//! streams; a run is never retried.

use std::time::Duration;

use crate::common::*;
use futures::StreamExt;
use gatehouse_client::{Client, Error, Operation};
use gatehouse_wire::effective::StampPolicy;
use gatehouse_wire::run::{ChatMessage, Harness, RunRequest, RunStreamRecord, Sandbox};
use tokio::io::AsyncWriteExt;

fn session_request() -> RunRequest {
    let params = serde_json::json!({
        "agent": {"llm": {"model": "m-1"}, "mcps": [{"name": "notion", "headers": {"Authorization": "Bearer leak"}}]}
    });
    let (request, outcome) = RunRequest::new(
        Harness::Claude,
        Sandbox::Local,
        "m-1",
        vec![ChatMessage::text("user", "hi")],
    )
    .for_session("sess-1", params, &StampPolicy::default());
    assert!(outcome.is_stamped());
    request
}

async fn ndjson_server(lines: &'static str) -> RawServer {
    serve(move |_, _, mut stream| async move {
        let head =
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\nconnection: close\r\n\r\n";
        let _ = stream.write_all(head.as_bytes()).await;
        // Split the body at awkward places to exercise line reassembly.
        for piece in lines.as_bytes().chunks(7) {
            let _ = stream.write_all(piece).await;
            let _ = stream.flush().await;
        }
        let _ = stream.shutdown().await;
    })
    .await
}

fn runner_client(url: &str) -> Client {
    Client::builder(url)
        .api_key(TEST_KEY)
        .runner_token("runner-tok")
        .project_id(TEST_PROJECT)
        .retry_policy(quick_retries(3))
        .build()
        .unwrap()
}

#[tokio::test]
async fn stream_yields_events_then_the_result_and_sends_the_stamped_request() {
    let server = ndjson_server(concat!(
        "{\"kind\":\"event\",\"event\":{\"type\":\"message\",\"text\":\"hello\"}}\n",
        "\n",
        "{\"kind\":\"event\",\"event\":{\"text\":\"typeless, dropped\"}}\n",
        "{\"kind\":\"event\",\"event\":{\"type\":\"tool_call\",\"name\":\"Bash\"}}\r\n",
        "{\"kind\":\"result\",\"result\":{\"ok\":true,\"output\":\"done\",\"sessionId\":\"sess-1\"}}\n",
    ))
    .await;
    let c = runner_client(&server.url);
    let records: Vec<_> = c.runs().stream(&session_request()).collect().await;
    assert_eq!(records.len(), 3, "{records:?}");
    let records: Vec<RunStreamRecord> = records.into_iter().map(|r| r.unwrap()).collect();
    assert!(
        matches!(&records[0], RunStreamRecord::Event { event } if event.event_type() == "message")
    );
    assert!(
        matches!(&records[1], RunStreamRecord::Event { event } if event.event_type() == "tool_call")
    );
    match &records[2] {
        RunStreamRecord::Result { result } => {
            assert!(result.ok);
            assert_eq!(result.output.as_deref(), Some("done"));
        }
        other => panic!("{other:?}"),
    }
    let req = &server.requests()[0];
    assert_eq!(req.method, "POST");
    assert_eq!(req.target, "/run", "no project_id on the runner call");
    assert_eq!(req.header("authorization"), Some("Bearer runner-tok"));
    assert_eq!(req.header("accept"), Some("application/x-ndjson"));
    let body: serde_json::Value = serde_json::from_slice(&req.body).unwrap();
    assert_eq!(body["sessionId"], "sess-1");
    assert_eq!(body["effectiveParameters"]["agent"]["llm"]["model"], "m-1");
    assert!(
        !String::from_utf8_lossy(&req.body).contains("Bearer leak"),
        "headers are redacted before stamping"
    );
}

#[tokio::test]
async fn run_returns_the_result_of_a_stream_or_of_a_plain_json_answer() {
    let server = ndjson_server(concat!(
        "{\"kind\":\"event\",\"event\":{\"type\":\"message\"}}\n",
        "{\"kind\":\"result\",\"result\":{\"ok\":false,\"error\":\"tool failed\"}}",
    ))
    .await;
    let result = runner_client(&server.url)
        .runs()
        .run(&session_request())
        .await
        .unwrap();
    assert!(!result.ok);
    assert_eq!(result.error.as_deref(), Some("tool failed"));

    let server = serve(|_, _, stream| async move {
        reply(
            stream,
            json(200, serde_json::json!({"ok": true, "output": "plain"})),
        )
        .await
    })
    .await;
    let result = runner_client(&server.url)
        .runs()
        .run(&session_request())
        .await
        .unwrap();
    assert_eq!(result.output.as_deref(), Some("plain"));
}

#[tokio::test]
async fn a_stream_without_result_or_with_garbage_is_a_decode_error() {
    let server = ndjson_server("{\"kind\":\"event\",\"event\":{\"type\":\"message\"}}\n").await;
    let err = runner_client(&server.url)
        .runs()
        .run(&session_request())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Decode { operation: Operation::Run, reason, .. } if reason.contains("without a result")),
        "{err:?}"
    );

    let server =
        ndjson_server("{\"kind\":\"event\",\"event\":{\"type\":\"message\"}}\n<html>oops</html>\n")
            .await;
    let mut stream = runner_client(&server.url).runs().stream(&session_request());
    assert!(matches!(
        stream.next().await,
        Some(Ok(RunStreamRecord::Event { .. }))
    ));
    let err = stream.next().await.unwrap().unwrap_err();
    assert!(
        matches!(&err, Error::Decode { operation: Operation::StreamRun, snippet, .. } if snippet.contains("<html>")),
        "{err:?}"
    );
    assert!(
        stream.next().await.is_none(),
        "the stream ends after an error"
    );

    let server = ndjson_server("{\"kind\":\"result\",\"result\":{\"ok\":\"yes\"}}\n").await;
    let err = runner_client(&server.url)
        .runs()
        .run(&session_request())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Decode { path, .. } if path == "result.ok"),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_run_is_never_retried_and_a_silent_stream_times_out() {
    let server = serve(|_, _, stream| async move { reset(stream) }).await;
    let err = runner_client(&server.url)
        .runs()
        .run(&session_request())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Transport {
                operation: Operation::Run,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(server.connection_count(), 1);

    let server = serve(|_, _, stream| async move {
        reply(stream, response(503, "text/plain", b"overloaded")).await
    })
    .await;
    let err = runner_client(&server.url)
        .runs()
        .run(&session_request())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Server { status: 503, .. }), "{err:?}");
    assert_eq!(server.connection_count(), 1);

    let server = serve(|_, _, mut stream| async move {
        let head = "HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\nconnection: close\r\n\r\n{\"kind\":\"event\",\"event\":{\"type\":\"message\"}}\n";
        let _ = stream.write_all(head.as_bytes()).await;
        tokio::time::sleep(Duration::from_secs(10)).await;
    })
    .await;
    let c = Client::builder(&server.url)
        .stream_idle_timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let mut stream = c.runs().stream(&session_request());
    assert!(matches!(
        stream.next().await,
        Some(Ok(RunStreamRecord::Event { .. }))
    ));
    let err = stream.next().await.unwrap().unwrap_err();
    assert!(
        matches!(
            err,
            Error::Timeout {
                operation: Operation::StreamRun,
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_request_that_breaks_the_contract_is_refused_before_sending() {
    let server = serve(|_, _, stream| async move {
        reply(stream, json(200, serde_json::json!({"ok": true}))).await
    })
    .await;
    let mut request = session_request();
    request.session_id = None; // effectiveParameters without a session breaks A2
    let err = runner_client(&server.url)
        .runs()
        .run(&request)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Config {
                operation: Operation::Run,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(server.connection_count(), 0);
}
