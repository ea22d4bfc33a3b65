//! One share-partition's records as KIP-932 hands them out (Kafka's `SharePartition`): the
//! records from the share-partition start offset (SPSO) to its end (SPEO) are in flight, each
//! available, acquired by one member under a lock until a deadline, acknowledged, or archived.
//! A record's delivery count rises each time it is acquired; one released (by its member, by
//! its lock running out, or by its member leaving) at the delivery limit is archived instead of
//! offered again. The start advances past every acknowledged or archived record at the front,
//! and the records in flight are bounded (`share.partition.max.record.locks`), so the state is
//! bounded whatever the consumers do.
//!
//! A group with a dead-letter topic (KIP-1191) holds a rejected record, or one released at the
//! delivery limit, as dead-lettering until the broker has written it there
//! (`take_dead_letters`, `dead_lettered`): the start does not pass it before.
//!
//! I/O-free: time is passed in, and what must be durable (`persisted`) is taken out for the
//! coordinator's log; `restore` reads it back after a restart, where records acquired before
//! are available again (their locks did not survive) with the deliveries counted so far.

use std::collections::VecDeque;
use std::ops::Range;

/// A share group's member, as the group numbers them (the records carry no member ids).
pub type MemberKey = u32;

/// Kafka's share settings for one share-partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareLimits {
    /// `share.partition.max.record.locks`: records in flight at most.
    pub max_in_flight: u32,
    /// `share.delivery.count.limit`: deliveries before a released record is archived.
    pub delivery_limit: u16,
    /// `share.record.lock.duration.ms`: how long an acquired record stays with its member.
    pub lock_duration_ms: i64,
    /// The group has a dead-letter topic (`errors.deadletterqueue.topic.name`): records it
    /// gives up on go there before they are archived.
    pub dead_letters: bool,
}

impl Default for ShareLimits {
    /// Kafka 4.2's defaults: 2,000 records in flight, 5 deliveries, 30 s locks.
    fn default() -> Self {
        ShareLimits {
            max_in_flight: 2_000,
            delivery_limit: 5,
            lock_duration_ms: 30_000,
            dead_letters: false,
        }
    }
}

/// Where one in-flight record stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordState {
    Available,
    /// Handed to `member`, whose lock runs out at `until_ms`.
    Acquired {
        member: MemberKey,
        until_ms: i64,
    },
    Acknowledged,
    /// Given up on, to be written to the group's dead-letter topic first; `writing` once
    /// handed to the writer (`take_dead_letters`). Never delivered again.
    DeadLettering {
        cause: DeadLetterCause,
        writing: bool,
    },
    /// Rejected, or released at the delivery limit: never delivered again.
    Archived,
}

/// Why a record goes to its group's dead-letter topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadLetterCause {
    Rejected,
    DeliveryLimit,
}

impl DeadLetterCause {
    /// Kafka's `__dlq.errors.message` for it.
    pub fn message(self) -> &'static str {
        match self {
            DeadLetterCause::Rejected => "Offset rejected by client.",
            DeadLetterCause::DeliveryLimit => "Offset delivery count exceeded the threshold.",
        }
    }
}

/// A run of records handed to the dead-letter writer: one cause and delivery count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeadLetterRun {
    pub first_offset: i64,
    pub last_offset: i64,
    pub deliveries: u16,
    pub cause: DeadLetterCause,
}

/// What a member answers for one record it holds (ShareAcknowledge's types 1, 2, 3, and 4
/// from v2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acknowledgement {
    Accept,
    Release,
    Reject,
    /// An offset with nothing to deliver (a gap, a transaction marker, an aborted record):
    /// archived, never dead-lettered.
    Skip,
    /// KIP-1222: the member keeps the record, its lock running a whole lock duration again
    /// from `now_ms` (no new delivery is counted).
    Renew {
        now_ms: i64,
    },
}

/// Why an acknowledgement was refused: the record is not held by that member now (never
/// acquired, acquired by another, its lock ran out, or already acknowledged). Kafka answers
/// INVALID_RECORD_STATE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotHeld {
    pub offset: i64,
}

/// One record handed out by `acquire`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Acquired {
    pub offset: i64,
    /// This delivery's number, from 1.
    pub deliveries: u16,
}

