//! [`Client`] and [`ClientBuilder`]: configuration, the connection pool, and the one
//! place where HTTP calls are made, retried, traced and mapped onto [`Error`].

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use gatehouse_wire::capabilities::{CapabilitiesResponse, Capability};
use rand::Rng;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use reqwest::{Method, StatusCode, Url};
use serde::de::DeserializeOwned;
use tracing::{field, Instrument};

use crate::capabilities::Capabilities;
use crate::classify;
use crate::error::{Error, Operation, Result};
use crate::interactions::Interactions;
use crate::runs::Runs;
use crate::service::Service;

/// Default per-call timeout.
///
/// ```
/// assert_eq!(gatehouse_client::DEFAULT_TIMEOUT.as_secs(), 30);
/// ```
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default connect timeout.
///
/// ```
/// assert_eq!(gatehouse_client::DEFAULT_CONNECT_TIMEOUT.as_secs(), 10);
/// ```
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default idle timeout of a streaming response (watch, run stream).
///
/// ```
/// assert_eq!(gatehouse_client::DEFAULT_STREAM_IDLE_TIMEOUT.as_secs(), 90);
/// ```
pub const DEFAULT_STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// Default largest response body the client reads (success bodies).
///
/// ```
/// assert_eq!(gatehouse_client::DEFAULT_MAX_RESPONSE_BYTES, 16 * 1024 * 1024);
/// ```
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;
/// Largest error body the client reads before classifying it.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// How the API key is sent in the `Authorization` header.
///
/// ```
/// use gatehouse_client::AuthScheme;
/// assert_eq!(AuthScheme::default(), AuthScheme::Bearer);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum AuthScheme {
    /// `Authorization: Bearer <key>`.
    #[default]
    Bearer,
    /// `Authorization: ApiKey <key>` (Agenta's spelling).
    ApiKey,
}

impl AuthScheme {
    fn prefix(self) -> &'static str {
        match self {
            Self::Bearer => "Bearer",
            Self::ApiKey => "ApiKey",
        }
    }
}

/// Bounded, jittered retries for reads (and for a respond's re-send under the same
/// `Idempotency-Key`). Attempt `n` (from 1) waits a random time in
/// `[0, min(max_backoff, initial_backoff * 2^(n-1))]` before trying again; a 429's
/// `Retry-After` is honoured when it is not longer than `max_backoff`.
///
/// ```
/// use std::time::Duration;
/// use gatehouse_client::RetryPolicy;
/// let policy = RetryPolicy { max_attempts: 4, initial_backoff: Duration::from_millis(50), max_backoff: Duration::from_secs(1) };
/// assert_eq!(RetryPolicy::none().max_attempts, 1);
/// # let _ = policy;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Total tries, the first included (1 = no retry).
    pub max_attempts: u32,
    /// Upper bound of the first backoff.
    pub initial_backoff: Duration,
    /// Upper bound of any backoff.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    ///
    /// ```
    /// assert_eq!(gatehouse_client::RetryPolicy::none().max_attempts, 1);
    /// ```
    pub fn none() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// The jittered delay before attempt `attempt + 1` (`attempt` counts from 1).
    pub(crate) fn backoff(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(hint) = retry_after {
            if hint <= self.max_backoff {
                return hint;
            }
        }
        let exp = attempt.saturating_sub(1).min(16);
        let cap = self
            .initial_backoff
            .saturating_mul(1u32 << exp)
            .min(self.max_backoff);
        let millis = cap.as_millis().min(u128::from(u64::MAX)) as u64;
        if millis == 0 {
            return Duration::ZERO;
        }
        Duration::from_millis(rand::thread_rng().gen_range(0..=millis))
    }
}

/// Builds a [`Client`]. Obtain one from [`Client::builder`].
///
/// Its `Debug` output never shows the API key.
///
/// ```no_run
/// use std::time::Duration;
/// let client = gatehouse_client::Client::builder("http://127.0.0.1:8080")
///     .api_key("gh_live_...")
///     .project_id("019fac94-0000-7000-8000-000000000000")
///     .timeout(Duration::from_secs(10))
///     .build()?;
/// # Ok::<(), gatehouse_client::Error>(())
/// ```
#[derive(Clone)]
pub struct ClientBuilder {
    base_url: String,
    api_key: Option<String>,
    auth_scheme: AuthScheme,
    project_id: Option<String>,
    timeout: Duration,
    connect_timeout: Duration,
    stream_idle_timeout: Duration,
    retry: RetryPolicy,
    runner_url: Option<String>,
    runner_token: Option<String>,
    max_response_bytes: usize,
    user_agent: Option<String>,
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("auth_scheme", &self.auth_scheme)
            .field("project_id", &self.project_id)
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("stream_idle_timeout", &self.stream_idle_timeout)
            .field("retry", &self.retry)
            .field("runner_url", &self.runner_url)
            .field(
                "runner_token",
                &self.runner_token.as_ref().map(|_| "[redacted]"),
            )
            .field("max_response_bytes", &self.max_response_bytes)
            .finish()
    }
}

