//! The webhook settings: endpoints (a name, a URL, a `whsec_` secret) and the retry
//! policy. Secrets and URLs are never rendered by `Debug` (a URL may carry a token).

use std::time::Duration;

use base64::Engine;

/// Longest endpoint name, in characters.
pub const MAX_ENDPOINT_NAME_CHARS: usize = 64;

/// Fewest secret bytes accepted (the Standard Webhooks convention uses 24 to 64).
pub const MIN_SECRET_BYTES: usize = 16;

/// Why an endpoint spec was refused (never contains the secret).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid webhook endpoint: {0} (expected NAME=whsec_BASE64@URL)")]
pub struct WebhookSpecError(pub String);

/// An endpoint's signing key: the bytes a `whsec_<base64>` secret decodes to.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret(Vec<u8>);

impl WebhookSecret {
    /// Decode `whsec_<base64>` (padded or not).
    pub fn parse(text: &str) -> Result<Self, WebhookSpecError> {
        let Some(encoded) = text.trim().strip_prefix("whsec_") else {
            return Err(WebhookSpecError(
                "the secret must start with whsec_".to_string(),
            ));
        };
        let encoded = encoded.trim_end_matches('=');
        let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(encoded)
            .map_err(|_| WebhookSpecError("the secret after whsec_ is not base64".to_string()))?;
        if bytes.len() < MIN_SECRET_BYTES {
            return Err(WebhookSpecError(format!(
                "the secret decodes to {} bytes; at least {MIN_SECRET_BYTES} are needed",
                bytes.len()
            )));
        }
        Ok(Self(bytes))
    }

    /// The key bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// One place events are POSTed to.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookEndpoint {
    /// The endpoint's name: what the outbox rows and the logs name (never the URL).
    pub name: String,
    /// Where events are POSTed (`http://` or `https://`).
    pub url: String,
    /// The signing key.
    pub secret: WebhookSecret,
}

impl WebhookEndpoint {
    /// Parse `NAME=whsec_BASE64@URL`: the first `=` ends the name, the first `@` after it
    /// ends the secret (base64 has no `@`), the rest is the URL.
    ///
    /// ```
    /// use gatehouse_server::webhooks::WebhookEndpoint;
    /// let e = WebhookEndpoint::parse("phone=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw@https://push.example/hook").unwrap();
    /// assert_eq!((e.name.as_str(), e.url.as_str()), ("phone", "https://push.example/hook"));
    /// assert!(!format!("{e:?}").contains("MfKQ9r8"));
    /// ```
    pub fn parse(text: &str) -> Result<Self, WebhookSpecError> {
        let text = text.trim();
        let Some((name, rest)) = text.split_once('=') else {
            return Err(WebhookSpecError("no NAME= before the secret".to_string()));
        };
        let name = name.trim();
        if name.is_empty()
            || name.chars().count() > MAX_ENDPOINT_NAME_CHARS
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return Err(WebhookSpecError(format!(
                "the name must be 1 to {MAX_ENDPOINT_NAME_CHARS} letters, digits, '-', '_' or '.'"
            )));
        }
        let Some((secret, url)) = rest.split_once('@') else {
            return Err(WebhookSpecError(format!(
                "endpoint '{name}': no @URL after the secret"
            )));
        };
        let secret = WebhookSecret::parse(secret)
            .map_err(|err| WebhookSpecError(format!("endpoint '{name}': {}", err.0)))?;
        let url = url.trim();
        let parsed = reqwest::Url::parse(url).map_err(|_| {
            WebhookSpecError(format!("endpoint '{name}': the URL is not a valid URL"))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(WebhookSpecError(format!(
                "endpoint '{name}': the URL must be http:// or https:// with a host"
            )));
        }
        Ok(Self {
            name: name.to_string(),
            url: url.to_string(),
            secret,
        })
    }

    /// `scheme://host[:port]` of the URL: what may be shown (its path or query may
    /// carry a token).
    pub fn origin(&self) -> String {
        reqwest::Url::parse(&self.url)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_default()
    }
}

impl std::fmt::Debug for WebhookEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookEndpoint")
            .field("name", &self.name)
            .field("origin", &self.origin())
            .field("secret", &self.secret)
            .finish()
    }
}

