//! Which kind of host a client talks to ([`Upstream`]: it decides the paths, the
//! tenancy and the identity every call carries) and how the API key is spelled
//! ([`AuthScheme`]). Plain settings: the transport reads them, the builder sets them.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Operation, Result};

/// Which kind of host the base URL is: it decides the paths, the tenancy and the
/// identity every call carries.
///
/// | upstream | execution sessions | interactions | tenant, identity |
/// |---|---|---|---|
/// | `Gatehouse` (default) | `{base}/api/rooms/...?project_id=` | `{base}/api/sessions/...?project_id=` | `Authorization: Bearer <key>` |
/// | `AgentPlat` | `{base}/rooms/...` (no `project_id`) | not served | `X-Agentplat-Tenant-Id: <tenant>`, `requestedByParticipantId` in an intervention's body, `Authorization: Bearer <key>` when a key is set |
/// | `Agenta` | not served | `{base}/api/sessions/...?project_id=` | `Authorization: ApiKey <key>` |
///
/// The base URL may carry a path prefix (`https://host/agentplat`); the paths above
/// are appended to it. What an upstream does not serve fails at once with
/// [`Error::CapabilityUnavailable`], without a request; neither AgentPlat nor Agenta has
/// Gatehouse's `GET /api/capabilities`, so it is never asked.
///
/// ```
/// use gatehouse_client::Upstream;
/// assert_eq!(Upstream::default(), Upstream::Gatehouse);
/// assert_eq!("agentplat".parse::<Upstream>().unwrap(), Upstream::AgentPlat);
/// assert_eq!(Upstream::Agenta.as_str(), "agenta");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Upstream {
    /// Gatehouse's own server (`gatehouse serve`): everything under `/api`.
    #[default]
    Gatehouse,
    /// AgentPlat's Rooms API (`createRoomsApp`): execution sessions at the root.
    AgentPlat,
    /// Agenta's API: the session-interactions endpoints.
    Agenta,
}

impl Upstream {
    /// Every upstream, in a stable order.
    pub const ALL: [Upstream; 3] = [Upstream::Gatehouse, Upstream::AgentPlat, Upstream::Agenta];

    /// The lowercase name (`gatehouse`, `agentplat`, `agenta`), as the CLI's
    /// `--upstream` and `GATEHOUSE_UPSTREAM` spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Gatehouse => "gatehouse",
            Self::AgentPlat => "agentplat",
            Self::Agenta => "agenta",
        }
    }

    /// True when a respond re-sent under the same `Idempotency-Key` is replayed (the
    /// first answer's 200 again) and the answer taken is recorded in the row's
    /// `data.resolution`: Gatehouse's server. Agenta ignores the key (a re-send meets
    /// 409) and leaves the resolution null on respond (the answer goes to a queue).
    pub(crate) fn honours_idempotency_key(self) -> bool {
        match self {
            Self::Gatehouse => true,
            Self::AgentPlat | Self::Agenta => false,
        }
    }

    /// The `Authorization` scheme the upstream expects when none is set.
    pub(crate) fn default_auth_scheme(self) -> AuthScheme {
        match self {
            Self::Agenta => AuthScheme::ApiKey,
            Self::Gatehouse | Self::AgentPlat => AuthScheme::Bearer,
        }
    }
}

impl fmt::Display for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Upstream {
    type Err = Error;

    /// `gatehouse`, `agentplat` or `agenta` (any letter case); anything else is an
    /// [`Error::Config`] listing the three.
    fn from_str(text: &str) -> Result<Self> {
        let text = text.trim();
        Self::ALL
            .into_iter()
            .find(|upstream| upstream.as_str().eq_ignore_ascii_case(text))
            .ok_or_else(|| Error::Config {
                operation: Operation::BuildClient,
                reason: format!(
                    "unknown upstream {text:?}: expected gatehouse, agentplat or agenta"
                ),
            })
    }
}

/// How the API key is sent in the `Authorization` header.
///
/// ```
/// use gatehouse_client::AuthScheme;
/// assert_eq!(AuthScheme::default(), AuthScheme::Bearer);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum AuthScheme {
    /// `Authorization: Bearer <key>`.
    #[default]
    Bearer,
    /// `Authorization: ApiKey <key>` (Agenta's spelling; the default for
    /// [`Upstream::Agenta`]).
    ApiKey,
}

impl AuthScheme {
    /// The word before the key in the `Authorization` header.
    pub(crate) fn prefix(self) -> &'static str {
        match self {
            Self::Bearer => "Bearer",
            Self::ApiKey => "ApiKey",
        }
    }
}

/// Which form of Agenta's session contract a host speaks on its session paths: the
/// durable one (Agenta v0.121 and later; Gatehouse hosts that list the capability
/// `durable_approvals`): a respond carries an `Idempotency-Key` and answers 202 with the
/// continuation, a Stop is a durable command; or the legacy one before it (a respond
/// answers 200 `{count, interaction}`, no Stop).
///
/// The client learns it from the host's capabilities (Gatehouse's discovery, or the
/// `capabilities` of an Agenta session snapshot), never from an error; pin it with
/// [`ClientBuilder::agenta_contract`](crate::ClientBuilder::agenta_contract).
///
/// ```
/// use gatehouse_client::AgentaContract;
/// assert_eq!(AgentaContract::Durable.as_str(), "durable");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AgentaContract {
    /// Durable approvals and durable Stop (Agenta v0.121 and later).
    Durable,
    /// The contract before it.
    Legacy,
}

impl AgentaContract {
    /// `durable` or `legacy`.
    ///
    /// ```
    /// assert_eq!(gatehouse_client::AgentaContract::Legacy.as_str(), "legacy");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Durable => "durable",
            Self::Legacy => "legacy",
        }
    }
}

impl fmt::Display for AgentaContract {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
