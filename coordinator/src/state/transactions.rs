//! Transactions (KIP-1164 keeps their state in the diskless coordinator): each transactional
//! id's producer, epoch and open transaction, and how one begins and grows (InitProducerId,
//! AddPartitionsToTxn, TxnOffsetCommit). How one ends is in `transaction_endings`, what each
//! partition keeps of them in `partition_transactions`. Every operation validates here and
//! answers with the records describing its outcome; only `apply_*` and `forget_*` mutate.

use shoal_protocol::records::{
    ShoalProducerIdAllocatedRecord, ShoalTransactionRecord, ShoalTransactionsExpiredRecord,
};

use std::collections::{BTreeMap, BTreeSet};

use super::emit;
use super::groups::{GROUP_ID_MAX_BYTES, OFFSET_METADATA_MAX_BYTES};
use super::CoordinatorState;
use crate::entry::Entry;
use crate::messages::{CommitBatch, OffsetCommitEntry, TopicPartition};
use crate::records::{CommittedOffset, Transaction, TransactionStatus};
use crate::ErrorKind;

use super::apply::transaction_of;
use super::transaction_endings::ending_of;
pub use super::transaction_endings::{TransactionEnd, TransactionEnding, ENDING_TAKEOVER_MS};

/// Kafka's `transaction.max.timeout.ms` default: longer timeouts are refused.
pub const TRANSACTION_TIMEOUT_MAX_MS: i32 = 900_000;
/// Bounds on what one transactional id may hold, so no client grows the state without limit.
pub const TRANSACTION_PARTITIONS_MAX: usize = 10_000;
pub const TRANSACTION_OFFSETS_MAX: usize = 10_000;
pub const TRANSACTIONAL_IDS_MAX: usize = 100_000;
pub const TRANSACTIONAL_ID_MAX_BYTES: usize = 1024;

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

    /// A transactional batch must belong to its producer's open transaction at its epoch in
    /// its partition. One that joins (Produce v12+, transactions V2) adds its partition to
    /// that transaction instead, beginning one if none is open: KIP-890's implicit add, done
    /// in the commit that appends the batch, so it costs no round of its own. The
    /// transactions this commit changed so far are in `joined`, by transactional id.
    pub(super) fn check_transactional_batch(
        &self,
        batch: &CommitBatch,
        joined: &mut BTreeMap<String, Transaction>,
        now_ms: i64,
    ) -> Result<(), ErrorKind> {
        let id = self
            .transactional_producers
            .get(&batch.producer_id)
            .ok_or(ErrorKind::InvalidProducerIdMapping)?;
        let t = joined
            .get(id)
            .or_else(|| self.transactions.get(id))
            .ok_or(ErrorKind::InvalidProducerIdMapping)?;
        // An older epoch is a zombie, or a late write of a transaction V2 ended since.
        if batch.producer_epoch < t.producer_epoch {
            return Err(ErrorKind::InvalidProducerEpoch);
        }
        let belongs =
            t.status == TransactionStatus::Ongoing && t.partitions.contains(&batch.partition);
        if batch.producer_epoch == t.producer_epoch && belongs {
            return Ok(());
        }
        if batch.producer_epoch > t.producer_epoch || !batch.joins_transaction {
            return Err(ErrorKind::InvalidTxnState);
        }
        let mut t = begun_or_open(t, now_ms)?;
        t.partitions.insert(batch.partition);
        if t.partitions.len() > TRANSACTION_PARTITIONS_MAX {
            return Err(ErrorKind::InvalidRequest);
        }
        t.updated_ms = now_ms;
        joined.insert(id.clone(), t);
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
    ) -> Result<(TransactionalInit, Vec<Entry>), ErrorKind> {
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
            let (producer_id, allocated) = self.allocate_producer_id(now_ms);
            let t = fresh_transaction(transactional_id, producer_id, 0, timeout_ms, now_ms);
            let ready = TransactionalInit::Ready {
                producer_id,
                producer_epoch: 0,
            };
            let changed = Entry::of(now_ms, emit::transaction_changed(&t));
            return Ok((ready, vec![allocated, changed]));
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
                    let (producer_id, allocated) = self.allocate_producer_id(now_ms);
                    records.push(allocated);
                    (producer_id, 0)
                } else {
                    (current.producer_id, current.producer_epoch + 1)
                };
                // The transaction model proves a transactional id's (producer, epoch) only
                // moves on: an older instance is fenced by it.
                debug_assert!(
                    producer_id != current.producer_id || producer_epoch > current.producer_epoch,
                    "{transactional_id}: epoch {producer_epoch} after {}",
                    current.producer_epoch
                );
                let t = fresh_transaction(
                    transactional_id,
                    producer_id,
                    producer_epoch,
                    timeout_ms,
                    now_ms,
                );
                records.push(Entry::of(now_ms, emit::transaction_changed(&t)));
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
    ) -> Result<Option<Entry>, ErrorKind> {
        let current = self.open_for_change(transactional_id, producer_id, epoch)?;
        if partitions.iter().any(|tp| self.partition(*tp).is_none()) {
            return Err(ErrorKind::UnknownTopicOrPartition);
        }
        let mut t = begun_or_open(current, now_ms)?;
        t.partitions.extend(partitions.iter().copied());
        if t.partitions.len() > TRANSACTION_PARTITIONS_MAX {
            return Err(ErrorKind::InvalidRequest);
        }
        if t == *current {
            return Ok(None);
        }
        t.updated_ms = now_ms;
        Ok(Some(Entry::of(now_ms, emit::transaction_changed(&t))))
    }

    /// TxnOffsetCommit: offsets that reach the group when the transaction commits. From v5
    /// (transactions V2) the commit `joins` the transaction, beginning one if none is open;
    /// before, AddOffsetsToTxn must have opened it.
    #[allow(clippy::too_many_arguments)]
    pub fn add_transaction_offsets(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        group: &str,
        entries: &[OffsetCommitEntry],
        joins: bool,
        now_ms: i64,
    ) -> Result<(Vec<Option<ErrorKind>>, Option<Entry>), ErrorKind> {
        let current = self.open_for_change(transactional_id, producer_id, epoch)?;
        if current.status != TransactionStatus::Ongoing && !joins {
            return Err(ErrorKind::InvalidTxnState);
        }
        if group.is_empty() || group.len() > GROUP_ID_MAX_BYTES {
            return Err(ErrorKind::InvalidGroupId);
        }
        let mut t = begun_or_open(current, now_ms)?;
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
        let entry = (t != *current).then(|| Entry::of(now_ms, emit::transaction_changed(&t)));
        Ok((results, entry))
    }

    /// The transaction of this producer at this epoch, or why not.
    pub(super) fn held(
        &self,
        id: &str,
        producer_id: i64,
        epoch: i16,
    ) -> Result<&Transaction, ErrorKind> {
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

/// The transaction `t` as it takes a partition or offsets: open already, or begun now.
fn begun_or_open(t: &Transaction, now_ms: i64) -> Result<Transaction, ErrorKind> {
    let mut t = t.clone();
    match t.status {
        TransactionStatus::Ongoing => {}
        TransactionStatus::PrepareCommit | TransactionStatus::PrepareAbort => {
            return Err(ErrorKind::ConcurrentTransactions)
        }
        TransactionStatus::Empty
        | TransactionStatus::CompleteCommit
        | TransactionStatus::CompleteAbort => {
            t.status = TransactionStatus::Ongoing;
            t.started_ms = now_ms;
            t.partitions.clear();
            t.pending_offsets.clear();
            t.ended_as = None;
        }
    }
    Ok(t)
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
        ended_as: None,
        next_producer_id: None,
    }
}

impl CoordinatorState {
    pub(super) fn apply_producer_id(&mut self, r: &ShoalProducerIdAllocatedRecord) {
        self.next_producer_id = self.next_producer_id.max(r.producer_id.saturating_add(1));
    }

    pub(super) fn apply_transaction_record(&mut self, r: &ShoalTransactionRecord) {
        if let Some(t) = transaction_of(r) {
            self.apply_transaction(&t);
        }
    }

    pub(super) fn apply_transactions_expired(&mut self, r: &ShoalTransactionsExpiredRecord) {
        for id in &r.transactional_ids {
            self.forget_transaction(id);
        }
    }
}
