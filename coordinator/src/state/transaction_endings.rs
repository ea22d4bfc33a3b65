//! How a transaction ends: EndTxn (or a timeout, or a fencing InitProducerId) prepares it,
//! its markers are written to each of its partitions, then it completes; a marker is taken
//! only while its transaction is ending that way.

use std::collections::BTreeMap;

use super::CoordinatorState;
use crate::messages::TopicPartition;
use shoal_protocol::records::ShoalTransactionsExpiredRecord;

use super::emit;
use crate::entry::Entry;
use crate::records::{CommittedOffset, Transaction, TransactionStatus};
use crate::ErrorKind;

/// Markers still to be written for a transaction that is ending, then `CompleteTransaction`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionEnding {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub commit: bool,
    pub partitions: Vec<TopicPartition>,
}

impl CoordinatorState {
    /// A marker is taken only while its transaction is ending that way at that epoch, so a
    /// late or repeated one cannot end a later transaction of the same producer.
    pub(super) fn check_marker(
        &self,
        producer_id: i64,
        epoch: i16,
        commit: bool,
    ) -> Result<(), ErrorKind> {
        let t = self
            .transactional_producers
            .get(&producer_id)
            .and_then(|id| self.transactions.get(id))
            .ok_or(ErrorKind::InvalidTxnState)?;
        let ending = if commit {
            TransactionStatus::PrepareCommit
        } else {
            TransactionStatus::PrepareAbort
        };
        if t.status != ending || t.producer_epoch != epoch {
            return Err(ErrorKind::InvalidTxnState);
        }
        Ok(())
    }

    /// EndTxn: the transaction is prepared to commit or abort; its markers are to be written
    /// (None: a retry of an end already complete).
    pub fn end_transaction(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        now_ms: i64,
    ) -> Result<(Option<TransactionEnding>, Option<Entry>), ErrorKind> {
        let current = self.held(transactional_id, producer_id, epoch)?;
        use TransactionStatus::*;
        match (current.status, commit) {
            (Ongoing, _) => {
                let (record, ending) = self.begin_end(current, commit, false, now_ms);
                Ok((Some(ending), Some(record)))
            }
            (PrepareCommit, true) | (PrepareAbort, false) => Ok((Some(ending_of(current)), None)),
            (CompleteCommit, true) | (CompleteAbort, false) => Ok((None, None)),
            _ => Err(ErrorKind::InvalidTxnState),
        }
    }

    /// Every marker of an ending transaction is written: it is complete, and a commit hands
    /// its offsets to their groups.
    pub fn complete_transaction(&self, ending: &TransactionEnding, now_ms: i64) -> Vec<Entry> {
        let Some(current) = self.transactions.get(&ending.transactional_id) else {
            return Vec::new();
        };
        let expected = if ending.commit {
            TransactionStatus::PrepareCommit
        } else {
            TransactionStatus::PrepareAbort
        };
        if current.status != expected
            || current.producer_id != ending.producer_id
            || current.producer_epoch != ending.producer_epoch
        {
            return Vec::new();
        }
        let mut records = Vec::new();
        if ending.commit {
            let mut by_group: BTreeMap<&str, Vec<CommittedOffset>> = BTreeMap::new();
            for (group, offset) in &current.pending_offsets {
                by_group.entry(group).or_default().push(offset.clone());
            }
            for (group, offsets) in by_group {
                records.push(Entry::of(now_ms, emit::offsets_committed(group, &offsets)));
            }
        }
        let mut t = current.clone();
        t.status = if ending.commit {
            TransactionStatus::CompleteCommit
        } else {
            TransactionStatus::CompleteAbort
        };
        t.partitions.clear();
        t.pending_offsets.clear();
        t.started_ms = -1;
        t.updated_ms = now_ms;
        records.push(Entry::of(now_ms, emit::transaction_changed(&t)));
        records
    }

    /// Transactions open past their timeout are aborted at the next epoch (fencing their
    /// producer); with those already ending, they are what still needs markers. At most `max`
    /// of those, and at most `max` ids idle past `id_expiration_ms` with nothing open are
    /// forgotten (Kafka's `transactional.id.expiration.ms`).
    pub fn transactions_to_end(
        &self,
        now_ms: i64,
        max: usize,
        id_expiration_ms: i64,
    ) -> (Vec<TransactionEnding>, Vec<Entry>) {
        let mut endings = Vec::new();
        let mut records = Vec::new();
        let idle: Vec<String> = self
            .transactions
            .values()
            .filter(|t| {
                matches!(
                    t.status,
                    TransactionStatus::Empty
                        | TransactionStatus::CompleteCommit
                        | TransactionStatus::CompleteAbort
                ) && now_ms.saturating_sub(t.updated_ms) >= id_expiration_ms
            })
            .take(max)
            .map(|t| t.transactional_id.clone())
            .collect();
        if !idle.is_empty() {
            let expired = ShoalTransactionsExpiredRecord {
                transactional_ids: idle,
            };
            records.push(Entry::of(now_ms, expired));
        }
        for t in self.transactions.values() {
            if endings.len() >= max {
                break;
            }
            match t.status {
                TransactionStatus::PrepareCommit | TransactionStatus::PrepareAbort => {
                    endings.push(ending_of(t))
                }
                TransactionStatus::Ongoing
                    if now_ms.saturating_sub(t.started_ms) >= t.timeout_ms as i64 =>
                {
                    let (record, ending) = self.begin_end(t, false, true, now_ms);
                    records.push(record);
                    endings.push(ending);
                }
                _ => {}
            }
        }
        (endings, records)
    }

    /// Moves an open transaction to Prepare*, at the next epoch when `fence`.
    pub(super) fn begin_end(
        &self,
        current: &Transaction,
        commit: bool,
        fence: bool,
        now_ms: i64,
    ) -> (Entry, TransactionEnding) {
        let mut t = current.clone();
        t.status = if commit {
            TransactionStatus::PrepareCommit
        } else {
            TransactionStatus::PrepareAbort
        };
        if fence && t.producer_epoch < i16::MAX - 1 {
            t.producer_epoch += 1;
        }
        t.updated_ms = now_ms;
        let ending = ending_of(&t);
        (Entry::of(now_ms, emit::transaction_changed(&t)), ending)
    }
}

pub(super) fn ending_of(t: &Transaction) -> TransactionEnding {
    TransactionEnding {
        transactional_id: t.transactional_id.clone(),
        producer_id: t.producer_id,
        producer_epoch: t.producer_epoch,
        commit: t.status == TransactionStatus::PrepareCommit,
        partitions: t.partitions.iter().copied().collect(),
    }
}
