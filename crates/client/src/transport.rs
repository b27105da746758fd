//! The transport: one [`Call`] in, one [`Answered`] (or an [`Error`]) out. It takes the
//! call's method and path from its registered route ([`crate::routes`]), builds the URL,
//! sets the credentials of the call's [`Target`], sends, retries as the call's
//! [`Replay`] allows (through [`crate::retry::with_retries`]), reads bodies within their
//! limits, and turns failed answers into errors through [`crate::classify`].
//!
//! It knows nothing of the sub-clients, nor of the capability cache: a route-not-found
//! 404 comes back as [`Error::CapabilityUnavailable`], and [`Client::send`](crate::Client)
//! is where the cache learns from it. It records the `attempts` of the caller's
//! `gatehouse_call` span.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use gatehouse_wire::routes::{self as registry, Operation as Route, Segment};
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use reqwest::{Method, StatusCode, Url};
use serde::de::DeserializeOwned;

use crate::classify;
use crate::error::{Error, Operation, Result};
use crate::retry::{with_retries, Failed, RetryPolicy};
use crate::routes;
use crate::upstream::Upstream;

/// Largest error body the client reads before classifying it.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// Which host and credentials a call uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// `{base}/...` with the API key, the tenant header and (except on AgentPlat)
    /// `project_id`.
    Api,
    /// `{runner}/...` with the runner token, no `project_id`.
    Runner,
}

/// When a failed attempt may be sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Replay {
    /// Never (non-idempotent writes).
    Never,
    /// On transport errors, timeouts, 429 and 5xx (reads, and writes carrying an
    /// idempotency key or idempotent by contract).
    Safe,
}

/// One HTTP call, before it is sent. Its method and path are its operation's route
/// ([`routes::route`]), on the client's upstream.
pub(crate) struct Call {
    pub operation: Operation,
    pub target: Target,
    /// The values of the route's `{name}` segments, in the order of its path (each
    /// percent-encoded as one segment when the URL is built).
    pub path_values: Vec<String>,
    /// Query pairs besides `project_id`.
    pub query: Vec<(&'static str, String)>,
    /// JSON body, already serialized.
    pub body: Option<Bytes>,
    pub accept: &'static str,
    pub idempotency_key: Option<String>,
    pub replay: Replay,
    /// True for a streaming response: no total timeout, the caller reads the body.
    pub streaming: bool,
}

impl Call {
    pub fn new(operation: Operation, path_values: &[&str]) -> Self {
        Self {
            operation,
            target: Target::Api,
            path_values: path_values.iter().map(|s| s.to_string()).collect(),
            query: Vec::new(),
            body: None,
            accept: "application/json",
            idempotency_key: None,
            replay: if operation.is_read() {
                Replay::Safe
            } else {
                Replay::Never
            },
            streaming: false,
        }
    }

    pub fn json_body<T: serde::Serialize>(mut self, body: &T) -> Result<Self> {
        let bytes = serde_json::to_vec(body).map_err(|e| Error::Config {
            operation: self.operation,
            reason: format!("request body cannot be serialized: {e}"),
        })?;
        self.body = Some(Bytes::from(bytes));
        Ok(self)
    }
}

/// The body of a success answer: read whole (inside the attempt, so a body cut short
/// or too slow is retried like any transport failure), or left to the caller (streams).
pub(crate) enum AnswerBody {
    /// The whole body.
    Full(Bytes),
    /// The unread response of a streaming call.
    Stream(reqwest::Response),
}

/// A success answer.
pub(crate) struct Answered {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: AnswerBody,
}

/// Everything the transport needs, checked and prepared by
/// [`ClientBuilder::build`](crate::ClientBuilder::build).
pub(crate) struct TransportConfig {
    pub http: reqwest::Client,
    /// Which kind of host the base URL is.
    pub upstream: Upstream,
    pub base: Url,
    pub runner_base: Url,
    /// `Authorization` of [`Target::Api`] calls (sensitive: never logged).
    pub auth: Option<HeaderValue>,
    /// `Authorization` of [`Target::Runner`] calls (sensitive: never logged).
    pub runner_auth: Option<HeaderValue>,
    /// The API key and runner token, scrubbed from every text an error keeps.
    pub secrets: Vec<String>,
    pub project_id: Option<String>,
    /// `X-Agentplat-Tenant-Id` of [`Target::Api`] calls.
    pub tenant: Option<HeaderValue>,
    /// `requestedByParticipantId` of intervention requests.
    pub participant_id: Option<String>,
    pub timeout: Duration,
    pub stream_idle_timeout: Duration,
    pub retry: RetryPolicy,
    pub max_response_bytes: usize,
    /// See [`ClientBuilder::max_stream_event_bytes`](crate::ClientBuilder::max_stream_event_bytes).
    pub max_stream_event_bytes: usize,
}

/// The connection pool and the settings every call is made with.
pub(crate) struct Transport {
    config: TransportConfig,
}

impl Transport {
    pub(crate) fn new(config: TransportConfig) -> Self {
        Self { config }
    }

