//! API key authentication: `Authorization: ApiKey <key>` or `Bearer <key>`.

use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use gatehouse_wire::error::GatehouseCode;
use sha2::{Digest, Sha256};

use crate::config::ApiKey;
use crate::error::ApiError;
use crate::AppState;

/// The authenticated caller, put in the request's extensions by the auth layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor(pub String);

/// The key material a server accepts (secrets kept only as SHA-256 digests).
#[derive(Clone)]
pub struct KeyRing {
    keys: Vec<(String, [u8; 32])>,
}

impl std::fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyRing")
            .field(
                "actors",
                &self.keys.iter().map(|(a, _)| a).collect::<Vec<_>>(),
            )
            .finish()
    }
}

fn digest(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

impl KeyRing {
    /// A key ring over `keys`.
    pub fn new(keys: &[ApiKey]) -> Self {
        Self {
            keys: keys
                .iter()
                .map(|k| (k.actor.clone(), digest(&k.secret)))
                .collect(),
        }
    }

    /// The actor owning `secret`, comparing digests in constant time.
    pub fn actor_for(&self, secret: &str) -> Option<&str> {
        let candidate = digest(secret);
        let mut found = None;
        for (actor, key) in &self.keys {
            let diff = key
                .iter()
                .zip(candidate.iter())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b));
            if diff == 0 && found.is_none() {
                found = Some(actor.as_str());
            }
        }
        found
    }
}

/// The secret of an `Authorization` header value (`ApiKey <key>` or `Bearer <key>`).
pub fn parse_authorization(value: &str) -> Option<&str> {
    let (scheme, rest) = value.trim().split_once(' ')?;
    let secret = rest.trim();
    if secret.is_empty() {
        return None;
    }
    if scheme.eq_ignore_ascii_case("apikey") || scheme.eq_ignore_ascii_case("bearer") {
        Some(secret)
    } else {
        None
    }
}

/// Middleware: 401 unless the request carries a known key; on success the [`Actor`]
/// is available as a request extension.
pub async fn require_key(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let secret = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_authorization);
    let Some(secret) = secret else {
        return ApiError::new(
            GatehouseCode::Unauthorized,
            "Missing credentials: send Authorization: ApiKey <key> or Bearer <key>",
        )
        .into_response();
    };
    let Some(actor) = state.keys().actor_for(secret).map(str::to_string) else {
        return ApiError::new(GatehouseCode::Unauthorized, "Unknown API key").into_response();
    };
    request.extensions_mut().insert(Actor(actor));
    next.run(request).await
}

/// The stable UUID of an actor, as a row records it (`created_by_id`, `updated_by_id`):
/// Agenta's API models type those fields as UUIDs and refuse anything else. An actor
/// that is already a UUID is kept (lowercase); any other name maps to the same UUID every
/// time (version 8, from the SHA-256 of `gatehouse-actor:<name>`).
pub fn actor_uuid(actor: &str) -> String {
    if let Ok(id) = uuid::Uuid::parse_str(actor) {
        return id.hyphenated().to_string();
    }
    let hash = Sha256::digest(format!("gatehouse-actor:{actor}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&hash[..16]);
    uuid::Builder::from_custom_bytes(bytes)
        .into_uuid()
        .hyphenated()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_schemes() {
        assert_eq!(parse_authorization("ApiKey abc"), Some("abc"));
        assert_eq!(parse_authorization("Bearer  abc "), Some("abc"));
        assert_eq!(parse_authorization("Basic abc"), None);
        assert_eq!(parse_authorization("Bearer"), None);
    }

    #[test]
    fn an_actor_has_one_stable_uuid() {
        let dev = actor_uuid("dev");
        assert_eq!(dev, actor_uuid("dev"));
        assert_ne!(dev, actor_uuid("ops"));
        assert!(gatehouse_wire::interaction::is_uuid(&dev), "{dev}");
        assert_eq!(uuid::Uuid::parse_str(&dev).unwrap().get_version_num(), 8);
        let id = "019FAC94-5B91-71D2-9D4B-5486013E6E9B";
        assert_eq!(actor_uuid(id), id.to_ascii_lowercase());
    }

    #[test]
    fn finds_actor_by_secret() {
        let ring = KeyRing::new(&[ApiKey::parse("ops=s3cret"), ApiKey::parse("plain")]);
        assert_eq!(ring.actor_for("s3cret"), Some("ops"));
        assert_eq!(ring.actor_for("plain"), Some("operator"));
        assert_eq!(ring.actor_for("nope"), None);
    }
}
