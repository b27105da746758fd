//! Server configuration, and the API key spec `[ACTOR=]SECRET[@PROJECTS]`.

pub mod retention;
pub mod webhooks;

pub use retention::RetentionSettings;
pub use webhooks::{WebhookEndpoint, WebhookSecret, WebhookSettings, WebhookSpecError};

use std::net::SocketAddr;
use std::time::Duration;

/// The API key a server accepts when none is configured (actor `dev`). Only for local
/// development: the server logs a warning when it falls back to it.
pub const DEV_API_KEY: &str = "gatehouse-dev";

/// The actor of a key spec without `ACTOR=`.
pub const DEFAULT_KEY_ACTOR: &str = "operator";

/// Longest actor name and project id in a key spec, in characters.
pub const MAX_KEY_NAME_CHARS: usize = 256;

/// The projects a key may act in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyProjects {
    /// No binding was given: every project (kept for the dev setup; the server warns at
    /// startup about every such key).
    Unbound,
    /// `@*`: every project, deliberately (an operator key; no warning).
    All,
    /// `@P1+P2`: only these projects (normalized: a UUID in lowercase hyphenated form,
    /// any other id as written).
    Only(Vec<String>),
}

impl KeyProjects {
    /// True when a key with this binding may act in `project_id` (compared normalized).
    pub fn allows(&self, project_id: &str) -> bool {
        match self {
            Self::Unbound | Self::All => true,
            Self::Only(projects) => {
                let wanted = normalize_project(project_id);
                projects.contains(&wanted)
            }
        }
    }
}

/// A project id as keys and requests compare it: a UUID in lowercase hyphenated form,
/// anything else trimmed and as written.
pub fn normalize_project(project_id: &str) -> String {
    let trimmed = project_id.trim();
    match uuid::Uuid::parse_str(trimmed) {
        Ok(uuid) => uuid.to_string(),
        Err(_) => trimmed.to_string(),
    }
}

/// The key `GET /metrics` requires ([`ServerConfig::metrics_key`]): kept as its SHA-256
/// digest, never shown by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct MetricsKey {
    digest: [u8; 32],
}

impl MetricsKey {
    /// The key `secret`.
    pub fn new(secret: &str) -> Self {
        Self {
            digest: <sha2::Sha256 as sha2::Digest>::digest(secret.as_bytes()).into(),
        }
    }

    /// True when `presented` is the key (digests compared in constant time).
    pub fn admits(&self, presented: &str) -> bool {
        let candidate: [u8; 32] =
            <sha2::Sha256 as sha2::Digest>::digest(presented.as_bytes()).into();
        self.digest
            .iter()
            .zip(candidate.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

impl std::fmt::Debug for MetricsKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MetricsKey(<redacted>)")
    }
}

/// Why a key spec was refused (never contains the secret).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid API key spec: {0} (expected [ACTOR=]SECRET[@PROJECT[+PROJECT...]|@*])")]
pub struct ApiKeySpecError(pub String);

/// An API key: the actor it authenticates and the projects it may act in.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey {
    /// Who the key belongs to (recorded as `created_by_id` / `updated_by_id`).
    pub actor: String,
    /// The secret sent in `Authorization`.
    pub secret: String,
    /// Where the key may act.
    pub projects: KeyProjects,
}

impl ApiKey {
    /// An unbound key for `actor` (every project; the server warns at startup).
    pub fn new(actor: impl Into<String>, secret: impl Into<String>) -> Self {
        Self {
            actor: actor.into(),
            secret: secret.into(),
            projects: KeyProjects::Unbound,
        }
    }

