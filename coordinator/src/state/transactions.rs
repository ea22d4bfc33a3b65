//! Transactions (KIP-1164 keeps their state in the diskless coordinator): each transactional
//! id's producer, epoch and open transaction, and per partition the transactions still open
//! (which hold its last stable offset back) and the aborted ones read_committed consumers
//! skip. Every operation validates here and answers with the records describing its
//! outcome; nothing here mutates but the `apply_*` functions.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::groups::{GROUP_ID_MAX_BYTES, OFFSET_METADATA_MAX_BYTES};
use super::CoordinatorState;
use crate::messages::{AbortedTransaction, OffsetCommitEntry, TopicPartition};
use crate::records::{BatchKind, CommittedOffset, Record, Transaction, TransactionStatus};
use crate::ErrorKind;

/// Kafka's `transaction.max.timeout.ms` default: longer timeouts are refused.
pub const TRANSACTION_TIMEOUT_MAX_MS: i32 = 900_000;
/// Bounds on what one transactional id may hold, so no client grows the state without limit.
pub const TRANSACTION_PARTITIONS_MAX: usize = 10_000;
pub const TRANSACTION_OFFSETS_MAX: usize = 10_000;
pub const TRANSACTIONAL_IDS_MAX: usize = 100_000;
pub const TRANSACTIONAL_ID_MAX_BYTES: usize = 1024;

/// Markers still to be written for a transaction that is ending, then `CompleteTransaction`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionEnding {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub commit: bool,
    pub partitions: Vec<TopicPartition>,
}

/// What InitProducerId with a transactional id comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransactionalInit {
    Ready {
        producer_id: i64,
        producer_epoch: i16,
    },
    /// An earlier transaction must end first (its markers written), then ask again.
    MustEnd(TransactionEnding),
}

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

impl CoordinatorState {
    pub(super) fn apply_transaction(&mut self, t: &Transaction) {
        if let Some(old) = self.transactions.get(&t.transactional_id) {
            if old.producer_id != t.producer_id {
                self.transactional_producers.remove(&old.producer_id);
            }
        }
        self.transactional_producers
            .insert(t.producer_id, t.transactional_id.clone());
        self.transactions
            .insert(t.transactional_id.clone(), t.clone());
    }

    pub(super) fn forget_transaction(&mut self, transactional_id: &str) {
        if let Some(t) = self.transactions.remove(transactional_id) {
            self.transactional_producers.remove(&t.producer_id);
        }
    }

    pub fn transaction(&self, transactional_id: &str) -> Option<&Transaction> {
        self.transactions.get(transactional_id)
    }

    pub fn transactions(&self) -> impl Iterator<Item = &Transaction> {
        self.transactions.values()
    }

    /// The partitions of `group` whose offsets wait in a transaction not yet complete.
    pub fn pending_transaction_offsets(&self, group: &str) -> BTreeSet<TopicPartition> {
        self.transactions
            .values()
            .flat_map(|t| t.pending_offsets.iter())
            .filter(|(g, _)| g == group)
            .map(|(_, o)| TopicPartition {
                topic_id: o.topic_id,
                partition: o.partition,
            })
            .collect()
    }

    /// The open transaction a producer's transactional batch must belong to, checked for a
    /// transactional batch to `tp` at `epoch`.
    pub(super) fn check_transactional_batch(
        &self,
        producer_id: i64,
        epoch: i16,
        tp: TopicPartition,
    ) -> Result<(), ErrorKind> {
        let t = self
            .transactional_producers
            .get(&producer_id)
            .and_then(|id| self.transactions.get(id))
            .ok_or(ErrorKind::InvalidProducerIdMapping)?;
        if epoch < t.producer_epoch {
            return Err(ErrorKind::InvalidProducerEpoch);
        }
        if epoch > t.producer_epoch
            || t.status != TransactionStatus::Ongoing
            || !t.partitions.contains(&tp)
        {
            return Err(ErrorKind::InvalidTxnState);
        }
        Ok(())
    }

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

