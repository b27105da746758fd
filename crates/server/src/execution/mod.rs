//! Execution sessions and run interventions (CONTRACT.md B1-B3, C3, C6).
//!
//! | module | role |
//! |---|---|
//! | [`rules`] | B3 as pure functions: CAS request with replay first, the 256 limit, claim under a lease, resolve-once, reconciliation |
//! | [`store`] | [`ExecutionStore`]: durable sessions (one CAS-written row each), opening and recovery rules, the dispatcher's claim/resolve |
//! | [`hooks`] | [`ExecutionHookProvider`]: every service-tier turn opens its session, and the harness's checkpoints claim, apply and resolve interventions |
//! | [`api`] | the B2 routes under `/api/rooms/...` and the SSE event stream, in AgentPlat's envelope; mounted by [`crate::api::router`] |
//! | this module | [`reconcile_orphans_at_startup`], which [`crate::start`] runs |
//!
//! ## How a run is bound
//!
//! Every `POST /api/invoke` (a session run) opens one execution session:
//!
//! | field | value |
//! |---|---|
//! | `tenantId` | the project id |
//! | `roomId` | `agent.execution.room_id` of the config, else `room-<agent session id>` |
//! | `runId` | the invoke's turn id (a resume of a parked turn continues the same session) |
//! | `taskId` | the agent session id |
//! | `participantId` | `agent.execution.participant_id`, else the workflow slug, else `agent` |
//! | `agentRevisionId` | the `workflow_revision` id the turn ran, else `draft:<hex digest>` |
//! | `agentRevisionDigest` | `sha256:` + SHA-256 of the canonical JSON of the resolved config |
//! | `predecessorSessionId` | the invoke's `data.execution.predecessorSessionId` (a recovery) |
//! | `runtimeProfile` | `agent.execution.runtime_profile`, else [`hooks::DEFAULT_RUNTIME_PROFILE`] |
//! | `authorityRevision`, `roleRevision` | `agent.execution.authority_revision`, `agent.execution.role_revision` |
//!
//! A task is protected with `agent.protected: true`: every tool call must pass
//! `pre_action`, and a runtime that completes one without it fails the run with
//! "Runtime completed protected work without invoking pre_action" (the harness skips
//! `pre_action` when the config says `agent.runner.skip_pre_action: true`).
//! `agent.execution.lease_ms` sets the claim lease (default 30 s);
//! `agent.execution.fail_apply_attempts: N` makes the runtime adapter fail its first N
//! applications (claimed, not resolved: the lease expires and a later claim retries).
//!
//! The session is `active` while a turn runs, `paused` while the turn is parked at an
//! approval gate (its pending interventions wait for the resume), and reconciled when
//! the run ends: `completed`, `failed`, or `canceled` when a `stop` halted it. On a
//! SQLite store (one process), sessions still `active` at startup lost their run with
//! the previous process: [`start`](crate::start) reconciles them `failed`
//! ([`reconcile_orphans_at_startup`], [`ORPHAN_REASON`]).

pub mod api;
pub mod hooks;
pub mod rules;
pub mod store;

pub use hooks::{ExecutionHook, ExecutionHookProvider, STOP_INSTRUCTION};
pub use rules::{Claim, ExecError, Resolution};
pub use store::{ExecutionStore, OpenSession};

/// The outcome reason of a session whose run died with a previous server process.
pub const ORPHAN_REASON: &str = "the server stopped while the run was in flight";

/// The execution service's startup step, run before the server listens. On SQLite
/// (one process owns the file, and runs execute inside it) a session still `active`
/// lost its run with the previous process: it is reconciled `failed` with
/// [`ORPHAN_REASON`], so no intervention stays silently pending. On Postgres an
/// `active` session may belong to another live process, so nothing is touched. A
/// failure is logged, never fatal: the server still starts.
pub async fn reconcile_orphans_at_startup(store: &crate::Store) {
    if store.backend_name() != "sqlite" {
        return;
    }
    match ExecutionStore::new(store.clone())
        .reconcile_orphans(ORPHAN_REASON)
        .await
    {
        Ok(0) => {}
        Ok(n) => tracing::warn!(
            sessions = n,
            "reconciled execution sessions orphaned by a restart"
        ),
        Err(err) => {
            tracing::warn!(error = %err, "reconciling orphaned execution sessions failed")
        }
    }
}