impl std::str::FromStr for WebhookEndpoint {
    type Err = WebhookSpecError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// How events are delivered ([`crate::ServerConfig::webhooks`]).
#[derive(Debug, Clone)]
pub struct WebhookSettings {
    /// Where events go. Empty (the default): no event is written, nothing is delivered.
    pub endpoints: Vec<WebhookEndpoint>,
    /// Attempts per event and endpoint before it is marked `failed` (default 10).
    pub max_attempts: u32,
    /// The wait before the first retry; each next one doubles it, up to
    /// [`WebhookSettings::max_retry_delay`] (default 1 s).
    pub retry_delay: Duration,
    /// The longest wait between two attempts (default 10 min).
    pub max_retry_delay: Duration,
    /// The longest one POST may take, connect to last byte (default 10 s). A claim's
    /// lease is this plus [`crate::ServerConfig::lease`], so no other instance takes an
    /// event over while a live attempt may still be sending it.
    pub timeout: Duration,
    /// Delivery workers per endpoint, per instance (default 2): each endpoint has a lane
    /// of its own, so a slow or dead endpoint holds only its own workers, never another
    /// endpoint's. An instance runs `endpoints x workers` in all.
    pub workers: usize,
    /// How often an idle worker looks for due events besides its wake-ups (default
    /// 250 ms).
    pub poll: Duration,
    /// Failed attempts in a row at one endpoint that open its circuit (default 5; 0: no
    /// circuit): its lane then sends nothing for [`WebhookSettings::circuit_open`], then
    /// one probe ([`crate::webhooks::circuit`]).
    pub circuit_failures: u32,
    /// How long a circuit first stays open (default 5 s); after each failed probe twice
    /// as long, up to [`WebhookSettings::max_retry_delay`].
    pub circuit_open: Duration,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            endpoints: Vec::new(),
            max_attempts: 10,
            retry_delay: Duration::from_secs(1),
            max_retry_delay: Duration::from_secs(600),
            timeout: Duration::from_secs(10),
            workers: 2,
            poll: Duration::from_millis(250),
            circuit_failures: 5,
            circuit_open: Duration::from_secs(5),
        }
    }
}

impl WebhookSettings {
    /// The wait after failed attempt number `attempts` (1-based): the retry delay
    /// doubled `attempts - 1` times, at most the max retry delay.
    pub fn backoff(&self, attempts: u32) -> Duration {
        let doublings = attempts.saturating_sub(1).min(30);
        self.retry_delay
            .saturating_mul(1u32 << doublings)
            .min(self.max_retry_delay)
    }

    /// The endpoint named `name`.
    pub fn endpoint(&self, name: &str) -> Option<&WebhookEndpoint> {
        self.endpoints.iter().find(|e| e.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    #[test]
    fn endpoint_specs() {
        let e = WebhookEndpoint::parse(&format!(
            "phone={SECRET}@https://u:p@push.example:8443/h?token=abc=="
        ))
        .unwrap();
        assert_eq!(e.name, "phone");
        assert_eq!(e.url, "https://u:p@push.example:8443/h?token=abc==");
        assert_eq!(e.origin(), "https://push.example:8443");
        let debug = format!("{e:?}");
        assert!(
            !debug.contains("MfKQ9r8") && !debug.contains("token"),
            "{debug}"
        );
        for bad in [
            "",
            "phone",
            &format!("={SECRET}@http://x"),
            &format!("ph one={SECRET}@http://x"),
            "phone=sekrit@http://x",
            "phone=whsec_c2hvcnQ=@http://x",
            "phone=whsec_!!!@http://x",
            &format!("phone={SECRET}"),
            &format!("phone={SECRET}@ftp://x"),
            &format!("phone={SECRET}@not a url"),
        ] {
            let err = WebhookEndpoint::parse(bad).expect_err(bad);
            assert!(!err.to_string().contains("MfKQ9r8"), "{err}");
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let settings = WebhookSettings {
            retry_delay: Duration::from_millis(100),
            max_retry_delay: Duration::from_secs(1),
            ..WebhookSettings::default()
        };
        let waits: Vec<u128> = (1..=6).map(|n| settings.backoff(n).as_millis()).collect();
        assert_eq!(waits, vec![100, 200, 400, 800, 1000, 1000]);
        assert_eq!(settings.backoff(u32::MAX), Duration::from_secs(1));
    }
}
