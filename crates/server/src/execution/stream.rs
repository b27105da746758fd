//! The event stream of an execution session (`GET .../events/stream`, on both mounts of
//! [`super::api`]).
//!
//! It speaks `@agentplat/streaming`'s SSE: every frame is `id: ...` /
//! `event: agentplat.execution_session_event` /
//! `data: {"version":1,"sequence":<n>,"type":"execution_session_event","payload":<event>}`
//! with `n` counting the frames of the connection from 1 (AgentPlat's parser requires it);
//! a failure (unknown session, unreadable store) is one `agentplat.failed` frame after a
//! 200, as AgentPlat's `streamToSSE` answers. Both mounts send heartbeat comments (no
//! AgentPlat parser reads them) and end the stream once the session is terminal and
//! every event was sent. They differ in what a reconnect needs:
//!
//! - root: as `streamToSSE` frames it, `id: stream:<n>` (the frame's number on this
//!   connection), no `retry:` line, the failure frame numbered like any other with
//!   `content` only; `Last-Event-ID` is ignored as AgentPlat ignores it (its ids number
//!   frames, not events), `?after=` says where to start.
//! - `/api`: `id: stream:<session event sequence>`, a `retry:` hint first, the failure
//!   frame without `id:` (a reconnecting `EventSource` keeps its last event) and with
//!   `gatehouseCode`; reconnecting, `Last-Event-ID` wins over `?after=` (an
//!   `EventSource` resends its first URL, with a stale `after`).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, Uri};
use axum::response::Response;
use axum::Extension;
use gatehouse_wire::error::{messages, GatehouseCode};
use gatehouse_wire::execution::{stream_id_number, ExecutionEvent, StreamEnvelope};
use serde_json::Value;

use super::agentplat_shape::AgentPlatEvent;
use super::cursor::{first_after, parse_after};
use super::mount::Mount;
use super::rules::ExecError;
use super::store::ExecutionStore;
use super::tenant::Tenant;
use crate::AppState;

/// How often an open event stream looks for new events in the store (the store is the
/// only source of truth, so streams see writes from every process on the database).
pub const STREAM_POLL: Duration = Duration::from_millis(100);

/// One SSE frame: `id:` (when given), `event: agentplat.<type>`, `data:` the envelope.
fn sse_frame(id: Option<&str>, envelope: &StreamEnvelope) -> Bytes {
    let data = serde_json::to_string(envelope).unwrap_or_else(|_| {
        // A frame always serializes; this keeps the stream well-formed regardless.
        format!(
            r#"{{"version":{},"sequence":{},"type":"failed","content":"{}"}}"#,
            envelope.version,
            envelope.sequence,
            messages::STREAM_FAILED
        )
    });
    let mut text = String::new();
    if let Some(id) = id {
        text.push_str(&format!("id: {id}\n"));
    }
    text.push_str(&format!(
        "event: {}\ndata: {data}\n\n",
        envelope.sse_event_name()
    ));
    Bytes::from(text)
}

/// AgentPlat's failure frame, the `sequence`-th of its connection (its `content`
/// exposes nothing, as `streamToSSE` does by default). On the root paths exactly
/// AgentPlat's (`id: stream:<sequence>`); under `/api` with Gatehouse's machine code
/// saying why, and no `id:`, so a reconnecting `EventSource` keeps the last event it had.
fn failed_frame(mount: Mount, sequence: u64, code: GatehouseCode) -> Bytes {
    let mut envelope = StreamEnvelope::failed(sequence, messages::STREAM_FAILED);
    match mount {
        Mount::AgentPlatRoot => sse_frame(Some(&envelope.sse_id(sequence)), &envelope),
        Mount::Api => {
            envelope.extra.insert(
                "gatehouseCode".to_string(),
                Value::String(code.as_str().to_string()),
            );
            sse_frame(None, &envelope)
        }
    }
}