/// What one record in flight occupies (a lock's memory, before the deque's spare room).
pub const IN_FLIGHT_BYTES: usize = std::mem::size_of::<InFlight>();

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct InFlight {
    state: RecordState,
    deliveries: u16,
}

/// A run of records persisted together (Kafka's share-group state batch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateBatch {
    pub first_offset: i64,
    pub last_offset: i64,
    pub state: PersistedState,
    pub deliveries: u16,
}

/// The states that survive a restart (a lock does not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersistedState {
    Available,
    Acknowledged,
    /// Waiting to be written to the dead-letter topic (Kafka's ARCHIVING).
    DeadLettering,
    Archived,
}

/// What the coordinator's log keeps of a share-partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareState {
    pub start_offset: i64,
    /// The in-flight records from `start_offset`, in order, without gaps.
    pub batches: Vec<StateBatch>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharePartition {
    /// SPSO: every record below it is done.
    start: i64,
    /// The records `start..start + records.len()` (SPEO is the end of that range).
    records: VecDeque<InFlight>,
    limits: ShareLimits,
}

impl SharePartition {
    /// A share-partition that starts at `start_offset` with nothing in flight.
    pub fn new(start_offset: i64, limits: ShareLimits) -> SharePartition {
        SharePartition {
            start: start_offset,
            records: VecDeque::new(),
            limits,
        }
    }

    pub fn start_offset(&self) -> i64 {
        self.start
    }

    /// SPEO: the first record never acquired.
    pub fn end_offset(&self) -> i64 {
        self.start + self.records.len() as i64
    }

    /// The state of the record at `offset`, if it is in flight.
    pub fn state(&self, offset: i64) -> Option<RecordState> {
        self.at(offset).map(|r| r.state)
    }

    /// Hands `member` up to `max_records` records of `window` under a lock until `now_ms`
    /// plus the lock duration: available ones in flight first, in offset order, then records
    /// never acquired, while fewer than the in-flight limit are in flight. The window's end is
    /// at most the high watermark (or the last stable offset for read_committed) and the end
    /// of the records read for the member, so nothing is handed out that it was not sent.
    pub fn acquire(
        &mut self,
        member: MemberKey,
        window: Range<i64>,
        max_records: usize,
        now_ms: i64,
    ) -> Vec<Acquired> {
        let until_ms = now_ms.saturating_add(self.limits.lock_duration_ms);
        let held = RecordState::Acquired { member, until_ms };
        let mut acquired = Vec::new();
        let first = usize::try_from(window.start.saturating_sub(self.start)).unwrap_or(0);
        for (index, record) in self.records.iter_mut().enumerate().skip(first) {
            let offset = self.start + index as i64;
            if acquired.len() == max_records || offset >= window.end {
                return acquired;
            }
            if record.state == RecordState::Available {
                record.state = held;
                record.deliveries = record.deliveries.saturating_add(1);
                acquired.push(Acquired {
                    offset,
                    deliveries: record.deliveries,
                });
            }
        }
        // New records only continue the in-flight ones: a window that starts past the end
        // (records not read for this member) hands none out.
        while acquired.len() < max_records
            && (window.start..window.end).contains(&self.end_offset())
            && self.records.len() < self.limits.max_in_flight as usize
        {
            acquired.push(Acquired {
                offset: self.end_offset(),
                deliveries: 1,
            });
            self.records.push_back(InFlight {
                state: held,
                deliveries: 1,
            });
        }
        acquired
    }

    /// The first offset a fetch for this share-partition should read from: its first
    /// available record, else its end while there is room for more in flight; None when it
    /// can hand out nothing until a record is acknowledged or released.
    pub fn next_to_read(&self) -> Option<i64> {
        let available = self
            .records
            .iter()
            .position(|r| r.state == RecordState::Available);
        match available {
            Some(index) => Some(self.start + index as i64),
            None if self.records.len() < self.limits.max_in_flight as usize => {
                Some(self.end_offset())
            }
            None => None,
        }
    }

    /// Whether `member` holds the record at `offset` now.
    pub fn holds(&self, member: MemberKey, offset: i64) -> bool {
        matches!(
            self.at(offset).map(|r| r.state),
            Some(RecordState::Acquired { member: holder, .. }) if holder == member
        )
    }