impl ClientBuilder {
    fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            auth_scheme: AuthScheme::default(),
            project_id: None,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            stream_idle_timeout: DEFAULT_STREAM_IDLE_TIMEOUT,
            retry: RetryPolicy::default(),
            runner_url: None,
            runner_token: None,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            user_agent: None,
        }
    }

    /// The API key, sent as `Authorization: <scheme> <key>` on every call.
    ///
    /// ```no_run
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8080").api_key("secret");
    /// # let _ = b;
    /// ```
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// How the key is spelled in the `Authorization` header (default `Bearer`).
    ///
    /// ```no_run
    /// use gatehouse_client::AuthScheme;
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8080").auth_scheme(AuthScheme::ApiKey);
    /// # let _ = b;
    /// ```
    pub fn auth_scheme(mut self, scheme: AuthScheme) -> Self {
        self.auth_scheme = scheme;
        self
    }

    /// The project, sent as `?project_id=` on every interaction call.
    ///
    /// ```no_run
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8080").project_id("019fac94-...");
    /// # let _ = b;
    /// ```
    pub fn project_id(mut self, project_id: impl Into<String>) -> Self {
        self.project_id = Some(project_id.into());
        self
    }

    /// Total time limit of one HTTP attempt, from connecting to the end of the body
    /// (default 30 s). Streams are limited by [`stream_idle_timeout`](Self::stream_idle_timeout) instead.
    ///
    /// ```no_run
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8080").timeout(std::time::Duration::from_secs(5));
    /// # let _ = b;
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Time limit for establishing a connection (default 10 s).
    ///
    /// ```no_run
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8080").connect_timeout(std::time::Duration::from_secs(2));
    /// # let _ = b;
    /// ```
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long a streaming response (watch, run stream) may stay silent before the
    /// client gives up on it (default 90 s). A watch reconnects; a run stream fails
    /// with [`Error::Timeout`].
    ///
    /// ```no_run
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8080").stream_idle_timeout(std::time::Duration::from_secs(30));
    /// # let _ = b;
    /// ```
    pub fn stream_idle_timeout(mut self, timeout: Duration) -> Self {
        self.stream_idle_timeout = timeout;
        self
    }

    /// The retry policy of reads and of a respond's re-send (default: 3 attempts,
    /// 100 ms initial, 2 s max backoff).
    ///
    /// ```no_run
    /// use gatehouse_client::RetryPolicy;
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8080").retry_policy(RetryPolicy::none());
    /// # let _ = b;
    /// ```
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// The runner's base URL for `POST {runner}/run` (default: the base URL).
    ///
    /// ```no_run
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8080").runner_url("http://127.0.0.1:8081");
    /// # let _ = b;
    /// ```
    pub fn runner_url(mut self, url: impl Into<String>) -> Self {
        self.runner_url = Some(url.into());
        self
    }

    /// The runner token, sent as `Authorization: Bearer <token>` on `/run`
    /// (default: the API key).
    ///
    /// ```no_run
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8080").runner_token("runner-secret");
    /// # let _ = b;
    /// ```
    pub fn runner_token(mut self, token: impl Into<String>) -> Self {
        self.runner_token = Some(token.into());
        self
    }

    /// Largest success body the client reads (default 16 MiB); a bigger one fails
    /// with [`Error::Decode`].
    ///
    /// ```no_run
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8080").max_response_bytes(1 << 20);
    /// # let _ = b;
    /// ```
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// The `User-Agent` header (default `gatehouse-client/<version>`).
    ///
    /// ```no_run
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8080").user_agent("my-app/1.0");
    /// # let _ = b;
    /// ```
    pub fn user_agent(mut self, agent: impl Into<String>) -> Self {
        self.user_agent = Some(agent.into());
        self
    }

    /// Check the configuration and build the client (one connection pool).
    ///
    /// Fails with [`Error::Config`] for a base URL that is not `http(s)://host[/prefix]`
    /// or a key that cannot be a header value.
    ///
    /// ```
    /// let err = gatehouse_client::Client::builder("not a url").build().unwrap_err();
    /// assert!(matches!(err, gatehouse_client::Error::Config { .. }));
    /// ```
    pub fn build(self) -> Result<Client> {
        let base = parse_base(&self.base_url, "base URL")?;
        let runner_base = match &self.runner_url {
            Some(url) => parse_base(url, "runner URL")?,
            None => base.clone(),
        };
        let auth = match &self.api_key {
            Some(key) => Some(sensitive_header(&format!(
                "{} {}",
                self.auth_scheme.prefix(),
                key
            ))?),
            None => None,
        };
        let runner_auth = match self.runner_token.as_ref().or(self.api_key.as_ref()) {
            Some(token) => Some(sensitive_header(&format!("Bearer {token}"))?),
            None => None,
        };
        let mut secrets: Vec<String> = Vec::new();
        secrets.extend(self.api_key.iter().filter(|k| !k.is_empty()).cloned());
        secrets.extend(self.runner_token.iter().filter(|k| !k.is_empty()).cloned());
        let user_agent = self
            .user_agent
            .clone()
            .unwrap_or_else(|| format!("gatehouse-client/{}", env!("CARGO_PKG_VERSION")));
        let http = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .user_agent(user_agent)
            .build()
            .map_err(|e| Error::Config {
                operation: Operation::BuildClient,
                reason: format!("cannot build the HTTP client: {}", classify::chain_text(&e)),
            })?;
        Ok(Client {
            inner: Arc::new(Inner {
                http,
                base,
                runner_base,
                auth,
                runner_auth,
                secrets,
                project_id: self.project_id,
                timeout: self.timeout,
                stream_idle_timeout: self.stream_idle_timeout,
                retry: self.retry,
                max_response_bytes: self.max_response_bytes,
                caps: RwLock::new(CapabilityCache::default()),
            }),
        })
    }
}

