//! Checkpoint hooks: how the execution service steers a running turn.

use std::sync::Arc;

use futures::future::BoxFuture;
use gatehouse_wire::execution::ExecutionRef;
use gatehouse_wire::interaction::References;
use gatehouse_wire::JsonObject;
use serde_json::Value;

use crate::error::ApiError;
use crate::seams::JoinedWrite;

/// What a checkpoint decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckpointDecision {
    /// Go on.
    Continue,
    /// Stop the run here (the turn fails with this reason).
    Halt {
        /// Why (shown in the output).
        reason: String,
    },
    /// Go on, carrying this instruction into the next step's output.
    Inject {
        /// The instruction text.
        text: String,
    },
}

/// Whether a tool call may run now (asked after `pre_action`, right before it runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActionPermit {
    /// Run it.
    Run,
    /// An earlier attempt of this run already ran it (it is recorded): do not run it
    /// again, report it as run.
    AlreadyRan {
        /// The attempt that ran it.
        turn_id: String,
    },
    /// Do not run it; the run halts (fail closed): the run is no longer this worker's,
    /// or the tool-run ledger holds the call's id for another call.
    Refused {
        /// Why.
        reason: String,
    },
}

/// Which turn a hook serves.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnContext {
    /// The project.
    pub project_id: String,
    /// The agent session.
    pub session_id: String,
    /// The turn.
    pub turn_id: String,
    /// The interaction this turn resumes from, for a resume.
    pub resumed_from_interaction_id: Option<String>,
    /// The model the turn runs under.
    pub model: Option<String>,
    /// The authenticated actor that started the turn (or `dispatcher`).
    pub actor: String,
    /// The config the turn runs under (service-tier turns; `None` on the stateless `/run`).
    pub parameters: Option<JsonObject>,
    /// The references the turn runs with.
    pub references: Option<References>,
    /// The failed execution session this run recovers (invoke `data.execution.predecessorSessionId`).
    pub predecessor_session_id: Option<String>,
    /// For a resume: the execution session the parked turn ran in (its retry re-attaches
    /// to it; `None` in a state written by an older version).
    pub execution_session_id: Option<String>,
}

/// How a turn ended, as told to [`CheckpointHook::turn_ended`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEnd {
    /// Ran to the end of its script.
    Completed,
    /// Parked at an approval gate (it will resume later).
    Parked,
    /// Failed or halted.
    Failed {
        /// Why.
        reason: String,
    },
}

/// Called by the harness at every checkpoint of a turn. Implementations must not block
/// the runtime; they may await I/O.
pub trait CheckpointHook: Send + Sync {
    /// Before step `step_index` runs (before the next "inference").
    fn pre_step(&self, step_index: usize) -> BoxFuture<'_, CheckpointDecision>;
    /// After step `step_index` produced `output`, before the run continues.
    fn post_output<'a>(
        &'a self,
        step_index: usize,
        output: &'a str,
    ) -> BoxFuture<'a, CheckpointDecision>;
    /// Before a protected external action (a tool call that is about to run).
    fn pre_action<'a>(
        &'a self,
        step_index: usize,
        tool: &'a str,
        args: &'a Value,
    ) -> BoxFuture<'a, CheckpointDecision>;
    /// After the turn ended (completed, parked or failed), once its outcome is durable.
    fn turn_ended<'a>(&'a self, end: &'a TurnEnd) -> BoxFuture<'a, ()> {
        let _ = end;
        Box::pin(async {})
    }
    /// Before the first step: the execution service opens (or re-attaches to) the run's
    /// session here. An error refuses the turn before it runs.
    fn turn_started(&self) -> BoxFuture<'_, Result<(), ApiError>> {
        Box::pin(async { Ok(()) })
    }
    /// After a tool call ran (the runtime reports completed external work). A protected
    /// task halts here when the call never passed `pre_action`.
    fn action_completed<'a>(
        &'a self,
        step_index: usize,
        tool: &'a str,
    ) -> BoxFuture<'a, CheckpointDecision> {
        let _ = (step_index, tool);
        Box::pin(async { CheckpointDecision::Continue })
    }
    /// Where the turn's execution session is (for the invoke answer), if it has one.
    fn execution(&self) -> BoxFuture<'_, Option<ExecutionRef>> {
        Box::pin(async { None })
    }
    /// The turn's execution session id, once [`turn_started`](Self::turn_started) opened
    /// or re-attached it.
    fn execution_session_id(&self) -> Option<String> {
        None
    }
    /// Right before a tool call runs (after `pre_action`): whether it may. The call is
    /// the tool, its arguments and its id.
    fn begin_action<'a>(
        &'a self,
        step_index: usize,
        tool: &'a str,
        args: &'a Value,
        tool_call_id: &'a str,
    ) -> BoxFuture<'a, ActionPermit> {
        let _ = (step_index, tool, args, tool_call_id);
        Box::pin(async { ActionPermit::Run })
    }
    /// `(execution session id, run token)`: what the tool-run ledger checks is still this
    /// attempt's before a tool runs.
    fn run_fence(&self) -> Option<(String, String)> {
        None
    }
    /// Extend the lease this attempt holds on its execution session (the turn's
    /// heartbeat). `false`: the session is no longer this attempt's.
    fn renew_run(&self, lease: std::time::Duration) -> BoxFuture<'_, bool> {
        let _ = lease;
        Box::pin(async { true })
    }
    /// The hook's share of the turn's commit, written in the same transaction as the
    /// turn: interventions applied, checkpoints reached, how the session ends or pauses.
    fn durable_end(&self, end: &TurnEnd) -> Option<Box<dyn JoinedWrite>> {
        let _ = end;
        None
    }
    /// At every step boundary: the Stop command the run must honour now, if one reached
    /// it (the run ends [`HarnessEnd::Stopped`](super::HarnessEnd::Stopped)).
    fn stop_requested(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async { None })
    }
    /// The turn was not written (the store failed, or another worker owns the resume):
    /// give up this attempt's hold on its session, so that it is taken over at once.
    fn abandon(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// Hands out a [`CheckpointHook`] per turn.
pub trait HookProvider: Send + Sync {
    /// The hook for the turn described by `ctx`.
    fn hook_for(&self, ctx: &TurnContext) -> Arc<dyn CheckpointHook>;
}

/// A hook that always continues.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopHooks;

impl CheckpointHook for NoopHooks {
    fn pre_step(&self, _step_index: usize) -> BoxFuture<'_, CheckpointDecision> {
        Box::pin(async { CheckpointDecision::Continue })
    }
    fn post_output<'a>(
        &'a self,
        _step_index: usize,
        _output: &'a str,
    ) -> BoxFuture<'a, CheckpointDecision> {
        Box::pin(async { CheckpointDecision::Continue })
    }
    fn pre_action<'a>(
        &'a self,
        _step_index: usize,
        _tool: &'a str,
        _args: &'a Value,
    ) -> BoxFuture<'a, CheckpointDecision> {
        Box::pin(async { CheckpointDecision::Continue })
    }
}

/// Hands out [`NoopHooks`] for every turn (the default without execution sessions).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopHookProvider;

impl HookProvider for NoopHookProvider {
    fn hook_for(&self, _ctx: &TurnContext) -> Arc<dyn CheckpointHook> {
        Arc::new(NoopHooks)
    }
}
