//! The share-partition against a model of what KIP-932 promises: random acquisitions,
//! acknowledgements (lock renewals among them, KIP-1222), lock expiry, members leaving and
//! restarts from the persisted state, with no record held by two members at once, no record
//! done (accepted or archived) delivered again, delivery counts as the model counts them, and
//! every record done in the end; with and without a dead-letter topic (KIP-1191), where each
//! record given up on reaches the writer once and the start never passes one before.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::partition::*;

const LIMITS: ShareLimits = ShareLimits {
    max_in_flight: 16,
    delivery_limit: 3,
    lock_duration_ms: 1_000,
    dead_letters: false,
};

const WITH_DEAD_LETTERS: ShareLimits = ShareLimits {
    dead_letters: true,
    ..LIMITS
};

/// A group with a dead-letter topic: a rejected record, and one released at the delivery
/// limit, wait for the writer (the start stops at them, across a restart too), are handed to
/// it once, in runs of one cause, and are archived when it is done.
#[test]
fn records_given_up_on_wait_for_the_dead_letter_writer_before_they_are_archived() {
    let mut p = SharePartition::new(0, WITH_DEAD_LETTERS);
    assert_eq!(p.acquire(1, 0..4, 10, 0).len(), 4);
    for offset in 0..2 {
        p.acknowledge(1, offset, Acknowledgement::Reject).unwrap();
    }
    p.acknowledge(1, 2, Acknowledgement::Skip).unwrap();
    p.acknowledge(1, 3, Acknowledgement::Accept).unwrap();
    assert_eq!(
        p.start_offset(),
        0,
        "nothing passes a record not yet dead-lettered"
    );
    // Offset 3's neighbour 4 goes round to the delivery limit.
    for now in [0, 1_000, 2_000] {
        assert_eq!(p.acquire(2, 4..5, 10, now).len(), 1);
        p.acknowledge(2, 4, Acknowledgement::Release).unwrap();
    }
    let rejected = DeadLetterRun {
        first_offset: 0,
        last_offset: 1,
        deliveries: 1,
        cause: DeadLetterCause::Rejected,
    };
    let at_limit = DeadLetterRun {
        first_offset: 4,
        last_offset: 4,
        deliveries: 3,
        cause: DeadLetterCause::DeliveryLimit,
    };
    // A restart before the writer is done hands them out again.
    let mut restored = SharePartition::restore(&p.persisted(), WITH_DEAD_LETTERS);
    assert_eq!(restored.take_dead_letters(), vec![rejected, at_limit]);
    assert_eq!(p.take_dead_letters(), vec![rejected, at_limit]);
    assert!(
        p.take_dead_letters().is_empty(),
        "handed to the writer once"
    );
    assert!(
        p.acquire(3, 0..5, 10, 3_000).is_empty(),
        "never delivered again"
    );
    assert!(p.dead_lettered(0, 1));
    assert_eq!(p.start_offset(), 4);
    assert!(p.dead_lettered(4, 4));
    assert!(!p.dead_lettered(4, 4), "done once");
    assert_eq!((p.start_offset(), p.end_offset()), (5, 5));
    // Without a dead-letter topic the same records are archived at once.
    let mut plain = SharePartition::new(0, LIMITS);
    plain.acquire(1, 0..1, 1, 0);
    plain.acknowledge(1, 0, Acknowledgement::Reject).unwrap();
    assert_eq!(plain.start_offset(), 1);
    // A topic unset meanwhile: what waited for the writer is archived.
    restored.acquire(1, 5..6, 1, 0);
    let mut unset = SharePartition::restore(&restored.persisted(), WITH_DEAD_LETTERS);
    unset.set_limits(LIMITS);
    assert!(unset.take_dead_letters().is_empty());
    assert_eq!(unset.start_offset(), 5);
}

