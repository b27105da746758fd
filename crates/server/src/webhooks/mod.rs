//! Webhooks (issue 26): when a gate opens, is answered, resolved or cancelled, and when
//! an intervention is resolved, a signed event is POSTed to every configured endpoint,
//! following the Standard Webhooks convention (`webhook-id`, `webhook-timestamp`,
//! `webhook-signature: v1,<base64 HMAC-SHA256 over "id.timestamp.body">`, secrets given
//! as `whsec_<base64>`).
//!
//! - the endpoints and the retry policy are settings ([`crate::config::webhooks`],
//!   [`crate::ServerConfig::webhooks`]);
//! - [`outbox`](crate::announce::outbox): the durable outbox. An event is written in the
//!   transaction of the change it announces, one row per endpoint, so a committed change
//!   has its event and a rolled-back one has none; nothing is sent from inside a request;
//! - [`deliver`]: the workers of every instance, a lane of them per endpoint (one
//!   endpoint's failures never hold another's workers), claiming rows under a lease (as
//!   the resume workers claim jobs), retrying with exponential backoff up to
//!   [`WebhookSettings::max_attempts`], then marking the row `failed`; a delivered gate's
//!   opening event sets the row's `flags.delivered_webhook`. Each attempt's outcome is
//!   recorded in one place, [`deliver::record_outcome`];
//! - [`circuit`]: a lane's circuit: after failures in a row its endpoint is left alone
//!   for a while, then probed;
//! - [`sign`]: the signature;
//! - [`api`]: `GET /api/webhooks/deliveries`, the outbox of a project for an operator
//!   (`gatehouse webhooks list`).
//!
//! The payload carries ids and statuses, never a config, an answer's text or a secret;
//! the outbox names an endpoint, never its URL or secret, which live only in the
//! server's settings and are never logged.

pub mod api;
pub mod circuit;
pub mod deliver;
pub mod sign;
pub mod store;

pub use crate::config::webhooks::{
    WebhookEndpoint, WebhookSecret, WebhookSettings, WebhookSpecError,
};
pub use deliver::{record_outcome, DeliveryOutcome};
pub use store::{ClaimedDelivery, DeliveryStore};
