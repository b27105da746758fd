//! One inbox across hosts for the apps: [`GatehouseInbox`] over the client's `Inbox`. A
//! phone that talks to several hosts or projects lists their pending gates in one call,
//! each gate with its host; a host that is down is reported, not thrown.

use std::sync::{Arc, Mutex};

use gatehouse_client::{HostState, Inbox, InboxCursor};

use crate::client::GatehouseClient;
use crate::error::{GatehouseError, GatehouseErrorKind};
use crate::records::Interaction;
use crate::runtime;

/// Several hosts' (or projects') pending gates as one paged list. Add each host's client
/// under a stable name, then call [`pending`](Self::pending) with the last page's
/// `next_cursor` until it is `None`.
#[derive(Debug, uniffi::Object)]
pub struct GatehouseInbox {
    inner: Mutex<Inbox>,
}

/// A pending gate and the name of the host it came from: answer it with that host's
/// client.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct InboxGate {
    /// The name the host was added under.
    pub host: String,
    /// The gate, as that host returned it.
    pub gate: Interaction,
}

/// What one host did for a page.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Enum)]
pub enum InboxHostState {
    /// The host answered: `gates` of the page's gates are its; `more` when the next page
    /// reads on.
    Read {
        /// How many of the page's gates are this host's.
        gates: u32,
        /// True when it may hold further gates.
        more: bool,
    },
    /// The host's call failed (down, refused, garbage): none of its gates are in the
    /// page, and the next page tries it again from the same place.
    Failed {
        /// What kind of failure.
        kind: GatehouseErrorKind,
        /// The error's sentence.
        msg: String,
        /// The error's detail.
        details: Option<String>,
        /// True when trying again later may succeed.
        retryable: bool,
    },
    /// Every pending gate of this host was read by an earlier page.
    Done,
}

/// One host's line of a page.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct InboxHostReport {
    /// The name the host was added under.
    pub host: String,
    /// Read, failed, or read to its end.
    pub state: InboxHostState,
}

/// One page of an inbox.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct InboxPage {
    /// The gates of every host that answered, newest first.
    pub gates: Vec<InboxGate>,
    /// One report per host, in the order the hosts were added.
    pub hosts: Vec<InboxHostReport>,
    /// Where the next page starts (keep it as text across app restarts); `None` when
    /// every host was read to its end. A failed host keeps it open.
    pub next_cursor: Option<String>,
}

#[uniffi::export]
impl GatehouseInbox {
    /// An inbox with no host.
    #[uniffi::constructor]
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            inner: Mutex::new(Inbox::new()),
        })
    }

    /// Add a host's client under `name` (stable: the cursor keys the host by it). A name
    /// used twice or empty, or more than 32 hosts, throws `Config`; the inbox is then as
    /// it was.
    pub fn add_host(
        &self,
        name: String,
        client: Arc<GatehouseClient>,
    ) -> Result<(), GatehouseError> {
        runtime::guard("inbox_add_host", || {
            let mut inbox = self.inner.lock().map_err(|_| poisoned())?;
            inbox
                .add_host(name, client.inner.clone())
                .map_err(GatehouseError::from)
        })
    }

    /// The hosts' names, in the order they were added.
    pub fn host_names(&self) -> Vec<String> {
        self.inner
            .lock()
            .map(|inbox| inbox.host_names().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// The next page: up to `per_host` pending gates (1 to 500) from every host not read
    /// to its end, all asked at once; `cursor` is the last page's `next_cursor` (`None`:
    /// from the start). Throws only for a cursor or page size it cannot use (`Config`);
    /// a host's failure is in its report.
    pub async fn pending(
        &self,
        cursor: Option<String>,
        per_host: u32,
    ) -> Result<InboxPage, GatehouseError> {
        let inbox = self.inner.lock().map_err(|_| poisoned())?.clone();
        runtime::run("inbox_pending", async move {
            let cursor = cursor.as_deref().map(InboxCursor::parse).transpose()?;
            let page = inbox.pending(cursor.as_ref(), per_host).await?;
            let gates = page
                .gates
                .iter()
                .map(|gate| {
                    Ok(InboxGate {
                        host: gate.host.clone(),
                        gate: Interaction::try_from(&gate.gate)?,
                    })
                })
                .collect::<Result<Vec<_>, GatehouseError>>()?;
            let hosts = page
                .hosts
                .into_iter()
                .map(|report| InboxHostReport {
                    host: report.host,
                    state: match report.state {
                        HostState::Read { gates, more } => InboxHostState::Read {
                            gates: u32::try_from(gates).unwrap_or(u32::MAX),
                            more,
                        },
                        HostState::Failed(error) => {
                            let error = GatehouseError::from(error);
                            InboxHostState::Failed {
                                kind: error.kind(),
                                msg: error.msg().to_string(),
                                details: error.details().map(str::to_string),
                                retryable: error.retryable(),
                            }
                        }
                        _ => InboxHostState::Done,
                    },
                })
                .collect();
            Ok(InboxPage {
                gates,
                hosts,
                next_cursor: page.next.map(|next| next.as_str().to_string()),
            })
        })
        .await
    }
}

fn poisoned() -> GatehouseError {
    GatehouseError::Internal {
        msg: "the inbox's lock was poisoned by an earlier panic".to_string(),
        details: None,
    }
}