fn parse_base(raw: &str, what: &str) -> Result<Url> {
    let config = |reason: String| Error::Config {
        operation: Operation::BuildClient,
        reason,
    };
    let url = Url::parse(raw.trim()).map_err(|e| config(format!("{what} is not a URL: {e}")))?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(config(format!(
            "{what} must be http or https, not {}",
            url.scheme()
        )));
    }
    if url.cannot_be_a_base() || url.host().is_none() {
        return Err(config(format!("{what} has no host")));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(config(format!("{what} must not have a query or fragment")));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(config(format!(
            "{what} must not carry credentials; use api_key"
        )));
    }
    Ok(url)
}

fn sensitive_header(value: &str) -> Result<HeaderValue> {
    let mut header = HeaderValue::from_str(value).map_err(|_| Error::Config {
        operation: Operation::BuildClient,
        reason: "the API key or runner token contains characters not allowed in an HTTP header"
            .to_string(),
    })?;
    header.set_sensitive(true);
    Ok(header)
}

/// What the client has learned about the host's capabilities (C5).
#[derive(Debug, Default)]
pub(crate) struct CapabilityCache {
    /// The discovery answer, once read.
    pub discovered: Option<Arc<CapabilitiesResponse>>,
    /// True once `GET /api/capabilities` answered route-not-found.
    pub discovery_absent: bool,
    /// Capabilities learned absent from a route-not-found 404.
    pub absent: HashSet<Capability>,
}

pub(crate) struct Inner {
    pub http: reqwest::Client,
    pub base: Url,
    pub runner_base: Url,
    auth: Option<HeaderValue>,
    runner_auth: Option<HeaderValue>,
    secrets: Vec<String>,
    pub project_id: Option<String>,
    pub timeout: Duration,
    pub stream_idle_timeout: Duration,
    pub retry: RetryPolicy,
    pub max_response_bytes: usize,
    pub caps: RwLock<CapabilityCache>,
}