    /// The base URL of [`Target::Api`] calls.
    pub(crate) fn base_url(&self) -> &Url {
        &self.config.base
    }

    /// The base URL of [`Target::Runner`] calls.
    pub(crate) fn runner_url(&self) -> &Url {
        &self.config.runner_base
    }

    /// True when an API key is configured (never the key itself).
    pub(crate) fn has_api_key(&self) -> bool {
        self.config.auth.is_some()
    }

    pub(crate) fn project_id(&self) -> Option<&str> {
        self.config.project_id.as_deref()
    }

    /// Which kind of host the base URL is.
    pub(crate) fn upstream(&self) -> Upstream {
        self.config.upstream
    }

    /// The configured tenant (sent as `X-Agentplat-Tenant-Id`).
    pub(crate) fn tenant(&self) -> Option<&str> {
        self.config.tenant.as_ref().and_then(|t| t.to_str().ok())
    }

    /// The configured requester of interventions.
    pub(crate) fn participant_id(&self) -> Option<&str> {
        self.config.participant_id.as_deref()
    }

    /// The total time limit of one non-streaming attempt.
    pub(crate) fn timeout(&self) -> Duration {
        self.config.timeout
    }

    /// How long a streaming response may stay silent.
    pub(crate) fn stream_idle_timeout(&self) -> Duration {
        self.config.stream_idle_timeout
    }

    pub(crate) fn retry_policy(&self) -> RetryPolicy {
        self.config.retry
    }

    /// The [`Error`] an answer of `status` with `body` means for `operation`, classified
    /// as a whole answer is (for the per-item errors of a batch answer).
    pub(crate) fn classify_answer(&self, operation: Operation, status: u16, body: &[u8]) -> Error {
        classify::classify(operation, status, None, body, &self.config.secrets)
    }

    /// The largest success body (or NDJSON line) read.
    pub(crate) fn max_response_bytes(&self) -> usize {
        self.config.max_response_bytes
    }

    pub(crate) fn max_stream_event_bytes(&self) -> usize {
        self.config.max_stream_event_bytes
    }

    /// The registered route of `operation` on this host; [`Error::Config`] when the
    /// upstream has none (nothing is sent).
    pub(crate) fn route(&self, operation: Operation) -> Result<&'static Route> {
        let upstream = self.config.upstream;
        routes::route(operation, upstream).ok_or_else(|| Error::Config {
            operation,
            reason: format!("the {upstream} upstream has no route for {operation}"),
        })
    }

    /// Send `call`, retrying as its [`Replay`] allows, and return the success answer
    /// with its body unread when the call streams.
    pub(crate) async fn send(&self, call: &Call) -> Result<Answered> {
        let method = http_method(self.route(call.operation)?.method);
        let url = self.url_for(call)?;
        let max_attempts = match call.replay {
            Replay::Never => 1,
            Replay::Safe => self.config.retry.max_attempts.max(1),
        };
        with_retries(
            self.config.retry,
            max_attempts,
            "retrying",
            |attempt| {
                tracing::Span::current().record("attempts", attempt);
                self.attempt(call, &method, &url)
            },
            |_| {},
        )
        .await
    }

    /// Read a success answer's JSON body as `T`.
    pub(crate) async fn json<T: DeserializeOwned>(
        &self,
        operation: Operation,
        answered: Answered,
    ) -> Result<T> {
        let status = answered.status.as_u16();
        let body = match answered.body {
            AnswerBody::Full(bytes) => bytes,
            AnswerBody::Stream(response) => self.read_body(response, operation).await?,
        };
        self.decode(operation, status, &body)
    }

    /// Read the rest of a streaming response, at most the configured limit (more is
    /// left unread; the caller's decode then fails on the cut body).
    pub(crate) async fn read_body(
        &self,
        response: reqwest::Response,
        operation: Operation,
    ) -> Result<Bytes> {
        let limit = self.config.max_response_bytes;
        Ok(
            read_bounded(response, limit, operation, self.config.timeout)
                .await?
                .0,
        )
    }

