//! The tenant of an execution route: `X-Agentplat-Tenant-Id` on AgentPlat's root paths,
//! `?project_id=<uuid>` under `/api`, refused in AgentPlat's envelope.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use gatehouse_wire::error::GatehouseCode;

use super::envelope::{agentplat, reshape};
use super::mount::Mount;
use crate::api::extract::parse_uuid;
use crate::error::ApiError;
use crate::uri::query_map;

/// The tenant of an execution route: `X-Agentplat-Tenant-Id` on AgentPlat's root paths,
/// `?project_id=<uuid>` under `/api`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant(pub String);

impl<S: Send + Sync> FromRequestParts<S> for Tenant {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        if parts.extensions.get::<Mount>() == Some(&Mount::AgentPlatRoot) {
            return crate::auth::resolve_tenant(parts)
                .map(Tenant)
                .map_err(reshape);
        }
        match query_map(parts).get("project_id") {
            None => Err(agentplat(
                GatehouseCode::BadRequest,
                "Missing query parameter project_id",
            )),
            Some(value) => parse_uuid(value, &["query", "project_id"])
                .map(Tenant)
                .map_err(reshape),
        }
    }
}
