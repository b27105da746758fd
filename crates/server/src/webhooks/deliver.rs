//! The delivery workers: each endpoint has a lane of its own, [`WebhookSettings::workers`]
//! workers and a [`Circuit`]; a lane's worker claims a batch of due outbox rows of its
//! endpoint under one lease, POSTs each body signed for the endpoint, in order, records
//! the outcomes ([`record_outcome`]; the delivered ones in one transaction), gives back
//! the rows it did not attempt, repeats. A dead endpoint's attempts (each one waiting for the whole
//! timeout) hold its own lane's workers only, so another endpoint's events never wait
//! behind them; after [`WebhookSettings::circuit_failures`] failures in a row its circuit
//! opens and the lane sends nothing but a probe now and then, so its events keep their
//! attempts for when it answers again.
//!
//! The lease of a claim is the POST's timeout plus the server's lease
//! ([`crate::ServerConfig::lease`]), so while an attempt may still be sending, no other
//! instance takes the row; an instance that dies mid-attempt leaves the row to be claimed
//! again once the lease expires (by the database's clock, as every lease); a batch starts
//! no attempt after half the server's lease, so its last one ends, and is recorded, before
//! the lease does. A receiver may therefore see an event twice (at least once; up to a
//! batch of events when an instance dies between sending and recording them): the `webhook-id` header is the same on
//! every attempt, for its de-duplication. The circuit is this instance's own: each
//! instance finds out for itself that an endpoint is down or back.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

use super::circuit::{Change, Circuit, Permit};
use super::sign::signature;
use super::store::ClaimedDelivery;
use crate::config::webhooks::{WebhookEndpoint, WebhookSettings};
use crate::metrics::{Metrics, WebhookOutcome};
use crate::readiness::{PulseGuard, Task};
use crate::AppState;

/// How one attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryOutcome {
    /// The endpoint answered 2xx.
    Delivered,
    /// It failed (an HTTP status, or a transport error); it is retried after `retry_in`.
    Retrying {
        /// Why (never the URL).
        error: String,
        /// The backoff before the next attempt.
        retry_in: Duration,
    },
    /// It failed for the last time: the row is `failed`.
    GaveUp {
        /// Why the last attempt failed.
        error: String,
    },
    /// The claim's lease had moved on before the outcome was written (another instance
    /// owns the row now): nothing recorded.
    LeaseLost,
}

/// THE place a delivery attempt's outcome is recorded, once per attempt, after the
/// outbox row was updated: the log line, and `gatehouse_webhook_deliveries_total{outcome}`
/// (`attempt` is 1-based; `elapsed` is the POST's duration). A lost lease is not counted:
/// the worker that owns the event records its own attempt.
pub fn record_outcome(
    metrics: &Metrics,
    endpoint: &str,
    event_type: &str,
    attempt: i64,
    elapsed: Duration,
    outcome: &DeliveryOutcome,
) {
    let elapsed_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
    match outcome {
        DeliveryOutcome::Delivered => metrics.webhook_delivery(WebhookOutcome::Delivered),
        DeliveryOutcome::Retrying { .. } => metrics.webhook_delivery(WebhookOutcome::Failed),
        DeliveryOutcome::GaveUp { .. } => metrics.webhook_delivery(WebhookOutcome::GaveUp),
        DeliveryOutcome::LeaseLost => {}
    }
    match outcome {
        DeliveryOutcome::Delivered => {
            tracing::debug!(
                endpoint,
                event_type,
                attempt,
                elapsed_ms,
                "webhook delivered"
            );
        }
        DeliveryOutcome::Retrying { error, retry_in } => {
            let retry_in_ms = u64::try_from(retry_in.as_millis()).unwrap_or(u64::MAX);
            tracing::info!(endpoint, event_type, attempt, elapsed_ms, %error, retry_in_ms, "webhook attempt failed; retrying");
        }
        DeliveryOutcome::GaveUp { error } => {
            tracing::warn!(endpoint, event_type, attempt, elapsed_ms, %error, "webhook delivery failed for the last time; marked failed");
        }
        DeliveryOutcome::LeaseLost => {
            tracing::warn!(
                endpoint,
                event_type,
                attempt,
                "webhook attempt outlived its lease; another worker owns the event"
            );
        }
    }
}

