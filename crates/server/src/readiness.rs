//! Readiness (`GET /health/ready`), apart from liveness (`GET /health`, which answers
//! `{"status":"ok"}` whenever the process serves HTTP): whether this instance can do its
//! work now. 200 only when every check passes, else 503 with `Retry-After`; the body
//! ([`gatehouse_wire::health::ReadinessResponse`]) names every check and what it found
//! (a 503's is also the error envelope: `detail`, `code: "UNAVAILABLE"`).
//!
//! | check | passes when |
//! |---|---|
//! | `database` | a real write (one heartbeat row, [`Database::probe_write`]) commits within [`PROBE_TIMEOUT`], and no write was refused for an unavailable database ([`crate::StoreError::is_unavailable`]) in the last [`UNAVAILABLE_MEMORY`] (a nearly full disk may take the probe's small write and refuse a turn's) |
//! | `migrations` | every migration this binary embeds is applied |
//! | `resume_workers` | each resume worker of this instance is alive: busy, or back round its loop within three of its poll intervals (at least 5 s); none run: passes, saying so |
//! | `reconciler` | the same for the reconciler (none without the execution service) |
//! | `webhook_workers` | the same for the webhook delivery workers (none without webhook endpoints) |
//!
//! The database checks run in a task of their own, one at a time: a readiness answer
//! never waits longer than [`PROBE_TIMEOUT`], and a probe still waiting for the database
//! (each wait is bounded by [`crate::ServerConfig::db_acquire_timeout`]) makes the next
//! answer not ok rather than starting another.
//!
//! Background tasks report that they are alive through a [`Pulse`]: registered with
//! [`Readiness::register`] before the task starts, beaten every time round its loop,
//! `busy` while it works (a long resume is not a stall), ended when the task returns or
//! panics.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use gatehouse_wire::health::{check, ReadinessCheck, ReadinessResponse, ReadinessStatus};

use crate::{AppState, Database};

/// The longest a readiness answer waits for its database checks.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// How long readiness stays not ok after a write was refused because the database was
/// unavailable.
pub const UNAVAILABLE_MEMORY: Duration = Duration::from_secs(5);

/// The shortest silence after which an idle task counts as stalled.
const MIN_QUIET_LIMIT: Duration = Duration::from_secs(5);

/// Which background task a [`Pulse`] belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Task {
    /// A resume worker ([`crate::dispatch`]).
    ResumeWorker,
    /// The execution reconciler ([`crate::execution::reconcile`]).
    Reconciler,
    /// A webhook delivery worker ([`crate::webhooks::deliver`]).
    WebhookWorker,
}

/// What a [`Pulse`] last heard from its task.
#[derive(Debug)]
struct Beat {
    /// When the task last went round its loop (or finished a piece of work).
    last: Instant,
    /// Working now (a resume, a reconciler pass).
    busy: bool,
    /// The task returned or panicked.
    ended: bool,
}

/// A background task's report that it is alive. Held by the task as a [`PulseGuard`].
#[derive(Debug)]
pub struct Pulse {
    task: Task,
    /// Idle and silent for longer than this: stalled.
    quiet_limit: Duration,
    beat: Mutex<Beat>,
}

impl Pulse {
    fn lock(&self) -> std::sync::MutexGuard<'_, Beat> {
        self.beat
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The task went round its loop.
    pub fn beat(&self) {
        self.lock().last = Instant::now();
    }

    /// The task works until the returned guard is dropped (then it beats).
    pub fn busy(&self) -> Busy<'_> {
        self.lock().busy = true;
        Busy(self)
    }

    /// `None` when the task is alive, else why not.
    fn trouble(&self) -> Option<String> {
        let beat = self.lock();
        if beat.ended {
            return Some("ended".to_string());
        }
        let quiet = beat.last.elapsed();
        if !beat.busy && quiet > self.quiet_limit {
            return Some(format!("silent for {} s", quiet.as_secs()));
        }
        None
    }
}

/// A task at work (see [`Pulse::busy`]).
#[derive(Debug)]
pub struct Busy<'a>(&'a Pulse);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        let mut beat = self.0.lock();
        beat.busy = false;
        beat.last = Instant::now();
    }
}

/// A task's [`Pulse`], held for the task's whole life: dropping it (the task returned or
/// panicked) marks the task ended.
#[derive(Debug)]
pub struct PulseGuard(Arc<Pulse>);

impl std::ops::Deref for PulseGuard {
    type Target = Pulse;
    fn deref(&self) -> &Pulse {
        &self.0
    }
}

impl Drop for PulseGuard {
    fn drop(&mut self) {
        self.0.lock().ended = true;
    }
}

/// This instance's readiness: the pulses of its background tasks, and the one database
/// probe that may be in flight.
#[derive(Debug, Default)]
pub struct Readiness {
    pulses: Mutex<Vec<Arc<Pulse>>>,
    probe_in_flight: Arc<tokio::sync::Mutex<()>>,
}

impl Readiness {
    /// A pulse for a task of kind `task` that goes round its loop every `interval` (at
    /// most): idle and silent for three intervals (at least 5 s), it counts as stalled.
    /// Register before the task starts, so readiness knows it from the first answer.
    pub fn register(&self, task: Task, interval: Duration) -> PulseGuard {
        let pulse = Arc::new(Pulse {
            task,
            quiet_limit: interval.saturating_mul(3).max(MIN_QUIET_LIMIT),
            beat: Mutex::new(Beat {
                last: Instant::now(),
                busy: false,
                ended: false,
            }),
        });
        self.pulses
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(pulse.clone());
        PulseGuard(pulse)
    }

