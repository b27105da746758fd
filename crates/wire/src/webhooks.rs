//! Webhooks (a Gatehouse extension): what the server's outbox holds, as
//! `GET /api/webhooks/deliveries` lists it for an operator (`gatehouse webhooks list`).
//!
//! The events themselves are POSTed to the configured endpoints following the Standard
//! Webhooks convention (headers `webhook-id`, `webhook-timestamp`, `webhook-signature:
//! v1,<base64 HMAC-SHA256 over "id.timestamp.body">`), with the body
//! `{"type", "timestamp", "data"}` (CONTRACT.md, "Webhooks").

use serde::{Deserialize, Serialize};

use crate::JsonObject;

/// One event for one endpoint, in the outbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct WebhookDelivery {
    /// The event's id: the `webhook-id` header, the same on every attempt and endpoint.
    pub event_id: String,
    /// The endpoint's name (the server's settings; never its URL or secret).
    pub endpoint: String,
    /// `interaction.opened`, `interaction.responded`, `interaction.resolved`,
    /// `interaction.cancelled` or `intervention.resolved`; a newer server may add types.
    pub event_type: String,
    /// The interaction, or the execution session, the event is about.
    pub subject_id: String,
    /// `pending` (to be sent, or retried), `delivered`, or `failed` (every attempt
    /// failed).
    pub state: String,
    /// Attempts made so far.
    pub attempts: u64,
    /// When the next attempt is due (RFC 3339), for a pending event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<String>,
    /// Why the last attempt failed (`HTTP 500`, `cannot connect: ...`), never a URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When the event was written (RFC 3339), with the change it announces.
    pub created_at: String,
    /// When an attempt was answered 2xx (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `{"count", "deliveries": [...]}`, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct WebhookDeliveriesResponse {
    /// Number of deliveries listed.
    pub count: u64,
    /// The deliveries, newest event first.
    pub deliveries: Vec<WebhookDelivery>,
}
