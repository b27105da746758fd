//! The capability cache (CONTRACT.md C5): what a client has learned about the host's
//! capabilities, shared by every clone of it, and the check every call passes before it
//! is sent. [`Client::send`](crate::Client) asks it and teaches it what a
//! route-not-found 404 revealed; the [`Capabilities`](crate::Capabilities) sub-client
//! fills it from `GET /api/capabilities`.

use std::collections::HashSet;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use gatehouse_wire::capabilities::{CapabilitiesResponse, Capability};

use crate::error::{Error, Operation, Result};
use crate::upstream::Upstream;

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
    pub(crate) fn learn_discovery(&self, response: &CapabilitiesResponse) {
        let mut learned = self.write();
        learned.absent.retain(|c| !response.has(*c));
        learned.discovered = Some(Arc::new(response.clone()));
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
        if learned.absent.contains(&capability) {
            return Some(false);
        }
        learned.discovered.as_ref().map(|d| d.has(capability))
    }
}