    /// InitProducerId with a transactional id: a new producer at epoch 0, or the id's producer
    /// at the next epoch, which fences every older one. An open transaction is aborted first.
    pub fn init_transactional(
        &self,
        transactional_id: &str,
        timeout_ms: i32,
        expected: Option<(i64, i16)>,
        now_ms: i64,
    ) -> Result<(TransactionalInit, Vec<Record>), ErrorKind> {
        if transactional_id.is_empty() || transactional_id.len() > TRANSACTIONAL_ID_MAX_BYTES {
            return Err(ErrorKind::InvalidRequest);
        }
        if timeout_ms <= 0 || timeout_ms > TRANSACTION_TIMEOUT_MAX_MS {
            return Err(ErrorKind::InvalidTransactionTimeout);
        }
        let Some(current) = self.transactions.get(transactional_id) else {
            if self.transactions.len() >= TRANSACTIONAL_IDS_MAX {
                return Err(ErrorKind::NotAvailable);
            }
            let allocated = self.allocate_producer_id();
            let Record::ProducerIdAllocated { producer_id } = allocated else {
                unreachable!("allocate_producer_id returns ProducerIdAllocated")
            };
            let t = fresh_transaction(transactional_id, producer_id, 0, timeout_ms, now_ms);
            let ready = TransactionalInit::Ready {
                producer_id,
                producer_epoch: 0,
            };
            return Ok((ready, vec![allocated, Record::TransactionChanged(t)]));
        };
        // KIP-360: a producer that names its id and epoch must still hold them.
        if let Some((producer_id, epoch)) = expected {
            if producer_id != current.producer_id || epoch != current.producer_epoch {
                return Err(ErrorKind::ProducerFenced);
            }
        }
        match current.status {
            TransactionStatus::Ongoing => {
                let (t, ending) = self.begin_end(current, false, true, now_ms);
                Ok((TransactionalInit::MustEnd(ending), vec![t]))
            }
            TransactionStatus::PrepareCommit | TransactionStatus::PrepareAbort => {
                Ok((TransactionalInit::MustEnd(ending_of(current)), Vec::new()))
            }
            _ => {
                let mut records = Vec::new();
                let (producer_id, producer_epoch) = if current.producer_epoch >= i16::MAX - 1 {
                    let allocated = self.allocate_producer_id();
                    let Record::ProducerIdAllocated { producer_id } = allocated else {
                        unreachable!("allocate_producer_id returns ProducerIdAllocated")
                    };
                    records.push(allocated);
                    (producer_id, 0)
                } else {
                    (current.producer_id, current.producer_epoch + 1)
                };
                let t = fresh_transaction(
                    transactional_id,
                    producer_id,
                    producer_epoch,
                    timeout_ms,
                    now_ms,
                );
                records.push(Record::TransactionChanged(t));
                let ready = TransactionalInit::Ready {
                    producer_id,
                    producer_epoch,
                };
                Ok((ready, records))
            }
        }
    }

    /// AddPartitionsToTxn (and AddOffsetsToTxn with no partitions): the transaction is open
    /// from now on and will write markers to these partitions.
    pub fn add_to_transaction(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[TopicPartition],
        now_ms: i64,
    ) -> Result<Option<Record>, ErrorKind> {
        let current = self.open_for_change(transactional_id, producer_id, epoch)?;
        if partitions.iter().any(|tp| self.partition(*tp).is_none()) {
            return Err(ErrorKind::UnknownTopicOrPartition);
        }
        let mut t = current.clone();
        if t.status != TransactionStatus::Ongoing {
            t.status = TransactionStatus::Ongoing;
            t.started_ms = now_ms;
            t.partitions.clear();
            t.pending_offsets.clear();
        }
        t.partitions.extend(partitions.iter().copied());
        if t.partitions.len() > TRANSACTION_PARTITIONS_MAX {
            return Err(ErrorKind::InvalidRequest);
        }
        if t == *current {
            return Ok(None);
        }
        t.updated_ms = now_ms;
        Ok(Some(Record::TransactionChanged(t)))
    }

