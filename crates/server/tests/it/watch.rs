//! The SSE watch stream: ready first, then interaction, records-changed, lifecycle events.

use std::time::Duration;

use crate::common::{config, user, Harness};
use futures::StreamExt;
use gatehouse_server::testing::TestServerOptions;
use serde_json::{json, Value};

/// Reads SSE frames off a response.
struct Frames {
    stream: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: String,
}

#[derive(Debug, Default, Clone)]
struct Frame {
    event: Option<String>,
    data: Option<String>,
    retry: Option<String>,
    comment: Option<String>,
}

impl Frames {
    fn new(response: reqwest::Response) -> Self {
        Self {
            stream: response.bytes_stream().boxed(),
            buffer: String::new(),
        }
    }

    async fn next(&mut self) -> Frame {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let raw: String = self.buffer.drain(..end + 2).collect();
                let mut frame = Frame::default();
                for line in raw.lines() {
                    if let Some(rest) = line.strip_prefix(':') {
                        frame.comment = Some(rest.to_string());
                    } else if let Some((field, value)) = line.split_once(':') {
                        let value = value.strip_prefix(' ').unwrap_or(value).to_string();
                        match field {
                            "event" => frame.event = Some(value),
                            "data" => frame.data = Some(value),
                            "retry" => frame.retry = Some(value),
                            _ => {}
                        }
                    }
                }
                return frame;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(10), self.stream.next())
                .await
                .expect("an SSE frame within 10 s")
                .expect("the stream stays open")
                .unwrap();
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// The next `interaction` event's data.
    async fn next_interaction(&mut self) -> Value {
        loop {
            let frame = self.next().await;
            if frame.event.as_deref() == Some("interaction") {
                return serde_json::from_str(frame.data.as_deref().unwrap()).unwrap();
            }
        }
    }
}

#[tokio::test]
async fn watch_sees_pending_then_resolved() {
    let h = Harness::with(TestServerOptions {
        heartbeat: Some(Duration::from_millis(100)),
        ..crate::common::legacy_options()
    })
    .await;
    let response = h
        .open_stream("/api/sessions/streams/watch?session_id=watched")
        .await;
    let mut frames = Frames::new(response);
    let first = frames.next().await;
    assert_eq!(first.event.as_deref(), Some("ready"));
    assert_eq!(first.retry.as_deref(), Some("3000"));
    let ready: Value = serde_json::from_str(first.data.as_deref().unwrap()).unwrap();
    assert_eq!(ready, json!({"type": "ready", "session_id": "watched"}));

    // A turn in another session is not seen.
    h.invoke(json!({"session_id": "elsewhere", "data": {"inputs": {"messages": user("x")}, "parameters": config("m", "ask")}}))
        .await;
    let parked = h
        .invoke(json!({"session_id": "watched", "data": {"inputs": {"messages": user("x")}, "parameters": config("m", "ask")}}))
        .await;
    let id = parked["interaction_ids"][0].as_str().unwrap().to_string();

    let mut names = Vec::new();
    let pending = loop {
        let frame = frames.next().await;
        if let Some(event) = frame.event.clone() {
            let data: Value = serde_json::from_str(frame.data.as_deref().unwrap()).unwrap();
            assert_eq!(data["session_id"], "watched", "{data}");
            names.push(event.clone());
            if event == "interaction" {
                break data;
            }
        }
    };
    assert_eq!(names.first().map(String::as_str), Some("lifecycle"));
    assert_eq!(
        pending,
        json!({"type": "interaction", "session_id": "watched", "status": "pending", "interaction_id": id})
    );

    h.respond(&id, true).await;
    assert_eq!(frames.next_interaction().await["status"], "responded");
    let resolved = frames.next_interaction().await;
    assert_eq!(resolved["status"], "resolved");
    assert_eq!(resolved["interaction_id"], id.as_str());

    // Heartbeats are comments.
    let heartbeat = loop {
        let frame = frames.next().await;
        if frame.comment.is_some() {
            break frame;
        }
    };
    assert_eq!(heartbeat.comment.as_deref(), Some(" heartbeat"));
}

#[tokio::test]
async fn watch_needs_a_session_id() {
    let h = Harness::start().await;
    for path in [
        "/api/sessions/streams/watch",
        "/api/sessions/streams/watch?session_id=%20",
    ] {
        let (status, body) = h.get(path).await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["code"], "BAD_REQUEST");
        assert!(body["detail"].as_str().unwrap().contains("session_id"));
    }
}

/// Shutdown ends open watch streams instead of hanging.
#[tokio::test]
async fn shutdown_ends_open_streams() {
    let h = Harness::start().await;
    let response = h
        .http
        .get(h.url("/api/sessions/streams/watch?session_id=s"))
        .header("Authorization", h.server.authorization())
        .send()
        .await
        .unwrap();
    let mut frames = Frames::new(response);
    assert_eq!(frames.next().await.event.as_deref(), Some("ready"));
    tokio::time::timeout(Duration::from_secs(10), h.server.shutdown())
        .await
        .expect("shutdown completes with a stream open");
}
