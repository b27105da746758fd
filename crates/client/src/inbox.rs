//! One inbox across hosts: the pending gates of several hosts or projects (each a
//! [`Client`]), read page by page in one call, each gate with the host it came from.
//!
//! A phone may talk to a team's server, a personal one and a second project on either.
//! [`Inbox::pending`] reads the next page of pending gates from every host at once; a host
//! that fails (down, unauthorized, answering garbage) is reported with its typed error and
//! does not fail the others. The [`InboxCursor`] it returns resumes every host where it
//! stopped: after its last gate for a host that answered, at the same place for one that
//! failed (so the next call tries it again), and not at all for one whose gates were all
//! read.

use std::collections::BTreeMap;

use futures::future::join_all;
use gatehouse_wire::interaction::{
    InteractionQuery, InteractionStatus, SessionInteraction, Windowing,
};
use serde::{Deserialize, Serialize};

use crate::client::Client;
use crate::error::{Error, Operation, Result};

/// The most hosts one inbox holds: each page is one request per host, all at once.
pub const MAX_INBOX_HOSTS: usize = 32;

/// The most gates one page asks of one host (a server's own page bound is 500).
pub const MAX_INBOX_PAGE: u32 = 500;

/// Several hosts' pending gates as one list; see the module docs.
///
/// ```no_run
/// # async fn demo(team: gatehouse_client::Client, home: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
/// use gatehouse_client::{HostState, Inbox};
/// let inbox = Inbox::new().host("team", team)?.host("home", home)?;
/// let mut cursor = None;
/// loop {
///     let page = inbox.pending(cursor.as_ref(), 50).await?;
///     for gate in &page.gates {
///         println!("{}: {}", gate.host, gate.gate.id.as_deref().unwrap_or("?"));
///     }
///     for host in &page.hosts {
///         if let HostState::Failed(error) = &host.state {
///             eprintln!("{} is not reachable: {error}", host.host);
///         }
///     }
///     match page.next {
///         Some(next) => cursor = Some(next),
///         None => break,
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct Inbox {
    hosts: Vec<(String, Client)>,
}

/// A gate of the inbox, with the name of the host it came from.
#[derive(Debug, Clone)]
pub struct InboxGate {
    /// The name the host was added under ([`Inbox::host`]).
    pub host: String,
    /// The pending gate, as that host returned it: answer it with that host's client.
    pub gate: SessionInteraction,
}

/// What one host did for a page.
#[derive(Debug, Clone)]
pub struct HostReport {
    /// The name the host was added under.
    pub host: String,
    /// Read, failed, or already read to its end.
    pub state: HostState,
}

/// What one host did for a page ([`HostReport::state`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum HostState {
    /// The host answered: `gates` of its gates are in this page; `more` when it may hold
    /// further ones (the next cursor resumes after them).
    Read {
        /// How many of this page's gates are this host's.
        gates: usize,
        /// True when its page was full: the next call reads on.
        more: bool,
    },
    /// The host's call failed (unreachable, refused, garbage): nothing of it is in this
    /// page, and the next cursor tries it again from the same place.
    Failed(Error),
    /// Every pending gate of this host was read by an earlier page: not asked again.
    Done,
}

/// One page of an inbox: the gates of every host that answered, newest first.
#[derive(Debug, Clone)]
pub struct InboxPage {
    /// The gates, newest first (by `created_at`, then host name, then id).
    pub gates: Vec<InboxGate>,
    /// One report per host, in the order the hosts were added.
    pub hosts: Vec<HostReport>,
    /// Where the next page starts; `None` when every host was read to its end (a host
    /// that failed keeps the inbox open: the next page tries it again).
    pub next: Option<InboxCursor>,
}

/// Where an inbox's next page starts, per host. Opaque: keep it as text
/// ([`InboxCursor::as_str`]) and give it back ([`InboxCursor::parse`]); it stays valid
/// across restarts of the app, and a host added since starts at its first gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxCursor(String);

/// The cursor's content: per host, the id after which its next page starts, or `done`.
#[derive(Debug, Default, Serialize, Deserialize)]
struct CursorState {
    v: u32,
    hosts: BTreeMap<String, HostPosition>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum HostPosition {
    /// The next page starts after this gate id (the last one read).
    After(String),
    /// Read to its end.
    Done,
}

const CURSOR_VERSION: u32 = 1;

impl InboxCursor {
    /// The cursor as text, to store or hand to another process.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A cursor from its text; an unreadable one is [`Error::Config`].
    pub fn parse(text: &str) -> Result<Self> {
        decode(text)?;
        Ok(Self(text.to_string()))
    }
}

impl std::fmt::Display for InboxCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What the inbox refuses before sending anything: a host name, a page size, a cursor.
fn config_error(reason: impl Into<String>) -> Error {
    Error::Config {
        operation: Operation::QueryInteractions,
        reason: reason.into(),
    }
}

fn decode(text: &str) -> Result<CursorState> {
    let state: CursorState = serde_json::from_str(text)
        .map_err(|_| config_error("the inbox cursor is not one Inbox::pending returned"))?;
    if state.v != CURSOR_VERSION {
        return Err(config_error(format!(
            "the inbox cursor is of version {}, this client reads version {CURSOR_VERSION}",
            state.v
        )));
    }
    Ok(state)
}

impl Inbox {
    /// An inbox with no host.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a host under `name` (what each of its gates and reports is labelled with, and
    /// what the cursor keys it by: keep it stable). The client's project is the one read.
    /// A name used twice, an empty one, or more than [`MAX_INBOX_HOSTS`] hosts is
    /// [`Error::Config`].
    pub fn host(mut self, name: impl Into<String>, client: Client) -> Result<Self> {
        self.add_host(name, client)?;
        Ok(self)
    }

