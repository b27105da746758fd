//! API keys and project authorisation.
//!
//! A request authenticates with `Authorization: ApiKey <key>` or `Bearer <key>`
//! ([`require_key`]); the key names an actor and the projects it may act in
//! ([`KeyProjects`], configured as `[ACTOR=]SECRET[@PROJECT+PROJECT|@*]`, see
//! [`ApiKey::parse`]).
//!
//! **Every project a request acts in goes through [`authorize_project`]**, the one
//! place that decides whether the caller may act there. [`require_key`] calls it for
//! the projects a request names where routes read them ([`requested_projects`]:
//! `?project_id=` and the `X-Agentplat-Tenant-Id` header), before any handler runs; the
//! project extractors call it again for the project they hand to the handler. A key used
//! outside its projects answers 404 when the route names a resource in its path (an
//! interaction, a session: indistinguishable from one that does not exist) and 403 on the
//! project itself (a query, a create, an invoke).
//!
//! AgentPlat's root paths name their project in the `X-Agentplat-Tenant-Id` header
//! ([`resolve_tenant`], which authorises it the same way). There, and only there, a
//! server set up for it ([`ServerConfig::agentplat_header_auth`], off by default)
//! also admits a request with that header and no key, as AgentPlat's own
//! `headerTenantAuth()` does ([`require_key_or_tenant_header`]): for a trusted network
//! only.

use axum::extract::{MatchedPath, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use gatehouse_wire::error::{messages, GatehouseCode};
use sha2::{Digest, Sha256};

use crate::config::{ApiKey, KeyProjects, ServerConfig};
use crate::error::ApiError;
use crate::AppState;

use gatehouse_wire::execution::TENANT_HEADER;

/// The authenticated caller, put in the request's extensions by [`require_key`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// Who the key belongs to.
    pub actor: String,
    /// Where the key may act.
    pub projects: KeyProjects,
}

#[derive(Clone)]
struct KeyEntry {
    actor: String,
    digest: [u8; 32],
    projects: KeyProjects,
}

/// The key material a server accepts (secrets kept only as SHA-256 digests).
#[derive(Clone)]
pub struct KeyRing {
    keys: Vec<KeyEntry>,
}

impl std::fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyRing")
            .field(
                "actors",
                &self
                    .keys
                    .iter()
                    .map(|k| (&k.actor, &k.projects))
                    .collect::<Vec<_>>(),
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
                .map(|k| KeyEntry {
                    actor: k.actor.clone(),
                    digest: digest(&k.secret),
                    projects: k.projects.clone(),
                })
                .collect(),
        }
    }

    /// The caller owning `secret`, comparing digests in constant time (every key is
    /// compared; the first match wins).
    pub fn caller_for(&self, secret: &str) -> Option<Caller> {
        let candidate = digest(secret);
        let mut found = None;
        for key in &self.keys {
            let diff = key
                .digest
                .iter()
                .zip(candidate.iter())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b));
            if diff == 0 && found.is_none() {
                found = Some(Caller {
                    actor: key.actor.clone(),
                    projects: key.projects.clone(),
                });
            }
        }
        found
    }

    /// The actor owning `secret`.
    pub fn actor_for(&self, secret: &str) -> Option<String> {
        self.caller_for(secret).map(|c| c.actor)
    }
}

/// Log, at startup, every configured key that is not bound to projects (it acts in
/// every project). The dev key has its own warning.
pub fn warn_about_unbound_keys(config: &ServerConfig) {
    for key in &config.api_keys {
        if key.projects == KeyProjects::Unbound {
            tracing::warn!(
                actor = %key.actor,
                "API key is not bound to projects: it acts in every project; bind it with \
                 ACTOR=SECRET@PROJECT[+PROJECT...] (or @* to mean every project)"
            );
        }
    }
}

