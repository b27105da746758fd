//! API key authentication: `Authorization: ApiKey <key>` or `Bearer <key>`; and the
//! tenant of AgentPlat's root paths ([`resolve_tenant`]).

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

/// The tenant (Gatehouse: the project) a request on AgentPlat's root paths acts in: the
/// `X-Agentplat-Tenant-Id` header, trimmed, as AgentPlat's `headerTenantAuth` reads it
/// (a UUID is normalized as `?project_id=` is, so both name the same project). Missing
/// or blank: 400 `TENANT_REQUIRED` with AgentPlat's message. The API key is checked
/// before (by [`require_key`]); every tenant-scoped route resolves its tenant here, so a
/// rule binding keys to tenants belongs in this one function.
pub fn resolve_tenant(headers: &axum::http::HeaderMap) -> Result<String, ApiError> {
    let tenant = headers
        .get(gatehouse_wire::execution::TENANT_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            ApiError::new(
                GatehouseCode::TenantRequired,
                gatehouse_wire::error::messages::MISSING_TENANT_HEADER,
            )
        })?;
    Ok(match uuid::Uuid::parse_str(tenant) {
        Ok(project) => project.to_string(),
        Err(_) => tenant.to_string(),
    })
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
    fn the_tenant_header_names_the_project() {
        let mut headers = axum::http::HeaderMap::new();
        assert_eq!(
            resolve_tenant(&headers).map_err(|e| e.code),
            Err(GatehouseCode::TenantRequired)
        );
        headers.insert("x-agentplat-tenant-id", "   ".parse().unwrap());
        assert!(resolve_tenant(&headers).is_err());
        headers.insert("x-agentplat-tenant-id", " tenant-1 ".parse().unwrap());
        assert_eq!(resolve_tenant(&headers).unwrap(), "tenant-1");
        headers.insert(
            "x-agentplat-tenant-id",
            "019FAC94-0000-7000-8000-000000000000".parse().unwrap(),
        );
        assert_eq!(
            resolve_tenant(&headers).unwrap(),
            "019fac94-0000-7000-8000-000000000000"
        );
    }

    #[test]
    fn finds_actor_by_secret() {
        let ring = KeyRing::new(&[ApiKey::parse("ops=s3cret"), ApiKey::parse("plain")]);
        assert_eq!(ring.actor_for("s3cret"), Some("ops"));
        assert_eq!(ring.actor_for("plain"), Some("operator"));
        assert_eq!(ring.actor_for("nope"), None);
    }
}