#[test]
fn a_renewed_lock_runs_a_whole_duration_from_the_renewal_without_a_new_delivery() {
    let mut p = SharePartition::new(0, LIMITS);
    assert_eq!(p.acquire(1, 0..1, 10, 0).len(), 1);
    p.acknowledge(1, 0, Acknowledgement::Renew { now_ms: 900 })
        .unwrap();
    // Past the first lock's end, still held.
    assert_eq!(p.expire_locks(1_500), 0);
    assert!(p.holds(1, 0));
    assert!(p.acquire(2, 0..1, 10, 1_500).is_empty());
    // Another member may not renew it; once its renewed lock ends it goes, counted once.
    assert_eq!(
        p.acknowledge(2, 0, Acknowledgement::Renew { now_ms: 1_500 }),
        Err(NotHeld { offset: 0 })
    );
    assert_eq!(p.expire_locks(1_900), 1);
    let again = p.acquire(2, 0..1, 10, 1_900);
    assert_eq!(again[0].deliveries, 2);
}

#[test]
fn a_released_record_comes_back_counted_and_a_rejected_one_never() {
    let mut p = SharePartition::new(0, LIMITS);
    let first = p.acquire(1, 0..3, 10, 0);
    let offsets: Vec<i64> = first.iter().map(|a| a.offset).collect();
    assert_eq!(offsets, [0, 1, 2]);
    assert!(first.iter().all(|a| a.deliveries == 1));
    // Another member gets nothing while they are held.
    assert!(p.acquire(2, 0..3, 10, 0).is_empty());
    p.acknowledge(1, 0, Acknowledgement::Release).unwrap();
    p.acknowledge(1, 1, Acknowledgement::Reject).unwrap();
    p.acknowledge(1, 2, Acknowledgement::Accept).unwrap();
    assert_eq!(
        p.acknowledge(1, 2, Acknowledgement::Accept),
        Err(NotHeld { offset: 2 })
    );
    let again = p.acquire(2, 0..3, 10, 0);
    assert_eq!(
        again,
        [Acquired {
            offset: 0,
            deliveries: 2
        }]
    );
    // Member 1 no longer holds it.
    assert_eq!(
        p.acknowledge(1, 0, Acknowledgement::Accept),
        Err(NotHeld { offset: 0 })
    );
    p.acknowledge(2, 0, Acknowledgement::Accept).unwrap();
    assert_eq!((p.start_offset(), p.end_offset()), (3, 3));
}

#[test]
fn a_record_released_at_the_delivery_limit_is_archived() {
    let mut p = SharePartition::new(0, LIMITS);
    for delivery in 1..=LIMITS.delivery_limit {
        let got = p.acquire(1, 0..1, 1, 0);
        assert_eq!(
            got,
            [Acquired {
                offset: 0,
                deliveries: delivery
            }]
        );
        p.acknowledge(1, 0, Acknowledgement::Release).unwrap();
    }
    assert!(p.acquire(1, 0..1, 1, 0).is_empty());
    assert_eq!(p.start_offset(), 1, "archived, so the start moved past it");
}

#[test]
fn a_lock_that_runs_out_and_a_member_that_leaves_give_records_back() {
    let mut p = SharePartition::new(10, LIMITS);
    p.acquire(1, 0..12, 1, 0);
    p.acquire(2, 0..12, 1, 0);
    assert_eq!(p.next_lock_deadline(), Some(1_000));
    assert_eq!(p.expire_locks(999), 0);
    assert_eq!(p.member_gone(2), 1);
    assert_eq!(
        p.acquire(3, 0..12, 5, 500),
        [Acquired {
            offset: 11,
            deliveries: 2
        }]
    );
    assert_eq!(p.expire_locks(1_000), 1);
    assert_eq!(p.state(10), Some(RecordState::Available));
}

#[test]
fn the_in_flight_limit_bounds_what_is_acquired() {
    let mut p = SharePartition::new(0, LIMITS);
    let got = p.acquire(1, 0..1_000, 1_000, 0);
    assert_eq!(got.len(), LIMITS.max_in_flight as usize);
    p.acknowledge(1, 0, Acknowledgement::Accept).unwrap();
    assert_eq!(
        p.acquire(1, 0..1_000, 1_000, 0).len(),
        1,
        "one more once the front is done"
    );
}