/// One endpoint's lane: its name (what its workers claim) and its circuit, shared by its
/// workers on this instance.
#[derive(Clone)]
struct Lane {
    /// The endpoint's name, as the one-element list the claim takes.
    endpoint: Arc<[String]>,
    circuit: Arc<Mutex<Circuit>>,
}

impl Lane {
    fn new(name: &str, settings: &WebhookSettings) -> Self {
        Self {
            endpoint: Arc::from(vec![name.to_string()]),
            circuit: Arc::new(Mutex::new(Circuit::new(settings))),
        }
    }

    fn name(&self) -> &str {
        self.endpoint
            .first()
            .map(String::as_str)
            .unwrap_or_default()
    }

    fn circuit(&self) -> MutexGuard<'_, Circuit> {
        self.circuit
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Tell the circuit how an attempt ended (`answered`: 2xx or not; `None`: nothing was
    /// learnt of the endpoint), and log what that changed.
    fn attempt_ended(&self, answered: Option<bool>, probe: bool) {
        let change = {
            let mut circuit = self.circuit();
            match answered {
                Some(true) => circuit.succeeded(),
                Some(false) => circuit.failed(Instant::now(), probe),
                None => {
                    if probe {
                        circuit.probe_unused();
                    }
                    None
                }
            }
        };
        match change {
            Some(Change::Opened(open_for)) => {
                let open_ms = u64::try_from(open_for.as_millis()).unwrap_or(u64::MAX);
                tracing::warn!(
                    endpoint = self.name(),
                    open_ms,
                    "webhook endpoint keeps failing; its circuit is open: its events wait for a probe"
                );
            }
            Some(Change::Closed) => {
                tracing::info!(
                    endpoint = self.name(),
                    "webhook endpoint answers again; its circuit is closed"
                );
            }
            None => {}
        }
    }
}

/// Start the delivery workers when endpoints are configured (a lane of
/// [`WebhookSettings::workers`] workers per endpoint); the handle ends when they all
/// have, at shutdown.
pub fn spawn(state: AppState) -> Option<JoinHandle<()>> {
    let settings = &state.config.webhooks;
    if settings.endpoints.is_empty() {
        return None;
    }
    let client = match reqwest::Client::builder()
        .timeout(settings.timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("gatehouse-webhooks/", env!("CARGO_PKG_VERSION")))
        .build()
    {
        Ok(client) => client,
        Err(err) => {
            tracing::error!(error = %err, "cannot build the webhook HTTP client; webhooks are not delivered");
            return None;
        }
    };
    let names: Vec<&str> = settings.endpoints.iter().map(|e| e.name.as_str()).collect();
    let workers = settings.workers.max(1);
    tracing::info!(endpoints = ?names, workers_per_endpoint = workers, "webhook delivery on");
    // Registered before the workers start: readiness counts them from its first answer.
    let mut lanes: Vec<(Lane, PulseGuard)> = Vec::new();
    for endpoint in &settings.endpoints {
        let lane = Lane::new(&endpoint.name, settings);
        for _ in 0..workers {
            let pulse = state.readiness.register(Task::WebhookWorker, settings.poll);
            lanes.push((lane.clone(), pulse));
        }
    }
    Some(tokio::spawn(async move {
        let handles: Vec<JoinHandle<()>> = lanes
            .into_iter()
            .map(|(lane, pulse)| tokio::spawn(run(state.clone(), client.clone(), lane, pulse)))
            .collect();
        for handle in handles {
            if let Err(err) = handle.await {
                tracing::warn!(error = %err, "a webhook worker ended abnormally");
            }
        }
    }))
}

async fn run(state: AppState, client: reqwest::Client, lane: Lane, pulse: PulseGuard) {
    let mut shutdown = state.shutdown.clone();
    let settings = &state.config.webhooks;
    let lease = settings.timeout.saturating_add(state.config.lease);
    let lease_ms = i64::try_from(lease.as_millis()).unwrap_or(i64::MAX);
    let wakeup = state.announce.outbox().clone();
    loop {
        if *shutdown.borrow() {
            return;
        }
        {
            let _busy = pulse.busy();
            drain(&state, &client, &lane, lease_ms).await;
        }
        let woken = tokio::select! {
            _ = wakeup.wakeup().notified() => true,
            _ = tokio::time::sleep(settings.poll) => false,
            _ = shutdown.wait_for(|stop| *stop) => return,
        };
        if woken {
            // An event is written before its transaction commits: look a moment later.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// How many due rows a worker claims at once. Claiming and recording are one transaction
/// each per batch, not per event: under load (the database busy with answers and
/// resumes) two transactions per event held a lane to about 280 events a second, fewer
/// than the gates were opening (BENCHMARKS.md row 13). A batch is still sent one event at
/// a time, in order, each only while the circuit lets it.
const CLAIM_BATCH: u32 = 32;

/// Deliver every due row of the lane's endpoint, a claimed batch at a time, while its
/// circuit lets it.
async fn drain(state: &AppState, client: &reqwest::Client, lane: &Lane, lease_ms: i64) {
    loop {
        if *state.shutdown.borrow() {
            return;
        }
        let probe = match lane.circuit().permit(Instant::now()) {
            Permit::Send => false,
            Permit::Probe => true,
            Permit::Wait => return,
        };
        // A probe is one event: the circuit lets nothing else go until it is answered.
        let limit = if probe { 1 } else { CLAIM_BATCH };
        match state
            .deliveries
            .claim_webhooks(&lane.endpoint, lease_ms, limit)
            .await
        {
            Ok(batch) if batch.is_empty() => {
                lane.attempt_ended(None, probe);
                return;
            }
            Ok(batch) => {
                if !deliver_batch(state, client, lane, batch, probe).await {
                    return;
                }
            }
            Err(err) => {
                lane.attempt_ended(None, probe);
                tracing::warn!(error = %err, "claiming webhook events failed; will retry");
                return;
            }
        }
    }
}

/// Send a claimed batch in order, the first event under the permit `drain` took, each
/// next one under a permit of its own; then record every delivered event in one
/// transaction, and give back the events not attempted. A new attempt starts only while
/// the batch's lease (the POST's timeout plus the server's lease) still covers it with
/// half the server's lease to spare for the recording. `false` when the lane should stop
/// draining: the circuit holds its events, the server is stopping, or the lease ran short.
async fn deliver_batch(
    state: &AppState,
    client: &reqwest::Client,
    lane: &Lane,
    batch: Vec<ClaimedDelivery>,
    first_probe: bool,
) -> bool {
    let started = Instant::now();
    let budget = state.config.lease / 2;
    let mut delivered: Vec<(&ClaimedDelivery, Duration)> = Vec::new();
    let mut unsent: Vec<ClaimedDelivery> = Vec::new();
    let mut carry_on = true;
    let mut permit = Some(first_probe);
    for (index, claim) in batch.iter().enumerate() {
        let probe = match permit.take() {
            Some(probe) => Some(probe),
            None if *state.shutdown.borrow() || started.elapsed() >= budget => None,
            None => match lane.circuit().permit(Instant::now()) {
                Permit::Send => Some(false),
                Permit::Probe => Some(true),
                Permit::Wait => None,
            },
        };
        let Some(probe) = probe else {
            unsent.extend(batch[index..].iter().cloned());
            carry_on = false;
            break;
        };
        let (sent, answered, elapsed) = send(state, client, claim).await;
        lane.attempt_ended(answered, probe);
        match sent {
            Ok(()) => delivered.push((claim, elapsed)),
            Err(error) => {
                let settings = &state.config.webhooks;
                let outcome = failed(state, settings, claim, error).await;
                record(state, claim, elapsed, &outcome);
            }
        }
    }
    record_delivered(state, &delivered).await;
    if !unsent.is_empty() {
        if let Err(err) = state.deliveries.release_webhooks(&unsent).await {
            // Not given back: their lease expires and any worker claims them then.
            tracing::warn!(error = %err, events = unsent.len(), "giving back unsent webhook events failed; they are due when their lease expires");
        }
    }
    carry_on
}

/// One POST of one claimed row: whether it was accepted, whether the endpoint answered
/// 2xx (for its circuit: `None` when the attempt learnt nothing of the endpoint, as when
/// the server's shutdown interrupted it), and how long it took.
async fn send(
    state: &AppState,
    client: &reqwest::Client,
    claim: &ClaimedDelivery,
) -> (Result<(), String>, Option<bool>, Duration) {
    let Some(endpoint) = state.config.webhooks.endpoint(&claim.endpoint) else {
        // Claimed by name from this instance's own endpoints: always found.
        return (
            Err(format!("no endpoint named {}", claim.endpoint)),
            None,
            Duration::ZERO,
        );
    };
    let started = std::time::Instant::now();
    let mut shutdown = state.shutdown.clone();
    let (sent, answered) = tokio::select! {
        sent = post(client, endpoint, claim) => {
            let answered = sent.is_ok();
            (sent, Some(answered))
        }
        // Shutting down: the attempt is abandoned and the event due again at once, for
        // any instance (it may have arrived: at least once).
        _ = shutdown.wait_for(|stop| *stop) => (Err("interrupted: the server shut down".to_string()), None),
    };
    (sent, answered, started.elapsed())
}

/// Record the delivered events of a batch in one transaction, and each one's outcome.
async fn record_delivered(state: &AppState, delivered: &[(&ClaimedDelivery, Duration)]) {
    if delivered.is_empty() {
        return;
    }
    let claims: Vec<&ClaimedDelivery> = delivered.iter().map(|(claim, _)| *claim).collect();
    match state.deliveries.webhooks_delivered(&claims).await {
        Ok(written) => {
            for ((claim, elapsed), written) in delivered.iter().zip(written) {
                let outcome = if written {
                    DeliveryOutcome::Delivered
                } else {
                    DeliveryOutcome::LeaseLost
                };
                record(state, claim, *elapsed, &outcome);
            }
        }
        Err(err) => {
            // Delivered, but not recorded: the leases expire and the events are sent
            // again (at least once).
            tracing::warn!(error = %err, events = delivered.len(), "recording delivered webhooks failed; they will be sent again");
        }
    }
}

fn record(state: &AppState, claim: &ClaimedDelivery, elapsed: Duration, outcome: &DeliveryOutcome) {
    record_outcome(
        &state.metrics,
        &claim.endpoint,
        &claim.event_type,
        claim.attempts,
        elapsed,
        outcome,
    );
}

async fn failed(
    state: &AppState,
    settings: &WebhookSettings,
    claim: &ClaimedDelivery,
    error: String,
) -> DeliveryOutcome {
    let attempts = u32::try_from(claim.attempts).unwrap_or(u32::MAX);
    let interrupted = *state.shutdown.borrow();
    let give_up = attempts >= settings.max_attempts && !interrupted;
    let retry_in = if interrupted {
        Duration::ZERO
    } else {
        settings.backoff(attempts)
    };
    let retry_ms = i64::try_from(retry_in.as_millis()).unwrap_or(i64::MAX);
    match state
        .deliveries
        .webhook_failed(claim, &error, retry_ms, give_up)
        .await
    {
        Ok(true) if give_up => DeliveryOutcome::GaveUp { error },
        Ok(true) => DeliveryOutcome::Retrying { error, retry_in },
        Ok(false) => DeliveryOutcome::LeaseLost,
        Err(err) => {
            tracing::warn!(error = %err, event_id = %claim.event_id, "recording a failed webhook attempt failed; its lease will expire and it is retried");
            DeliveryOutcome::Retrying { error, retry_in }
        }
    }
}

/// POST the row's body with the Standard Webhooks headers, signed now. `Err` says why,
/// without the URL (it may carry a token).
async fn post(
    client: &reqwest::Client,
    endpoint: &WebhookEndpoint,
    claim: &ClaimedDelivery,
) -> Result<(), String> {
    let timestamp = chrono::Utc::now().timestamp();
    let body = claim.payload.as_bytes().to_vec();
    let signed = signature(&endpoint.secret, &claim.event_id, timestamp, &body);
    let response = client
        .post(&endpoint.url)
        .header("content-type", "application/json")
        .header("webhook-id", &claim.event_id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signed)
        .body(body)
        .send()
        .await
        .map_err(|err| describe(&err.without_url()))?;
    let status = response.status();
    if status.is_success() {
        Ok(())
    } else {
        Err(format!("HTTP {}", status.as_u16()))
    }
}

/// A transport error in a few words, with its causes (no URL: see [`post`]).
fn describe(err: &reqwest::Error) -> String {
    let kind = if err.is_timeout() {
        "timed out"
    } else if err.is_connect() {
        "cannot connect"
    } else {
        "request failed"
    };
    let mut text = kind.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text.chars().take(500).collect()
}