/// The secret of an `Authorization` header value: `ApiKey <key>`, `Bearer <key>` (any
/// case of the scheme), or the bare key with no scheme, as Agenta's legacy path takes it
/// (a bare scheme name is no key).
pub fn parse_authorization(value: &str) -> Option<&str> {
    let value = value.trim();
    let Some((scheme, rest)) = value.split_once(' ') else {
        let bare_scheme =
            value.eq_ignore_ascii_case("apikey") || value.eq_ignore_ascii_case("bearer");
        return (!value.is_empty() && !bare_scheme).then_some(value);
    };
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

/// The projects a request names where routes read them: `?project_id=` (the last value,
/// as the extractors read it) and the `X-Agentplat-Tenant-Id` header (every value).
pub fn requested_projects(parts: &Parts) -> Vec<String> {
    let mut projects = Vec::new();
    if let Some(project) = crate::uri::query_map(parts).remove("project_id") {
        projects.push(project);
    }
    for value in parts.headers.get_all(TENANT_HEADER) {
        // Compared as the tenant routes read it. A header that is not visible ASCII
        // cannot name an allowed project: compare it as lossy text, so it is refused
        // rather than skipped; a blank one is the route's 400, not a project.
        match value.to_str() {
            Ok(text) => projects.extend(normalize_tenant(text)),
            Err(_) => projects.push(String::from_utf8_lossy(value.as_bytes()).into_owned()),
        }
    }
    projects
}

/// Decide whether the authenticated caller of `parts` may act in `project_id`: the one
/// project authorisation of the server. Every route that acts in a project calls it
/// (directly, or through [`require_key`] and the project extractors).
///
/// Denied: 404 when the matched route names a resource in its path (the same answer as
/// for a resource that does not exist, so ids of other projects are not revealed), 403
/// otherwise; in AgentPlat's envelope under `/rooms/`. No caller (the route is not
/// behind [`require_key`]): 401.
pub fn authorize_project(parts: &Parts, project_id: &str) -> Result<(), ApiError> {
    let Some(caller) = parts.extensions.get::<Caller>() else {
        return Err(ApiError::new(
            GatehouseCode::Unauthorized,
            "Missing credentials: send Authorization: ApiKey <key> or Bearer <key>",
        ));
    };
    if caller.projects.allows(project_id) {
        return Ok(());
    }
    let route = parts
        .extensions
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_string())
        .unwrap_or_else(|| parts.uri.path().to_string());
    let agentplat = route.contains("/rooms/");
    let error = if route.contains('{') {
        let message = if route.contains("/interactions/{") {
            messages::INTERACTION_NOT_FOUND
        } else if route.contains("/execution-sessions/") {
            messages::EXECUTION_SESSION_NOT_FOUND
        } else if route.contains("/sessions/{") {
            "Session not found"
        } else {
            "Not found"
        };
        ApiError::new(GatehouseCode::NotFound, message)
    } else {
        ApiError::new(
            GatehouseCode::Forbidden,
            format!(
                "This API key may not act in project {:?}",
                crate::config::normalize_project(project_id)
            ),
        )
    };
    tracing::info!(actor = %caller.actor, %route, "API key used outside its projects");
    Err(if agentplat { error.agentplat() } else { error })
}

/// Middleware: 401 unless the request carries a known key; then every project the
/// request names ([`requested_projects`]) must pass [`authorize_project`]. On success the
/// [`Caller`] is available as a request extension.
pub async fn require_key(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    let secret = parts
        .headers
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
    let Some(caller) = state.keys().caller_for(secret) else {
        return ApiError::new(GatehouseCode::Unauthorized, "Unknown API key").into_response();
    };
    parts.extensions.insert(caller);
    for project in requested_projects(&parts) {
        if let Err(denied) = authorize_project(&parts, &project) {
            return denied.into_response();
        }
    }
    next.run(Request::from_parts(parts, body)).await
}

/// The actor a [`Caller`] admitted by [`require_key_or_tenant_header`] names in logs;
/// never a requester (such a request carries [`TenantHeaderOnly`]).
pub const TENANT_HEADER_CALLER: &str = "agentplat-tenant-header";

/// In a request's extensions when AgentPlat's header-only tenant auth admitted it
/// ([`require_key_or_tenant_header`]): no key, so no authenticated actor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TenantHeaderOnly;

/// Middleware of AgentPlat's root paths: [`require_key`], except that a server set up
/// for AgentPlat's header-only tenant auth ([`ServerConfig::agentplat_header_auth`])
/// admits a request without an `Authorization` header on its `X-Agentplat-Tenant-Id`
/// alone, as AgentPlat's `headerTenantAuth()` does: the tenant is the project (as with
/// a key), the request may act in that project only ([`authorize_project`] holds it
/// there) and carries [`TenantHeaderOnly`] (the requester of an intervention is then
/// the body's). A missing or blank header is AgentPlat's 400. Anyone who can reach the
/// port can name any project this way: for a trusted network only. A request that
/// sends `Authorization` is always checked as a key.
pub async fn require_key_or_tenant_header(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    if !state.config.agentplat_header_auth || request.headers().contains_key(AUTHORIZATION) {
        return require_key(State(state), request, next).await;
    }
    let (mut parts, body) = request.into_parts();
    let tenant = match tenant_from_headers(&parts.headers) {
        Ok(tenant) => tenant,
        Err(missing) => return missing.into_response(),
    };
    parts.extensions.insert(Caller {
        actor: TENANT_HEADER_CALLER.to_string(),
        projects: KeyProjects::Only(vec![tenant]),
    });
    parts.extensions.insert(TenantHeaderOnly);
    for project in requested_projects(&parts) {
        if let Err(denied) = authorize_project(&parts, &project) {
            return denied.into_response();
        }
    }
    next.run(Request::from_parts(parts, body)).await
}

