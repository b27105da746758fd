//! Configuration: [`ClientBuilder`] (obtained from [`Client::builder`]) and the
//! defaults. [`ClientBuilder::build`] checks everything and hands the prepared settings
//! to the transport ([`crate::transport`]); nothing is sent while building. The
//! [`Upstream`] and [`AuthScheme`] it sets are in [`crate::upstream`].

use std::fmt;
use std::time::Duration;

use reqwest::header::HeaderValue;
use reqwest::Url;

use crate::classify;
use crate::client::Client;
use crate::error::{Error, Operation, Result};
use crate::retry::RetryPolicy;
use crate::transport::{Transport, TransportConfig};
use crate::upstream::{AgentaContract, AuthScheme, Upstream};

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
/// Default largest event a stream (watch, execution events) reads: the `data:` of one
/// server-sent event, summed over its lines. A server that sends more before ending the
/// event ends the stream with [`Error::Decode`](crate::Error::Decode).
///
/// ```
/// assert_eq!(gatehouse_client::DEFAULT_MAX_STREAM_EVENT_BYTES, 1024 * 1024);
/// ```
pub const DEFAULT_MAX_STREAM_EVENT_BYTES: usize = 1024 * 1024;

impl Client {
    /// Start configuring a client for the host at `base_url` (e.g.
    /// `http://127.0.0.1:8787`; for Gatehouse and Agenta the API lives under
    /// `{base_url}/api`, for AgentPlat at `{base_url}` itself: see [`Upstream`]).
    ///
    /// ```no_run
    /// let client = gatehouse_client::Client::builder("http://127.0.0.1:8787").build()?;
    /// # Ok::<(), gatehouse_client::Error>(())
    /// ```
    pub fn builder(base_url: impl Into<String>) -> ClientBuilder {
        ClientBuilder::new(base_url)
    }
}

/// Builds a [`Client`]. Obtain one from [`Client::builder`].
///
/// Its `Debug` output never shows the API key.
///
/// ```no_run
/// use std::time::Duration;
/// let client = gatehouse_client::Client::builder("http://127.0.0.1:8787")
///     .api_key("gh_live_...")
///     .project_id("019fac94-0000-7000-8000-000000000000")
///     .timeout(Duration::from_secs(10))
///     .build()?;
/// # Ok::<(), gatehouse_client::Error>(())
/// ```
#[derive(Clone)]
pub struct ClientBuilder {
    base_url: String,
    upstream: Upstream,
    api_key: Option<String>,
    auth_scheme: Option<AuthScheme>,
    project_id: Option<String>,
    tenant: Option<String>,
    participant_id: Option<String>,
    timeout: Duration,
    connect_timeout: Duration,
    stream_idle_timeout: Duration,
    retry: RetryPolicy,
    runner_url: Option<String>,
    runner_token: Option<String>,
    max_response_bytes: usize,
    max_stream_event_bytes: usize,
    user_agent: Option<String>,
    agenta_contract: Option<AgentaContract>,
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("base_url", &self.base_url)
            .field("upstream", &self.upstream)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("auth_scheme", &self.auth_scheme)
            .field("project_id", &self.project_id)
            .field("tenant", &self.tenant)
            .field("participant_id", &self.participant_id)
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
            .field("max_stream_event_bytes", &self.max_stream_event_bytes)
            .field("agenta_contract", &self.agenta_contract)
            .finish()
    }
}