    /// A key for `actor` bound to `projects` (normalized).
    pub fn bound<I, P>(actor: impl Into<String>, secret: impl Into<String>, projects: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: AsRef<str>,
    {
        Self {
            actor: actor.into(),
            secret: secret.into(),
            projects: KeyProjects::Only(
                projects
                    .into_iter()
                    .map(|p| normalize_project(p.as_ref()))
                    .collect(),
            ),
        }
    }

    /// Parse a key spec: `[ACTOR=]SECRET[@PROJECTS]`.
    ///
    /// - `ACTOR=` names who the key acts as (default [`DEFAULT_KEY_ACTOR`]); the first
    ///   `=` ends the actor, so the secret may contain `=`;
    /// - the text after the LAST `@` is the binding: `*` (every project) or projects
    ///   joined by `+` (UUIDs, or ids of letters, digits, `-`, `_`, `.`, `:`). Without
    ///   `@` the key is unbound. A secret containing `@` therefore needs a binding
    ///   (`...@*` at least).
    ///
    /// ```
    /// use gatehouse_server::config::{ApiKey, KeyProjects};
    /// let key = ApiKey::parse("phone=s3cret@019fac94-0000-7000-8000-000000000000").unwrap();
    /// assert_eq!(key.actor, "phone");
    /// assert!(key.projects.allows("019FAC94-0000-7000-8000-000000000000"));
    /// assert!(!key.projects.allows("019fac95-0000-7000-8000-000000000000"));
    /// assert_eq!(ApiKey::parse("s3cret").unwrap().projects, KeyProjects::Unbound);
    /// ```
    pub fn parse(text: &str) -> Result<Self, ApiKeySpecError> {
        let text = text.trim();
        let (credential, binding) = match text.rsplit_once('@') {
            Some((credential, binding)) => (credential, Some(binding.trim())),
            None => (text, None),
        };
        let (actor, secret) = match credential.split_once('=') {
            Some((actor, secret)) if !actor.trim().is_empty() => (actor.trim(), secret.trim()),
            _ => (DEFAULT_KEY_ACTOR, credential.trim()),
        };
        if actor.chars().count() > MAX_KEY_NAME_CHARS || actor.chars().any(char::is_control) {
            return Err(ApiKeySpecError(format!(
                "the actor must be 1 to {MAX_KEY_NAME_CHARS} printable characters"
            )));
        }
        if secret.is_empty() {
            return Err(ApiKeySpecError(format!(
                "the secret is empty (actor '{actor}')"
            )));
        }
        let projects = match binding {
            None => KeyProjects::Unbound,
            Some("*") => KeyProjects::All,
            Some(list) => {
                let mut projects = Vec::new();
                for item in list.split('+') {
                    let item = item.trim();
                    if !valid_project_name(item) {
                        return Err(ApiKeySpecError(format!(
                            "the key of actor '{actor}' names an invalid project {item:?}: \
                             use UUIDs or ids of letters, digits, '-', '_', '.', ':' \
                             joined by '+', or '*' for every project"
                        )));
                    }
                    let project = normalize_project(item);
                    if !projects.contains(&project) {
                        projects.push(project);
                    }
                }
                KeyProjects::Only(projects)
            }
        };
        Ok(Self {
            actor: actor.to_string(),
            secret: secret.to_string(),
            projects,
        })
    }
}

fn valid_project_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_KEY_NAME_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKey")
            .field("actor", &self.actor)
            .field("secret", &"<redacted>")
            .field("projects", &self.projects)
            .finish()
    }
}

