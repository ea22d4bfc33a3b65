//! How executors start work and stop it.
//!
//! - `Latch`: a count every executor (and the signal thread) can wait on and count down,
//!   woken by glommio's cross-thread wakers instead of polling a flag.
//! - `Tasks`: one per executor, two task queues — the request path (the executor's default
//!   queue) and background work (retention, orphan scans, mirror fetchers, metadata sync) with
//!   a tenth of its share, so background work cannot starve requests — and a registry of the
//!   named background tasks, cancelled by name at shutdown.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use glommio::task::JoinHandle;
use glommio::{Latency, Shares, TaskQueueHandle};

/// CPU shares of the background queue; glommio's default queue, where requests run, has
/// 1000. Under contention requests get ten times the time; alone, either may use all of it.
const BACKGROUND_SHARES: usize = 100;

/// Counts down to zero once; waiters on any thread wake at zero.
pub struct Latch {
    remaining: AtomicUsize,
    waiters: Mutex<Vec<Waker>>,
}

impl Latch {
    pub fn new(count: usize) -> Latch {
        Latch {
            remaining: AtomicUsize::new(count),
            waiters: Mutex::new(Vec::new()),
        }
    }

    pub fn count_down(&self) {
        let before = self
            .remaining
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .unwrap_or(0);
        if before == 1 {
            let waiters =
                std::mem::take(&mut *self.waiters.lock().unwrap_or_else(|e| e.into_inner()));
            for waker in waiters {
                waker.wake();
            }
        }
    }

    /// Counts all the way down (a shutdown request).
    pub fn release(&self) {
        while !self.is_open() {
            self.count_down();
        }
    }

    pub fn is_open(&self) -> bool {
        self.remaining.load(Ordering::Acquire) == 0
    }

    /// Resolves at zero.
    pub fn wait(&self) -> LatchWait<'_> {
        LatchWait { latch: self }
    }
}

pub struct LatchWait<'a> {
    latch: &'a Latch,
}

impl Future for LatchWait<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.latch.is_open() {
            return Poll::Ready(());
        }
        let mut waiters = self.latch.waiters.lock().unwrap_or_else(|e| e.into_inner());
        // Checked again under the lock: a count_down between the two checks takes the
        // waiters after this one is pushed.
        if self.latch.is_open() {
            return Poll::Ready(());
        }
        if !waiters.iter().any(|w| w.will_wake(cx.waker())) {
            waiters.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

/// The task queues and background tasks of one executor.
pub struct Tasks {
    requests: TaskQueueHandle,
    background: TaskQueueHandle,
    running: RefCell<BTreeMap<u64, (&'static str, JoinHandle<()>)>>,
    next_id: Cell<u64>,
}

impl Tasks {
    /// Made on the executor's main task: its queue (the default one) is the request path.
    pub fn new() -> Rc<Tasks> {
        let executor = glommio::executor();
        Rc::new(Tasks {
            requests: executor.current_task_queue(),
            background: executor.create_task_queue(
                Shares::Static(BACKGROUND_SHARES),
                Latency::NotImportant,
                "background",
            ),
            running: RefCell::new(BTreeMap::new()),
            next_id: Cell::new(0),
        })
    }

    /// Runs request-path work (a connection, a peer's request).
    pub fn spawn_request<T: 'static>(
        &self,
        work: impl Future<Output = T> + 'static,
    ) -> JoinHandle<T> {
        glommio::spawn_local_into(work, self.requests)
            .expect("the request queue exists on this executor")
            .detach()
    }

    /// Runs a named background task until it ends or `stop` cancels it.
    pub fn spawn_background(
        self: &Rc<Self>,
        name: &'static str,
        work: impl Future<Output = ()> + 'static,
    ) {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let registry = Rc::downgrade(self);
        let handle = glommio::spawn_local_into(
            async move {
                work.await;
                if let Some(tasks) = registry.upgrade() {
                    tasks.running.borrow_mut().remove(&id);
                }
            },
            self.background,
        )
        .expect("the background queue exists on this executor")
        .detach();
        self.running.borrow_mut().insert(id, (name, handle));
    }

    /// Names of the background tasks still running.
    pub fn running(&self) -> Vec<&'static str> {
        self.running
            .borrow()
            .values()
            .map(|(name, _)| *name)
            .collect()
    }

    /// Cancels every background task: they are loops that hold nothing a restart would miss
    /// (retention, scans and mirror fetches resume from durable state).
    pub fn stop_background(&self) {
        let running = std::mem::take(&mut *self.running.borrow_mut());
        for (name, handle) in running.into_values() {
            tracing::debug!(task = name, "background task stopped");
            handle.cancel();
        }
    }
}

/// Runs `work` for at most `limit`; None if it did not finish.
pub async fn with_deadline<T>(limit: Duration, work: impl Future<Output = T>) -> Option<T> {
    shoal_net::within(limit, work).await
}

/// How often every executor wakes, with work or without. glommio's shared channels can miss a
/// wake-up: about once in 500 starts of a broker beside busy processes, an executor parked for
/// good with an answer waiting in its queue (a debugger attaching woke it, and it went on),
/// and the start hung. Each wake sweeps the executor's channels for what is waiting, so a
/// missed wake-up costs at most this long.
pub const SWEEP_INTERVAL: Duration = Duration::from_millis(100);

/// Wakes the current executor every `SWEEP_INTERVAL` for as long as it runs.
pub fn keep_sweeping() {
    glommio::spawn_local(async {
        loop {
            glommio::timer::sleep(SWEEP_INTERVAL).await;
        }
    })
    .detach();
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    use glommio::LocalExecutorBuilder;

    use super::*;

    #[test]
    fn a_latch_wakes_an_executor_from_another_thread_without_polling() {
        let latch = Arc::new(Latch::new(2));
        let woke = Arc::new(AtomicBool::new(false));
        let (waiting, woke_flag) = (latch.clone(), woke.clone());
        let executor = LocalExecutorBuilder::default()
            .spawn(move || async move {
                waiting.wait().await;
                woke_flag.store(true, Ordering::Release);
            })
            .unwrap();
        latch.count_down();
        std::thread::sleep(Duration::from_millis(50));
        assert!(!latch.is_open());
        assert!(
            !woke.load(Ordering::Acquire),
            "one count left: still waiting"
        );
        latch.count_down();
        executor.join().unwrap();
        assert!(woke.load(Ordering::Acquire));
        latch.count_down(); // past zero: stays open
        assert!(latch.is_open());
    }

    #[test]
    fn background_tasks_are_named_and_stopped() {
        glommio::LocalExecutor::default().run(async {
            let tasks = Tasks::new();
            tasks.spawn_background("forever", async {
                loop {
                    glommio::timer::sleep(Duration::from_millis(1)).await;
                }
            });
            tasks.spawn_background("brief", async {});
            glommio::timer::sleep(Duration::from_millis(10)).await;
            assert_eq!(tasks.running(), vec!["forever"]);
            tasks.stop_background();
            assert!(tasks.running().is_empty());
            let answer = tasks.spawn_request(async { 42 }).await;
            assert_eq!(answer, Some(42));
        });
    }
}