/// The frame carrying `event` as the `sequence`-th of its connection: on the root paths
/// AgentPlat's event JSON and id (`stream:<sequence>`), under `/api` Gatehouse's event
/// and `stream:<event sequence>`.
fn event_frame(
    mount: Mount,
    sequence: u64,
    event: &ExecutionEvent,
) -> Result<Bytes, serde_json::Error> {
    Ok(match mount {
        Mount::AgentPlatRoot => {
            let payload = match serde_json::to_value(AgentPlatEvent(event))? {
                Value::Object(map) => map,
                _ => Default::default(),
            };
            let envelope = StreamEnvelope::session_event_payload(sequence, payload);
            sse_frame(Some(&envelope.sse_id(sequence)), &envelope)
        }
        Mount::Api => {
            let envelope = StreamEnvelope::session_event(sequence, event)?;
            sse_frame(Some(&envelope.sse_id(event.sequence)), &envelope)
        }
    })
}

struct StreamState {
    mount: Mount,
    exec: ExecutionStore,
    tenant: String,
    room_id: String,
    session_id: String,
    /// The last session-event sequence sent.
    after: u64,
    /// Envelope frames sent on this connection (AgentPlat numbers them from 1).
    frames: u64,
    queue: VecDeque<Bytes>,
    shutdown: tokio::sync::watch::Receiver<bool>,
    heartbeat: Duration,
    last_sent: Instant,
    finished: bool,
}

impl StreamState {
    fn push_failed(&mut self, code: GatehouseCode) {
        self.frames += 1;
        self.queue
            .push_back(failed_frame(self.mount, self.frames, code));
        self.finished = true;
    }

    fn push_event(&mut self, event: &ExecutionEvent) {
        self.frames += 1;
        match event_frame(self.mount, self.frames, event) {
            Ok(frame) => self.queue.push_back(frame),
            Err(err) => {
                tracing::warn!(session_id = %self.session_id, error = %err, "encoding a session event failed; ending the stream");
                self.frames -= 1;
                self.push_failed(GatehouseCode::InternalError);
            }
        }
    }
}

async fn next_frame(mut st: StreamState) -> Option<(Result<Bytes, Infallible>, StreamState)> {
    loop {
        if let Some(frame) = st.queue.pop_front() {
            st.last_sent = Instant::now();
            return Some((Ok(frame), st));
        }
        if st.finished || *st.shutdown.borrow() {
            return None;
        }
        match st.exec.get(&st.tenant, &st.room_id, &st.session_id).await {
            Ok(session) => {
                let after = st.after;
                for event in session.events.iter().filter(|e| e.sequence > after) {
                    st.push_event(event);
                    st.after = event.sequence;
                }
                if session.status.is_terminal() {
                    // Everything up to the reconciliation was sent: the log is complete.
                    st.finished = true;
                    continue;
                }
            }
            Err(err) if err.code == GatehouseCode::NotFound => {
                st.push_failed(GatehouseCode::NotFound);
                continue;
            }
            Err(err) => {
                tracing::warn!(session_id = %st.session_id, error = %err, "event stream read failed; ending the stream");
                st.push_failed(GatehouseCode::InternalError);
                continue;
            }
        }
        if st.last_sent.elapsed() >= st.heartbeat {
            st.last_sent = Instant::now();
            return Some((Ok(Bytes::from_static(b":heartbeat\n\n")), st));
        }
        let mut shutdown = st.shutdown.clone();
        tokio::select! {
            _ = tokio::time::sleep(STREAM_POLL) => {}
            _ = shutdown.wait_for(|stop| *stop) => return None,
        }
    }
}

/// Where a stream starts. Under `/api`: after the `Last-Event-ID`
/// (`stream:<sequence>`) of a reconnect, which wins over `?after=` (an `EventSource`
/// resends its first URL). Then (and always on the root paths, where AgentPlat ignores
/// `Last-Event-ID`): after `?after=` (AgentPlat's `Number(...)`), else from the first
/// event.
fn stream_start(mount: Mount, headers: &HeaderMap, after: Option<&str>) -> Result<u64, ExecError> {
    if mount == Mount::Api {
        if let Some(last) = headers
            .get("last-event-id")
            .and_then(|v| v.to_str().ok())
            .and_then(stream_id_number)
        {
            return Ok(last);
        }
    }
    parse_after(after)
}

