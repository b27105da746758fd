//! The runner's `/run` endpoint (CONTRACT.md A1): post a typed [`RunRequest`] and read
//! the NDJSON answer as a stream of typed records ending in the result.
//!
//! Build the request with `gatehouse-wire`'s builder; for a session run,
//! [`RunRequest::for_session`] stamps `effectiveParameters` (A2: redacted, measured,
//! present only on a session run with a non-empty blob under the cap).

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::{Stream, StreamExt};
use gatehouse_wire::run::{RunRequest, RunResult, RunStreamRecord};
use reqwest::header::CONTENT_TYPE;

use crate::client::Client;
use crate::error::{Error, Operation, Result};
use crate::transport::{AnswerBody, Call, Target};

/// The `Accept` value of a streaming run.
///
/// ```
/// assert_eq!(gatehouse_client::NDJSON, "application/x-ndjson");
/// ```
pub const NDJSON: &str = "application/x-ndjson";

impl Client {
    /// The runner's `/run` endpoint (A1): post a typed request, read the NDJSON
    /// stream of records ending in the result.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client, request: gatehouse_wire::run::RunRequest) -> Result<(), gatehouse_client::Error> {
    /// let result = client.runs().run(&request).await?;
    /// # let _ = result; Ok(()) }
    /// ```
    pub fn runs(&self) -> Runs {
        Runs::new(self.clone())
    }
}

/// The `/run` endpoint. Obtain with [`Client::runs`].
///
/// ```no_run
/// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
/// use gatehouse_wire::effective::StampPolicy;
/// use gatehouse_wire::run::{ChatMessage, Harness, RunRequest, Sandbox};
/// let params = serde_json::json!({"agent": {"llm": {"model": "anthropic/claude-sonnet-4-5"}}});
/// let (request, _stamp) = RunRequest::new(Harness::Claude, Sandbox::Local, "anthropic/claude-sonnet-4-5", vec![ChatMessage::text("user", "hi")])
///     .for_session("48268312-0000-7000-8000-000000000000", params, &StampPolicy::default());
/// let result = client.runs().run(&request).await?;
/// println!("ok={} output={:?}", result.ok, result.output);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Runs {
    client: Client,
}

impl Runs {
    pub(crate) fn new(client: Client) -> Self {
        Self { client }
    }

    /// Post `request` and read the answer to its result (events are skipped).
    /// Accepts an NDJSON stream or a plain JSON result. A result with `ok: false` is
    /// returned as `Ok`: the run happened and failed; [`Error`] is for calls that did
    /// not complete.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client, request: gatehouse_wire::run::RunRequest) -> Result<(), gatehouse_client::Error> {
    /// let result = client.runs().run(&request).await?;
    /// if !result.ok { eprintln!("run failed: {:?}", result.error); }
    /// # Ok(()) }
    /// ```
    pub async fn run(&self, request: &RunRequest) -> Result<RunResult> {
        let mut stream = RunStream::new(self.client.clone(), request, Operation::Run);
        while let Some(record) = stream.next().await {
            if let RunStreamRecord::Result { result } = record? {
                return Ok(*result);
            }
        }
        Err(no_result(Operation::Run))
    }

    /// Post `request` with `Accept: application/x-ndjson` and read the answer as a
    /// stream: any number of [`RunStreamRecord::Event`]s, then exactly one
    /// [`RunStreamRecord::Result`], then the end. The request is sent on the first poll;
    /// a stream silent longer than the client's stream idle timeout fails with
    /// [`Error::Timeout`]; one that ends without a result fails with [`Error::Decode`].
    /// Never retried (a run is not idempotent). Dropping the stream closes the connection.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client, request: gatehouse_wire::run::RunRequest) -> Result<(), gatehouse_client::Error> {
    /// use futures::StreamExt;
    /// use gatehouse_wire::run::RunStreamRecord;
    /// let mut stream = client.runs().stream(&request);
    /// while let Some(record) = stream.next().await {
    ///     match record? {
    ///         RunStreamRecord::Event { event } => println!("event {}", event.event_type()),
    ///         RunStreamRecord::Result { result } => println!("done: ok={}", result.ok),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn stream(&self, request: &RunRequest) -> RunStream {
        RunStream::new(self.client.clone(), request, Operation::StreamRun)
    }
}

