//! Idempotent-producer bookkeeping: the last five batches of each producer in each partition,
//! and the sequence checks CommitFile applies against them.

use std::collections::VecDeque;

use crate::ErrorKind;

/// How many recent batches per (partition, producer) are kept to recognise duplicates; the
/// same as Kafka's limit on in-flight requests of an idempotent producer.
pub const PRODUCER_BATCHES_KEPT: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerBatch {
    pub base_sequence: i32,
    pub last_sequence: i32,
    pub base_offset: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducerState {
    pub epoch: i16,
    /// Oldest first; at most PRODUCER_BATCHES_KEPT.
    pub recent: VecDeque<ProducerBatch>,
    /// When this producer last appended here: idle producers expire, bounding the state.
    pub last_write_ms: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceCheck {
    Accept,
    /// Already committed: answer with the original offset and append nothing.
    Duplicate {
        base_offset: i64,
    },
    Reject(ErrorKind),
}

/// Sequence numbers wrap from i32::MAX to 0.
pub fn next_sequence(sequence: i32) -> i32 {
    if sequence == i32::MAX {
        0
    } else {
        sequence + 1
    }
}

pub fn last_sequence(base_sequence: i32, offset_count: u32) -> i32 {
    let wrapped = (base_sequence as i64 + offset_count as i64 - 1) % (i32::MAX as i64 + 1);
    wrapped as i32
}

impl ProducerState {
    pub fn check(
        state: Option<&ProducerState>,
        epoch: i16,
        base_sequence: i32,
        last_sequence: i32,
    ) -> SequenceCheck {
        match state {
            Some(s) if s.epoch > epoch => SequenceCheck::Reject(ErrorKind::InvalidProducerEpoch),
            Some(s) if s.epoch == epoch && !s.recent.is_empty() => {
                if let Some(b) = s
                    .recent
                    .iter()
                    .find(|b| b.base_sequence == base_sequence && b.last_sequence == last_sequence)
                {
                    return SequenceCheck::Duplicate {
                        base_offset: b.base_offset,
                    };
                }
                let last = s.recent.back().expect("not empty").last_sequence;
                if base_sequence == next_sequence(last) {
                    SequenceCheck::Accept
                } else {
                    SequenceCheck::Reject(ErrorKind::OutOfOrderSequence)
                }
            }
            _ if base_sequence != 0 => SequenceCheck::Reject(ErrorKind::OutOfOrderSequence),
            _ => SequenceCheck::Accept,
        }
    }

    /// A transaction marker at `epoch`: a newer epoch forgets the old epoch's batches.
    pub fn advance_epoch(&mut self, epoch: i16) {
        if epoch > self.epoch {
            self.epoch = epoch;
            self.recent.clear();
        }
    }

    /// Remembers an accepted batch; a new epoch forgets the old epoch's batches.
    pub fn record(&mut self, epoch: i16, batch: ProducerBatch) {
        if epoch != self.epoch {
            self.epoch = epoch;
            self.recent.clear();
        }
        if self.recent.len() == PRODUCER_BATCHES_KEPT {
            self.recent.pop_front();
        }
        self.recent.push_back(batch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(base: i32, last: i32, offset: i64) -> ProducerBatch {
        ProducerBatch {
            base_sequence: base,
            last_sequence: last,
            base_offset: offset,
        }
    }

    #[test]
    fn sequences_must_start_at_zero_and_follow_on() {
        assert_eq!(ProducerState::check(None, 0, 0, 4), SequenceCheck::Accept);
        assert_eq!(
            ProducerState::check(None, 0, 5, 9),
            SequenceCheck::Reject(ErrorKind::OutOfOrderSequence)
        );
        let mut s = ProducerState::default();
        s.record(0, batch(0, 4, 100));
        assert_eq!(
            ProducerState::check(Some(&s), 0, 5, 9),
            SequenceCheck::Accept
        );
        assert_eq!(
            ProducerState::check(Some(&s), 0, 6, 9),
            SequenceCheck::Reject(ErrorKind::OutOfOrderSequence)
        );
        assert_eq!(
            ProducerState::check(Some(&s), 0, 0, 4),
            SequenceCheck::Duplicate { base_offset: 100 }
        );
    }

    #[test]
    fn epochs_fence_and_reset() {
        let mut s = ProducerState::default();
        s.record(3, batch(0, 0, 1));
        assert_eq!(
            ProducerState::check(Some(&s), 2, 1, 1),
            SequenceCheck::Reject(ErrorKind::InvalidProducerEpoch)
        );
        assert_eq!(
            ProducerState::check(Some(&s), 4, 0, 0),
            SequenceCheck::Accept
        );
        assert_eq!(
            ProducerState::check(Some(&s), 4, 1, 1),
            SequenceCheck::Reject(ErrorKind::OutOfOrderSequence)
        );
    }

    #[test]
    fn only_the_last_five_batches_are_kept_and_sequences_wrap() {
        let mut s = ProducerState::default();
        for i in 0..7 {
            s.record(0, batch(i, i, i as i64));
        }
        assert_eq!(s.recent.len(), PRODUCER_BATCHES_KEPT);
        assert_eq!(
            ProducerState::check(Some(&s), 0, 1, 1),
            SequenceCheck::Reject(ErrorKind::OutOfOrderSequence)
        );
        assert_eq!(last_sequence(i32::MAX - 1, 3), 0);
        assert_eq!(next_sequence(i32::MAX), 0);
    }
}