    /// [`host`](Self::host) in place: on an error the inbox is as it was.
    pub fn add_host(&mut self, name: impl Into<String>, client: Client) -> Result<()> {
        let name = name.into();
        if name.trim().is_empty() {
            return Err(config_error("an inbox host needs a name"));
        }
        if self.hosts.iter().any(|(existing, _)| *existing == name) {
            return Err(config_error(format!(
                "the inbox has a host named {name:?} already"
            )));
        }
        if self.hosts.len() >= MAX_INBOX_HOSTS {
            return Err(config_error(format!(
                "an inbox holds at most {MAX_INBOX_HOSTS} hosts"
            )));
        }
        self.hosts.push((name, client));
        Ok(())
    }

    /// The names of the hosts, in the order they were added.
    pub fn host_names(&self) -> impl Iterator<Item = &str> {
        self.hosts.iter().map(|(name, _)| name.as_str())
    }

    /// The next page: up to `per_host` pending gates (1 to [`MAX_INBOX_PAGE`]) from every
    /// host not read to its end, all hosts asked at once. `cursor` is the last page's
    /// `next` (`None`: from the start). Fails only for a cursor or a page size it cannot
    /// use; a host's failure is in its report.
    pub async fn pending(&self, cursor: Option<&InboxCursor>, per_host: u32) -> Result<InboxPage> {
        if per_host == 0 || per_host > MAX_INBOX_PAGE {
            return Err(config_error(format!(
                "an inbox page asks 1 to {MAX_INBOX_PAGE} gates of each host, not {per_host}"
            )));
        }
        let mut state = match cursor {
            Some(cursor) => decode(cursor.as_str())?,
            None => CursorState {
                v: CURSOR_VERSION,
                ..CursorState::default()
            },
        };
        let reads = self.hosts.iter().map(|(name, client)| {
            let position = state.hosts.get(name).cloned();
            async move {
                let after = match position {
                    Some(HostPosition::Done) => return (name, None),
                    Some(HostPosition::After(id)) => Some(id),
                    None => None,
                };
                let query = InteractionQuery {
                    status: Some(InteractionStatus::Pending),
                    ..InteractionQuery::default()
                };
                let window = Windowing {
                    limit: Some(per_host),
                    next: after,
                    ..Windowing::default()
                };
                let page = client
                    .interactions()
                    .pages(&query, window)
                    .next_page()
                    .await
                    .map(Option::unwrap_or_default);
                (name, Some(page))
            }
        });
        let mut gates = Vec::new();
        let mut hosts = Vec::with_capacity(self.hosts.len());
        for (name, read) in join_all(reads).await {
            let state_now = match read {
                None => HostState::Done,
                Some(Err(error)) => HostState::Failed(error),
                Some(Ok(page)) => {
                    let more = page.len() as u32 >= per_host;
                    let last = page.last().and_then(|gate| gate.id.clone());
                    let position = match (more, last) {
                        (true, Some(id)) => HostPosition::After(id),
                        _ => HostPosition::Done,
                    };
                    state.hosts.insert(name.clone(), position);
                    let count = page.len();
                    gates.extend(page.into_iter().map(|gate| InboxGate {
                        host: name.clone(),
                        gate,
                    }));
                    HostState::Read { gates: count, more }
                }
            };
            hosts.push(HostReport {
                host: name.clone(),
                state: state_now,
            });
        }
        gates.sort_by(|a, b| {
            b.gate
                .created_at
                .cmp(&a.gate.created_at)
                .then_with(|| a.host.cmp(&b.host))
                .then_with(|| a.gate.id.cmp(&b.gate.id))
        });
        // Hosts removed from the inbox since the cursor was made are forgotten.
        state
            .hosts
            .retain(|name, _| self.hosts.iter().any(|(host, _)| host == name));
        let open = self
            .hosts
            .iter()
            .any(|(name, _)| !matches!(state.hosts.get(name), Some(HostPosition::Done)));
        let next = if open {
            let text = serde_json::to_string(&state)
                .map_err(|e| config_error(format!("cannot write the inbox cursor: {e}")))?;
            Some(InboxCursor(text))
        } else {
            None
        };
        Ok(InboxPage { gates, hosts, next })
    }
}
