//! Retention: how long the rows that only record history are kept (issue 37: three
//! outbox rows per gate per endpoint and every idempotency key stayed forever, and the
//! lists grew with them). [`crate::retention`] prunes them.

use std::time::Duration;

/// What is pruned, and how. A `None` age keeps those rows forever.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetentionSettings {
    /// Delivered webhook events are deleted once they are this old (counted from when
    /// the event was written). Default 7 days.
    pub delivered_events: Option<Duration>,
    /// Webhook events given up on (`failed`) are deleted once they are this old: longer
    /// than delivered ones, for an operator to look into. Default 30 days. Pending events
    /// are never deleted.
    pub failed_events: Option<Duration>,
    /// An `Idempotency-Key` of a respond is forgotten once it is this old: a retry after
    /// that is a new respond (answered 409 when the gate was answered). Default 24 hours.
    pub idempotency_keys: Option<Duration>,
    /// How often an instance tries to prune (default 60 s). One instance at a time
    /// prunes, under a lease of this length.
    pub interval: Duration,
    /// Rows deleted per statement (default 500): each batch is its own short
    /// transaction, so writers wait at most one batch.
    pub batch: u32,
}

impl Default for RetentionSettings {
    fn default() -> Self {
        Self {
            delivered_events: Some(Duration::from_secs(7 * 24 * 3600)),
            failed_events: Some(Duration::from_secs(30 * 24 * 3600)),
            idempotency_keys: Some(Duration::from_secs(24 * 3600)),
            interval: Duration::from_secs(60),
            batch: 500,
        }
    }
}