/// `GET .../events/stream`: a 200 SSE stream of the session's events from where
/// [`stream_start`] says, holding one of the open-stream slots while it is open.
pub(super) async fn stream_events(
    State(state): State<AppState>,
    Extension(mount): Extension<Mount>,
    Tenant(tenant): Tenant,
    Path((room_id, session_id)): Path<(String, String)>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    // One of the open-stream slots (crate::limits) for as long as the stream is open.
    let Some(slot) = state.watchers.acquire() else {
        return crate::limits::streams_full(&state.watchers, crate::error::ErrorShape::AgentPlat);
    };
    // Gatehouse's reconnect hint; AgentPlat's route sends none.
    let queue = match mount {
        Mount::Api => VecDeque::from([Bytes::from(format!(
            "retry: {}\n\n",
            state.config.sse_retry.as_millis()
        ))]),
        Mount::AgentPlatRoot => VecDeque::new(),
    };
    let mut st = StreamState {
        mount,
        exec: state.executions.clone(),
        tenant,
        room_id,
        session_id,
        after: 0,
        frames: 0,
        queue,
        shutdown: state.shutdown.clone(),
        heartbeat: state.config.heartbeat,
        last_sent: Instant::now(),
        finished: false,
    };
    // As AgentPlat's stream route: the answer is a 200 stream; what goes wrong reading
    // the session is its failure frame.
    match stream_start(mount, &headers, first_after(&uri).as_deref()) {
        Ok(after) => st.after = after,
        Err(err) => st.push_failed(err.code),
    }
    let stream = slot.hold(futures::stream::unfold(st, next_frame));
    let mut response = Response::new(Body::from_stream(stream));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, no-transform"),
    );
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_event_id_wins_over_a_stale_after() {
        let mut headers = HeaderMap::new();
        assert_eq!(stream_start(Mount::Api, &headers, Some("2")).unwrap(), 2);
        headers.insert("last-event-id", HeaderValue::from_static("stream:5"));
        assert_eq!(stream_start(Mount::Api, &headers, Some("2")).unwrap(), 5);
        assert_eq!(stream_start(Mount::Api, &headers, Some("abc")).unwrap(), 5);
        headers.insert("last-event-id", HeaderValue::from_static("garbage"));
        assert_eq!(stream_start(Mount::Api, &headers, Some("2")).unwrap(), 2);
    }

    #[test]
    fn the_root_paths_ignore_last_event_id_as_agentplat_does() {
        let mut headers = HeaderMap::new();
        headers.insert("last-event-id", HeaderValue::from_static("stream:3"));
        let root = Mount::AgentPlatRoot;
        assert_eq!(stream_start(root, &headers, None).unwrap(), 0);
        assert_eq!(stream_start(root, &headers, Some("2")).unwrap(), 2);
    }

    #[test]
    fn failure_frames_are_framed_per_mount() {
        assert_eq!(
            failed_frame(Mount::AgentPlatRoot, 1, GatehouseCode::NotFound),
            Bytes::from_static(
                b"id: stream:1\nevent: agentplat.failed\ndata: {\"version\":1,\"sequence\":1,\"type\":\"failed\",\"content\":\"Stream failed\"}\n\n"
            )
        );
        assert_eq!(
            failed_frame(Mount::Api, 2, GatehouseCode::NotFound),
            Bytes::from_static(
                b"event: agentplat.failed\ndata: {\"version\":1,\"sequence\":2,\"type\":\"failed\",\"content\":\"Stream failed\",\"gatehouseCode\":\"NOT_FOUND\"}\n\n"
            )
        );
    }
}