impl std::str::FromStr for ApiKey {
    type Err = ApiKeySpecError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// How a server is set up. Build with [`ServerConfig::new`] and adjust fields.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Where to listen (`127.0.0.1:0` picks a free port).
    pub bind: SocketAddr,
    /// `sqlite://PATH` (default `sqlite://gatehouse.db`) or `postgres://...`.
    pub database_url: String,
    /// Accepted keys. Empty: the dev key [`DEV_API_KEY`] (actor `dev`), with a warning.
    pub api_keys: Vec<ApiKey>,
    /// Serve execution sessions (CONTRACT.md B2). Default true.
    pub execution: bool,
    /// AgentPlat's header-only tenant auth on AgentPlat's root paths (`/rooms/...`): a
    /// request with `X-Agentplat-Tenant-Id` and no `Authorization` is admitted in that
    /// project (the tenant id is the project id), as AgentPlat's `headerTenantAuth()`
    /// admits it, and only there ([`crate::auth::require_key_or_tenant_header`]).
    /// Default false: a key is required. For a trusted network only: anyone who reaches
    /// the port acts in any project by naming it.
    pub agentplat_header_auth: bool,
    /// Largest accepted request body (default 1 MiB); larger answers 413.
    pub max_body_bytes: usize,
    /// `effectiveParameters` size cap (default 65536, A2).
    pub stamp_max_bytes: usize,
    /// Lease of a claimed resume job and of a running session's hold (default 10 s).
    /// The work's heartbeat renews it every third of it while the work runs, so a long
    /// resume keeps it; an instance that dies or stalls loses it within one lease, and
    /// any instance takes the work over.
    pub lease: Duration,
    /// Resume workers per instance (default 8): answered gates resumed in parallel.
    /// 0 runs none (as `run_dispatcher: false`).
    pub resume_workers: usize,
    /// How often the reconciler looks for sessions to take over or end (default 1 s).
    pub reconcile_interval: Duration,
    /// Admission control: while more answered gates than this wait for their resume (on
    /// every instance of the database), a new answer waits (up to `backlog_wait`) before
    /// it is taken, so answers are admitted no faster than the workers resume them and
    /// the backlog stays bounded (default 128; 0: no limit).
    pub max_resume_backlog: u64,
    /// The longest an answer waits for the backlog to shrink; then it is taken anyway
    /// (an answer is never refused for load). Default 5 s.
    pub backlog_wait: Duration,
    /// How often the dispatcher polls for work besides its wake-ups (default 1 s).
    pub dispatch_poll: Duration,
    /// SSE heartbeat comment interval (default 15 s).
    pub heartbeat: Duration,
    /// SSE `retry:` hint sent first on every watch stream (default 3 s).
    pub sse_retry: Duration,
    /// Run the resume dispatcher in this process (default true).
    pub run_dispatcher: bool,
    /// How long a client may take to send a request's head (request line and headers),
    /// also the longest a kept-alive connection may sit idle between requests (default
    /// 30 s); then the connection is closed.
    pub header_read_timeout: Duration,
    /// Most open connections one client address may hold at once; a connection over it
    /// is answered 503 (JSON, `Retry-After`) and closed. `None` (the default): a quarter
    /// of the connections in all (at least 1), so one address can never take every
    /// connection and leave others none (set it higher for a busy proxy in front).
    /// Never above [`max_connections`](Self::max_connections) as derived at start.
    /// `Some(0)` means no per-address cap.
    pub max_connections_per_client: Option<usize>,
    /// Most open connections in all; one more is answered 503 (JSON, `Retry-After`) and
    /// closed. `None` (the default): derived from the open-file limit at start (the
    /// limit less 64 and 3 per database connection, [`crate::limits`]); a higher setting
    /// is lowered to that.
    pub max_connections: Option<usize>,
    /// Most open event streams (interaction watch and execution event streams
    /// together); one more is refused at once with 503 `UNAVAILABLE` and `Retry-After`.
    /// `None` (the default): half of the connections in all, so idle watchers always
    /// leave room for requests; a higher setting is lowered to that.
    pub max_watchers: Option<usize>,
    /// The longest a request (or a worker) waits for the database before it is answered
    /// 503 `UNAVAILABLE` with `Retry-After` (default 5 s): for a pooled connection (a
    /// PostgreSQL that is down or restarting is retried until then), and on SQLite for
    /// this process's turn to write and then for another process's write lock (the busy
    /// timeout), so a SQLite write waits at most twice it. See
    /// [`Database::acquire_timeout`](crate::Database::acquire_timeout).
    pub db_acquire_timeout: Duration,
    /// Webhook endpoints and their retry policy ([`crate::webhooks`]); none by default.
    pub webhooks: WebhookSettings,
    /// How long finished webhook events and idempotency keys are kept, and how the
    /// pruning runs ([`crate::retention`]).
    pub retention: RetentionSettings,
    /// Record metrics and serve them at `GET /metrics` in Prometheus's text format
    /// ([`crate::metrics`]). Default true; off, `/metrics` answers 404 and nothing is
    /// recorded.
    pub metrics: bool,
    /// How often the gauges read from the database (gates by status, the resume
    /// backlog) are refreshed, by one background task (default 10 s). A scrape only
    /// reads the last values: it never takes a database connection, so it costs the
    /// same at a million gates as at none, and scrapes at once leave the pool alone.
    pub metrics_refresh: Duration,
    /// Serve `GET /metrics` on a listener of its own at this address, and not on the
    /// API's (default: none, on the API's listener).
    pub metrics_bind: Option<SocketAddr>,
    /// The key a scrape must send (`Authorization: Bearer <key>`; as the API takes its
    /// keys, `ApiKey <key>` or the bare key too); without it, or with another,
    /// `/metrics` answers 401. Default: none, no key.
    pub metrics_key: Option<MetricsKey>,
    /// Origins a browser page may call this API from (CORS, [`crate::cors`]), each
    /// `scheme://host[:port]`. Empty (the default): no CORS headers, so browsers keep
    /// other origins' pages out.
    pub cors_origins: Vec<String>,
    /// Which of Agenta's contracts Agenta's session paths speak
    /// (`POST /api/sessions/interactions/{id}/respond` above all): Agenta v0.121's
    /// durable one (the default), or the one before it. `GET /api/capabilities` says
    /// which (`durable_approvals` is listed only when durable).
    pub agenta_contract: AgentaContract,
}

/// Which of Agenta's contracts Agenta's session paths speak ([`ServerConfig::agenta_contract`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AgentaContract {
    /// Agenta v0.121 and later (the default): the respond takes an `Idempotency-Key`
    /// (required), answers 202 with the continuation command and the execution's state,
    /// and its errors are Agenta's envelope; Stop, the session snapshot and its events are
    /// served (docs/CONTRACT.md, "Durable contract").
    #[default]
    Durable,
    /// Agenta before v0.121: the respond answers 200 `{count, interaction}`, its errors
    /// FastAPI's `{"detail": ...}`; no Stop, snapshot or events (as measured live).
    Legacy,
}