    /// Decode `body` (answered with `status`) as `T`; a mismatch is an
    /// [`Error::Decode`] with secrets scrubbed.
    pub(crate) fn decode<T: DeserializeOwned>(
        &self,
        operation: Operation,
        status: u16,
        body: &[u8],
    ) -> Result<T> {
        gatehouse_wire::from_json_slice::<T>(body)
            .map_err(|e| self.decode_error(operation, status, e, body))
    }

    /// An [`Error::Decode`] for `body`, secrets scrubbed.
    pub(crate) fn decode_error(
        &self,
        operation: Operation,
        status: u16,
        err: gatehouse_wire::WireDecodeError,
        body: &[u8],
    ) -> Error {
        classify::decode_error(operation, status, err, body, &self.config.secrets)
    }

    /// A server text made fit for an error: bounded, secrets scrubbed.
    pub(crate) fn scrub(&self, text: &str) -> String {
        crate::redact::scrub_secret(
            &crate::redact::bound_chars(text, crate::redact::MAX_DETAIL_CHARS),
            &self.config.secrets,
        )
    }

    /// The error of a streaming body that failed while being read.
    pub(crate) fn stream_error(&self, operation: Operation, err: reqwest::Error) -> Error {
        classify::transport_error(operation, err, self.config.timeout)
    }

    /// The URL of `call`: the base, its route's path with the `{name}` segments filled
    /// from the call's path values, `project_id` where the upstream scopes by it, then
    /// the call's query.
    fn url_for(&self, call: &Call) -> Result<Url> {
        let route = self.route(call.operation)?;
        let config_error = |reason: String| Error::Config {
            operation: call.operation,
            reason,
        };
        let mut url = match call.target {
            Target::Api => self.config.base.clone(),
            Target::Runner => self.config.runner_base.clone(),
        };
        {
            let mut segments = url
                .path_segments_mut()
                .map_err(|_| config_error("base URL cannot take a path".to_string()))?;
            segments.pop_if_empty();
            let mut values = call.path_values.iter();
            // A last empty literal keeps Agenta's trailing slash (`/interactions/`).
            for segment in route.segments() {
                match segment {
                    Segment::Literal(text) => segments.push(text),
                    Segment::Param(name) => match values.next() {
                        Some(value) => segments.push(value),
                        None => {
                            return Err(config_error(format!(
                                "no value for `{{{name}}}` of {}",
                                route.path
                            )))
                        }
                    },
                };
            }
            if values.next().is_some() {
                return Err(config_error(format!(
                    "more path values than {} takes",
                    route.path
                )));
            }
        }
        {
            let mut pairs = url.query_pairs_mut();
            // AgentPlat scopes by tenant (a header), never by `project_id`.
            if call.target == Target::Api && self.config.upstream != Upstream::AgentPlat {
                if let Some(project) = &self.config.project_id {
                    pairs.append_pair("project_id", project);
                }
            }
            for (key, value) in &call.query {
                pairs.append_pair(key, value);
            }
        }
        if url.query() == Some("") {
            url.set_query(None);
        }
        Ok(url)
    }

    /// One attempt: the answer, or the error with the server's `Retry-After`.
    async fn attempt(
        &self,
        call: &Call,
        method: &Method,
        url: &Url,
    ) -> std::result::Result<Answered, Failed> {
        let config = &self.config;
        let mut request = config
            .http
            .request(method.clone(), url.clone())
            .header(ACCEPT, call.accept);
        let auth = match call.target {
            Target::Api => config.auth.as_ref(),
            Target::Runner => config.runner_auth.as_ref(),
        };
        if let Some(auth) = auth {
            request = request.header(AUTHORIZATION, auth.clone());
        }
        if let (Target::Api, Some(tenant)) = (call.target, &config.tenant) {
            request = request.header(gatehouse_wire::execution::TENANT_HEADER, tenant.clone());
        }
        if let Some(key) = &call.idempotency_key {
            request = request.header("Idempotency-Key", key.as_str());
        }
        if let Some(body) = &call.body {
            request = request
                .header(CONTENT_TYPE, "application/json")
                .body(body.clone());
        }
        if !call.streaming {
            request = request.timeout(config.timeout);
        }
        let response = request
            .send()
            .await
            .map_err(|e| classify::transport_error(call.operation, e, config.timeout))?;
        let status = response.status();
        let headers = response.headers().clone();
        if status.is_success() {
            if call.streaming {
                return Ok(Answered {
                    status,
                    headers,
                    body: AnswerBody::Stream(response),
                });
            }
            let limit = config.max_response_bytes;
            let (bytes, truncated) =
                read_bounded(response, limit, call.operation, config.timeout).await?;
            if truncated {
                return Err(Error::Decode {
                    operation: call.operation,
                    status: status.as_u16(),
                    path: ".".to_string(),
                    reason: format!("response body exceeds the limit of {limit} bytes"),
                    snippet: String::new(),
                }
                .into());
            }
            return Ok(Answered {
                status,
                headers,
                body: AnswerBody::Full(bytes),
            });
        }
        let retry_after = parse_retry_after(&headers);
        let body = read_bounded(
            response,
            MAX_ERROR_BODY_BYTES,
            call.operation,
            config.timeout,
        )
        .await
        .map(|(bytes, _)| bytes)
        .unwrap_or_default();
        let info = classify::parse_error_body(&body);
        if classify::is_route_not_found(status.as_u16(), &info) {
            // The host lacks the route: a fact about the host, learned by the caller.
            return Err(Error::CapabilityUnavailable {
                operation: call.operation,
                capability: call.operation.capability(),
            }
            .into());
        }
        let error = classify::classify(
            call.operation,
            status.as_u16(),
            retry_after,
            &body,
            &config.secrets,
        );
        Err(Failed { error, retry_after })
    }
}

