//! The shard's memory budget for requests and their answers (Kafka's
//! `queued.max.request.bytes`, extended to responses): a request reserves its bytes as they
//! arrive, then what its decoded form and its answer will hold, and gives it all back once
//! the answer has been written to the socket. Its size may change at run time (the dynamic
//! broker config `max.in.flight.request.bytes`).

use std::cell::Cell;
use std::rc::Rc;

use glommio::sync::Semaphore;
use shoal_shards::ShardMetrics;

/// One shard's budget.
pub struct RequestBudget {
    semaphore: Semaphore,
    capacity: Cell<u64>,
    /// Where the bytes held are shown (`shoal_request_memory_bytes`).
    metrics: Rc<ShardMetrics>,
}

impl RequestBudget {
    pub fn new(bytes: usize, metrics: Rc<ShardMetrics>) -> Rc<RequestBudget> {
        Rc::new(RequestBudget {
            semaphore: Semaphore::new(bytes as u64),
            capacity: Cell::new(bytes as u64),
            metrics,
        })
    }

    fn taken(&self, bytes: u64) {
        self.metrics.gauges.request_memory_bytes.add(bytes);
    }

    fn given_back(&self, bytes: u64) {
        self.semaphore.signal(bytes);
        self.metrics.gauges.request_memory_bytes.sub(bytes);
    }

    pub fn capacity(&self) -> u64 {
        self.capacity.get()
    }

    pub fn available(&self) -> u64 {
        self.semaphore.available()
    }

    /// A new size: larger at once; smaller as held bytes come back (a task takes the
    /// difference out of the budget as it frees up). Call on the shard's executor.
    pub fn resize(self: &Rc<Self>, bytes: usize) {
        let (old, new) = (self.capacity.get(), bytes as u64);
        self.capacity.set(new);
        if new > old {
            self.semaphore.signal(new - old);
        } else if new < old {
            let budget = self.clone();
            glommio::spawn_local(async move {
                // Taken for good; an error means the budget was closed.
                let _ = budget.semaphore.acquire(old - new).await;
            })
            .detach();
        }
    }
}

/// Bytes held against the budget; returned when dropped.
pub struct Reservation {
    budget: Rc<RequestBudget>,
    units: Cell<u64>,
}

impl Reservation {
    pub fn new(budget: Rc<RequestBudget>) -> Reservation {
        Reservation {
            budget,
            units: Cell::new(0),
        }
    }

    /// Waits for `bytes` more, never asking past the whole budget (so one request cannot
    /// wait forever); false once the budget is closed.
    pub async fn grow(&self, bytes: usize) -> bool {
        let room = self.budget.capacity().saturating_sub(self.units.get());
        let want = (bytes as u64).min(room);
        if want == 0 {
            return true;
        }
        if self.budget.semaphore.acquire(want).await.is_err() {
            return false;
        }
        self.budget.taken(want);
        self.units.set(self.units.get() + want);
        true
    }
}

impl Reservation {
    /// Gives back all but `bytes` (a handled request keeps only its answer's).
    pub fn shrink_to(&self, bytes: usize) {
        let units = self.units.get();
        let keep = (bytes as u64).min(units);
        if units > keep {
            self.budget.given_back(units - keep);
            self.units.set(keep);
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let units = self.units.get();
        if units > 0 {
            self.budget.given_back(units);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_come_back_when_dropped_and_never_exceed_the_budget() {
        glommio::LocalExecutor::default().run(async {
            let metrics = Rc::new(ShardMetrics::new(0));
            let budget = RequestBudget::new(100, metrics.clone());
            let a = Reservation::new(budget.clone());
            assert!(a.grow(60).await);
            assert_eq!(metrics.gauges.request_memory_bytes.get(), 60);
            assert!(
                a.grow(1000).await,
                "capped at the budget, not waiting forever"
            );
            assert_eq!(budget.available(), 0);
            a.shrink_to(30);
            assert_eq!(budget.available(), 70);
            drop(a);
            assert_eq!(budget.available(), 100);
            assert_eq!(metrics.gauges.request_memory_bytes.get(), 0);
        });
    }

    #[test]
    fn a_budget_resized_at_run_time_grows_at_once_and_shrinks_as_bytes_come_back() {
        glommio::LocalExecutor::default().run(async {
            let budget = RequestBudget::new(100, Rc::new(ShardMetrics::new(0)));
            let a = Reservation::new(budget.clone());
            assert!(a.grow(80).await);
            budget.resize(50);
            glommio::executor().yield_task_queue_now().await;
            // 80 held, 20 free: the shrink waits for 50 and takes what it can only whole.
            assert_eq!(budget.available(), 20);
            drop(a);
            glommio::executor().yield_task_queue_now().await;
            assert_eq!(budget.available(), 50);
            let b = Reservation::new(budget.clone());
            assert!(b.grow(1000).await, "capped at the new size");
            assert_eq!(budget.available(), 0);
            budget.resize(120);
            assert_eq!(budget.available(), 70);
        });
    }
}
