//! Admission control for answers: while more answered gates wait for their resume than
//! [`ServerConfig::max_resume_backlog`](crate::ServerConfig::max_resume_backlog) (counted
//! in the database, so across every instance on it), a new answer waits a moment before
//! it is taken. Answers are then admitted about as fast as the resume workers finish, and
//! the backlog stays bounded instead of growing without end under sustained load. An
//! answer is never refused for load: after
//! [`ServerConfig::backlog_wait`](crate::ServerConfig::backlog_wait) it is taken anyway.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

use crate::AppState;

/// How often the gauge reads the queue.
const REFRESH: Duration = Duration::from_millis(50);
/// How often a waiting answer looks again.
const POLL: Duration = Duration::from_millis(10);

/// The resume backlog as this instance last read it, and the limit answers wait on.
#[derive(Debug)]
pub struct Backlog {
    queued: AtomicU64,
    limit: u64,
    wait: Duration,
}

impl Backlog {
    /// A gauge for `limit` (0: no admission control) and the longest `wait`.
    pub fn new(limit: u64, wait: Duration) -> Self {
        Self {
            queued: AtomicU64::new(0),
            limit,
            wait,
        }
    }

    /// The answered gates waiting for their resume, as last read (plus the answers this
    /// instance took since).
    pub fn queued(&self) -> u64 {
        self.queued.load(Ordering::Relaxed)
    }

    /// Count one more waiting resume (an answer just won), until the next read.
    pub fn answered(&self, gates: u64) {
        self.queued.fetch_add(gates, Ordering::Relaxed);
    }

    /// Wait while the backlog is at the limit, at most the configured wait.
    pub async fn admit(&self) -> Admission {
        if self.limit == 0 || self.queued() < self.limit {
            return Admission::AtOnce;
        }
        let started = Instant::now();
        while self.queued() >= self.limit {
            if started.elapsed() >= self.wait {
                tracing::debug!(
                    queued = self.queued(),
                    "answer taken after the longest wait for the resume backlog"
                );
                return Admission::WaitedTooLong(started.elapsed());
            }
            tokio::time::sleep(POLL).await;
        }
        tracing::debug!(
            ms = started.elapsed().as_millis() as u64,
            "answer admitted after waiting for the resume backlog"
        );
        Admission::AfterBacklogShrank(started.elapsed())
    }
}

/// How an answer was admitted (it always is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// The backlog was below the limit (or there is none).
    AtOnce,
    /// It waited this long for the backlog to drop below the limit.
    AfterBacklogShrank(Duration),
    /// The backlog stayed at the limit for the whole wait; taken anyway.
    WaitedTooLong(Duration),
}

/// Read the queue every `REFRESH` until the server shuts down (when admission control
/// is on).
pub fn spawn_gauge(state: AppState) -> Option<JoinHandle<()>> {
    if state.config.max_resume_backlog == 0 {
        return None;
    }
    Some(tokio::spawn(async move {
        let mut shutdown = state.shutdown.clone();
        loop {
            match state.interactions.queued_jobs().await {
                Ok(n) => state.backlog.queued.store(n, Ordering::Relaxed),
                Err(err) => tracing::debug!(error = %err, "reading the resume backlog failed"),
            }
            tokio::select! {
                _ = tokio::time::sleep(REFRESH) => {}
                _ = shutdown.wait_for(|stop| *stop) => return,
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn below_the_limit_or_without_one_an_answer_is_taken_at_once() {
        let backlog = Backlog::new(3, Duration::from_secs(60));
        backlog.answered(2);
        assert_eq!(backlog.admit().await, Admission::AtOnce);
        let unlimited = Backlog::new(0, Duration::from_secs(60));
        unlimited.answered(1_000_000);
        assert_eq!(unlimited.admit().await, Admission::AtOnce);
    }

    #[tokio::test]
    async fn at_the_limit_an_answer_waits_until_the_backlog_shrinks() {
        let backlog = Arc::new(Backlog::new(2, Duration::from_secs(60)));
        backlog.answered(2);
        let drain = {
            let backlog = backlog.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                // What the gauge does when it reads a shorter queue.
                backlog.queued.store(1, Ordering::Relaxed);
            })
        };
        match backlog.admit().await {
            Admission::AfterBacklogShrank(waited) => {
                assert!(waited >= Duration::from_millis(100), "{waited:?}")
            }
            other => panic!("expected a wait for the backlog, got {other:?}"),
        }
        drain.await.unwrap();
    }

    #[tokio::test]
    async fn a_backlog_that_never_shrinks_delays_an_answer_but_never_refuses_it() {
        let backlog = Backlog::new(1, Duration::from_millis(150));
        backlog.answered(5);
        match backlog.admit().await {
            Admission::WaitedTooLong(waited) => {
                assert!(waited >= Duration::from_millis(150), "{waited:?}")
            }
            other => panic!("expected the longest wait, got {other:?}"),
        }
    }
}
