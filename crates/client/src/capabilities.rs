//! Capability discovery (CONTRACT.md C5): `GET /api/capabilities` when the host has
//! it; otherwise absence is learned from a route-not-found 404. Either way the fact is
//! kept in the client's [`CapabilityCache`], and a call to an absent capability fails
//! at once with [`Error::CapabilityUnavailable`]: no network, no retry.
//!
//! - [`CapabilityCache`]: what the client has learned, and the check every call passes
//!   before it is sent ([`Client::send`](crate::Client) asks it and teaches it).
//! - [`Capabilities`]: the public sub-client that reads and refreshes discovery.

use std::collections::HashSet;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use gatehouse_wire::capabilities::{CapabilitiesResponse, Capability};
use reqwest::Method;

use crate::client::Client;
use crate::config::Upstream;
use crate::error::{Error, Operation, Result};
use crate::transport::Call;

/// What the client has learned about the host's capabilities (C5), shared by every
/// clone of a client.
#[derive(Debug, Default)]
pub(crate) struct CapabilityCache {
    learned: RwLock<Learned>,
}

#[derive(Debug, Default)]
struct Learned {
    /// The discovery answer, once read.
    discovered: Option<Arc<CapabilitiesResponse>>,
    /// True once `GET /api/capabilities` answered route-not-found.
    discovery_absent: bool,
    /// Capabilities learned absent from a route-not-found 404.
    absent: HashSet<Capability>,
}

impl CapabilityCache {
    /// What is known before any call about a host of kind `upstream`: AgentPlat's Rooms
    /// API serves no interactions, no watch and no invoke; Agenta's API no execution
    /// sessions; neither has Gatehouse's discovery route.
    pub(crate) fn for_upstream(upstream: Upstream) -> Self {
        let cache = Self::default();
        {
            let mut learned = cache.write();
            match upstream {
                Upstream::Gatehouse => {}
                Upstream::AgentPlat => {
                    learned.discovery_absent = true;
                    learned.absent.extend([
                        Capability::Interactions,
                        Capability::InteractionWatch,
                        Capability::Invoke,
                        Capability::InteractionBatch,
                    ]);
                }
                Upstream::Agenta => {
                    learned.discovery_absent = true;
                    // Agenta answers gates one by one: approve-all fans out there.
                    learned.absent.extend([
                        Capability::Execution,
                        Capability::ExecutionEventStream,
                        Capability::InteractionBatch,
                    ]);
                }
            }
        }
        cache
    }

    fn read(&self) -> RwLockReadGuard<'_, Learned> {
        // A poisoned lock only means a panic elsewhere while holding it; the cache
        // holds plain facts, still valid.
        self.learned
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Learned> {
        self.learned
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Fail at once when the operation's capability is known absent (no network).
    pub(crate) fn check(&self, operation: Operation) -> Result<()> {
        let Some(capability) = operation.capability() else {
            if operation == Operation::GetCapabilities && self.read().discovery_absent {
                return Err(Error::CapabilityUnavailable {
                    operation,
                    capability: None,
                });
            }
            return Ok(());
        };
        let learned = self.read();
        let known_absent = learned.absent.contains(&capability)
            || learned
                .discovered
                .as_ref()
                .is_some_and(|d| !d.has(capability));
        if known_absent {
            return Err(Error::CapabilityUnavailable {
                operation,
                capability: Some(capability),
            });
        }
        Ok(())
    }

    /// Remember that the host answered `operation` with a route-not-found 404.
    pub(crate) fn learn_absent(&self, operation: Operation) {
        let capability = operation.capability();
        {
            let mut learned = self.write();
            match capability {
                Some(c) => {
                    learned.absent.insert(c);
                }
                None => learned.discovery_absent = true,
            }
        }
        tracing::info!(
            operation = %operation,
            capability = capability.map(|c| c.as_str()).unwrap_or("capabilities"),
            "host does not serve this capability; cached"
        );
    }

    /// Keep a discovery answer; it is the authority now: absences it contradicts are
    /// forgotten.
    fn learn_discovery(&self, response: &CapabilitiesResponse) {
        let mut learned = self.write();
        learned.absent.retain(|c| !response.has(*c));
        learned.discovered = Some(Arc::new(response.clone()));
    }

    fn discovered(&self) -> Option<Arc<CapabilitiesResponse>> {
        self.read().discovered.clone()
    }

    fn discovery_absent(&self) -> bool {
        self.read().discovery_absent
    }

    /// `Some(false)` when known absent, `Some(true)` when discovery listed it, `None`
    /// when unknown.
    fn known(&self, capability: Capability) -> Option<bool> {
        let learned = self.read();
        if learned.absent.contains(&capability) {
            return Some(false);
        }
        learned.discovered.as_ref().map(|d| d.has(capability))
    }
}

/// Capability discovery. Obtain with [`Client::capabilities`].
///
/// ```no_run
/// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
/// use gatehouse_wire::capabilities::Capability;
/// match client.capabilities().require(Capability::Execution).await {
///     Ok(()) => println!("interventions can be requested"),
///     Err(gatehouse_client::Error::CapabilityUnavailable { .. }) => println!("this host has no execution service"),
///     Err(other) => return Err(other),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Capabilities {
    client: Client,
}

