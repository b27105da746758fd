//! Execution sessions and run interventions (CONTRACT.md B1-B3, C3, C6).
//!
//! | module | role |
//! |---|---|
//! | [`rules`] | B3 as pure functions: CAS request with replay first, the 256 limit, claim under a lease, resolve-once, reconciliation |
//! | [`store`] | [`ExecutionStore`]: durable sessions (one CAS-written row each), opening and recovery rules, the dispatcher's claim/resolve |
//! | [`hooks`] | [`ExecutionHookProvider`]: every service-tier turn opens its session, and the harness's checkpoints claim, apply and resolve interventions |
//! | [`api`] | the B2 routes under `/api/rooms/...` and at AgentPlat's root paths (handlers, `routes()`, reading requests as AgentPlat reads them); mounted by [`crate::api::router`] |
//! | [`mount`], [`tenant`], [`cursor`] | which mount a request came through, its tenant, and the `?after=` event cursor, read as AgentPlat reads them (below the routes and the stream, which both use them) |
//! | [`stream`] | the SSE event stream of a session (`.../events/stream`), framed as each mount's readers expect |
//! | [`envelope`] | AgentPlat's envelope of every answer of those routes (`{"data": ...}`, `{"error": ...}`, shared layers' errors re-wrapped) |
//! | [`agentplat_shape`] | AgentPlat's own JSON of a session and its events (fields, order, millisecond times), what the root paths answer |
//! | [`reconcile`] | the reconciler every instance runs ([`crate::start`]): takes over sessions whose run attempt died or stalled, ends paused sessions nothing will resume |
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
//! the run ends: `completed`, `failed`, or `canceled` when a `stop` halted it.
//!
//! ## Crash safety
//!
//! - **Applied means in effect.** A turn claims interventions at its checkpoints (each
//!   claim durable, under a lease), applies them to the run in memory, and resolves
//!   them `applied` in the SAME transaction that records the turn
//!   ([`store::TurnSessionWrite`]): a crash before that commit leaves only claims, which
//!   the retried attempt takes over ([`rules::release_run_claims`]) and applies again at
//!   the same checkpoint. Nothing is reported applied that the run's record lacks.
//! - **One holder.** A running session is held by its run attempt ([`store::RunHold`]:
//!   a token and a lease the turn's heartbeat renews, expiring by the store's clock: the
//!   database server's on Postgres, whatever the instances' clocks say). Every write of the attempt (its
//!   claims, its tool runs, its commit) is fenced by the token; an attempt that lost its
//!   hold stops at its next step and writes nothing.
//! - **Every end reconciles**, on every backend and with any number of instances: the
//!   [`reconcile`] pass of every instance takes over expired holds (paused again for a
//!   resume that will be retried, else `failed` with [`ORPHAN_REASON`]) and ends paused
//!   sessions whose gate nothing will resume (cancelled by a newer turn, cancel-stale or
//!   a transition: `canceled`; a resume that gave up: `failed`), rejecting every
//!   unresolved intervention with the reason.

pub mod agentplat_shape;
pub mod api;
pub mod cursor;
pub mod envelope;
pub mod hooks;
pub mod mount;
pub mod reconcile;
pub mod rules;
pub mod store;
pub mod stream;
pub mod tenant;

pub use hooks::{ExecutionHook, ExecutionHookProvider, STOP_INSTRUCTION};
pub use rules::{Claim, ExecError, Resolution};
pub use store::{ExecutionStore, OpenSession, RunHold};

/// The outcome reason of a session whose run attempt died or stalled (its hold expired
/// and no resume will retry it).
pub const ORPHAN_REASON: &str =
    "the run's server stopped or stalled while the run was in flight (its hold on the session expired)";
