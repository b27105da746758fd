//! Session interactions (CONTRACT.md A4, A5): the row a gate writes, and the request
//! and response bodies of the interaction endpoints, plus the watch stream's events.
//!
//! A row is written as Agenta's API renders it (FastAPI over its `SessionInteraction`
//! model): every key present, `null` when unset, in the model's order (lifecycle fields
//! first); a reference as `{version, slug, id}`. The readers are tolerant: a key may be
//! absent, an enum value this version does not know is kept, unknown keys survive.
//!
//! Every type is used from here (`gatehouse_wire::interaction::SessionInteraction`); the
//! files group them:
//!
//! | file | what |
//! |---|---|
//! | `row.rs` | [`SessionInteraction`], its kind, status, `data` and flags; [`InteractionResponse`], [`InteractionsResponse`] |
//! | `query.rs` | [`InteractionQueryRequest`]: the filters and Agenta's [`Windowing`] |
//! | `respond.rs` | [`RespondRequest`], [`ApprovalAnswer`] |
//! | `digest.rs` | [`gate_digest`]: what a gate asks, bound (C8), of a row or its parts |
//! | `runner_side.rs` | what the runner sends: [`CreateInteractionRequest`], [`TransitionRequest`] (with a [`Resolution`]), [`CancelStaleRequest`] |
//! | `watch.rs` | [`WatchEvent`]: the events of the watch stream |
//! | `validation.rs` | the UUID and RFC 3339 forms Agenta checks, [`FieldProblem`] |
//!
//! `validation.rs` uses none of the others, `row.rs` only it; the body files use those two
//! and none of each other; `digest.rs` uses `row.rs`.

mod digest;
mod query;
mod respond;
mod row;
mod runner_side;
mod validation;
mod watch;

pub use digest::{gate_digest, gate_digest_material, GateDigestInput, GATE_DIGEST_TAG};
pub use query::{
    InteractionQuery, InteractionQueryFlags, InteractionQueryRequest, Order, Windowing,
};
pub use respond::{ApprovalAnswer, RespondRequest};
pub use row::{
    GateBinding, InteractionData, InteractionFlags, InteractionKind, InteractionRequest,
    InteractionResponse, InteractionStatus, InteractionsResponse, Reference, References, Selector,
    SessionInteraction,
};
pub use runner_side::{
    CancelStaleRequest, CancelStaleResponse, CreateInteractionRequest, Resolution,
    TransitionRequest, Verdict,
};
pub use validation::{is_rfc3339, is_uuid, FieldProblem, UUID_PATTERN};
pub use watch::{LifecycleState, WatchEvent};
