//! What a partition keeps of transactions: those still open, which hold its last stable
//! offset back, and the aborted ones read_committed consumers skip (Kafka's aborted
//! transaction index), dropped as the log start offset passes them.

use std::collections::{BTreeMap, VecDeque};

use crate::messages::AbortedTransaction;
use crate::messages::BatchKind;

/// One partition's transactions.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct PartitionTransactions {
    /// Producer id → the first offset of its open transaction here.
    pub(super) open: BTreeMap<i64, i64>,
    /// Oldest first; dropped as the log start offset passes them.
    pub(super) aborted: VecDeque<AbortedTransaction>,
}

impl PartitionTransactions {
    pub(super) fn on_batch(&mut self, kind: BatchKind, producer_id: i64, base: i64, last: i64) {
        match kind {
            BatchKind::Plain => {}
            BatchKind::Transactional => {
                self.open.entry(producer_id).or_insert(base);
            }
            BatchKind::CommitMarker => {
                self.open.remove(&producer_id);
            }
            BatchKind::AbortMarker => {
                if let Some(first_offset) = self.open.remove(&producer_id) {
                    self.aborted.push_back(AbortedTransaction {
                        producer_id,
                        first_offset,
                        last_offset: last,
                    });
                }
            }
        }
    }

    /// The first offset a read_committed consumer may not read yet.
    pub(super) fn last_stable_offset(&self, high_watermark: i64) -> i64 {
        self.open.values().copied().min().unwrap_or(high_watermark)
    }

    /// Aborted transactions with records in `from..to`.
    pub(super) fn aborted_within(&self, from: i64, to: i64) -> Vec<AbortedTransaction> {
        self.aborted
            .iter()
            .filter(|a| a.last_offset >= from && a.first_offset < to)
            .copied()
            .collect()
    }

    /// Every open transaction becomes aborted up to `end` (exclusive); no marker follows.
    pub(super) fn abort_all_open(&mut self, end: i64) {
        for (producer_id, first_offset) in std::mem::take(&mut self.open) {
            self.aborted.push_back(AbortedTransaction {
                producer_id,
                first_offset,
                last_offset: end - 1,
            });
        }
        self.aborted
            .make_contiguous()
            .sort_by_key(|a| a.last_offset);
    }

    pub(super) fn forget_before(&mut self, log_start_offset: i64) {
        while self
            .aborted
            .front()
            .is_some_and(|a| a.last_offset < log_start_offset)
        {
            self.aborted.pop_front();
        }
    }

    pub(super) fn forget_from(&mut self, offset: i64) {
        self.open.retain(|_, first| *first < offset);
        self.aborted.retain(|a| a.last_offset < offset);
    }
}