/// The tenant (Gatehouse: the project) a request on AgentPlat's root paths acts in,
/// authorised for the caller: [`tenant_from_headers`], then [`authorize_project`]. Every
/// tenant-scoped route resolves its tenant here.
pub fn resolve_tenant(parts: &Parts) -> Result<String, ApiError> {
    let tenant = tenant_from_headers(&parts.headers)?;
    authorize_project(parts, &tenant)?;
    Ok(tenant)
}

/// The `X-Agentplat-Tenant-Id` header, trimmed, as AgentPlat's `headerTenantAuth` reads
/// it (a UUID is normalized as `?project_id=` is, so both name the same project).
/// Missing or blank: 400 `TENANT_REQUIRED` with AgentPlat's message.
pub fn tenant_from_headers(headers: &axum::http::HeaderMap) -> Result<String, ApiError> {
    headers
        .get(TENANT_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(normalize_tenant)
        .ok_or_else(|| {
            ApiError::new(
                GatehouseCode::TenantRequired,
                messages::MISSING_TENANT_HEADER,
            )
        })
}

/// A tenant header's value as a project id: trimmed, a UUID in its canonical lowercase
/// form; `None` when blank.
fn normalize_tenant(value: &str) -> Option<String> {
    let tenant = value.trim();
    if tenant.is_empty() {
        return None;
    }
    Some(match uuid::Uuid::parse_str(tenant) {
        Ok(project) => project.to_string(),
        Err(_) => tenant.to_string(),
    })
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
        assert_eq!(parse_authorization(" apikey "), None);
        // Agenta's legacy spelling: the bare key.
        assert_eq!(parse_authorization("abc"), Some("abc"));
        assert_eq!(parse_authorization(""), None);
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
    fn the_tenant_header_names_the_project() {
        let mut headers = axum::http::HeaderMap::new();
        assert_eq!(
            tenant_from_headers(&headers).map_err(|e| e.code),
            Err(GatehouseCode::TenantRequired)
        );
        headers.insert("x-agentplat-tenant-id", "   ".parse().unwrap());
        assert!(tenant_from_headers(&headers).is_err());
        headers.insert("x-agentplat-tenant-id", " tenant-1 ".parse().unwrap());
        assert_eq!(tenant_from_headers(&headers).unwrap(), "tenant-1");
        headers.insert(
            "x-agentplat-tenant-id",
            "019FAC94-0000-7000-8000-000000000000".parse().unwrap(),
        );
        assert_eq!(
            tenant_from_headers(&headers).unwrap(),
            "019fac94-0000-7000-8000-000000000000"
        );
    }

    #[test]
    fn finds_caller_by_secret() {
        let ring = KeyRing::new(&[
            ApiKey::parse("ops=s3cret").unwrap(),
            ApiKey::parse("plain").unwrap(),
            ApiKey::parse("phone=p@tenant-1").unwrap(),
        ]);
        assert_eq!(ring.actor_for("s3cret").as_deref(), Some("ops"));
        assert_eq!(ring.actor_for("plain").as_deref(), Some("operator"));
        assert_eq!(ring.actor_for("nope"), None);
        let phone = ring.caller_for("p").unwrap();
        assert!(phone.projects.allows("tenant-1"));
        assert!(!phone.projects.allows("tenant-2"));
    }

    fn parts_for(uri: &str, caller: Option<Caller>) -> Parts {
        let (mut parts, ()) = axum::http::Request::builder()
            .uri(uri)
            .body(())
            .unwrap()
            .into_parts();
        if let Some(caller) = caller {
            parts.extensions.insert(caller);
        }
        parts
    }

    #[test]
    fn authorisation_needs_a_caller_and_a_bound_project() {
        let parts = parts_for("/x?project_id=p1", None);
        assert_eq!(
            authorize_project(&parts, "p1").unwrap_err().code,
            GatehouseCode::Unauthorized
        );
        let scoped = Caller {
            actor: "a".into(),
            projects: KeyProjects::Only(vec!["p1".into()]),
        };
        let parts = parts_for("/api/sessions/interactions/query", Some(scoped));
        assert!(authorize_project(&parts, "p1").is_ok());
        assert_eq!(
            authorize_project(&parts, "p2").unwrap_err().code,
            GatehouseCode::Forbidden
        );
        assert_eq!(requested_projects(&parts), Vec::<String>::new());
    }
}