fn no_result(operation: Operation) -> Error {
    Error::Decode {
        operation,
        status: 200,
        path: ".".to_string(),
        reason: "the run stream ended without a result record".to_string(),
        snippet: String::new(),
    }
}

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

enum Phase {
    /// Not sent yet (or the body could not be built).
    Unsent(Result<Bytes>),
    /// Reading NDJSON lines.
    Reading(ByteStream),
    /// Finished (result seen, or failed).
    Done,
}

struct State {
    client: Client,
    operation: Operation,
    phase: Phase,
    line: Vec<u8>,
    queue: VecDeque<RunStreamRecord>,
    /// An error found after records that must be yielded first.
    pending_error: Option<Error>,
    seen_result: bool,
}

/// The NDJSON records of one run. See [`Runs::stream`].
///
/// ```no_run
/// # async fn demo(client: gatehouse_client::Client, request: gatehouse_wire::run::RunRequest) {
/// use futures::StreamExt;
/// let records: Vec<_> = client.runs().stream(&request).collect().await;
/// # let _ = records; }
/// ```
pub struct RunStream {
    inner: Pin<Box<dyn Stream<Item = Result<RunStreamRecord>> + Send>>,
}

impl std::fmt::Debug for RunStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunStream").finish_non_exhaustive()
    }
}

impl Stream for RunStream {
    type Item = Result<RunStreamRecord>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl RunStream {
    fn new(client: Client, request: &RunRequest, operation: Operation) -> Self {
        let body = prepare(request, operation);
        let state = State {
            client,
            operation,
            phase: Phase::Unsent(body),
            line: Vec::new(),
            queue: VecDeque::new(),
            pending_error: None,
            seen_result: false,
        };
        Self {
            inner: Box::pin(futures::stream::unfold(state, next_record)),
        }
    }
}

/// Check the request against the contract and serialize it (nothing is sent when it breaks).
fn prepare(request: &RunRequest, operation: Operation) -> Result<Bytes> {
    let problems = request.problems();
    if !problems.is_empty() {
        let list = problems
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join("; ");
        return Err(Error::Config {
            operation,
            reason: format!("the /run request breaks the contract: {list}"),
        });
    }
    serde_json::to_vec(request)
        .map(Bytes::from)
        .map_err(|e| Error::Config {
            operation,
            reason: format!("the /run request cannot be serialized: {e}"),
        })
}

async fn next_record(mut st: State) -> Option<(Result<RunStreamRecord>, State)> {
    loop {
        if let Some(record) = st.queue.pop_front() {
            return Some((Ok(record), st));
        }
        if let Some(err) = st.pending_error.take() {
            st.phase = Phase::Done;
            return Some((Err(err), st));
        }
        match std::mem::replace(&mut st.phase, Phase::Done) {
            Phase::Done => return None,
            Phase::Unsent(body) => match start(&st.client, st.operation, body).await {
                Ok(Started::Stream(bytes)) => st.phase = Phase::Reading(bytes),
                Ok(Started::Whole(result)) => {
                    return Some((Ok(RunStreamRecord::Result { result }), st));
                }
                Err(err) => return Some((Err(err), st)),
            },
            Phase::Reading(mut bytes) => {
                let idle = st.client.transport().stream_idle_timeout();
                match tokio::time::timeout(idle, bytes.next()).await {
                    Ok(Some(Ok(chunk))) => {
                        if let Err(err) = st.take_lines(&chunk) {
                            st.pending_error = Some(err);
                        } else if !st.seen_result {
                            st.phase = Phase::Reading(bytes);
                        }
                    }
                    Ok(Some(Err(err))) => {
                        let err = st.client.transport().stream_error(st.operation, err);
                        return Some((Err(err), st));
                    }
                    Ok(None) => {
                        // End of body: a last line without its newline still counts.
                        if !st.line.is_empty() {
                            let line = std::mem::take(&mut st.line);
                            if let Err(err) = st.parse_line(&line) {
                                st.pending_error = Some(err);
                                continue;
                            }
                        }
                        if !st.seen_result {
                            st.pending_error = Some(no_result(st.operation));
                        }
                    }
                    Err(_) => {
                        return Some((
                            Err(Error::Timeout {
                                operation: st.operation,
                                after: idle,
                            }),
                            st,
                        ));
                    }
                }
            }
        }
    }
}

enum Started {
    Stream(ByteStream),
    Whole(Box<RunResult>),
}

async fn start(client: &Client, operation: Operation, body: Result<Bytes>) -> Result<Started> {
    let mut call = Call::new(operation, &[]);
    call.target = Target::Runner;
    call.body = Some(body?);
    call.accept = NDJSON;
    call.streaming = true;
    let answered = client.send(&call).await?;
    let is_json = answered
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.trim_start().starts_with("application/json"));
    let response = match answered.body {
        AnswerBody::Stream(response) => response,
        AnswerBody::Full(bytes) => {
            return whole_or_stream(client, operation, is_json, bytes, answered.status.as_u16())
        }
    };
    if is_json {
        let bytes = client.transport().read_body(response, operation).await?;
        return whole_or_stream(client, operation, true, bytes, answered.status.as_u16());
    }
    Ok(Started::Stream(Box::pin(response.bytes_stream())))
}

