//! A strictly first-come, first-served gate for one executor.
//!
//! Kafka applies a connection's produce requests in the order they were sent. Between the
//! socket and the WAL buffer a request may wait (for room in a full queue to another shard,
//! for an upload slot before its buffer can rotate). glommio's `Semaphore` and shared-channel
//! `send` let a newcomer take freed room before a task that was already waiting, so a later
//! request could overtake an earlier one. A `Turnstile` hands out numbered tickets when a
//! caller arrives and lets them through strictly in that order.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

#[derive(Default)]
pub struct Turnstile {
    next_ticket: Cell<u64>,
    /// The ticket whose holder may pass now.
    serving: Cell<u64>,
    /// Waiting holders that have been polled, by ticket.
    wakers: RefCell<BTreeMap<u64, Waker>>,
    /// Tickets dropped before their turn: skipped when reached.
    abandoned: RefCell<BTreeSet<u64>>,
}

impl Turnstile {
    /// Takes a ticket now (at the call, not at the first poll) and resolves to a `Passage`
    /// once every earlier ticket has passed. Dropping the `Passage` lets the next one in.
    pub fn enter(&self) -> Ticket<'_> {
        let number = self.next_ticket.get();
        self.next_ticket.set(number + 1);
        Ticket {
            turnstile: self,
            number,
            passed: false,
        }
    }

    /// Nobody holds or waits for a turn.
    pub fn is_idle(&self) -> bool {
        self.serving.get() == self.next_ticket.get()
    }

    fn advance(&self) {
        let mut next = self.serving.get() + 1;
        {
            let mut abandoned = self.abandoned.borrow_mut();
            while abandoned.remove(&next) {
                next += 1;
            }
        }
        self.serving.set(next);
        debug_assert!(next <= self.next_ticket.get());
        if let Some(waker) = self.wakers.borrow_mut().remove(&next) {
            waker.wake();
        }
    }
}

/// A place in the queue; resolves when it is this ticket's turn.
pub struct Ticket<'a> {
    turnstile: &'a Turnstile,
    number: u64,
    passed: bool,
}

impl<'a> Future for Ticket<'a> {
    type Output = Passage<'a>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Passage<'a>> {
        debug_assert!(!self.passed, "a ticket is used once");
        let turnstile = self.turnstile;
        if turnstile.serving.get() == self.number {
            self.passed = true;
            turnstile.wakers.borrow_mut().remove(&self.number);
            return Poll::Ready(Passage { turnstile });
        }
        turnstile
            .wakers
            .borrow_mut()
            .insert(self.number, cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if self.passed {
            return;
        }
        let turnstile = self.turnstile;
        turnstile.wakers.borrow_mut().remove(&self.number);
        if turnstile.serving.get() == self.number {
            // Its turn came but it was given up: pass the turn on.
            turnstile.advance();
        } else {
            turnstile.abandoned.borrow_mut().insert(self.number);
        }
    }
}

/// The right to pass, held while the ordered step runs.
pub struct Passage<'a> {
    turnstile: &'a Turnstile,
}

impl Drop for Passage<'_> {
    fn drop(&mut self) {
        self.turnstile.advance();
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;
    use std::time::Duration;

    use glommio::LocalExecutor;

    use super::*;

    #[test]
    fn holders_pass_one_at_a_time_in_arrival_order() {
        LocalExecutor::default().run(async {
            let gate = Rc::new(Turnstile::default());
            let passed = Rc::new(RefCell::new(Vec::new()));
            let first = gate.enter().await;
            let mut tasks = Vec::new();
            for i in 1..=5 {
                let gate = gate.clone();
                let passed = passed.clone();
                let delay = Duration::from_millis(6 - i as u64);
                tasks.push(glommio::spawn_local(async move {
                    glommio::timer::sleep(delay).await;
                    let _passage = gate.enter().await;
                    passed.borrow_mut().push(i);
                    glommio::timer::sleep(Duration::from_millis(1)).await;
                }));
            }
            glommio::timer::sleep(Duration::from_millis(20)).await;
            assert!(
                passed.borrow().is_empty(),
                "nobody passes while the first holds it"
            );
            drop(first);
            for task in tasks {
                task.await;
            }
            // They entered when their sleep ended: 5 first (1 ms) ... 1 last (5 ms).
            assert_eq!(*passed.borrow(), vec![5, 4, 3, 2, 1]);
            assert!(gate.is_idle());
        });
    }

    #[test]
    fn a_ticket_taken_earlier_passes_first_even_if_polled_later() {
        LocalExecutor::default().run(async {
            let gate = Turnstile::default();
            let held = gate.enter().await;
            let early = gate.enter();
            let mut late = Box::pin(gate.enter());
            // The later ticket is polled first: it must wait.
            assert!(futures::poll!(late.as_mut()).is_pending());
            drop(held);
            assert!(futures::poll!(late.as_mut()).is_pending());
            let passage = early.await;
            assert!(futures::poll!(late.as_mut()).is_pending());
            drop(passage);
            let _late = late.await;
        });
    }

    #[test]
    fn abandoned_tickets_are_skipped() {
        LocalExecutor::default().run(async {
            let gate = Turnstile::default();
            let held = gate.enter().await;
            let given_up = gate.enter();
            let waiting = gate.enter();
            let also_given_up = gate.enter();
            drop(given_up);
            drop(also_given_up);
            drop(held);
            drop(waiting.await);
            assert!(gate.is_idle());
            let _again = gate.enter().await;
        });
    }

    #[test]
    fn a_ticket_dropped_on_its_turn_passes_the_turn_on() {
        LocalExecutor::default().run(async {
            let gate = Turnstile::default();
            let held = gate.enter().await;
            let next = gate.enter();
            let last = gate.enter();
            drop(held);
            drop(next);
            drop(last.await);
            assert!(gate.is_idle());
        });
    }
}