impl AgentaContract {
    /// The spelling of the setting (`durable`, `legacy`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Durable => "durable",
            Self::Legacy => "legacy",
        }
    }

    /// True for [`AgentaContract::Durable`].
    pub fn is_durable(self) -> bool {
        self == Self::Durable
    }
}

impl std::str::FromStr for AgentaContract {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "durable" => Ok(Self::Durable),
            "legacy" => Ok(Self::Legacy),
            other => Err(format!(
                "unknown Agenta contract {other:?}: expected `durable` or `legacy`"
            )),
        }
    }
}

impl ServerConfig {
    /// Defaults on `database_url`: `127.0.0.1:0`, dev key, execution on, 1 MiB bodies,
    /// 65536-byte stamps, 10 s leases, 8 resume workers, a resume backlog of 128 (5 s
    /// wait), a reconciler pass every second, 15 s heartbeats, 30 s header reads,
    /// connections and event streams capped by the open-file limit (a quarter of the
    /// connections per client address), 5 s waits for the database, metrics on (on the
    /// API's listener, no key, gauges refreshed every 10 s), no CORS, Agenta's durable
    /// contract.
    pub fn new(database_url: impl Into<String>) -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            database_url: database_url.into(),
            api_keys: Vec::new(),
            execution: true,
            agentplat_header_auth: false,
            max_body_bytes: 1024 * 1024,
            stamp_max_bytes: 65536,
            lease: Duration::from_secs(10),
            resume_workers: 8,
            reconcile_interval: Duration::from_secs(1),
            max_resume_backlog: 128,
            backlog_wait: Duration::from_secs(5),
            dispatch_poll: Duration::from_secs(1),
            heartbeat: Duration::from_secs(15),
            sse_retry: Duration::from_secs(3),
            run_dispatcher: true,
            header_read_timeout: Duration::from_secs(30),
            max_connections_per_client: None,
            max_connections: None,
            max_watchers: None,
            db_acquire_timeout: crate::db::DEFAULT_ACQUIRE_TIMEOUT,
            webhooks: WebhookSettings::default(),
            retention: RetentionSettings::default(),
            metrics: true,
            metrics_refresh: Duration::from_secs(10),
            metrics_bind: None,
            metrics_key: None,
            cors_origins: Vec::new(),
            agenta_contract: AgentaContract::Durable,
        }
    }

    /// The keys in force: the configured ones, or the dev key.
    pub fn effective_keys(&self) -> Vec<ApiKey> {
        if self.api_keys.is_empty() {
            vec![ApiKey::new("dev", DEV_API_KEY)]
        } else {
            self.api_keys.clone()
        }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self::new("sqlite://gatehouse.db")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_key_parse_and_debug_hides_secret() {
        let key = ApiKey::parse("alice=topsecret").unwrap();
        assert_eq!(key.actor, "alice");
        assert_eq!(key.secret, "topsecret");
        assert_eq!(key.projects, KeyProjects::Unbound);
        assert!(!format!("{key:?}").contains("topsecret"));
        let bare = ApiKey::parse("xyz").unwrap();
        assert_eq!(
            (bare.actor.as_str(), bare.secret.as_str()),
            ("operator", "xyz")
        );
        let metrics_key = MetricsKey::new("scrape-secret");
        assert!(metrics_key.admits("scrape-secret"));
        assert!(!metrics_key.admits("scrape-secreT"));
        assert!(!format!("{metrics_key:?}").contains("scrape"));
        let eq = ApiKey::parse("ops=abc==").unwrap();
        assert_eq!((eq.actor.as_str(), eq.secret.as_str()), ("ops", "abc=="));
    }

    #[test]
    fn api_key_bindings() {
        let p1 = "019FAC94-0000-7000-8000-000000000000";
        let p2 = "tenant-2";
        let key = ApiKey::parse(&format!("phone=s3c+r/et@{p1}+{p2}")).unwrap();
        assert_eq!(key.secret, "s3c+r/et");
        assert_eq!(
            key.projects,
            KeyProjects::Only(vec![p1.to_lowercase(), p2.to_string()])
        );
        assert!(key.projects.allows(&p1.to_lowercase()));
        assert!(key.projects.allows(" tenant-2 "));
        assert!(!key.projects.allows("tenant-3"));
        let all = ApiKey::parse("root=p@ss@*").unwrap();
        let err = ApiKey::parse("root=hunter2@bad project").unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
        assert_eq!(
            (all.secret.as_str(), &all.projects),
            ("p@ss", &KeyProjects::All)
        );
        for bad in [
            "",
            "alice=",
            "alice=@p1",
            "alice=s@",
            "alice=s@p1+",
            "alice=s@p 1",
            "alice=s@p1,p2",
        ] {
            assert!(ApiKey::parse(bad).is_err(), "{bad:?} must be refused");
        }
    }
}
