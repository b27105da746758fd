//! Caps derived from the process's open-file limit, read once at start: every open
//! connection and every database connection holds a file descriptor, and a process
//! that runs out of them can no longer accept anything, not even `/health`. So the
//! server never lets connections take the descriptors it needs:
//!
//! - **Connections in all** ([`FdBudget::max_connections`]): the open-file limit less
//!   [`RESERVED_FDS`] and [`FDS_PER_DATABASE_CONNECTION`] per pooled database
//!   connection (the listener, the runtime, logs, the database files). A connection over
//!   it is answered `503 UNAVAILABLE` with `Retry-After` and closed at once
//!   ([`crate::http`]).
//! - **Event streams** ([`FdBudget::max_watchers`]): the interaction watch streams and
//!   the execution event streams together, by default half the connections, so idle
//!   watchers leave the other half to requests; a server that is mostly a hub for
//!   watching phones may set more ([`ServerConfig::max_watchers`]), up to all the
//!   connections but [`CONNECTIONS_KEPT_FOR_REQUESTS`]. One over it is refused at once with
//!   `503 UNAVAILABLE` and `Retry-After` ([`StreamSlots`], [`streams_full`]).
//! - **Connections per client address** ([`FdBudget::max_connections_per_client`]):
//!   by default a quarter of the connections in all ([`DEFAULT_CLIENT_SHARE`], at least
//!   1), so one address holding its whole share (slow request heads, say) leaves the
//!   rest to every other client; a configured cap is never above the connections in all.
//!
//! [`ServerConfig::max_connections`] sets a lower cap, [`ServerConfig::max_watchers`] any
//! cap within the connections less [`CONNECTIONS_KEPT_FOR_REQUESTS`]; higher ones are
//! lowered to what the limit allows (with a warning).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use futures::Stream;
use gatehouse_wire::error::GatehouseCode;

use crate::config::ServerConfig;
use crate::error::{ApiError, ErrorShape};

/// Descriptors kept out of the connection budget for the process itself: the
/// listener, the runtime's poller and wake-ups, standard streams, logs, the odd file.
pub const RESERVED_FDS: usize = 64;

/// Descriptors one pooled database connection may hold (a Postgres socket; a SQLite
/// connection's database, WAL and shared-memory files).
pub const FDS_PER_DATABASE_CONNECTION: usize = 3;

/// Connections a configured cap of event streams always leaves to requests (`/health`, a
/// respond), however many watchers it allows.
pub const CONNECTIONS_KEPT_FOR_REQUESTS: usize = 64;

/// The open-file limit assumed where it cannot be read.
pub const ASSUMED_OPEN_FILES: u64 = 1024;

/// The default cap of one client address's connections is the connections in all
/// divided by this.
pub const DEFAULT_CLIENT_SHARE: usize = 4;

/// The `Retry-After` of a refusal for load, in seconds.
pub const RETRY_AFTER_SECS: u64 = 5;

/// The soft open-file limit of this process (`RLIMIT_NOFILE`), when it can be read.
pub fn open_file_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit only writes the struct it is given, which outlives the call.
        // The std library has no safe way to read RLIMIT_NOFILE, hence the allow.
        #[allow(unsafe_code)]
        let status = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
        if status != 0 {
            return None;
        }
        // RLIM_INFINITY is the largest value: any cap below it holds. (`rlim_t` is u64
        // on Linux and macOS, not on every Unix: hence the conversion.)
        #[allow(clippy::useless_conversion)]
        let soft = u64::try_from(limit.rlim_cur).unwrap_or(u64::MAX);
        Some(soft)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The caps of one server, derived at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdBudget {
    /// The open-file limit they were derived from (or the assumed one).
    pub open_files: u64,
    /// Most open connections in all.
    pub max_connections: usize,
    /// Most open event streams (watch and execution event streams together).
    pub max_watchers: usize,
    /// Most open connections of one client address (0: no cap but the total).
    pub max_connections_per_client: usize,
}

impl FdBudget {
    /// The caps for a process allowed `open_files` descriptors (`None`: unknown, then
    /// [`ASSUMED_OPEN_FILES`]) with `database_connections` pooled, under `config`'s
    /// settings (lowered to what the limit allows).
    pub fn derive(
        open_files: Option<u64>,
        database_connections: usize,
        config: &ServerConfig,
    ) -> Self {
        let open_files = open_files.unwrap_or(ASSUMED_OPEN_FILES);
        let reserved = RESERVED_FDS + FDS_PER_DATABASE_CONNECTION * database_connections;
        let usable = usize::try_from(open_files)
            .unwrap_or(usize::MAX)
            .saturating_sub(reserved);
        // Even a tiny limit serves a few connections (and refuses the rest promptly).
        let allowed = usable.max(8);
        let max_connections = lowered("max_connections", config.max_connections, allowed);
        // Half by default; a configured cap may take more, never the last connections.
        let max_watchers = match config.max_watchers {
            None => max_connections / 2,
            Some(n) => lowered(
                "max_watchers",
                Some(n),
                max_connections
                    .saturating_sub(CONNECTIONS_KEPT_FOR_REQUESTS)
                    .max(max_connections / 2),
            ),
        };
        let max_connections_per_client = match config.max_connections_per_client {
            None => (max_connections / DEFAULT_CLIENT_SHARE).max(1),
            Some(0) => 0,
            Some(n) => n.min(max_connections),
        };
        Self {
            open_files,
            max_connections,
            max_watchers,
            max_connections_per_client,
        }
    }
}

