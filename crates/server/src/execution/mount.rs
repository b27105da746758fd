//! Which of its two mounts an execution route was reached through: under `/api`, or at
//! AgentPlat's root paths. It decides where the tenant comes from ([`super::tenant`]) and
//! how the answers are written ([`super::envelope`], [`super::stream`]).

/// Which mount of the routes a request came in on: where the tenant comes from and how
/// the answers are written (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mount {
    /// Under `/api`: `?project_id=<uuid>` is the tenant; Gatehouse's session and event
    /// JSON; the stream resumes from `Last-Event-ID`.
    Api,
    /// AgentPlat's root paths: `X-Agentplat-Tenant-Id` is the tenant; AgentPlat's own
    /// JSON and SSE framing.
    AgentPlatRoot,
}
