//! A single-executor broadcast signal: waiters wake when `notify_all` is called after they
//! started waiting. Used to wake long-polling fetches when a commit moves a watermark.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

#[derive(Default)]
pub struct LocalSignal {
    generation: Cell<u64>,
    wakers: RefCell<Vec<Waker>>,
}

impl LocalSignal {
    pub fn notify_all(&self) {
        self.generation.set(self.generation.get() + 1);
        for waker in self.wakers.borrow_mut().drain(..) {
            waker.wake();
        }
    }

    /// Resolves at the next `notify_all`.
    pub fn wait(&self) -> impl Future<Output = ()> + '_ {
        SignalWait {
            signal: self,
            seen: self.generation.get(),
        }
    }
}

struct SignalWait<'a> {
    signal: &'a LocalSignal,
    seen: u64,
}

impl Future for SignalWait<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.signal.generation.get() != self.seen {
            return Poll::Ready(());
        }
        let mut wakers = self.signal.wakers.borrow_mut();
        // Waiters are few (long-polling fetches); skip re-registering the same task.
        if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
            wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}