impl ClientBuilder {
    pub(crate) fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            upstream: Upstream::default(),
            api_key: None,
            auth_scheme: None,
            project_id: None,
            tenant: None,
            participant_id: None,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            stream_idle_timeout: DEFAULT_STREAM_IDLE_TIMEOUT,
            retry: RetryPolicy::default(),
            runner_url: None,
            runner_token: None,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_stream_event_bytes: DEFAULT_MAX_STREAM_EVENT_BYTES,
            user_agent: None,
            agenta_contract: None,
        }
    }

    /// The API key, sent as `Authorization: <scheme> <key>` on every call.
    ///
    /// ```no_run
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8787").api_key("secret");
    /// # let _ = b;
    /// ```
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Which kind of host the base URL is (default [`Upstream::Gatehouse`]): it decides
    /// the paths, the tenancy and the identity every call carries.
    ///
    /// ```no_run
    /// use gatehouse_client::Upstream;
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8787")
    ///     .upstream(Upstream::AgentPlat)
    ///     .tenant("tenant-1")
    ///     .participant_id("human-1");
    /// # let _ = b;
    /// ```
    pub fn upstream(mut self, upstream: Upstream) -> Self {
        self.upstream = upstream;
        self
    }

    /// The tenant, sent as `X-Agentplat-Tenant-Id: <tenant>` on every call: what
    /// AgentPlat's default authentication (`headerTenantAuth`) requires, and what
    /// Gatehouse's server reads as the project on AgentPlat's root paths.
    ///
    /// ```no_run
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8787").tenant("tenant-1");
    /// # let _ = b;
    /// ```
    pub fn tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = Some(tenant.into());
        self
    }

    /// Who requests interventions, sent as `requestedByParticipantId` in their body: an
    /// AgentPlat host whose authentication names no actor (its default) takes the
    /// requester from there (a human room participant with `run.intervene`; else 403).
    /// A host that authenticates the actor (Gatehouse's server) ignores it.
    ///
    /// ```no_run
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8787").participant_id("human-1");
    /// # let _ = b;
    /// ```
    pub fn participant_id(mut self, participant_id: impl Into<String>) -> Self {
        self.participant_id = Some(participant_id.into());
        self
    }

    /// How the key is spelled in the `Authorization` header (default: the upstream's,
    /// `Bearer`, or `ApiKey` for [`Upstream::Agenta`]).
    ///
    /// ```no_run
    /// use gatehouse_client::AuthScheme;
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8787").auth_scheme(AuthScheme::ApiKey);
    /// # let _ = b;
    /// ```
    pub fn auth_scheme(mut self, scheme: AuthScheme) -> Self {
        self.auth_scheme = Some(scheme);
        self
    }

    /// The project, sent as `?project_id=` on every Gatehouse and Agenta call (never to
    /// AgentPlat, which scopes by tenant).
    ///
    /// ```no_run
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8787").project_id("019fac94-...");
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
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8787").timeout(std::time::Duration::from_secs(5));
    /// # let _ = b;
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Time limit for establishing a connection (default 10 s).
    ///
    /// ```no_run
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8787").connect_timeout(std::time::Duration::from_secs(2));
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
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8787").stream_idle_timeout(std::time::Duration::from_secs(30));
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
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8787").retry_policy(RetryPolicy::none());
    /// # let _ = b;
    /// ```
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// The runner's base URL for `POST {runner}/run` (default: the base URL).
    ///
    /// ```no_run
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8787").runner_url("http://127.0.0.1:8081");
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
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8787").runner_token("runner-secret");
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
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8787").max_response_bytes(1 << 20);
    /// # let _ = b;
    /// ```
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// The largest event a stream reads (default
    /// [`DEFAULT_MAX_STREAM_EVENT_BYTES`]): the `data:` of one server-sent event. A
    /// server that sends more before the event ends (a broken or hostile one that never
    /// sends the blank line) ends the stream with [`Error::Decode`], so a stream's memory
    /// stays bounded.
    ///
    /// ```no_run
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8787").max_stream_event_bytes(256 * 1024);
    /// # let _ = b;
    /// ```
    pub fn max_stream_event_bytes(mut self, bytes: usize) -> Self {
        self.max_stream_event_bytes = bytes;
        self
    }

    /// Pin the form of Agenta's session contract the host speaks (default: learned from
    /// its capabilities: Gatehouse's `GET /api/capabilities` listing `durable_approvals`,
    /// or an Agenta session snapshot's `capabilities.durable_approvals`). Pinned, nothing
    /// is asked: [`AgentaContract::Durable`] answers gates with the durable respond and
    /// allows Stop; [`AgentaContract::Legacy`] keeps the respond of older hosts and
    /// refuses the durable calls without a request. Ignored on AgentPlat.
    ///
    /// ```
    /// use gatehouse_client::{AgentaContract, Upstream};
    /// let client = gatehouse_client::Client::builder("http://127.0.0.1:9")
    ///     .upstream(Upstream::Agenta)
    ///     .agenta_contract(AgentaContract::Durable)
    ///     .build()?;
    /// assert_eq!(client.agenta_contract(), Some(AgentaContract::Durable));
    /// # Ok::<(), gatehouse_client::Error>(())
    /// ```
    pub fn agenta_contract(mut self, contract: AgentaContract) -> Self {
        self.agenta_contract = Some(contract);
        self
    }

    /// The `User-Agent` header (default `gatehouse-client/<version>`).
    ///
    /// ```no_run
    /// let b = gatehouse_client::Client::builder("http://127.0.0.1:8787").user_agent("my-app/1.0");
    /// # let _ = b;
    /// ```
    pub fn user_agent(mut self, agent: impl Into<String>) -> Self {
        self.user_agent = Some(agent.into());
        self
    }

    /// Check the configuration and build the client (one connection pool).
    ///
    /// Fails with [`Error::Config`] for a base URL that is not `http(s)://host[/prefix]`,
    /// a key or tenant that cannot be a header value, or a blank tenant or participant.
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
        let scheme = self
            .auth_scheme
            .unwrap_or_else(|| self.upstream.default_auth_scheme());
        let auth = match &self.api_key {
            Some(key) => Some(sensitive_header(&format!("{} {}", scheme.prefix(), key))?),
            None => None,
        };
        let tenant = match &self.tenant {
            Some(tenant) => Some(tenant_header(tenant)?),
            None => None,
        };
        let participant_id = match &self.participant_id {
            Some(id) if id.trim().is_empty() => {
                return Err(Error::Config {
                    operation: Operation::BuildClient,
                    reason: "the participant id is blank".to_string(),
                })
            }
            Some(id) => Some(id.trim().to_string()),
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
        let upstream = self.upstream;
        Ok(Client::new(
            Transport::new(TransportConfig {
                http,
                upstream,
                base,
                runner_base,
                auth,
                runner_auth,
                secrets,
                project_id: self.project_id,
                tenant,
                participant_id,
                timeout: self.timeout,
                stream_idle_timeout: self.stream_idle_timeout,
                retry: self.retry,
                max_response_bytes: self.max_response_bytes,
                max_stream_event_bytes: self.max_stream_event_bytes,
            }),
            self.agenta_contract,
        ))
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

fn tenant_header(tenant: &str) -> Result<HeaderValue> {
    let config = |reason: &str| Error::Config {
        operation: Operation::BuildClient,
        reason: reason.to_string(),
    };
    let tenant = tenant.trim();
    if tenant.is_empty() {
        return Err(config("the tenant is blank"));
    }
    HeaderValue::from_str(tenant)
        .map_err(|_| config("the tenant contains characters not allowed in an HTTP header"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_redacts_the_key() {
        let c = Client::builder("http://127.0.0.1:9")
            .api_key("k-secret")
            .project_id("p 1")
            .build()
            .unwrap();
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
        for builder in [
            Client::builder("http://x").tenant("  "),
            Client::builder("http://x").tenant("a\nb"),
            Client::builder("http://x").participant_id(""),
        ] {
            let err = builder.build().unwrap_err();
            assert!(matches!(err, Error::Config { .. }), "{err:?}");
        }
        let err = "agentplat2".parse::<Upstream>().unwrap_err();
        assert!(
            err.to_string().contains("gatehouse, agentplat or agenta"),
            "{err}"
        );
        assert_eq!(
            " AgentPlat ".parse::<Upstream>().unwrap(),
            Upstream::AgentPlat
        );
    }
}