    /// TxnOffsetCommit: offsets that reach the group when the transaction commits.
    pub fn add_transaction_offsets(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        group: &str,
        entries: &[OffsetCommitEntry],
        now_ms: i64,
    ) -> Result<(Vec<Option<ErrorKind>>, Option<Record>), ErrorKind> {
        let current = self.open_for_change(transactional_id, producer_id, epoch)?;
        if current.status != TransactionStatus::Ongoing {
            return Err(ErrorKind::InvalidTxnState);
        }
        if group.is_empty() || group.len() > GROUP_ID_MAX_BYTES {
            return Err(ErrorKind::InvalidGroupId);
        }
        let mut t = current.clone();
        let mut results = Vec::with_capacity(entries.len());
        for e in entries {
            if self.partition(e.partition).is_none() {
                results.push(Some(ErrorKind::UnknownTopicOrPartition));
                continue;
            }
            if e.metadata.len() > OFFSET_METADATA_MAX_BYTES {
                results.push(Some(ErrorKind::OffsetMetadataTooLarge));
                continue;
            }
            let offset = CommittedOffset {
                topic_id: e.partition.topic_id,
                partition: e.partition.partition,
                offset: e.offset,
                leader_epoch: e.leader_epoch,
                metadata: e.metadata.clone(),
            };
            t.pending_offsets.retain(|(g, o)| {
                !(g == group && o.topic_id == offset.topic_id && o.partition == offset.partition)
            });
            t.pending_offsets.push((group.to_string(), offset));
            results.push(None);
        }
        if t.pending_offsets.len() > TRANSACTION_OFFSETS_MAX {
            return Err(ErrorKind::InvalidRequest);
        }
        t.updated_ms = now_ms;
        let record = (t != *current).then_some(Record::TransactionChanged(t));
        Ok((results, record))
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
    ) -> Result<(Option<TransactionEnding>, Option<Record>), ErrorKind> {
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
    pub fn complete_transaction(&self, ending: &TransactionEnding, now_ms: i64) -> Vec<Record> {
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
                records.push(Record::OffsetsCommitted {
                    group: group.to_string(),
                    at_ms: now_ms,
                    offsets,
                });
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
        records.push(Record::TransactionChanged(t));
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
    ) -> (Vec<TransactionEnding>, Vec<Record>) {
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
            records.push(Record::TransactionsExpired {
                transactional_ids: idle,
            });
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
    fn begin_end(
        &self,
        current: &Transaction,
        commit: bool,
        fence: bool,
        now_ms: i64,
    ) -> (Record, TransactionEnding) {
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
        (Record::TransactionChanged(t), ending)
    }

    /// The transaction of this producer at this epoch, or why not.
    fn held(&self, id: &str, producer_id: i64, epoch: i16) -> Result<&Transaction, ErrorKind> {
        let t = self
            .transactions
            .get(id)
            .ok_or(ErrorKind::InvalidProducerIdMapping)?;
        if t.producer_id != producer_id {
            return Err(ErrorKind::InvalidProducerIdMapping);
        }
        if epoch != t.producer_epoch {
            return Err(ErrorKind::ProducerFenced);
        }
        Ok(t)
    }

    /// Held, and not ending: AddPartitions/AddOffsets/TxnOffsetCommit may change it.
    fn open_for_change(
        &self,
        id: &str,
        producer_id: i64,
        epoch: i16,
    ) -> Result<&Transaction, ErrorKind> {
        let t = self.held(id, producer_id, epoch)?;
        match t.status {
            TransactionStatus::PrepareCommit | TransactionStatus::PrepareAbort => {
                Err(ErrorKind::ConcurrentTransactions)
            }
            _ => Ok(t),
        }
    }
}

fn fresh_transaction(
    id: &str,
    producer_id: i64,
    producer_epoch: i16,
    timeout_ms: i32,
    now_ms: i64,
) -> Transaction {
    Transaction {
        transactional_id: id.to_string(),
        producer_id,
        producer_epoch,
        timeout_ms,
        status: TransactionStatus::Empty,
        started_ms: -1,
        updated_ms: now_ms,
        partitions: Default::default(),
        pending_offsets: Vec::new(),
    }
}

fn ending_of(t: &Transaction) -> TransactionEnding {
    TransactionEnding {
        transactional_id: t.transactional_id.clone(),
        producer_id: t.producer_id,
        producer_epoch: t.producer_epoch,
        commit: t.status == TransactionStatus::PrepareCommit,
        partitions: t.partitions.iter().copied().collect(),
    }
}
