//! Interactions (CONTRACT.md A2, A4-A6, C1, C4) and the turns that open and resume
//! them: a turn runs the harness under its resolved config and parks at a gate (an
//! interaction row); an answer flips the row once; a resume worker continues the parked
//! turn under the config that raised the gate. Everything only this area uses lives in
//! this folder, as everything of execution sessions lives in `execution/`.
//!
//! | module | role |
//! |---|---|
//! | [`api`] | the interaction routes of A5, the batch respond (C4) and the SSE watch stream |
//! | [`durable`] | Agenta's durable contract on its session paths (the durable respond, the continuation's redelivery), when configured |
//! | [`sessions`] | the rest of Agenta's durable session control: Stop, the session snapshot, the session's durable events |
//! | [`invoke`] | `POST /api/invoke` (runs a turn), a session's turns, workflow revision commits |
//! | [`turn`] | one turn, in named steps: its config, the stamped `/run` request, its execution session, the harness, the gate and parked state it leaves behind; the watch-stream bracket ([`turn::begin_turn`], [`turn::end_turn`]) |
//! | [`config`] | a turn's config: the A6 hydration rule, the resume's fail-closed config, the registered default, what a turn reads from a config |
//! | [`parked`] | the durable state of a parked turn (its config redacted), and the startup scrub of older ones |
//! | [`dispatch`] | the resume workers: claim an answered gate's job under a lease, resume its parked turn, exactly once |
//! | [`guard`] | a running turn's hold on its work: the heartbeat renewing its leases, the tool-run ledger that lets an approved tool run once |
//! | [`admission`] | a new answer waits while the resume backlog is at its limit |
//! | [`store`] | its store ([`store::InteractionStore`]): rows and idempotency keys, the resume queue and its lease, turns, the tool-run ledger, the workflow registry; what it offers the other areas ([`store::OfferedQueries`]) |
//!
//! Inside, imports go one way: [`invoke`] and [`dispatch`] use [`turn`]; [`turn`] uses
//! [`config`], [`guard`] and [`parked`]; [`config`] uses [`parked`]; all of them and the
//! gate routes of [`api`], [`durable`] and [`sessions`] use [`store`]; [`durable`] uses [`api`]'s answer checks and [`sessions`] its stream helpers, which uses only the crate's plumbing below the
//! areas (`db`, `announce`, `seams`).

pub mod admission;
pub mod api;
pub mod config;
pub mod dispatch;
pub mod durable;
pub mod guard;
pub mod invoke;
pub mod parked;
pub mod sessions;
pub mod store;
pub mod turn;

use axum::routing::{get, post};
use axum::Router;

use crate::config::AgentaContract;

use crate::AppState;

/// Every route of interactions (relative to `/api`, behind the auth layer); Agenta's
/// paths speak `config`'s contract.
pub fn routes(config: &crate::config::ServerConfig) -> Router<AppState> {
    const RESPOND: &str = "/sessions/interactions/{id}/respond";
    let agenta = match config.agenta_contract {
        AgentaContract::Legacy => Router::new().route(RESPOND, post(api::respond)),
        AgentaContract::Durable => Router::new()
            .route(RESPOND, post(durable::respond))
            .route("/sessions/{session_id}/cancel", post(sessions::cancel))
            .route("/sessions/{session_id}", get(sessions::snapshot))
            .route("/sessions/{session_id}/events", get(sessions::events)),
    }
    // Served in both: a legacy respond records no continuation, so there it answers
    // `{resumed: false}`, which is true.
    .route(
        "/sessions/{session_id}/continuations/resume",
        post(durable::resume_continuation),
    );
    api::routes().merge(agenta).merge(invoke::routes())
}