impl Capabilities {
    pub(crate) fn new(client: Client) -> Self {
        Self { client }
    }

    /// The host's capabilities: read once (`GET /api/capabilities`), then from the
    /// client's cache. [`Error::CapabilityUnavailable`] with `capability: None` when the
    /// host has no discovery route (learned once, not asked again).
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// let caps = client.capabilities().get().await?;
    /// println!("{} {} serves {:?}", caps.service, caps.version, caps.capabilities);
    /// # Ok(()) }
    /// ```
    pub async fn get(&self) -> Result<CapabilitiesResponse> {
        if let Some(cached) = self.client.capability_cache().discovered() {
            return Ok((*cached).clone());
        }
        self.refresh().await
    }

    /// Read `GET /api/capabilities` again and replace the cached answer.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// let fresh = client.capabilities().refresh().await?;
    /// # let _ = fresh; Ok(()) }
    /// ```
    pub async fn refresh(&self) -> Result<CapabilitiesResponse> {
        let call = Call::new(
            Operation::GetCapabilities,
            Method::GET,
            &["api", "capabilities"],
        );
        let response: CapabilitiesResponse = self.client.call_json(&call).await?;
        self.client.capability_cache().learn_discovery(&response);
        Ok(response)
    }

    /// `Ok(())` unless `capability` is known to be absent, in which case
    /// [`Error::CapabilityUnavailable`]. Reads the discovery route once when nothing is
    /// known yet; on a host without that route, presence stays unknown (`Ok`) until a
    /// call learns it from a route-not-found 404.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// client.capabilities().require(gatehouse_wire::capabilities::Capability::InteractionWatch).await?;
    /// # Ok(()) }
    /// ```
    pub async fn require(&self, capability: Capability) -> Result<()> {
        if let Some(known) = self.known(capability) {
            return if known {
                Ok(())
            } else {
                Err(unavailable(capability))
            };
        }
        if self.client.capability_cache().discovery_absent() {
            return Ok(());
        }
        match self.get().await {
            Ok(response) if response.has(capability) => Ok(()),
            Ok(_) => Err(unavailable(capability)),
            Err(Error::CapabilityUnavailable {
                capability: None, ..
            }) => Ok(()),
            Err(other) => Err(other),
        }
    }

    /// What the client already knows, without any network: `Some(false)` when absent
    /// (from discovery or a route-not-found 404), `Some(true)` when discovery listed it,
    /// `None` when unknown.
    ///
    /// ```
    /// let client = gatehouse_client::Client::builder("http://127.0.0.1:9").build()?;
    /// assert_eq!(client.capabilities().known(gatehouse_wire::capabilities::Capability::Runs), None);
    /// # Ok::<(), gatehouse_client::Error>(())
    /// ```
    pub fn known(&self, capability: Capability) -> Option<bool> {
        self.client.capability_cache().known(capability)
    }
}

fn unavailable(capability: Capability) -> Error {
    Error::CapabilityUnavailable {
        operation: Operation::GetCapabilities,
        capability: Some(capability),
    }
}