    /// The group's share settings as they are now (an altered group config applies to the
    /// next acquisition; locks already held keep their deadline).
    pub fn set_limits(&mut self, limits: ShareLimits) {
        let unset = self.limits.dead_letters && !limits.dead_letters;
        self.limits = limits;
        if unset {
            // The group's dead-letter topic was unset: what waited for it is archived.
            for record in self.records.iter_mut() {
                if let RecordState::DeadLettering { writing: false, .. } = record.state {
                    record.state = RecordState::Archived;
                }
            }
            self.advance();
        }
    }

    /// How many records are in flight (for the memory charged per lock).
    pub fn in_flight(&self) -> usize {
        self.records.len()
    }

    /// `member`'s answer for the record at `offset`, which it must hold now.
    pub fn acknowledge(
        &mut self,
        member: MemberKey,
        offset: i64,
        acknowledgement: Acknowledgement,
    ) -> Result<(), NotHeld> {
        let limits = self.limits;
        let record = self.at_mut(offset).ok_or(NotHeld { offset })?;
        match record.state {
            RecordState::Acquired { member: holder, .. } if holder == member => {}
            _ => return Err(NotHeld { offset }),
        }
        record.state = match acknowledgement {
            Acknowledgement::Accept => RecordState::Acknowledged,
            Acknowledgement::Reject => given_up(DeadLetterCause::Rejected, limits),
            Acknowledgement::Skip => RecordState::Archived,
            Acknowledgement::Release => released(record.deliveries, limits),
            Acknowledgement::Renew { now_ms } => RecordState::Acquired {
                member,
                until_ms: now_ms.saturating_add(limits.lock_duration_ms),
            },
        };
        self.advance();
        Ok(())
    }

    /// Releases every record whose lock ran out by `now_ms`; how many there were.
    pub fn expire_locks(&mut self, now_ms: i64) -> usize {
        self.release_where(
            |state| matches!(state, RecordState::Acquired { until_ms, .. } if until_ms <= now_ms),
        )
    }

    /// Releases every record `member` holds (it left the group or was fenced); how many.
    pub fn member_gone(&mut self, member: MemberKey) -> usize {
        self.release_where(|state| matches!(state, RecordState::Acquired { member: holder, .. } if holder == member))
    }

    /// The dead-lettering records not yet handed to the writer, as runs of one cause and
    /// delivery count; they are the writer's from now (`dead_lettered` ends them).
    pub fn take_dead_letters(&mut self) -> Vec<DeadLetterRun> {
        let mut runs: Vec<DeadLetterRun> = Vec::new();
        for (index, record) in self.records.iter_mut().enumerate() {
            let RecordState::DeadLettering {
                cause,
                writing: false,
            } = record.state
            else {
                continue;
            };
            record.state = RecordState::DeadLettering {
                cause,
                writing: true,
            };
            let offset = self.start + index as i64;
            match runs.last_mut() {
                Some(run)
                    if run.last_offset + 1 == offset
                        && run.cause == cause
                        && run.deliveries == record.deliveries =>
                {
                    run.last_offset = offset
                }
                _ => runs.push(DeadLetterRun {
                    first_offset: offset,
                    last_offset: offset,
                    deliveries: record.deliveries,
                    cause,
                }),
            }
        }
        runs
    }

    /// The records of `first..=last` still dead-lettering are archived: the writer is done
    /// with them (written, or given up on as Kafka gives up). Whether any was.
    pub fn dead_lettered(&mut self, first: i64, last: i64) -> bool {
        let mut any = false;
        for offset in first.max(self.start)..=last.min(self.end_offset() - 1) {
            if let Some(record) = self.at_mut(offset) {
                if matches!(record.state, RecordState::DeadLettering { .. }) {
                    record.state = RecordState::Archived;
                    any = true;
                }
            }
        }
        self.advance();
        any
    }

    /// The earliest lock deadline, for the timer that expires locks.
    pub fn next_lock_deadline(&self) -> Option<i64> {
        self.records
            .iter()
            .filter_map(|r| match r.state {
                RecordState::Acquired { until_ms, .. } => Some(until_ms),
                _ => None,
            })
            .min()
    }

