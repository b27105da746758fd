//! Capability discovery (CONTRACT.md C5): `GET /api/capabilities`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::JsonObject;

/// A capability a host may or may not serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// The interaction endpoints (A5).
    Interactions,
    /// The interaction watch stream (SSE).
    InteractionWatch,
    /// The service tier: `POST /api/invoke`, turns, workflow commits.
    Invoke,
    /// The runner tier: `POST /run`.
    Runs,
    /// Execution sessions and interventions (B2).
    Execution,
    /// The execution event stream (SSE).
    ExecutionEventStream,
}

impl Capability {
    /// Every capability, in a stable order.
    pub const ALL: [Capability; 6] = [
        Capability::Interactions,
        Capability::InteractionWatch,
        Capability::Invoke,
        Capability::Runs,
        Capability::Execution,
        Capability::ExecutionEventStream,
    ];

    /// The snake_case wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Interactions => "interactions",
            Self::InteractionWatch => "interaction_watch",
            Self::Invoke => "invoke",
            Self::Runs => "runs",
            Self::Execution => "execution",
            Self::ExecutionEventStream => "execution_event_stream",
        }
    }
}

/// The answer to `GET /api/capabilities`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CapabilitiesResponse {
    /// The serving product, e.g. `gatehouse`.
    pub service: String,
    /// Its version.
    pub version: String,
    /// What it serves.
    pub capabilities: Vec<Capability>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CapabilitiesResponse {
    /// True when the host serves `capability`.
    pub fn has(&self, capability: Capability) -> bool {
        self.capabilities.contains(&capability)
    }
}