/// A Gatehouse (or Agenta/AgentPlat-compatible) control-plane client.
///
/// Cheap to clone: clones share one connection pool and one capability cache.
/// Hands out sub-clients per domain. Its `Debug` output never shows the API key.
///
/// ```no_run
/// # async fn demo() -> Result<(), gatehouse_client::Error> {
/// let client = gatehouse_client::Client::builder("http://127.0.0.1:8080")
///     .api_key(std::env::var("GATEHOUSE_API_KEY").unwrap_or_default())
///     .project_id("019fac94-0000-7000-8000-000000000000")
///     .build()?;
/// let pending = client.interactions().list_pending(None).await?;
/// println!("{} gates wait for an answer", pending.len());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("base_url", &self.inner.base.as_str())
            .field("runner_url", &self.inner.runner_base.as_str())
            .field("api_key", &self.inner.auth.as_ref().map(|_| "[redacted]"))
            .field("project_id", &self.inner.project_id)
            .field("timeout", &self.inner.timeout)
            .field("retry", &self.inner.retry)
            .finish()
    }
}

impl Client {
    /// Start configuring a client for the host at `base_url` (e.g.
    /// `http://127.0.0.1:8080`; the API lives under `{base_url}/api`).
    ///
    /// ```no_run
    /// let client = gatehouse_client::Client::builder("http://127.0.0.1:8080").build()?;
    /// # Ok::<(), gatehouse_client::Error>(())
    /// ```
    pub fn builder(base_url: impl Into<String>) -> ClientBuilder {
        ClientBuilder::new(base_url)
    }

    /// The session-interaction endpoints (A5): query, get, respond, approve-all, watch.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// let row = client.interactions().get("019fac94-0000-7000-8000-000000000001").await?;
    /// # let _ = row; Ok(()) }
    /// ```
    pub fn interactions(&self) -> Interactions {
        Interactions::new(self.clone())
    }

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

    /// The service tier (the reference control plane's own routes): invoke a turn, list
    /// a session's turns, commit a workflow revision.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// let turns = client.service().turns("48268312-0000-7000-8000-000000000000").await?;
    /// # let _ = turns; Ok(()) }
    /// ```
    pub fn service(&self) -> Service {
        Service::new(self.clone())
    }

    /// Capability discovery (C5).
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// use gatehouse_wire::capabilities::Capability;
    /// client.capabilities().require(Capability::Interactions).await?;
    /// # Ok(()) }
    /// ```
    pub fn capabilities(&self) -> Capabilities {
        Capabilities::new(self.clone())
    }

    /// Execution sessions and run interventions (B2, C6): read a run's session and
    /// events, watch them, request an intervention and wait for the persisted evidence.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// let session = client.execution().get_session("room-1", "es-1").await?;
    /// # let _ = session; Ok(()) }
    /// ```
    pub fn execution(&self) -> crate::execution::Execution {
        crate::execution::Execution::new(self.clone())
    }

    /// The base URL the client talks to.
    ///
    /// ```
    /// let client = gatehouse_client::Client::builder("http://127.0.0.1:8080").build()?;
    /// assert_eq!(client.base_url(), "http://127.0.0.1:8080/");
    /// # Ok::<(), gatehouse_client::Error>(())
    /// ```
    pub fn base_url(&self) -> &str {
        self.inner.base.as_str()
    }

    /// The project id sent with every interaction call, if configured.
    ///
    /// ```
    /// let client = gatehouse_client::Client::builder("http://127.0.0.1:8080").project_id("p1").build()?;
    /// assert_eq!(client.project_id(), Some("p1"));
    /// # Ok::<(), gatehouse_client::Error>(())
    /// ```
    pub fn project_id(&self) -> Option<&str> {
        self.inner.project_id.as_deref()
    }
}

// ---------------------------------------------------------------------------------
// The call machinery.
// ---------------------------------------------------------------------------------

/// Which host and credentials a call uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// `{base}/api/...` with the API key and `project_id`.
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

