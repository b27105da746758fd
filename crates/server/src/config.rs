//! Server configuration.

use std::net::SocketAddr;
use std::time::Duration;

/// The API key a server accepts when none is configured (actor `dev`). Only for local
/// development: the server logs a warning when it falls back to it.
pub const DEV_API_KEY: &str = "gatehouse-dev";

/// An API key and the actor it authenticates.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey {
    /// Who the key belongs to (recorded as `created_by_id` / `updated_by_id`).
    pub actor: String,
    /// The secret sent in `Authorization`.
    pub secret: String,
}

impl ApiKey {
    /// A key for `actor`.
    pub fn new(actor: impl Into<String>, secret: impl Into<String>) -> Self {
        Self {
            actor: actor.into(),
            secret: secret.into(),
        }
    }

    /// Parse `actor=secret`, or a bare `secret` (actor `operator`).
    pub fn parse(text: &str) -> Self {
        match text.split_once('=') {
            Some((actor, secret)) if !actor.trim().is_empty() => {
                Self::new(actor.trim(), secret.trim())
            }
            _ => Self::new("operator", text.trim()),
        }
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKey")
            .field("actor", &self.actor)
            .field("secret", &"<redacted>")
            .finish()
    }
}

impl std::str::FromStr for ApiKey {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self::parse(s))
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
    /// Largest accepted request body (default 1 MiB); larger answers 413.
    pub max_body_bytes: usize,
    /// `effectiveParameters` size cap (default 65536, A2).
    pub stamp_max_bytes: usize,
    /// Lease of a claimed resume job (default 30 s); an expired lease is reclaimed.
    pub lease: Duration,
    /// How often the dispatcher polls for work besides its wake-ups (default 1 s).
    pub dispatch_poll: Duration,
    /// SSE heartbeat comment interval (default 15 s).
    pub heartbeat: Duration,
    /// SSE `retry:` hint sent first on every watch stream (default 3 s).
    pub sse_retry: Duration,
    /// Run the resume dispatcher in this process (default true).
    pub run_dispatcher: bool,
}

impl ServerConfig {
    /// Defaults on `database_url`: `127.0.0.1:0`, dev key, execution on, 1 MiB bodies,
    /// 65536-byte stamps, 30 s leases, 15 s heartbeats.
    pub fn new(database_url: impl Into<String>) -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            database_url: database_url.into(),
            api_keys: Vec::new(),
            execution: true,
            max_body_bytes: 1024 * 1024,
            stamp_max_bytes: 65536,
            lease: Duration::from_secs(30),
            dispatch_poll: Duration::from_secs(1),
            heartbeat: Duration::from_secs(15),
            sse_retry: Duration::from_secs(3),
            run_dispatcher: true,
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
        let key = ApiKey::parse("alice=topsecret");
        assert_eq!(key.actor, "alice");
        assert_eq!(key.secret, "topsecret");
        assert!(!format!("{key:?}").contains("topsecret"));
        let bare = ApiKey::parse("xyz");
        assert_eq!(
            (bare.actor.as_str(), bare.secret.as_str()),
            ("operator", "xyz")
        );
    }
}