#[test]
fn a_restart_keeps_what_was_acknowledged_and_offers_what_was_held_again() {
    let mut p = SharePartition::new(0, LIMITS);
    p.acquire(1, 0..4, 4, 0);
    p.acknowledge(1, 1, Acknowledgement::Accept).unwrap();
    p.acknowledge(1, 2, Acknowledgement::Reject).unwrap();
    let state = p.persisted();
    assert_eq!(state.start_offset, 0);
    let restored = SharePartition::restore(&state, LIMITS);
    assert_eq!(restored.state(0), Some(RecordState::Available));
    assert_eq!(restored.state(1), Some(RecordState::Acknowledged));
    assert_eq!(restored.state(2), Some(RecordState::Archived));
    assert_eq!(restored.end_offset(), 4);
    let mut restored = restored;
    let again: Vec<(i64, u16)> = restored
        .acquire(2, 0..4, 10, 0)
        .iter()
        .map(|a| (a.offset, a.deliveries))
        .collect();
    assert_eq!(again, [(0, 2), (3, 2)]);
}

#[test]
fn a_persisted_state_with_gaps_or_backwards_runs_is_read_up_to_them() {
    let batch = |first, last| StateBatch {
        first_offset: first,
        last_offset: last,
        state: PersistedState::Acknowledged,
        deliveries: 1,
    };
    let state = ShareState {
        start_offset: 5,
        batches: vec![batch(5, 6), batch(8, 9), batch(7, 7)],
    };
    let p = SharePartition::restore(&state, LIMITS);
    assert_eq!((p.start_offset(), p.end_offset()), (7, 7));
    let backwards = ShareState {
        start_offset: 0,
        batches: vec![batch(0, -5)],
    };
    assert_eq!(SharePartition::restore(&backwards, LIMITS).end_offset(), 0);
}

#[derive(Debug, Clone)]
enum Op {
    Produce(u8),
    Acquire {
        member: u32,
        max: u8,
    },
    Ack {
        member: u32,
        pick: u16,
        kind: u8,
    },
    Tick(u16),
    Leave(u32),
    Restart,
    /// The dead-letter writer takes what waits for it and is done with it.
    DeadLetter,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (1u8..20).prop_map(Op::Produce),
        3 => (0u32..3, 1u8..12).prop_map(|(member, max)| Op::Acquire { member, max }),
        6 => (0u32..3, any::<u16>(), 0u8..5).prop_map(|(member, pick, kind)| Op::Ack { member, pick, kind }),
        2 => (0u16..1_500).prop_map(Op::Tick),
        1 => (0u32..3).prop_map(Op::Leave),
        1 => Just(Op::Restart),
        1 => Just(Op::DeadLetter),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Done {
    Accepted,
    /// Given up on, waiting for the dead-letter writer (the group has a dead-letter topic).
    DeadLettering,
    Archived,
}

/// What the share-partition must agree with.
#[derive(Default)]
struct Model {
    deliveries: BTreeMap<i64, u16>,
    held: BTreeMap<i64, (u32, i64)>,
    done: BTreeMap<i64, Done>,
    dead_letters: bool,
}

impl Model {
    fn release(&mut self, offset: i64) {
        self.held.remove(&offset);
        if self.deliveries[&offset] >= LIMITS.delivery_limit {
            self.give_up(offset);
        }
    }

    fn give_up(&mut self, offset: i64) {
        self.held.remove(&offset);
        let done = match self.dead_letters {
            true => Done::DeadLettering,
            false => Done::Archived,
        };
        self.done.insert(offset, done);
    }

    /// Finished with: its start may pass it.
    fn finished(&self, offset: i64) -> bool {
        matches!(
            self.done.get(&offset),
            Some(Done::Accepted | Done::Archived)
        )
    }

    fn release_all(&mut self, which: impl Fn(u32, i64) -> bool) -> usize {
        let offsets: Vec<i64> = self
            .held
            .iter()
            .filter(|(_, (member, until))| which(*member, *until))
            .map(|(offset, _)| *offset)
            .collect();
        for offset in &offsets {
            self.release(*offset);
        }
        offsets.len()
    }