    /// The check of every task of kind `task`.
    fn tasks_check(&self, name: &str, task: Task, none_running: &str) -> ReadinessCheck {
        let pulses: Vec<Arc<Pulse>> = self
            .pulses
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .iter()
            .filter(|pulse| pulse.task == task)
            .cloned()
            .collect();
        if pulses.is_empty() {
            return ReadinessCheck::new(name, true, none_running);
        }
        let troubles: Vec<String> = pulses
            .iter()
            .enumerate()
            .filter_map(|(n, pulse)| pulse.trouble().map(|why| format!("#{} {why}", n + 1)))
            .collect();
        let alive = pulses.len() - troubles.len();
        let mut detail = format!("{alive} of {} alive", pulses.len());
        if !troubles.is_empty() {
            detail.push_str(&format!(" ({})", troubles.join(", ")));
        }
        ReadinessCheck::new(name, troubles.is_empty(), detail)
    }

    /// The `database` and `migrations` checks, within [`PROBE_TIMEOUT`].
    async fn database_checks(&self, store: &Database) -> (ReadinessCheck, ReadinessCheck) {
        let not_checked = |why: &str| ReadinessCheck::new(check::MIGRATIONS, false, why);
        let Ok(in_flight) = self.probe_in_flight.clone().try_lock_owned() else {
            return (
                ReadinessCheck::new(
                    check::DATABASE,
                    false,
                    "the previous write probe is still waiting for the database",
                ),
                not_checked("not checked: the database is not answering"),
            );
        };
        // A task of its own: the answer stops waiting at the timeout, the probe does not
        // (a database call is never cancelled half-way; its own waits are bounded).
        let probe_store = store.clone();
        let probe = tokio::spawn(async move {
            let _in_flight = in_flight;
            let migrations = probe_store.migrations_applied().await;
            let write = probe_store.probe_write().await;
            (migrations, write)
        });
        let (migrations, write) = match tokio::time::timeout(PROBE_TIMEOUT, probe).await {
            Ok(Ok(results)) => results,
            Ok(Err(err)) => {
                let why = format!("the write probe failed: {err}");
                return (
                    ReadinessCheck::new(check::DATABASE, false, why),
                    not_checked("not checked: the probe failed"),
                );
            }
            Err(_) => {
                let why = format!(
                    "the write probe did not finish within {} ms",
                    PROBE_TIMEOUT.as_millis()
                );
                return (
                    ReadinessCheck::new(check::DATABASE, false, why),
                    not_checked("not checked: the database did not answer in time"),
                );
            }
        };
        let migrations = match migrations {
            Ok((applied, embedded)) => ReadinessCheck::new(
                check::MIGRATIONS,
                applied == embedded,
                format!("{applied} of {embedded} applied"),
            ),
            Err(err) => not_checked(&format!("the migrations could not be read: {err}")),
        };
        let database = match (write, store.last_unavailable_write()) {
            (Err(err), _) => ReadinessCheck::new(
                check::DATABASE,
                false,
                format!("the write probe failed: {err}"),
            ),
            (Ok(()), Some((ago, why))) if ago < UNAVAILABLE_MEMORY => ReadinessCheck::new(
                check::DATABASE,
                false,
                format!(
                    "the write probe passed, but a write was refused {} ms ago: {why}",
                    ago.as_millis()
                ),
            ),
            (Ok(()), _) => ReadinessCheck::new(
                check::DATABASE,
                true,
                format!("{} takes writes", store.backend_name()),
            ),
        };
        (database, migrations)
    }
}

/// Every check of this instance, as `GET /health/ready` answers them.
pub async fn report(state: &AppState) -> ReadinessResponse {
    let readiness = &state.readiness;
    let (database, migrations) = readiness.database_checks(&state.db).await;
    let workers = readiness.tasks_check(
        check::RESUME_WORKERS,
        Task::ResumeWorker,
        "none run in this instance (the dispatcher is off)",
    );
    let reconciler = readiness.tasks_check(
        check::RECONCILER,
        Task::Reconciler,
        "none runs in this instance (the execution service is off)",
    );
    let webhooks = readiness.tasks_check(
        check::WEBHOOK_WORKERS,
        Task::WebhookWorker,
        "none run in this instance (no webhook endpoint is configured)",
    );
    ReadinessResponse::from_checks(vec![database, migrations, workers, reconciler, webhooks])
}

/// `GET /health/ready`: 200 when every check passes, else 503 with `Retry-After` (the
/// body is then also the error envelope: `detail`, `code: "UNAVAILABLE"`); no key needed.
pub async fn ready(State(state): State<AppState>) -> Response {
    let mut answer = report(&state).await;
    if answer.status != ReadinessStatus::Ok {
        // As every error body: the request's id beside `detail` and `code`.
        if let Some(id) = crate::request_id::current() {
            answer
                .extra
                .insert("request_id".to_string(), serde_json::Value::String(id));
        }
    }
    let mut response = crate::api::reply::json(&answer);
    if answer.status != ReadinessStatus::Ok {
        *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        response.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from(crate::error::RETRY_AFTER_SECS),
        );
    }
    response
}
