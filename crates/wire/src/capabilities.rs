//! Capability discovery (CONTRACT.md C5): `GET /api/capabilities`.

use serde::{Deserialize, Serialize};

use crate::JsonObject;

/// A capability a host may or may not serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "schema", schemars(transform = crate::json::StringEnum { name: "Capability", open: true }))]
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
    /// Many gates answered in one request:
    /// `POST /api/sessions/interactions/respond-batch` (a Gatehouse route).
    InteractionBatch,
    /// Agenta's durable contract on Agenta's session paths (Agenta v0.121 and later): the
    /// respond takes an `Idempotency-Key` and answers 202 with the continuation command
    /// (docs/CONTRACT.md, "Durable contract"). Absent: those paths speak the contract
    /// before it (the respond answers 200 `{count, interaction}`).
    DurableApprovals,
    /// A respond's `digest` (the gate's, as the client read it) is checked: an answer
    /// lands only on the gate that was shown, else 409 `STALE_GATE` (C8). Absent: a
    /// host ignores the field.
    AnswerDigest,
}

impl Capability {
    /// Every capability, in a stable order.
    pub const ALL: [Capability; 9] = [
        Capability::Interactions,
        Capability::InteractionWatch,
        Capability::Invoke,
        Capability::Runs,
        Capability::Execution,
        Capability::ExecutionEventStream,
        Capability::InteractionBatch,
        Capability::DurableApprovals,
        Capability::AnswerDigest,
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
            Self::InteractionBatch => "interaction_batch",
            Self::DurableApprovals => "durable_approvals",
            Self::AnswerDigest => "answer_digest",
        }
    }

    /// The capability of a wire spelling; `None` for one this version does not know.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == name)
    }
}

/// The answer to `GET /api/capabilities`. A capability this version does not know (a
/// newer host's) is kept in [`other_capabilities`](Self::other_capabilities) and written
/// back, never an error.
///
/// ```
/// use gatehouse_wire::capabilities::{CapabilitiesResponse, Capability};
/// let text = r#"{"service":"gatehouse","version":"9","capabilities":["interactions","teleport"]}"#;
/// let answer: CapabilitiesResponse = serde_json::from_str(text).unwrap();
/// assert_eq!(answer.capabilities, vec![Capability::Interactions]);
/// assert_eq!(answer.other_capabilities, vec!["teleport".to_string()]);
/// assert_eq!(serde_json::to_string(&answer).unwrap(), text);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(from = "WireCapabilities", into = "WireCapabilities")]
pub struct CapabilitiesResponse {
    /// The serving product, e.g. `gatehouse`.
    pub service: String,
    /// Its version.
    pub version: String,
    /// What it serves.
    pub capabilities: Vec<Capability>,
    /// Capabilities this version does not know, as the host spelled them.
    #[serde(skip)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    pub other_capabilities: Vec<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// [`CapabilitiesResponse`] as it travels: the capabilities as strings (written back
/// known ones first, then the others, each in the host's order). Its schema lists the
/// known capabilities (an exact writer sends no other).
#[derive(Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "CapabilitiesResponse"))]
struct WireCapabilities {
    /// The serving product, e.g. `gatehouse`.
    service: String,
    /// Its version.
    version: String,
    /// What it serves.
    #[cfg_attr(feature = "schema", schemars(with = "Vec<Capability>"))]
    capabilities: Vec<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    extra: JsonObject,
}

impl From<WireCapabilities> for CapabilitiesResponse {
    fn from(wire: WireCapabilities) -> Self {
        let mut capabilities = Vec::new();
        let mut other_capabilities = Vec::new();
        for name in wire.capabilities {
            match Capability::parse(&name) {
                Some(known) => capabilities.push(known),
                None => other_capabilities.push(name),
            }
        }
        Self {
            service: wire.service,
            version: wire.version,
            capabilities,
            other_capabilities,
            extra: wire.extra,
        }
    }
}

impl From<CapabilitiesResponse> for WireCapabilities {
    fn from(response: CapabilitiesResponse) -> Self {
        let capabilities = response
            .capabilities
            .iter()
            .map(|c| c.as_str().to_string())
            .chain(response.other_capabilities)
            .collect();
        Self {
            service: response.service,
            version: response.version,
            capabilities,
            extra: response.extra,
        }
    }
}

impl CapabilitiesResponse {
    /// True when the host serves `capability`.
    pub fn has(&self, capability: Capability) -> bool {
        self.capabilities.contains(&capability)
    }
}
