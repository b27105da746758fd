//! # gatehouse-ffi
//!
//! The mobile-facing facade over `gatehouse-client`, exported with uniffi (proc-macros,
//! no UDL) to Kotlin, Swift and Python. It is deliberately thin: it converts the
//! client's values into records, runs every network call on one tokio runtime, and
//! turns every failure (including a panic) into a [`GatehouseError`].
//!
//! - [`GatehouseClient`]: built from a [`ClientConfig`] (base URL, key, project, and
//!   for an AgentPlat host the [`Upstream`], tenant and participant); every network
//!   call is async (Kotlin `suspend`, Swift `async throws`, Python `async`).
//! - Records read tolerantly: a status, checkpoint or event type this library does not
//!   know arrives as its `Unknown` variant with the server's spelling, never an error.
//! - [`GatehouseClient::invoke_tool`]: open a gate yourself (tests, examples, quick starts).
//! - Interactions: list, get, respond, approve-all with a per-target report, and
//!   [`GatehouseClient::approve_gates`] (grouped by turn, a report per gate).
//! - [`GatehouseClient::open_session_watch`] and [`GatehouseClient::open_execution_events`]:
//!   pull streams (nothing read ahead), wrapped by each language's own async sequence.
//! - [`GatehouseInbox`]: the pending gates of several hosts or projects as one paged
//!   list, each gate with its host; a host that is down is reported, not thrown.
//! - [`GatehouseClient::watch_session`]: a [`WatchListener`] implemented in the app hears
//!   a session's gates open and close; the returned [`WatchHandle`] stops it.
//! - Execution sessions and interventions, where "requested" is never reported as
//!   "applied" without the server's persisted evidence.
//! - Agenta's durable session control: [`GatehouseClient::respond_with_outcome`] (what an
//!   answer did), [`GatehouseClient::stop_session`] and [`GatehouseClient::wait_for_stop`]
//!   (recorded is not stopped), [`GatehouseClient::session_snapshot`],
//!   [`GatehouseClient::open_session_events`] (a pull stream that resumes after the last
//!   sequence seen); the contract a host speaks can be pinned in [`ClientConfig`].
//!
//! Generated bindings live in `bindings/` at the workspace root (`cargo xtask bindings`).

uniffi::setup_scaffolding!();

mod client;
mod error;
mod execution;
mod inbox;
mod json;
mod records;
mod runtime;
mod sessions;
mod streams;
mod watch;

pub use client::{
    ApproveAllFailure, ApproveAllReport, ClientConfig, GatehouseClient, InvokeOutcome,
    ToolPermission, TurnStatus, Upstream,
};
pub use error::{GateFailure, GatehouseError, GatehouseErrorKind};
pub use execution::{InterventionOutcome, InterventionState, RequestedIntervention};
pub use inbox::{GatehouseInbox, InboxGate, InboxHostReport, InboxHostState, InboxPage};
pub use json::JsonText;
pub use records::AgentaContract;
pub use records::{
    Capabilities, Capability, Checkpoint, CheckpointProgress, ExecutionEvent, ExecutionEventType,
    ExecutionSession, ExecutionSessionStatus, Interaction, InteractionKind, InteractionRequest,
    InteractionStatus, Intervention, InterventionStatus, SessionOutcome,
};
pub use sessions::{
    ApproveGatesReport, GateReport, GateResult, RespondOutcome, SessionSnapshot, StopOutcome,
    StopRequested,
};
pub use streams::{
    ExecutionEventWatch, SessionEvent, SessionEventUpdate, SessionEventWatch, SessionWatch,
    StreamFailure, WatchUpdate,
};
pub use watch::{LifecycleState, ListenerError, WatchEvent, WatchHandle, WatchListener};
