//! The shard's memory budget for requests and their answers (Kafka's
//! `queued.max.request.bytes`, extended to responses): a request reserves its bytes as they
//! arrive, then what its decoded form and its answer will hold, and gives it all back once
//! the answer has been written to the socket.

use std::cell::Cell;
use std::rc::Rc;

use glommio::sync::Semaphore;

/// Bytes held against the budget; returned when dropped.
pub struct Reservation {
    budget: Rc<Semaphore>,
    capacity: u64,
    units: Cell<u64>,
}

impl Reservation {
    pub fn new(budget: Rc<Semaphore>, capacity: usize) -> Reservation {
        Reservation {
            budget,
            capacity: capacity as u64,
            units: Cell::new(0),
        }
    }

    /// Waits for `bytes` more, never asking past the whole budget (so one request cannot
    /// wait forever); false once the budget is closed.
    pub async fn grow(&self, bytes: usize) -> bool {
        let want = (bytes as u64).min(self.capacity.saturating_sub(self.units.get()));
        if want == 0 {
            return true;
        }
        if self.budget.acquire(want).await.is_err() {
            return false;
        }
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
            self.budget.signal(units - keep);
            self.units.set(keep);
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let units = self.units.get();
        if units > 0 {
            self.budget.signal(units);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_come_back_when_dropped_and_never_exceed_the_budget() {
        glommio::LocalExecutor::default().run(async {
            let budget = Rc::new(Semaphore::new(100));
            let a = Reservation::new(budget.clone(), 100);
            assert!(a.grow(60).await);
            assert!(
                a.grow(1000).await,
                "capped at the budget, not waiting forever"
            );
            assert_eq!(budget.available(), 0);
            a.shrink_to(30);
            assert_eq!(budget.available(), 70);
            drop(a);
            assert_eq!(budget.available(), 100);
        });
    }
}
