//! The reconciler: every instance runs it, every backend, no owner process. Each pass
//! (every [`ServerConfig::reconcile_interval`](crate::ServerConfig::reconcile_interval))
//! takes over the sessions whose run attempt died or stalled (their hold expired) and
//! ends the paused sessions whose gate nothing will resume. Each session is re-checked
//! under its row lock, so two instances reconciling at once do it once.

use tokio::task::JoinHandle;

use super::store::ExecutionStore;
use crate::readiness::Task;
use crate::AppState;

/// Sessions looked at per kind and pass.
const BATCH: i64 = 100;

/// What one pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    /// Expired holds of runs a resume will retry: paused for it.
    pub paused: usize,
    /// Sessions ended (expired holds with nothing to retry them, stranded pauses).
    pub ended: usize,
    /// Sessions whose run hold had expired, taken over (paused or ended).
    pub taken_over: usize,
}

/// One pass over `exec`.
pub async fn reconcile_once(exec: &ExecutionStore) -> Pass {
    let mut pass = Pass::default();
    match exec.expired_runs(BATCH).await {
        Ok(ids) => {
            for id in ids {
                match exec.reconcile_expired_run(&id).await {
                    Ok(Some(status)) if status.is_terminal() => {
                        tracing::warn!(session_id = %id, status = status.as_str(), "reconciled an execution session whose run stopped");
                        pass.ended += 1;
                        pass.taken_over += 1;
                    }
                    Ok(Some(_)) => {
                        tracing::info!(session_id = %id, "paused an execution session whose resume attempt stopped; the resume is retried");
                        pass.paused += 1;
                        pass.taken_over += 1;
                    }
                    Ok(None) => {}
                    Err(err) => {
                        tracing::warn!(session_id = %id, error = %err, "reconciling a session failed; retried at the next pass")
                    }
                }
            }
        }
        Err(err) => tracing::warn!(error = %err, "listing expired runs failed"),
    }
    match exec.stranded_paused(BATCH).await {
        Ok(ids) => {
            for id in ids {
                match exec.reconcile_stranded(&id).await {
                    Ok(Some(status)) => {
                        tracing::info!(session_id = %id, status = status.as_str(), "ended a paused execution session nothing will resume");
                        pass.ended += 1;
                    }
                    Ok(None) => {}
                    Err(err) => {
                        tracing::warn!(session_id = %id, error = %err, "reconciling a session failed; retried at the next pass")
                    }
                }
            }
        }
        Err(err) => tracing::warn!(error = %err, "listing stranded sessions failed"),
    }
    pass
}

/// Run a pass now and then every `reconcile_interval` until the server shuts down.
pub fn spawn(state: AppState) -> JoinHandle<()> {
    // Registered before the task starts: readiness counts it from its first answer.
    let pulse = state
        .readiness
        .register(Task::Reconciler, state.config.reconcile_interval);
    tokio::spawn(async move {
        let exec = state.executions.clone();
        let mut shutdown = state.shutdown.clone();
        loop {
            if *shutdown.borrow() {
                return;
            }
            {
                let _busy = pulse.busy();
                let pass = reconcile_once(&exec).await;
                state.metrics.reconciler_pass(pass.paused, pass.ended);
                for _ in 0..pass.taken_over {
                    state
                        .metrics
                        .lease_takeover(crate::metrics::LeasedWork::ExecutionSession);
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(state.config.reconcile_interval) => {}
                _ = shutdown.wait_for(|stop| *stop) => return,
            }
        }
    })
}