    /// What the log must keep: the start offset and the in-flight records as runs of one
    /// state and delivery count. An acquired record is kept as available: its lock does not
    /// survive a restart, its deliveries do.
    pub fn persisted(&self) -> ShareState {
        let mut batches: Vec<StateBatch> = Vec::new();
        for (index, record) in self.records.iter().enumerate() {
            let offset = self.start + index as i64;
            let state = match record.state {
                RecordState::Available | RecordState::Acquired { .. } => PersistedState::Available,
                RecordState::Acknowledged => PersistedState::Acknowledged,
                RecordState::DeadLettering { .. } => PersistedState::DeadLettering,
                RecordState::Archived => PersistedState::Archived,
            };
            match batches.last_mut() {
                Some(last) if last.state == state && last.deliveries == record.deliveries => {
                    last.last_offset = offset;
                }
                _ => batches.push(StateBatch {
                    first_offset: offset,
                    last_offset: offset,
                    state,
                    deliveries: record.deliveries,
                }),
            }
        }
        ShareState {
            start_offset: self.start,
            batches,
        }
    }

    /// A share-partition as `state` left it. Batches that do not continue from the start
    /// without a gap, or run backwards, end what is read (the records after them are offered
    /// again, which loses nothing); a record at the delivery limit is archived (or
    /// dead-lettered), as its release would have done; a dead-lettering one waits for the
    /// writer again, its cause the delivery limit where it reached it (the log keeps no
    /// cause); and no more than the in-flight limit is read.
    pub fn restore(state: &ShareState, limits: ShareLimits) -> SharePartition {
        let mut partition = SharePartition::new(state.start_offset, limits);
        for batch in &state.batches {
            if batch.first_offset != partition.end_offset()
                || batch.last_offset < batch.first_offset
            {
                break;
            }
            let count = batch.last_offset - batch.first_offset + 1;
            let room = limits.max_in_flight as i64 - partition.records.len() as i64;
            let record = InFlight {
                state: match batch.state {
                    PersistedState::Available => released(batch.deliveries, limits),
                    PersistedState::Acknowledged => RecordState::Acknowledged,
                    PersistedState::DeadLettering if batch.deliveries >= limits.delivery_limit => {
                        given_up(DeadLetterCause::DeliveryLimit, limits)
                    }
                    PersistedState::DeadLettering => given_up(DeadLetterCause::Rejected, limits),
                    PersistedState::Archived => RecordState::Archived,
                },
                deliveries: batch.deliveries,
            };
            for _ in 0..count.min(room).max(0) {
                partition.records.push_back(record);
            }
        }
        partition.advance();
        partition
    }

    fn release_where(&mut self, held: impl Fn(RecordState) -> bool) -> usize {
        let limits = self.limits;
        let mut count = 0;
        for record in self.records.iter_mut().filter(|r| held(r.state)) {
            record.state = released(record.deliveries, limits);
            count += 1;
        }
        self.advance();
        count
    }

    /// Moves the start past every acknowledged or archived record at the front.
    fn advance(&mut self) {
        while let Some(front) = self.records.front() {
            if !matches!(
                front.state,
                RecordState::Acknowledged | RecordState::Archived
            ) {
                break;
            }
            self.records.pop_front();
            self.start += 1;
        }
    }

    fn at(&self, offset: i64) -> Option<&InFlight> {
        let index = usize::try_from(offset.checked_sub(self.start)?).ok()?;
        self.records.get(index)
    }

    fn at_mut(&mut self, offset: i64) -> Option<&mut InFlight> {
        let index = usize::try_from(offset.checked_sub(self.start)?).ok()?;
        self.records.get_mut(index)
    }
}

/// A released record: offered again, or given up on once delivered the limit's times.
fn released(deliveries: u16, limits: ShareLimits) -> RecordState {
    match deliveries >= limits.delivery_limit {
        true => given_up(DeadLetterCause::DeliveryLimit, limits),
        false => RecordState::Available,
    }
}

/// A record never delivered again: archived, or first dead-lettered where the group has a
/// dead-letter topic.
fn given_up(cause: DeadLetterCause, limits: ShareLimits) -> RecordState {
    match limits.dead_letters {
        true => RecordState::DeadLettering {
            cause,
            writing: false,
        },
        false => RecordState::Archived,
    }
}
