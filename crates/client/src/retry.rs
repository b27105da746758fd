//! Retries: the [`RetryPolicy`] a client is configured with, and [`with_retries`], the
//! one loop that applies it. The transport runs every replayable call through it; the
//! respond path runs its re-sends under the same `Idempotency-Key` through it too.

use std::future::Future;
use std::time::Duration;

use rand::Rng;

use crate::error::{Error, Result};

/// Bounded, jittered retries for reads (and for a respond's re-send under the same
/// `Idempotency-Key`). Attempt `n` (from 1) waits a random time in
/// `[0, min(max_backoff, initial_backoff * 2^(n-1))]` before trying again; a 429's
/// `Retry-After` is honoured when it is not longer than `max_backoff`.
///
/// ```
/// use std::time::Duration;
/// use gatehouse_client::RetryPolicy;
/// let policy = RetryPolicy { max_attempts: 4, initial_backoff: Duration::from_millis(50), max_backoff: Duration::from_secs(1) };
/// assert_eq!(RetryPolicy::none().max_attempts, 1);
/// # let _ = policy;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Total tries, the first included (1 = no retry).
    pub max_attempts: u32,
    /// Upper bound of the first backoff.
    pub initial_backoff: Duration,
    /// Upper bound of any backoff.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    ///
    /// ```
    /// assert_eq!(gatehouse_client::RetryPolicy::none().max_attempts, 1);
    /// ```
    pub fn none() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// The jittered delay before attempt `attempt + 1` (`attempt` counts from 1).
    pub(crate) fn backoff(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(hint) = retry_after {
            if hint <= self.max_backoff {
                return hint;
            }
        }
        let exp = attempt.saturating_sub(1).min(16);
        let cap = self
            .initial_backoff
            .saturating_mul(1u32 << exp)
            .min(self.max_backoff);
        let millis = cap.as_millis().min(u128::from(u64::MAX)) as u64;
        if millis == 0 {
            return Duration::ZERO;
        }
        Duration::from_millis(rand::thread_rng().gen_range(0..=millis))
    }
}

/// One failed try: the error, and how long the server asked to wait (`Retry-After`).
#[derive(Debug)]
pub(crate) struct Failed {
    pub error: Error,
    pub retry_after: Option<Duration>,
}

impl From<Error> for Failed {
    fn from(error: Error) -> Self {
        Self {
            error,
            retry_after: None,
        }
    }
}

/// The one retry loop. Calls `try_once(attempt)` (`attempt` counts from 1) until it
/// succeeds, fails in a way a retry cannot fix ([`Error::is_retryable`] is false), or
/// `max_attempts` tries are spent; between tries it sleeps [`RetryPolicy::backoff`].
/// `on_retryable` hears every retryable failure, the last one included, before the
/// loop decides whether to go on. Returns the last error. `note` is the debug log
/// line of each retry.
pub(crate) async fn with_retries<T, Fut>(
    policy: RetryPolicy,
    max_attempts: u32,
    note: &'static str,
    mut try_once: impl FnMut(u32) -> Fut,
    mut on_retryable: impl FnMut(&Error),
) -> Result<T>
where
    Fut: Future<Output = std::result::Result<T, Failed>>,
{
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let failed = match try_once(attempt).await {
            Ok(value) => return Ok(value),
            Err(failed) => failed,
        };
        if !failed.error.is_retryable() {
            return Err(failed.error);
        }
        on_retryable(&failed.error);
        if attempt >= max_attempts {
            return Err(failed.error);
        }
        let delay = policy.backoff(attempt, failed.retry_after);
        tracing::debug!(
            attempt,
            delay_ms = delay.as_millis() as u64,
            error = failed.error.kind().as_str(),
            "{note}"
        );
        tokio::time::sleep(delay).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Operation;

    #[test]
    fn backoff_is_bounded() {
        let p = RetryPolicy {
            max_attempts: 10,
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(40),
        };
        for attempt in 1..20 {
            assert!(p.backoff(attempt, None) <= Duration::from_millis(40));
        }
        assert_eq!(
            p.backoff(1, Some(Duration::from_millis(30))),
            Duration::from_millis(30)
        );
        assert!(p.backoff(1, Some(Duration::from_secs(60))) <= Duration::from_millis(40));
    }

    fn quick(max_attempts: u32) -> RetryPolicy {
        RetryPolicy {
            max_attempts,
            initial_backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
        }
    }

    fn timeout() -> Error {
        Error::Timeout {
            operation: Operation::GetInteraction,
            after: Duration::from_millis(1),
        }
    }

    #[tokio::test]
    async fn retries_retryable_failures_up_to_max_attempts() {
        let (mut tries, mut heard) = (0, 0);
        let result: Result<()> = with_retries(
            quick(10),
            3,
            "test",
            |_| {
                tries += 1;
                async { Err(Failed::from(timeout())) }
            },
            |_| heard += 1,
        )
        .await;
        assert!(matches!(result, Err(Error::Timeout { .. })), "{result:?}");
        assert_eq!((tries, heard), (3, 3));
    }

    #[tokio::test]
    async fn stops_at_a_failure_a_retry_cannot_fix_and_at_success() {
        let (mut tries, mut heard) = (0, 0);
        let result: Result<()> = with_retries(
            quick(3),
            3,
            "test",
            |_| {
                tries += 1;
                async {
                    Err(Failed::from(Error::NotFound {
                        operation: Operation::GetInteraction,
                        detail: String::new(),
                    }))
                }
            },
            |_| heard += 1,
        )
        .await;
        assert!(matches!(result, Err(Error::NotFound { .. })), "{result:?}");
        assert_eq!((tries, heard), (1, 0));

        let mut seen = Vec::new();
        let result = with_retries(
            quick(3),
            3,
            "test",
            |attempt| {
                seen.push(attempt);
                async move {
                    if attempt == 1 {
                        Err(Failed::from(timeout()))
                    } else {
                        Ok(attempt)
                    }
                }
            },
            |_| {},
        )
        .await;
        assert_eq!(result.unwrap(), 2);
        assert_eq!(seen, vec![1, 2]);
    }
}
