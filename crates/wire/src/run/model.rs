//! The model side of a run: the author's connection choice (`connection`), the model's
//! capabilities (`modelCapabilities`) and its resolved routing and credentials
//! (`modelConnection`).

use serde::{Deserialize, Serialize};

use super::StringMap;
use crate::json::open_enum;
use crate::JsonObject;

open_enum! {
    /// Which connection the author chose (Agenta's default is `agenta`).
    #[derive(Default)]
    pub enum ConnectionMode {
        /// An Agenta-managed connection (the default; with no slug it is not written).
        #[default]
        Agenta = "agenta",
        /// The author's own connection.
        SelfManaged = "self_managed",
    }
}

/// `connection`: the author's connection CHOICE (non-secret routing config). Written only
/// when it is not the default (`agenta` without a slug).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Connection {
    /// The mode.
    pub mode: ConnectionMode,
    /// A named connection's slug.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub slug: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Connection {
    /// True for the project default (`agenta`, no slug, nothing else), which is not written.
    pub fn is_default(&self) -> bool {
        self.mode == ConnectionMode::Agenta && self.slug.is_none() && self.extra.is_empty()
    }
}

/// `modelCapabilities`: what the model accepts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ModelCapabilities {
    /// Input modalities, e.g. `["text", "image"]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Vec<String>"))]
    pub input_modalities: Option<Vec<String>>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_enum! {
    /// How the model's credentials are supplied.
    pub enum CredentialMode {
        /// Through environment variables (`credentials[].binding.kind = environment`).
        Env = "env",
        /// The runtime already has them.
        RuntimeProvided = "runtime_provided",
        /// No credentials.
        None = "none",
    }
}

open_enum! {
    /// How a model client consumes a credential.
    pub enum CredentialUsage {
        /// Passed as-is over HTTP.
        OpaqueHttp = "opaque_http",
        /// Used locally (e.g. to sign).
        LocalUse = "local_use",
    }
}

open_enum! {
    /// The only model credential binding kind: `environment`.
    pub enum EnvironmentBindingKind {
        /// An environment variable.
        Environment = "environment",
    }
}

/// Where a model credential is bound: `{"kind": "environment", "name": "OPENAI_API_KEY"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CredentialBinding {
    /// Always `environment`.
    pub kind: EnvironmentBindingKind,
    /// Variable name.
    pub name: String,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One model credential: binding, secret value, usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ModelCredential {
    /// Where it is bound.
    pub binding: CredentialBinding,
    /// The secret (never fingerprinted, never logged).
    pub value: String,
    /// How it is consumed.
    pub usage: CredentialUsage,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `modelConnection.endpoint`: non-secret connection config.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    /// API base URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub base_url: Option<String>,
    /// API version (Azure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub api_version: Option<String>,
    /// Region (Bedrock, Vertex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub region: Option<String>,
    /// Public headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "StringMap"))]
    pub headers: Option<StringMap>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `modelConnection`: resolved model routing, environment and credentials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ModelConnection {
    /// Provider, e.g. `openai`.
    pub provider: String,
    /// Deployment, e.g. `direct`.
    pub deployment: String,
    /// How credentials are supplied.
    pub credential_mode: CredentialMode,
    /// The credentials (possibly empty).
    pub credentials: Vec<ModelCredential>,
    /// Non-secret environment (written when non-empty, before `endpoint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "StringMap"))]
    pub environment: Option<StringMap>,
    /// Non-secret endpoint config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Endpoint"))]
    pub endpoint: Option<Endpoint>,
    /// Fields this version does not know (`subscription`, `protocol`, ...), kept for
    /// round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `sandboxCredentials[]` (0.125.1): one resolved credential delivered to the sandbox
/// environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SandboxCredential {
    /// Where it is bound.
    pub binding: CredentialBinding,
    /// The secret (never fingerprinted, never logged).
    pub value: String,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}