/// One HTTP call, before it is sent.
pub(crate) struct Call {
    pub operation: Operation,
    pub method: Method,
    pub target: Target,
    /// Path segments after the base (`["api", "sessions", "interactions", id]`).
    pub segments: Vec<String>,
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
    pub fn new(operation: Operation, method: Method, segments: &[&str]) -> Self {
        Self {
            operation,
            method,
            target: Target::Api,
            segments: segments.iter().map(|s| s.to_string()).collect(),
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

impl Client {
    /// The configured secrets (API key, runner token), to scrub from kept texts.
    pub(crate) fn secrets(&self) -> &[String] {
        &self.inner.secrets
    }

    fn url_for(&self, call: &Call) -> Result<Url> {
        let mut url = match call.target {
            Target::Api => self.inner.base.clone(),
            Target::Runner => self.inner.runner_base.clone(),
        };
        {
            let mut segments = url.path_segments_mut().map_err(|_| Error::Config {
                operation: call.operation,
                reason: "base URL cannot take a path".to_string(),
            })?;
            segments.pop_if_empty();
            for segment in &call.segments {
                segments.push(segment);
            }
        }
        // A trailing empty segment keeps Agenta's trailing slash (`/interactions/`).
        {
            let mut pairs = url.query_pairs_mut();
            if call.target == Target::Api {
                if let Some(project) = &self.inner.project_id {
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

    /// Fail at once when the operation's capability is known absent (no network).
    pub(crate) fn check_capability(&self, operation: Operation) -> Result<()> {
        let Some(capability) = operation.capability() else {
            if operation == Operation::GetCapabilities && self.caps_read().discovery_absent {
                return Err(Error::CapabilityUnavailable {
                    operation,
                    capability: None,
                });
            }
            return Ok(());
        };
        let caps = self.caps_read();
        let known_absent = caps.absent.contains(&capability)
            || caps.discovered.as_ref().is_some_and(|d| !d.has(capability));
        if known_absent {
            return Err(Error::CapabilityUnavailable {
                operation,
                capability: Some(capability),
            });
        }
        Ok(())
    }

    pub(crate) fn caps_read(&self) -> std::sync::RwLockReadGuard<'_, CapabilityCache> {
        // A poisoned lock only means a panic elsewhere while holding it; the cache
        // holds plain facts, still valid.
        self.inner
            .caps
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn caps_write(&self) -> std::sync::RwLockWriteGuard<'_, CapabilityCache> {
        self.inner
            .caps
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn learn_absent(&self, operation: Operation) -> Error {
        let capability = operation.capability();
        {
            let mut caps = self.caps_write();
            match capability {
                Some(c) => {
                    caps.absent.insert(c);
                }
                None => caps.discovery_absent = true,
            }
        }
        tracing::info!(
            operation = %operation,
            capability = capability.map(|c| c.as_str()).unwrap_or("capabilities"),
            "host does not serve this capability; cached"
        );
        Error::CapabilityUnavailable {
            operation,
            capability,
        }
    }

    /// Send `call`, retrying as its [`Replay`] allows, and return the success answer
    /// with its body unread. Traced in one span.
    pub(crate) async fn send(&self, call: &Call) -> Result<Answered> {
        let span = tracing::info_span!(
            "gatehouse_call",
            operation = %call.operation,
            method = %call.method,
            status = field::Empty,
            attempts = field::Empty,
            duration_ms = field::Empty,
            outcome = field::Empty,
        );
        let started = Instant::now();
        let result = self.send_inner(call).instrument(span.clone()).await;
        span.record("duration_ms", started.elapsed().as_millis() as u64);
        match &result {
            Ok(answer) => {
                span.record("status", answer.status.as_u16());
                span.record("outcome", "ok");
            }
            Err(err) => {
                if let Some(status) = err.http_status() {
                    span.record("status", status);
                }
                span.record("outcome", err.kind().as_str());
            }
        }
        result
    }

    async fn send_inner(&self, call: &Call) -> Result<Answered> {
        self.check_capability(call.operation)?;
        let url = self.url_for(call)?;
        let policy = self.inner.retry;
        let max_attempts = match call.replay {
            Replay::Never => 1,
            Replay::Safe => policy.max_attempts.max(1),
        };
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            tracing::Span::current().record("attempts", attempt);
            let outcome = self.attempt(call, &url).await;
            let (err, retry_after) = match outcome {
                Ok(answer) => return Ok(answer),
                Err(failure) => failure,
            };
            if attempt >= max_attempts || !err.is_retryable() {
                return Err(err);
            }
            let delay = policy.backoff(attempt, retry_after);
            tracing::debug!(
                attempt,
                delay_ms = delay.as_millis() as u64,
                error = err.kind().as_str(),
                "retrying"
            );
            tokio::time::sleep(delay).await;
        }
    }

    /// One attempt: the answer, or the error with the server's `Retry-After`.
    async fn attempt(
        &self,
        call: &Call,
        url: &Url,
    ) -> std::result::Result<Answered, (Error, Option<Duration>)> {
        let mut request = self
            .inner
            .http
            .request(call.method.clone(), url.clone())
            .header(ACCEPT, call.accept);
        let auth = match call.target {
            Target::Api => self.inner.auth.as_ref(),
            Target::Runner => self.inner.runner_auth.as_ref(),
        };
        if let Some(auth) = auth {
            request = request.header(AUTHORIZATION, auth.clone());
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
            request = request.timeout(self.inner.timeout);
        }
        let response = request.send().await.map_err(|e| {
            (
                classify::transport_error(call.operation, e, self.inner.timeout),
                None,
            )
        })?;
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
            let limit = self.inner.max_response_bytes;
            let (bytes, truncated) =
                read_bounded(response, limit, call.operation, self.inner.timeout)
                    .await
                    .map_err(|e| (e, None))?;
            if truncated {
                return Err((
                    Error::Decode {
                        operation: call.operation,
                        status: status.as_u16(),
                        path: ".".to_string(),
                        reason: format!("response body exceeds the limit of {limit} bytes"),
                        snippet: String::new(),
                    },
                    None,
                ));
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
            self.inner.timeout,
        )
        .await
        .map(|(bytes, _)| bytes)
        .unwrap_or_default();
        let info = classify::parse_error_body(&body);
        if classify::is_route_not_found(status.as_u16(), &info) {
            return Err((self.learn_absent(call.operation), None));
        }
        let err = classify::classify(
            call.operation,
            status.as_u16(),
            retry_after,
            &body,
            self.secrets(),
        );
        Err((err, retry_after))
    }

    /// Send `call` and decode its JSON answer as `T`.
    pub(crate) async fn call_json<T: DeserializeOwned>(&self, call: &Call) -> Result<T> {
        let answered = self.send(call).await?;
        let status = answered.status.as_u16();
        let body = match answered.body {
            AnswerBody::Full(bytes) => bytes,
            AnswerBody::Stream(response) => {
                read_bounded(
                    response,
                    self.inner.max_response_bytes,
                    call.operation,
                    self.inner.timeout,
                )
                .await?
                .0
            }
        };
        gatehouse_wire::from_json_slice::<T>(&body)
            .map_err(|e| classify::decode_error(call.operation, status, e, &body, self.secrets()))
    }
}

/// Read at most `limit` bytes of a body; the flag says whether more was left unread.
pub(crate) async fn read_bounded(
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

    fn client(base: &str) -> Client {
        Client::builder(base)
            .api_key("k-secret")
            .project_id("p 1")
            .build()
            .unwrap()
    }

    #[test]
    fn urls_keep_prefix_encode_ids_and_add_project() {
        let c = client("http://127.0.0.1:9/prefix/");
        let call = Call::new(
            Operation::GetInteraction,
            Method::GET,
            &["api", "sessions", "interactions", "a/b c"],
        );
        let url = c.url_for(&call).unwrap();
        assert_eq!(
            url.as_str(),
            "http://127.0.0.1:9/prefix/api/sessions/interactions/a%2Fb%20c?project_id=p+1"
        );
        let call = Call::new(
            Operation::CreateInteraction,
            Method::POST,
            &["api", "sessions", "interactions", ""],
        );
        assert!(c.url_for(&call).unwrap().path().ends_with("/interactions/"));
    }

    #[test]
    fn debug_redacts_the_key() {
        let c = client("http://127.0.0.1:9");
        assert!(!format!("{c:?}").contains("k-secret"));
        let b = Client::builder("http://x")
            .api_key("k-secret")
            .runner_token("r-secret");
        let text = format!("{b:?}");
        assert!(
            !text.contains("k-secret") && !text.contains("r-secret"),
            "{text}"
        );
    }

    #[test]
    fn bad_configuration_is_typed() {
        for base in ["ftp://x", "http://x/?a=1", "http://user:pw@x", "nope"] {
            let err = Client::builder(base).build().unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::Config {
                        operation: Operation::BuildClient,
                        ..
                    }
                ),
                "{base}"
            );
        }
        let err = Client::builder("http://x")
            .api_key("bad\nkey")
            .build()
            .unwrap_err();
        assert!(!err.to_string().contains("bad\nkey"));
    }

    #[test]
    fn backoff_is_bounded() {
        let p = RetryPolicy {
            max_attempts: 10,
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(40),
        };
        for attempt in 1..20 {
            assert!(p.backoff(attempt, None) <= Duration::from_millis(40));
        }
        assert_eq!(
            p.backoff(1, Some(Duration::from_millis(30))),
            Duration::from_millis(30)
        );
        assert!(p.backoff(1, Some(Duration::from_secs(60))) <= Duration::from_millis(40));
    }
}
