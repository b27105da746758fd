//! The capability cache (CONTRACT.md C5): what a client has learned about the host's
//! capabilities, shared by every clone of it, and the check every call passes before it
//! is sent. [`Client::send`](crate::Client) asks it and teaches it what a
//! route-not-found 404 revealed; the [`Capabilities`](crate::Capabilities) sub-client
//! fills it from `GET /api/capabilities`.

use std::collections::HashSet;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use gatehouse_wire::capabilities::{CapabilitiesResponse, Capability};
use gatehouse_wire::sessions::SessionCapabilities;

use crate::error::{Error, Operation, Result};
use crate::upstream::{AgentaContract, Upstream};

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
    /// Capabilities learned present without discovery (an Agenta session snapshot's
    /// `capabilities`).
    present: HashSet<Capability>,
    /// The contract the builder pinned: it wins over anything learned.
    pinned: Option<AgentaContract>,
}

impl CapabilityCache {
    /// What is known before any call about a host of kind `upstream`: AgentPlat's Rooms
    /// API serves no interactions, no watch and no invoke; Agenta's API no execution
    /// sessions; neither has Gatehouse's discovery route.
    /// `pinned` is the contract the builder pinned, if any.
    pub(crate) fn for_upstream(upstream: Upstream, pinned: Option<AgentaContract>) -> Self {
        let cache = Self::default();
        {
            let mut learned = cache.write();
            learned.pinned = pinned;
            match upstream {
                Upstream::Gatehouse => {}
                Upstream::AgentPlat => {
                    learned.discovery_absent = true;
                    learned.absent.extend([
                        Capability::Interactions,
                        Capability::InteractionWatch,
                        Capability::Invoke,
                        Capability::InteractionBatch,
                        Capability::DurableApprovals,
                        Capability::AnswerDigest,
                    ]);
                    learned.pinned = None;
                }
                Upstream::Agenta => {
                    learned.discovery_absent = true;
                    // Agenta answers gates one by one: approve-all fans out there.
                    learned.absent.extend([
                        Capability::Execution,
                        Capability::ExecutionEventStream,
                        Capability::InteractionBatch,
                        Capability::AnswerDigest,
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
        if self.known(capability) == Some(false) {
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
                    learned.present.remove(&c);
                    learned.absent.insert(c);
                }
                None if operation == Operation::GetCapabilities => {
                    learned.discovery_absent = true;
                }
                // A route that needs no capability says nothing of the others.
                None => {}
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
    pub(crate) fn learn_discovery(&self, response: &CapabilitiesResponse) {
        let mut learned = self.write();
        learned.absent.retain(|c| !response.has(*c));
        learned.present.retain(|c| response.has(*c));
        learned.discovered = Some(Arc::new(response.clone()));
    }

    /// Keep what an Agenta session snapshot said of the host's session control: its
    /// `durable_approvals` is the contract its session paths speak.
    pub(crate) fn learn_session_capabilities(&self, capabilities: &SessionCapabilities) {
        let mut learned = self.write();
        let durable = Capability::DurableApprovals;
        if capabilities.durable_approvals {
            learned.absent.remove(&durable);
            learned.present.insert(durable);
        } else {
            learned.present.remove(&durable);
            learned.absent.insert(durable);
        }
    }

    /// Remember that the host's session paths speak the legacy contract (its snapshot
    /// route is absent).
    pub(crate) fn learn_legacy(&self) {
        let mut learned = self.write();
        learned.present.remove(&Capability::DurableApprovals);
        learned.absent.insert(Capability::DurableApprovals);
    }

    /// The contract the host's session paths speak, when known: pinned, or learned.
    pub(crate) fn agenta_contract(&self) -> Option<AgentaContract> {
        self.known(Capability::DurableApprovals).map(|durable| {
            if durable {
                AgentaContract::Durable
            } else {
                AgentaContract::Legacy
            }
        })
    }

    pub(crate) fn discovered(&self) -> Option<Arc<CapabilitiesResponse>> {
        self.read().discovered.clone()
    }

    pub(crate) fn discovery_absent(&self) -> bool {
        self.read().discovery_absent
    }

    /// `Some(false)` when known absent, `Some(true)` when discovery listed it, `None`
    /// when unknown.
    pub(crate) fn known(&self, capability: Capability) -> Option<bool> {
        let learned = self.read();
        if let (Capability::DurableApprovals, Some(pinned)) = (capability, learned.pinned) {
            return Some(pinned == AgentaContract::Durable);
        }
        if learned.absent.contains(&capability) {
            return Some(false);
        }
        if learned.present.contains(&capability) {
            return Some(true);
        }
        learned.discovered.as_ref().map(|d| d.has(capability))
    }
}