    fn expected(&self, offset: i64) -> RecordState {
        match (self.held.get(&offset), self.done.get(&offset)) {
            (Some((member, until_ms)), _) => RecordState::Acquired {
                member: *member,
                until_ms: *until_ms,
            },
            (None, Some(Done::Accepted)) => RecordState::Acknowledged,
            (None, Some(Done::Archived)) => RecordState::Archived,
            // The writer has not taken it (`writing` is checked apart).
            (None, Some(Done::DeadLettering)) => RecordState::DeadLettering {
                cause: DeadLetterCause::Rejected,
                writing: false,
            },
            (None, None) => RecordState::Available,
        }
    }
}

struct Run {
    p: SharePartition,
    model: Model,
    limits: ShareLimits,
    log_end: i64,
    now: i64,
}

impl Run {
    fn step(&mut self, op: &Op) {
        match *op {
            Op::Produce(n) => self.log_end += i64::from(n),
            Op::Acquire { member, max } => self.acquire(member, usize::from(max)),
            Op::Ack { member, pick, kind } => self.ack(member, pick, kind),
            Op::Tick(ms) => {
                self.now += i64::from(ms);
                let now = self.now;
                let expected = self.model.release_all(|_, until| until <= now);
                assert_eq!(self.p.expire_locks(now), expected);
            }
            Op::Leave(member) => {
                let expected = self.model.release_all(|holder, _| holder == member);
                assert_eq!(self.p.member_gone(member), expected);
            }
            Op::Restart => {
                self.p = SharePartition::restore(&self.p.persisted(), self.limits);
                self.model.release_all(|_, _| true);
            }
            Op::DeadLetter => self.dead_letter(),
        }
        self.check();
    }

    fn acquire(&mut self, member: u32, max: usize) {
        let got = self.p.acquire(member, 0..self.log_end, max, self.now);
        for a in &got {
            assert!(a.offset < self.log_end);
            assert!(
                !self.model.done.contains_key(&a.offset),
                "{} delivered after it was done",
                a.offset
            );
            assert!(
                !self.model.held.contains_key(&a.offset),
                "{} held twice",
                a.offset
            );
            let deliveries = self.model.deliveries.entry(a.offset).or_default();
            *deliveries += 1;
            assert_eq!(a.deliveries, *deliveries);
            assert!(a.deliveries <= LIMITS.delivery_limit);
            let until = self.now + LIMITS.lock_duration_ms;
            self.model.held.insert(a.offset, (member, until));
        }
        if got.len() < max {
            // Nothing more was to be had: none available, and the end at the log's end or
            // the in-flight limit.
            let (start, end) = (self.p.start_offset(), self.p.end_offset());
            assert!((start..end).all(|o| self.model.expected(o) != RecordState::Available));
            assert!(end == self.log_end || end - start == i64::from(LIMITS.max_in_flight));
        }
    }

    fn ack(&mut self, member: u32, pick: u16, kind: u8) {
        let mine: Vec<i64> = self
            .model
            .held
            .iter()
            .filter(|(_, (holder, _))| *holder == member)
            .map(|(offset, _)| *offset)
            .collect();
        let offset = match mine.is_empty() || pick.is_multiple_of(4) {
            false => mine[usize::from(pick) % mine.len()],
            // Any offset around what is in flight, held by another or by none.
            true => {
                let span = self.p.end_offset() - self.p.start_offset() + 4;
                self.p.start_offset() - 2 + i64::from(pick) % span
            }
        };
        let kind = [
            Acknowledgement::Accept,
            Acknowledgement::Release,
            Acknowledgement::Reject,
            Acknowledgement::Renew { now_ms: self.now },
            Acknowledgement::Skip,
        ][usize::from(kind)];
        let holds = self
            .model
            .held
            .get(&offset)
            .is_some_and(|(m, _)| *m == member);
        let answer = self.p.acknowledge(member, offset, kind);
        assert_eq!(answer.is_ok(), holds, "acknowledging {offset} as {member}");
        if !holds {
            return;
        }
        match kind {
            Acknowledgement::Accept => {
                self.model.held.remove(&offset);
                self.model.done.insert(offset, Done::Accepted);
            }
            Acknowledgement::Reject => self.model.give_up(offset),
            Acknowledgement::Skip => {
                self.model.held.remove(&offset);
                self.model.done.insert(offset, Done::Archived);
            }
            Acknowledgement::Release => self.model.release(offset),
            Acknowledgement::Renew { now_ms } => {
                let held = self.model.held.get_mut(&offset).expect("held");
                held.1 = now_ms + LIMITS.lock_duration_ms;
            }
        }
    }

