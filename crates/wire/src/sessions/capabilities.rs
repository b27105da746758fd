//! What a host's session control can do (Agenta's `SessionCapabilities`), carried by the
//! snapshot (`GET /sessions/{id}`) and by `GET /sessions/streams/?session_id=`.

use serde::{Deserialize, Serialize};

use crate::JsonObject;

/// `{durable_approvals, queue, steer}`. `durable_approvals` false (or no capabilities at
/// all) means the legacy respond: 200 `{count, interaction}`, 409 `{"detail": ...}`.
/// A missing flag reads as false, as Agenta's model defaults it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SessionCapabilities {
    /// Respond answers 202 with a continuation, and Stop is a durable command.
    #[serde(default)]
    pub durable_approvals: bool,
    /// Inputs sent while a turn runs are queued (pending inputs).
    #[serde(default)]
    pub queue: bool,
    /// Inputs may steer the running turn (reported with `queue`).
    #[serde(default)]
    pub steer: bool,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}
