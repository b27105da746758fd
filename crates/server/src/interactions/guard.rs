//! A running turn's hold on its work ([`TurnGuard`]): the heartbeat that renews the
//! leases the turn runs under (its resume job's, its execution session's) every third of
//! a lease, and the tool-run ledger that decides, right before each tool call, whether
//! this attempt may run it. A turn that lost a lease stops at its next step, runs no
//! tool, and its commit is refused; the instance that took the work over runs it. A
//! tool run the ledger cannot record (the database failed) is not run either, and the
//! attempt stops the same way ([`TurnGuard::lost_reason`]): the dispatcher retries the
//! resume rather than record it as one that ran nothing.
//! A call whose id the ledger holds for another call (another tool, other arguments)
//! does not run either: the turn fails, and [`TurnGuard::ledger_conflict`] says why.
//!
//! The guard wraps the turn's [`CheckpointHook`] (the execution service's, or none), so
//! the harness sees one hook.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use gatehouse_wire::execution::ExecutionRef;
use serde_json::Value;
use tokio::task::JoinHandle;

use super::store::InteractionStore;
use super::store::{args_digest, ClaimedJob, ToolRun, ToolRunFence, ToolRunPermit};
use crate::error::ApiError;
use crate::runner::{ActionPermit, CheckpointDecision, CheckpointHook, TurnEnd};
use crate::seams::JoinedWrite;

/// Why a turn that lost its hold stopped.
#[derive(Debug, Default)]
struct Lost {
    flag: AtomicBool,
    reason: Mutex<Option<String>>,
}

impl Lost {
    fn set(&self, reason: &str) {
        if let Ok(mut slot) = self.reason.lock() {
            slot.get_or_insert_with(|| reason.to_string());
        }
        self.flag.store(true, Ordering::SeqCst);
    }

    fn reason(&self) -> Option<String> {
        if !self.flag.load(Ordering::SeqCst) {
            return None;
        }
        let reason = self.reason.lock().ok().and_then(|r| r.clone());
        Some(reason.unwrap_or_else(|| "this worker lost its hold on the run".to_string()))
    }
}

/// Which turn a guard serves.
#[derive(Debug, Clone)]
pub struct GuardedTurn {
    /// The project.
    pub project_id: String,
    /// The agent session.
    pub session_id: String,
    /// The turn attempt.
    pub turn_id: String,
    /// The resume job the attempt runs under (a resume).
    pub job: Option<ClaimedJob>,
    /// The attempt's id on the turn's run row (`session_runs`), which the heartbeat
    /// renews; `None`: the turn has no run row.
    pub run_attempt: Option<String>,
}

/// A running turn's hold on its work; see the module docs. Dropping it stops the
/// heartbeat.
pub struct TurnGuard {
    inner: Arc<dyn CheckpointHook>,
    store: InteractionStore,
    turn: GuardedTurn,
    lost: Arc<Lost>,
    /// Why a call did not run because the ledger holds its id for another call.
    conflict: Mutex<Option<String>>,
    heartbeat: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for TurnGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnGuard")
            .field("turn", &self.turn)
            .field("lost", &self.lost.reason())
            .finish()
    }
}

impl TurnGuard {
    /// Guard `inner` (a hook whose turn already started) and start the heartbeat: every
    /// `lease / 3`, renew the job's lease and the session's hold by `lease`.
    pub fn start(
        inner: Arc<dyn CheckpointHook>,
        store: InteractionStore,
        turn: GuardedTurn,
        lease: Duration,
    ) -> Arc<Self> {
        let lost = Arc::new(Lost::default());
        let heartbeat = tokio::spawn(heartbeat(
            inner.clone(),
            store.clone(),
            turn.clone(),
            lease,
            lost.clone(),
        ));
        Arc::new(Self {
            inner,
            store,
            turn,
            lost,
            conflict: Mutex::new(None),
            heartbeat: Mutex::new(Some(heartbeat)),
        })
    }

    /// Stop renewing (the turn's work is written or given up).
    pub fn stop(&self) {
        if let Ok(mut slot) = self.heartbeat.lock() {
            if let Some(task) = slot.take() {
                task.abort();
            }
        }
    }

