//! [`Client`]: the cheap, cloneable handle every sub-client holds. It owns the
//! [`Transport`] and the [`CapabilityCache`], and is the one place a call is made:
//! [`Client::send`] opens the `gatehouse_call` span, asks the capability cache, lets the
//! transport send (and retry), and teaches the cache what a route-not-found answer
//! revealed.
//!
//! It knows nothing above it: [`Client::builder`] is in `config.rs`, and each sub-client's
//! module adds the method that hands it out ([`Client::interactions`] in
//! `interactions.rs`, and so on).

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use serde::de::DeserializeOwned;
use tracing::{field, Instrument};

use crate::capability_cache::CapabilityCache;
use crate::error::{Error, Result};
use crate::transport::{Answered, Call, Transport};
use crate::upstream::{AgentaContract, Upstream};

/// A Gatehouse (or Agenta/AgentPlat-compatible) control-plane client.
///
/// Cheap to clone: clones share one connection pool and one capability cache.
/// Hands out sub-clients per domain. Its `Debug` output never shows the API key.
///
/// ```no_run
/// # async fn demo() -> Result<(), gatehouse_client::Error> {
/// let client = gatehouse_client::Client::builder("http://127.0.0.1:8787")
///     .api_key(std::env::var("GATEHOUSE_API_KEY").unwrap_or_default())
///     .project_id("019fac94-0000-7000-8000-000000000000")
///     .build()?;
/// let pending = client.interactions().list_pending(None).await?;
/// println!("{} gates wait for an answer", pending.len());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

/// What every clone of a [`Client`] shares.
struct Inner {
    transport: Transport,
    capabilities: CapabilityCache,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let transport = &self.inner.transport;
        f.debug_struct("Client")
            .field("base_url", &transport.base_url().as_str())
            .field("upstream", &transport.upstream())
            .field("tenant", &transport.tenant())
            .field("participant_id", &transport.participant_id())
            .field("runner_url", &transport.runner_url().as_str())
            .field("api_key", &transport.has_api_key().then_some("[redacted]"))
            .field("project_id", &transport.project_id())
            .field("timeout", &transport.timeout())
            .field("retry", &transport.retry_policy())
            .finish()
    }
}

impl Client {
    /// The base URL the client talks to.
    ///
    /// ```
    /// let client = gatehouse_client::Client::builder("http://127.0.0.1:8787").build()?;
    /// assert_eq!(client.base_url(), "http://127.0.0.1:8787/");
    /// # Ok::<(), gatehouse_client::Error>(())
    /// ```
    pub fn base_url(&self) -> &str {
        self.inner.transport.base_url().as_str()
    }

    /// The project id sent with every interaction call, if configured.
    ///
    /// ```
    /// let client = gatehouse_client::Client::builder("http://127.0.0.1:8787").project_id("p1").build()?;
    /// assert_eq!(client.project_id(), Some("p1"));
    /// # Ok::<(), gatehouse_client::Error>(())
    /// ```
    pub fn project_id(&self) -> Option<&str> {
        self.inner.transport.project_id()
    }

    /// Which kind of host this client talks to.
    ///
    /// ```
    /// use gatehouse_client::Upstream;
    /// let client = gatehouse_client::Client::builder("http://127.0.0.1:8787").upstream(Upstream::AgentPlat).build()?;
    /// assert_eq!(client.upstream(), Upstream::AgentPlat);
    /// # Ok::<(), gatehouse_client::Error>(())
    /// ```
    pub fn upstream(&self) -> Upstream {
        self.inner.transport.upstream()
    }

    /// The tenant sent as `X-Agentplat-Tenant-Id`, if configured.
    ///
    /// ```
    /// let client = gatehouse_client::Client::builder("http://127.0.0.1:8787").tenant("tenant-1").build()?;
    /// assert_eq!(client.tenant(), Some("tenant-1"));
    /// # Ok::<(), gatehouse_client::Error>(())
    /// ```
    pub fn tenant(&self) -> Option<&str> {
        self.inner.transport.tenant()
    }

    /// The participant sent as an intervention's `requestedByParticipantId`, if configured.
    ///
    /// ```
    /// let client = gatehouse_client::Client::builder("http://127.0.0.1:8787").participant_id("human-1").build()?;
    /// assert_eq!(client.participant_id(), Some("human-1"));
    /// # Ok::<(), gatehouse_client::Error>(())
    /// ```
    pub fn participant_id(&self) -> Option<&str> {
        self.inner.transport.participant_id()
    }

    /// The form of Agenta's session contract the host speaks, as far as this client
    /// knows (no network): pinned with
    /// [`ClientBuilder::agenta_contract`](crate::ClientBuilder::agenta_contract), or
    /// learned from the host's capabilities; `None` while unknown.
    ///
    /// ```
    /// let client = gatehouse_client::Client::builder("http://127.0.0.1:9").build()?;
    /// assert_eq!(client.agenta_contract(), None);
    /// # Ok::<(), gatehouse_client::Error>(())
    /// ```
    pub fn agenta_contract(&self) -> Option<AgentaContract> {
        self.inner.capabilities.agenta_contract()
    }
}

impl Client {
    pub(crate) fn new(transport: Transport, pinned: Option<AgentaContract>) -> Self {
        let capabilities = CapabilityCache::for_upstream(transport.upstream(), pinned);
        Self {
            inner: Arc::new(Inner {
                transport,
                capabilities,
            }),
        }
    }

    /// The transport: settings (timeouts, limits, retry policy) and body helpers for
    /// the sub-clients that read streams themselves.
    pub(crate) fn transport(&self) -> &Transport {
        &self.inner.transport
    }

    /// What this client (and its clones) learned about the host's capabilities.
    pub(crate) fn capability_cache(&self) -> &CapabilityCache {
        &self.inner.capabilities
    }

    /// Send `call`: fail at once when its capability is known absent, else let the
    /// transport send and retry it, and remember a route-not-found. Traced in one
    /// `gatehouse_call` span (operation, method, status, attempts, duration, outcome).
    pub(crate) async fn send(&self, call: &Call) -> Result<Answered> {
        // An operation without a route fails in the transport, before anything is sent.
        let method = self
            .inner
            .transport
            .route(call.operation)
            .map(|route| route.method.as_str())
            .unwrap_or_default();
        let span = tracing::info_span!(
            "gatehouse_call",
            operation = %call.operation,
            method = %method,
            status = field::Empty,
            attempts = field::Empty,
            duration_ms = field::Empty,
            outcome = field::Empty,
        );
        let started = Instant::now();
        let result = self.send_checked(call).instrument(span.clone()).await;
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

    async fn send_checked(&self, call: &Call) -> Result<Answered> {
        self.inner.capabilities.check(call.operation)?;
        let result = self.inner.transport.send(call).await;
        if let Err(Error::CapabilityUnavailable { operation, .. }) = &result {
            // From the network this means a route-not-found 404: remember it.
            self.inner.capabilities.learn_absent(*operation);
        }
        result
    }

    /// Send `call` and decode its JSON answer as `T`.
    pub(crate) async fn call_json<T: DeserializeOwned>(&self, call: &Call) -> Result<T> {
        let answered = self.send(call).await?;
        self.inner.transport.json(call.operation, answered).await
    }
}
