//! A request's handling time as `request_percentage` counts it: the time its handler spends
//! running on the shard (each poll), not the time it waits for uploads, commits or long polls.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

pin_project_lite::pin_project! {
    /// Runs `inner`, adding up the time spent in its polls when `measure` (else just runs it).
    pub struct Busy<F> {
        #[pin]
        inner: F,
        busy: Option<Duration>,
    }
}

impl<F: Future> Busy<F> {
    pub fn new(inner: F, measure: bool) -> Busy<F> {
        Busy {
            inner,
            busy: measure.then_some(Duration::ZERO),
        }
    }
}

impl<F: Future> Future for Busy<F> {
    /// The output, and the time polled (None: not measured).
    type Output = (F::Output, Option<Duration>);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let started = this.busy.is_some().then(Instant::now);
        let polled = this.inner.poll(cx);
        if let (Some(busy), Some(started)) = (this.busy.as_mut(), started) {
            *busy += started.elapsed();
        }
        polled.map(|output| (output, *this.busy))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_spent_waiting_is_not_counted() {
        let (out, busy) = futures_lite::future::block_on(Busy::new(
            async {
                std::thread::sleep(Duration::from_millis(20));
                futures_lite::future::yield_now().await;
                7
            },
            true,
        ));
        assert_eq!(out, 7);
        assert!(busy.unwrap() >= Duration::from_millis(20));
        let (_, unmeasured) = futures_lite::future::block_on(Busy::new(async {}, false));
        assert_eq!(unmeasured, None);
    }
}