    /// Why this attempt stopped before its work was done, if it did: it lost a lease (its
    /// resume job's, its execution session's), or a tool run could not be recorded. Such
    /// an attempt must not be written as the resume's outcome: its resume is retried.
    pub fn lost_reason(&self) -> Option<String> {
        self.lost.reason()
    }

    /// Why a tool call of this turn was refused because the tool-run ledger holds its
    /// id for another call (another tool or other arguments), if one was.
    pub fn ledger_conflict(&self) -> Option<String> {
        self.conflict.lock().ok().and_then(|slot| slot.clone())
    }

    fn halt_if_lost(&self) -> Option<CheckpointDecision> {
        self.lost
            .reason()
            .map(|reason| CheckpointDecision::Halt { reason })
    }

    async fn permit(&self, tool: &str, args: &Value, tool_call_id: &str) -> ActionPermit {
        if let Some(reason) = self.lost.reason() {
            return ActionPermit::Refused { reason };
        }
        let run = ToolRun {
            project_id: self.turn.project_id.clone(),
            session_id: self.turn.session_id.clone(),
            tool_call_id: tool_call_id.to_string(),
            tool: tool.to_string(),
            args_digest: args_digest(args),
            turn_id: self.turn.turn_id.clone(),
            interaction_id: self.turn.job.as_ref().map(|j| j.interaction_id.clone()),
        };
        let fence = ToolRunFence {
            job: self
                .turn
                .job
                .as_ref()
                .map(|j| (j.interaction_id.clone(), j.owner.clone())),
            execution: self.inner.run_fence(),
        };
        match self.store.begin_tool_run(&run, &fence).await {
            Ok(ToolRunPermit::Run) => ActionPermit::Run,
            Ok(ToolRunPermit::AlreadyRan { turn_id, at }) => {
                tracing::info!(tool, tool_call_id, by = %turn_id, %at, "tool call already ran in an earlier attempt; not run again");
                ActionPermit::AlreadyRan { turn_id }
            }
            Ok(ToolRunPermit::Conflict {
                tool: recorded_tool,
                turn_id,
            }) => {
                let reason = format!(
                    "the tool-run ledger holds call {tool_call_id} for another call \
                     ({recorded_tool}, by attempt {turn_id}); {tool} was not run"
                );
                tracing::warn!(tool, tool_call_id, %reason, "tool call refused: its id names another recorded call");
                if let Ok(mut slot) = self.conflict.lock() {
                    slot.get_or_insert_with(|| reason.clone());
                }
                ActionPermit::Refused { reason }
            }
            Ok(ToolRunPermit::Refused { reason }) => {
                self.lost.set(&reason);
                tracing::warn!(tool, tool_call_id, %reason, "tool call refused: the run is no longer this worker's");
                ActionPermit::Refused { reason }
            }
            Err(err) => {
                // Fail closed: without its ledger row a tool does not run, and this
                // attempt stops here (a resume is retried; see `lost_reason`).
                tracing::warn!(tool, tool_call_id, error = %err, "recording a tool run failed; not running it");
                let reason = "the tool run could not be recorded (storage failed)";
                self.lost.set(reason);
                ActionPermit::Refused {
                    reason: reason.to_string(),
                }
            }
        }
    }
}