fn whole_or_stream(
    client: &Client,
    operation: Operation,
    is_json: bool,
    bytes: Bytes,
    status: u16,
) -> Result<Started> {
    if is_json {
        client
            .transport()
            .decode::<RunResult>(operation, status, &bytes)
            .map(|r| Started::Whole(Box::new(r)))
    } else {
        Ok(Started::Stream(Box::pin(futures::stream::iter([Ok(
            bytes,
        )]))))
    }
}

impl State {
    /// Split complete lines out of `chunk` and parse them.
    fn take_lines(&mut self, chunk: &[u8]) -> Result<()> {
        let mut rest = chunk;
        while let Some(pos) = rest.iter().position(|b| *b == b'\n') {
            self.line.extend_from_slice(&rest[..pos]);
            rest = &rest[pos + 1..];
            let line = std::mem::take(&mut self.line);
            self.parse_line(&line)?;
            if self.seen_result {
                return Ok(());
            }
        }
        self.line.extend_from_slice(rest);
        let limit = self.client.transport().max_response_bytes();
        if self.line.len() > limit {
            return Err(Error::Decode {
                operation: self.operation,
                status: 200,
                path: ".".to_string(),
                reason: format!("an NDJSON line exceeds the limit of {limit} bytes"),
                snippet: String::new(),
            });
        }
        Ok(())
    }

    fn parse_line(&mut self, line: &[u8]) -> Result<()> {
        if self.seen_result {
            return Ok(());
        }
        let text = String::from_utf8_lossy(line);
        match RunStreamRecord::from_ndjson_line(&text) {
            Ok(Some(record)) => {
                if matches!(record, RunStreamRecord::Result { .. }) {
                    self.seen_result = true;
                }
                self.queue.push_back(record);
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(err) => {
                let err = refine_result_path(&text).unwrap_or(err);
                Err(self
                    .client
                    .transport()
                    .decode_error(self.operation, 200, err, line))
            }
        }
    }
}

/// An internally tagged record loses the failing field's path; decode a result's
/// payload on its own to name it (`result.ok`).
fn refine_result_path(line: &str) -> Option<gatehouse_wire::WireDecodeError> {
    let value: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
    if value.get("kind").and_then(|k| k.as_str()) != Some("result") {
        return None;
    }
    let payload = value.get("result")?.clone();
    let mut err = gatehouse_wire::from_json_value::<RunResult>(payload).err()?;
    err.path = if err.path == "." {
        "result".to_string()
    } else {
        format!("result.{}", err.path)
    };
    Some(err)
}