/// The HTTP method of a registered route.
fn http_method(method: registry::Method) -> Method {
    match method {
        registry::Method::Get => Method::GET,
        registry::Method::Post => Method::POST,
    }
}

/// Read at most `limit` bytes of a body; the flag says whether more was left unread.
async fn read_bounded(
    response: reqwest::Response,
    limit: usize,
    operation: Operation,
    timeout: Duration,
) -> Result<(Bytes, bool)> {
    let mut stream = response.bytes_stream();
    let mut buf = bytes::BytesMut::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| classify::transport_error(operation, e, timeout))?;
        if buf.len() + chunk.len() > limit {
            let room = limit - buf.len();
            buf.extend_from_slice(&chunk[..room]);
            return Ok((buf.freeze(), true));
        }
        buf.extend_from_slice(&chunk);
    }
    Ok((buf.freeze(), false))
}

fn parse_retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?;
    let seconds: u64 = value.trim().parse().ok()?;
    Some(Duration::from_secs(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_keep_prefix_encode_ids_and_add_project() {
        let client = crate::Client::builder("http://127.0.0.1:9/prefix/")
            .api_key("k-secret")
            .project_id("p 1")
            .build()
            .unwrap();
        let transport = client.transport();
        let call = Call::new(Operation::GetInteraction, &["a/b c"]);
        let url = transport.url_for(&call).unwrap();
        assert_eq!(
            url.as_str(),
            "http://127.0.0.1:9/prefix/api/sessions/interactions/a%2Fb%20c?project_id=p+1"
        );
        let call = Call::new(Operation::CreateInteraction, &[]);
        assert!(transport
            .url_for(&call)
            .unwrap()
            .path()
            .ends_with("/interactions/"));
    }

    #[test]
    fn agentplat_urls_have_no_project_and_keep_the_prefix() {
        let client = crate::Client::builder("http://127.0.0.1:9/agentplat")
            .upstream(Upstream::AgentPlat)
            .project_id("p1")
            .tenant("tenant-1")
            .build()
            .unwrap();
        let call = Call::new(Operation::ListExecutionEvents, &["r 1", "exec-1"]);
        let mut call = call;
        call.query.push(("after", "3".to_string()));
        assert_eq!(
            client.transport().url_for(&call).unwrap().as_str(),
            "http://127.0.0.1:9/agentplat/rooms/r%201/execution-sessions/exec-1/events?after=3"
        );
        assert_eq!(client.transport().tenant(), Some("tenant-1"));
    }

    #[test]
    fn a_call_without_a_route_or_its_path_values_is_refused_before_sending() {
        let agentplat = crate::Client::builder("http://127.0.0.1:9")
            .upstream(Upstream::AgentPlat)
            .build()
            .unwrap();
        let call = Call::new(Operation::ChangeExecutionAuthority, &["r", "s"]);
        let err = agentplat.transport().url_for(&call).unwrap_err();
        assert!(
            err.to_string().contains("agentplat upstream has no route"),
            "{err}"
        );
        let gatehouse = crate::Client::builder("http://127.0.0.1:9")
            .build()
            .unwrap();
        for values in [&["r"][..], &["r", "s", "extra"]] {
            let call = Call::new(Operation::GetExecutionSession, values);
            let err = gatehouse.transport().url_for(&call).unwrap_err();
            assert!(matches!(err, Error::Config { .. }), "{err:?}");
        }
    }
}