impl Drop for TurnGuard {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn heartbeat(
    inner: Arc<dyn CheckpointHook>,
    store: InteractionStore,
    turn: GuardedTurn,
    lease: Duration,
    lost: Arc<Lost>,
) {
    let job = turn.job.clone();
    let every = (lease / 3).max(Duration::from_millis(10));
    let lease_ms = i64::try_from(lease.as_millis()).unwrap_or(i64::MAX);
    // The job's lease was last set when it was claimed, before the resume's setup (its
    // parked state read, its session attached): renew it at once, not a third of a lease
    // later. (The session's hold was set just now, as the turn started.)
    if let Some(job) = &job {
        if !renew_job_lease(&store, job, lease_ms, &lost).await {
            return;
        }
    }
    loop {
        tokio::time::sleep(every).await;
        if let Some(job) = &job {
            if !renew_job_lease(&store, job, lease_ms, &lost).await {
                return;
            }
        }
        if !inner.renew_run(lease).await {
            lost.set("the run's execution session was taken over or ended");
            return;
        }
        // The run row's lease: what tells a Stop and the snapshot this turn runs. A
        // failed renewal is only logged (the turn's fences are the job's and the
        // session's); a row gone or taken over is not this attempt's to renew.
        if let Some(attempt) = &turn.run_attempt {
            if let Err(err) = store
                .renew_run_row(&turn.project_id, &turn.turn_id, attempt, lease_ms)
                .await
            {
                tracing::warn!(error = %err, "renewing a run row failed");
            }
        }
    }
}

/// Renew `job`'s lease by `lease_ms`; `false` (and `lost` set) when another worker took
/// the job over.
async fn renew_job_lease(
    store: &InteractionStore,
    job: &ClaimedJob,
    lease_ms: i64,
    lost: &Lost,
) -> bool {
    match store.renew_job(job, lease_ms).await {
        Ok(true) => true,
        Ok(false) => {
            lost.set("another worker took this resume over (its lease expired)");
            false
        }
        // Unknown: keep trying; the fences decide at the next write.
        Err(err) => {
            tracing::warn!(error = %err, "renewing a resume lease failed");
            true
        }
    }
}

impl CheckpointHook for TurnGuard {
    fn pre_step(&self, step_index: usize) -> BoxFuture<'_, CheckpointDecision> {
        match self.halt_if_lost() {
            Some(halt) => Box::pin(async move { halt }),
            None => self.inner.pre_step(step_index),
        }
    }

    fn post_output<'a>(
        &'a self,
        step_index: usize,
        output: &'a str,
    ) -> BoxFuture<'a, CheckpointDecision> {
        match self.halt_if_lost() {
            Some(halt) => Box::pin(async move { halt }),
            None => self.inner.post_output(step_index, output),
        }
    }

    fn pre_action<'a>(
        &'a self,
        step_index: usize,
        tool: &'a str,
        args: &'a Value,
    ) -> BoxFuture<'a, CheckpointDecision> {
        match self.halt_if_lost() {
            Some(halt) => Box::pin(async move { halt }),
            None => self.inner.pre_action(step_index, tool, args),
        }
    }

    fn turn_ended<'a>(&'a self, end: &'a TurnEnd) -> BoxFuture<'a, ()> {
        self.inner.turn_ended(end)
    }

    fn turn_started(&self) -> BoxFuture<'_, Result<(), ApiError>> {
        self.inner.turn_started()
    }

    fn action_completed<'a>(
        &'a self,
        step_index: usize,
        tool: &'a str,
    ) -> BoxFuture<'a, CheckpointDecision> {
        self.inner.action_completed(step_index, tool)
    }

    fn execution(&self) -> BoxFuture<'_, Option<ExecutionRef>> {
        self.inner.execution()
    }

    fn execution_session_id(&self) -> Option<String> {
        self.inner.execution_session_id()
    }

    fn begin_action<'a>(
        &'a self,
        _step_index: usize,
        tool: &'a str,
        args: &'a Value,
        tool_call_id: &'a str,
    ) -> BoxFuture<'a, ActionPermit> {
        Box::pin(self.permit(tool, args, tool_call_id))
    }

    fn run_fence(&self) -> Option<(String, String)> {
        self.inner.run_fence()
    }

    fn stop_requested(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            self.turn.run_attempt.as_ref()?;
            match self
                .store
                .stop_requested(&self.turn.project_id, &self.turn.turn_id)
                .await
            {
                Ok(command) => command,
                Err(err) => {
                    // Unknown: go on; the next boundary asks again (and a tool's ledger
                    // write, on the same store, fails closed).
                    tracing::warn!(error = %err, "reading the turn's Stop state failed");
                    None
                }
            }
        })
    }

    fn renew_run(&self, lease: Duration) -> BoxFuture<'_, bool> {
        self.inner.renew_run(lease)
    }

    fn durable_end(&self, end: &TurnEnd) -> Option<Box<dyn JoinedWrite>> {
        self.inner.durable_end(end)
    }

    fn abandon(&self) -> BoxFuture<'_, ()> {
        self.stop();
        self.inner.abandon()
    }
}