/// `setting` when given and within `allowed`, else `allowed` (a warning when a given
/// setting was above it).
fn lowered(name: &str, setting: Option<usize>, allowed: usize) -> usize {
    match setting {
        Some(n) if n > allowed => {
            tracing::warn!(
                setting = name,
                asked = n,
                allowed,
                "lowered to what the open-file limit allows"
            );
            allowed
        }
        Some(n) => n,
        None => allowed,
    }
}

/// The open event streams of a server, against their cap.
#[derive(Debug, Clone)]
pub struct StreamSlots {
    open: Arc<AtomicUsize>,
    max: usize,
}

/// One open event stream; dropping it frees the slot.
#[derive(Debug)]
pub struct StreamSlot {
    open: Arc<AtomicUsize>,
}

impl StreamSlots {
    /// Slots for at most `max` streams at once.
    pub fn new(max: usize) -> Self {
        Self {
            open: Arc::new(AtomicUsize::new(0)),
            max,
        }
    }

    /// A slot, unless `max` streams are open.
    pub fn acquire(&self) -> Option<StreamSlot> {
        let taken = self
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
                (open < self.max).then_some(open + 1)
            });
        taken.ok().map(|_| StreamSlot {
            open: self.open.clone(),
        })
    }

    /// How many streams are open.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// The cap.
    pub fn max(&self) -> usize {
        self.max
    }
}

impl StreamSlot {
    /// `stream`, holding this slot until it is dropped (the client left or the stream
    /// ended).
    pub fn hold<S: Stream>(self, stream: S) -> impl Stream<Item = S::Item> {
        futures::StreamExt::map(stream, move |item| {
            let _held = &self;
            item
        })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The answer to an event stream over the cap: `503 UNAVAILABLE` in the route's
/// envelope, with `Retry-After`.
pub fn streams_full(slots: &StreamSlots, shape: ErrorShape) -> Response {
    tracing::warn!(
        max = slots.max(),
        "refused an event stream: the open-stream cap is reached"
    );
    let error = ApiError::new(
        GatehouseCode::Unavailable,
        format!(
            "Too many open event streams (the cap is {}); retry in {RETRY_AFTER_SECS} s",
            slots.max()
        ),
    );
    let error = match shape {
        ErrorShape::Agenta => error,
        ErrorShape::AgentPlat => error.agentplat(),
    };
    let mut response = error.into_response();
    response.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        HeaderValue::from(RETRY_AFTER_SECS),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_follow_the_open_file_limit() {
        let config = ServerConfig::default();
        let budget = FdBudget::derive(Some(512), 8, &config);
        assert_eq!(budget.max_connections, 512 - 64 - 24);
        assert_eq!(budget.max_watchers, budget.max_connections / 2);
        // One address gets a quarter by default (issue 37, item 5).
        assert_eq!(
            budget.max_connections_per_client,
            budget.max_connections / 4
        );
        assert_eq!(
            FdBudget::derive(Some(10), 16, &config).max_connections_per_client,
            2
        );
        let tiny = ServerConfig {
            max_connections: Some(3),
            ..ServerConfig::default()
        };
        assert_eq!(
            FdBudget::derive(Some(512), 8, &tiny).max_connections_per_client,
            1
        );
        let proxy = ServerConfig {
            max_connections_per_client: Some(1_000_000),
            ..ServerConfig::default()
        };
        let roomy = FdBudget::derive(Some(4096), 16, &proxy);
        assert_eq!(roomy.max_connections_per_client, roomy.max_connections);
        let uncapped = ServerConfig {
            max_connections_per_client: Some(0),
            ..ServerConfig::default()
        };
        assert_eq!(
            FdBudget::derive(Some(512), 8, &uncapped).max_connections_per_client,
            0
        );
        assert_eq!(FdBudget::derive(None, 16, &config).open_files, 1024);
        assert_eq!(FdBudget::derive(Some(10), 16, &config).max_connections, 8);
    }

    #[test]
    fn settings_lower_the_caps_and_a_watcher_cap_may_take_all_but_the_kept_connections() {
        let mut config = ServerConfig {
            max_connections: Some(100),
            max_watchers: Some(10),
            ..ServerConfig::default()
        };
        let budget = FdBudget::derive(Some(1 << 20), 16, &config);
        assert_eq!((budget.max_connections, budget.max_watchers), (100, 10));
        config.max_connections = Some(1_000_000);
        config.max_watchers = Some(1_000_000);
        let budget = FdBudget::derive(Some(512), 8, &config);
        assert_eq!(budget.max_connections, 424);
        assert_eq!(budget.max_watchers, 424 - CONNECTIONS_KEPT_FOR_REQUESTS);
        // A hub for watching phones on a 20,000-file limit: 10,000 watchers, more than
        // the default half, and requests keep the rest.
        config.max_connections = None;
        config.max_watchers = Some(10_000);
        let hub = FdBudget::derive(Some(20_000), 16, &config);
        assert_eq!(hub.max_watchers, 10_000);
        assert!(hub.max_connections - hub.max_watchers >= CONNECTIONS_KEPT_FOR_REQUESTS);
        // On a tiny limit the default half stays available.
        config.max_watchers = Some(1_000);
        assert_eq!(FdBudget::derive(Some(100), 0, &config).max_watchers, 18);
    }

    #[test]
    fn a_slot_is_freed_when_dropped() {
        let slots = StreamSlots::new(2);
        let first = slots.acquire().expect("a first slot");
        let _second = slots.acquire().expect("a second slot");
        assert!(slots.acquire().is_none());
        drop(first);
        assert_eq!(slots.open(), 1);
        assert!(slots.acquire().is_some());
    }
}
