//! Start-up steps that wait out passing failures (a connection reset, a timeout, a store that
//! answers 503 SlowDown, PostgreSQL restarting): each is tried again with backoff until it
//! succeeds, fails for good, or its time runs out; only then does the broker stop, saying
//! which step failed and why. A definitive answer (no such bucket, refused credentials) stops
//! it at once.

use std::fmt::Display;
use std::future::Future;
use std::time::{Duration, Instant};

use crate::within;

/// The first pause between tries; each later one doubles, up to `BACKOFF_MAX`.
const BACKOFF_FIRST: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Runs `attempt` until it succeeds, fails with an error `is_transient` does not pass, or
/// `patience` has gone by (an attempt still running then is given up). The Err names `step`.
pub async fn retry_transient<T, E, Fut>(
    step: &str,
    patience: Duration,
    is_transient: impl Fn(&E) -> bool,
    mut attempt: impl FnMut() -> Fut,
) -> Result<T, String>
where
    E: Display,
    Fut: Future<Output = Result<T, E>>,
{
    let started = Instant::now();
    let mut backoff = BACKOFF_FIRST;
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        let left = patience.saturating_sub(started.elapsed());
        let Some(outcome) = within(left, attempt()).await else {
            return Err(format!(
                "{step}: no answer within {} ms (startup_timeout_ms), {attempts} tries",
                patience.as_millis()
            ));
        };
        let error = match outcome {
            Ok(value) => return Ok(value),
            Err(e) if !is_transient(&e) => return Err(format!("{step}: {e}")),
            Err(e) => e,
        };
        if started.elapsed() + backoff >= patience {
            return Err(format!(
                "{step}: {error} (still failing after {attempts} tries in {} ms: \
                 startup_timeout_ms)",
                started.elapsed().as_millis()
            ));
        }
        tracing::warn!(
            step,
            %error,
            tries = attempts,
            retry_in_ms = backoff.as_millis() as u64,
            "a start-up step failed for a passing reason; trying it again"
        );
        glommio::timer::sleep(backoff).await;
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    fn on_executor<F, Fut>(work: F) -> Fut::Output
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: std::future::Future + 'static,
        Fut::Output: Send + 'static,
    {
        glommio::LocalExecutorBuilder::default()
            .io_memory(0)
            .spawn(work)
            .unwrap()
            .join()
            .unwrap()
    }

    #[test]
    fn passing_failures_are_tried_again_and_a_definitive_one_stops_at_once() {
        on_executor(|| async {
            let tries = Cell::new(0);
            let outcome = retry_transient(
                "check",
                Duration::from_secs(10),
                |e: &&str| *e == "reset",
                || {
                    tries.set(tries.get() + 1);
                    let result = if tries.get() < 3 { Err("reset") } else { Ok(7) };
                    async move { result }
                },
            )
            .await;
            assert_eq!((outcome, tries.get()), (Ok(7), 3));

            tries.set(0);
            let outcome: Result<(), _> = retry_transient(
                "check",
                Duration::from_secs(10),
                |e: &&str| *e == "reset",
                || {
                    tries.set(tries.get() + 1);
                    async { Err("no such bucket") }
                },
            )
            .await;
            assert_eq!(
                (outcome, tries.get()),
                (Err("check: no such bucket".into()), 1)
            );
        });
    }

    #[test]
    fn a_step_that_keeps_failing_or_never_answers_stops_within_its_patience() {
        on_executor(|| async {
            let started = Instant::now();
            let outcome: Result<(), _> = retry_transient(
                "check",
                Duration::from_millis(500),
                |_: &&str| true,
                || async { Err("reset") },
            )
            .await;
            let error = outcome.unwrap_err();
            assert!(
                error.starts_with("check: reset (still failing after"),
                "{error}"
            );
            assert!(started.elapsed() < Duration::from_millis(900));

            let started = Instant::now();
            let outcome: Result<(), String> = retry_transient(
                "hang",
                Duration::from_millis(300),
                |_: &&str| true,
                std::future::pending::<Result<(), &str>>,
            )
            .await;
            assert!(outcome
                .unwrap_err()
                .starts_with("hang: no answer within 300 ms"));
            assert!(started.elapsed() < Duration::from_millis(600));
        });
    }
}