    fn check(&self) {
        let (start, end) = (self.p.start_offset(), self.p.end_offset());
        assert!(start <= end && end <= self.log_end);
        assert!(end - start <= i64::from(LIMITS.max_in_flight));
        assert!(
            (0..start).all(|o| self.model.finished(o)),
            "the start passed a record not done"
        );
        for offset in start..end {
            let state = match self.p.state(offset) {
                // Its cause is checked where the writer takes it.
                Some(RecordState::DeadLettering { .. }) => RecordState::DeadLettering {
                    cause: DeadLetterCause::Rejected,
                    writing: false,
                },
                other => other.expect("in flight"),
            };
            assert_eq!(state, self.model.expected(offset), "record {offset}");
        }
        assert!(self.model.held.keys().all(|o| (start..end).contains(o)));
    }

    /// The writer takes every record given up on, once, with the cause the model knows, and
    /// is done with them: archived.
    fn dead_letter(&mut self) {
        let waiting: Vec<i64> = (self.model.done.iter())
            .filter(|(_, d)| **d == Done::DeadLettering)
            .map(|(o, _)| *o)
            .collect();
        let runs = self.p.take_dead_letters();
        let taken: Vec<i64> = runs
            .iter()
            .flat_map(|r| r.first_offset..=r.last_offset)
            .collect();
        assert_eq!(taken, waiting, "the writer gets each given-up record");
        for run in &runs {
            for offset in run.first_offset..=run.last_offset {
                assert_eq!(run.deliveries, self.model.deliveries[&offset]);
                let at_limit = run.deliveries >= LIMITS.delivery_limit;
                // Rejected at the last delivery reads as the limit after a restart.
                if run.cause == DeadLetterCause::DeliveryLimit {
                    assert!(at_limit, "{offset} is not at the limit");
                }
            }
            self.p.dead_lettered(run.first_offset, run.last_offset);
        }
        for offset in waiting {
            self.model.done.insert(offset, Done::Archived);
        }
    }

    /// One member takes and accepts everything left: every record ends done.
    fn drain(&mut self) {
        for _ in 0..(self.log_end / i64::from(LIMITS.max_in_flight) + 8) {
            self.now += LIMITS.lock_duration_ms;
            let now = self.now;
            self.p.expire_locks(now);
            self.model.release_all(|_, until| until <= now);
            self.dead_letter();
            for a in self.p.acquire(9, 0..self.log_end, usize::MAX, self.now) {
                self.p
                    .acknowledge(9, a.offset, Acknowledgement::Accept)
                    .unwrap();
                self.model.held.remove(&a.offset);
                self.model.done.insert(a.offset, Done::Accepted);
            }
        }
        assert_eq!(
            (self.p.start_offset(), self.p.end_offset()),
            (self.log_end, self.log_end)
        );
        assert!((0..self.log_end).all(|o| self.model.done.contains_key(&o)));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_share_partition_keeps_kip_932s_promises(
        ops in proptest::collection::vec(op(), 1..80),
        dead_letters in any::<bool>(),
    ) {
        let limits = ShareLimits { dead_letters, ..LIMITS };
        let mut run = Run {
            p: SharePartition::new(0, limits),
            model: Model { dead_letters, ..Model::default() },
            limits,
            log_end: 0,
            now: 0,
        };
        for op in &ops {
            run.step(op);
        }
        run.drain();
    }
}

#[test]
fn a_record_in_flight_takes_24_bytes() {
    // The memory a lock costs, charged to the shard's group memory.
    assert_eq!(super::partition::IN_FLIGHT_BYTES, 24);
}
