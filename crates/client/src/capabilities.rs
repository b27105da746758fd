//! Capability discovery (CONTRACT.md C5): `GET /api/capabilities` when the host has
//! it; otherwise absence is learned from a route-not-found 404. Either way the fact is
//! kept in the client's capability cache ([`crate::capability_cache`]), and a call to an
//! absent capability fails at once with [`Error::CapabilityUnavailable`]: no network, no
//! retry. [`Capabilities`] is the public sub-client that reads and refreshes discovery.

use gatehouse_wire::capabilities::{CapabilitiesResponse, Capability};

use crate::client::Client;
use crate::error::{Error, Operation, Result};
use crate::transport::Call;

impl Client {
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
        let call = Call::new(Operation::GetCapabilities, &[]);
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
