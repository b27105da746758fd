//! The runtime every network call runs on, and the panic guard around it.
//!
//! Each async export spawns its work onto one process-wide tokio runtime and awaits the
//! join handle. That gives three properties the bindings rely on:
//! - the work runs on tokio whatever executor polls the export (Kotlin coroutines, Swift
//!   tasks, Python asyncio);
//! - a panic inside the work is caught by tokio and comes back as
//!   [`GatehouseError::Internal`], never as a crash in the app;
//! - when the foreign side cancels the call (a cancelled coroutine), the spawned work is
//!   aborted too.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::OnceLock;

use tokio::runtime::{Handle, Runtime};
use tokio::task::JoinHandle;

use crate::error::GatehouseError;

static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();

/// The shared runtime's handle, starting it on first use.
pub(crate) fn handle() -> Result<Handle, GatehouseError> {
    let runtime = RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("gatehouse-ffi")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    });
    match runtime {
        Ok(runtime) => Ok(runtime.handle().clone()),
        Err(reason) => Err(GatehouseError::Internal {
            msg: "the gatehouse-ffi runtime could not start".to_string(),
            details: Some(reason.clone()),
        }),
    }
}

/// Aborts the spawned task when dropped (the caller was cancelled).
struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Run `work` on the shared runtime; a panic becomes [`GatehouseError::Internal`]
/// naming `operation`.
pub(crate) async fn run<T, F>(operation: &'static str, work: F) -> Result<T, GatehouseError>
where
    T: Send + 'static,
    F: Future<Output = Result<T, GatehouseError>> + Send + 'static,
{
    let mut task = AbortOnDrop(handle()?.spawn(work));
    match (&mut task.0).await {
        Ok(result) => result,
        Err(join_error) if join_error.is_panic() => {
            let payload = join_error.into_panic();
            Err(GatehouseError::from_panic(operation, payload.as_ref()))
        }
        Err(join_error) => Err(GatehouseError::Internal {
            msg: format!("{operation} failed: its task was cancelled"),
            details: Some(join_error.to_string()),
        }),
    }
}

/// Run a synchronous body, turning a panic into [`GatehouseError::Internal`].
pub(crate) fn guard<T>(
    operation: &'static str,
    body: impl FnOnce() -> Result<T, GatehouseError>,
) -> Result<T, GatehouseError> {
    match std::panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => result,
        Err(payload) => Err(GatehouseError::from_panic(operation, payload.as_ref())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_in_async_work_becomes_an_internal_error() {
        let outcome = futures::executor::block_on(run("test op", async {
            if std::hint::black_box(true) {
                panic!("boom");
            }
            Ok(1)
        }));
        match outcome {
            Err(GatehouseError::Internal { msg, details }) => {
                assert!(msg.contains("test op"), "{msg}");
                assert_eq!(details.as_deref(), Some("boom"));
            }
            other => panic!("expected Internal, got {other:?}"),
        }
    }

    #[test]
    fn a_panic_in_a_sync_body_becomes_an_internal_error() {
        let outcome: Result<(), _> = guard("sync op", || panic!("sync boom {}", 7));
        assert_eq!(outcome.unwrap_err().details(), Some("sync boom 7"),);
    }

    #[test]
    fn results_pass_through() {
        let ok = futures::executor::block_on(run("ok op", async { Ok(41 + 1) }));
        assert_eq!(ok.unwrap(), 42);
    }
}
