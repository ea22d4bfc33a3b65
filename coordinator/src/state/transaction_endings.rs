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

/// Kafka keeps the last epoch, i16::MAX, for the coordinator's own fencing: a producer whose
/// epoch reaches this moves to a new producer id instead of on to the next epoch.
pub(super) const EPOCH_EXHAUSTED_FROM: i16 = i16::MAX - 1;

/// How long an ending is left to whoever prepared it (EndTxn, a fencing InitProducerId, an
/// operator's abort) before `transactions_to_end` hands it to the chore: two writers of one
/// ending's markers at once would each place a marker while it is still preparing, and every
/// marker takes an offset. A writer that failed, or a broker that restarted, leaves its
/// endings to the chore after this.
pub const ENDING_TAKEOVER_MS: i64 = 10_000;

/// What EndTxn comes to: the markers to write (None: none, or written already), and the
/// producer id and epoch the producer holds from now on (EndTxn v5 answers them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionEnd {
    pub ending: Option<TransactionEnding>,
    pub producer_id: i64,
    pub producer_epoch: i16,
}

impl TransactionEnd {
    fn of(t: &Transaction, ending: Option<TransactionEnding>) -> Self {
        let (producer_id, producer_epoch) = match t.next_producer_id {
            Some(next) => (next, 0),
            None => (t.producer_id, t.producer_epoch),
        };
        TransactionEnd {
            ending,
            producer_id,
            producer_epoch,
        }
    }
}

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

    /// EndTxn: the transaction is prepared to commit or abort, its markers to be written.
    /// With `bumps_epoch` (EndTxn v5, transactions V2) the epoch moves on at the end, so no
    /// late write of this transaction can begin the next one; a retry is then known by the
    /// producer id and epoch it ended with. Without, a retry finds the end under way or done
    /// at the same epoch.
    pub fn end_transaction(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        bumps_epoch: bool,
        now_ms: i64,
    ) -> Result<(TransactionEnd, Vec<Entry>), ErrorKind> {
        use TransactionStatus::*;
        let known = self
            .transactions
            .get(transactional_id)
            .ok_or(ErrorKind::InvalidProducerIdMapping)?;
        if bumps_epoch && known.ended_as == Some((producer_id, epoch)) {
            let ending = match (known.status, commit) {
                (PrepareCommit, true) | (PrepareAbort, false) => Some(ending_of(known)),
                (CompleteCommit, true) | (CompleteAbort, false) => None,
                // The producer ended it and went on: this is not its retry.
                _ => return Err(ErrorKind::ProducerFenced),
            };
            return Ok((TransactionEnd::of(known, ending), Vec::new()));
        }
        let current = self.held(transactional_id, producer_id, epoch)?;
        match (current.status, commit) {
            (Ongoing, _) if bumps_epoch => {
                let (t, allocated) = self.bumped_at_end(current, commit, now_ms);
                let changed = Entry::of(now_ms, emit::transaction_changed(&t));
                let records = allocated.into_iter().chain([changed]).collect();
                Ok((TransactionEnd::of(&t, Some(ending_of(&t))), records))
            }
            (Ongoing, _) => {
                let (record, ending) = self.begin_end(current, commit, false, now_ms);
                Ok((TransactionEnd::of(current, Some(ending)), vec![record]))
            }
            (PrepareCommit, true) | (PrepareAbort, false) => Ok((
                TransactionEnd::of(current, Some(ending_of(current))),
                Vec::new(),
            )),
            // Nothing is open (a write refused before it joined): transactions V2 abort it
            // all the same, moving the epoch on, so the producer starts clean.
            (Empty | CompleteCommit | CompleteAbort, false) if bumps_epoch => {
                let (prepared, allocated) = self.bumped_at_end(current, false, now_ms);
                let t = completed(&prepared, now_ms);
                let changed = Entry::of(now_ms, emit::transaction_changed(&t));
                let records = allocated.into_iter().chain([changed]).collect();
                Ok((TransactionEnd::of(&t, None), records))
            }
            (CompleteCommit, true) | (CompleteAbort, false) if !bumps_epoch => {
                Ok((TransactionEnd::of(current, None), Vec::new()))
            }
            _ => Err(ErrorKind::InvalidTxnState),
        }
    }

    /// WriteTxnMarkers' abort, as an operator sends it (`kafka-transactions abort`, Admin
    /// `abortTransaction`) for a transaction that holds a partition's last stable offset back:
    /// the producer's transaction open in `tp` is aborted whole, at the next epoch (fencing
    /// the producer, as a timeout does), so its markers reach all its partitions together
    /// where Kafka would write one marker to this partition alone. One already ending is
    /// returned to be finished; None: nothing of this producer is open in `tp` (the marker's
    /// other partitions, once the first aborted it all).
    pub fn abort_transaction_in(
        &self,
        producer_id: i64,
        epoch: i16,
        tp: TopicPartition,
        now_ms: i64,
    ) -> Result<(Option<TransactionEnding>, Option<Entry>), ErrorKind> {
        let Some(t) = self
            .transactional_producers
            .get(&producer_id)
            .and_then(|id| self.transactions.get(id))
        else {
            return Ok((None, None));
        };
        match t.status {
            // An older epoch's marker cannot end the transaction of a newer one.
            TransactionStatus::Ongoing
                if t.partitions.contains(&tp) && epoch < t.producer_epoch =>
            {
                Err(ErrorKind::InvalidProducerEpoch)
            }
            TransactionStatus::Ongoing if t.partitions.contains(&tp) => {
                let (record, ending) = self.begin_end(t, false, true, now_ms);
                Ok((Some(ending), Some(record)))
            }
            TransactionStatus::PrepareCommit | TransactionStatus::PrepareAbort => {
                Ok((Some(ending_of(t)), None))
            }
            _ => Ok((None, None)),
        }
    }

    /// Transactions V2's end: prepared at the next epoch, remembering the one it ended with;
    /// when that exhausts the epochs, a new producer id (the entry taking it) to move to once
    /// it completes.
    fn bumped_at_end(
        &self,
        current: &Transaction,
        commit: bool,
        now_ms: i64,
    ) -> (Transaction, Option<Entry>) {
        let mut allocation = None;
        let mut t = current.clone();
        t.status = if commit {
            TransactionStatus::PrepareCommit
        } else {
            TransactionStatus::PrepareAbort
        };
        t.ended_as = Some((t.producer_id, t.producer_epoch));
        if t.producer_epoch >= EPOCH_EXHAUSTED_FROM {
            let (producer_id, allocated) = self.allocate_producer_id(now_ms);
            allocation = Some(allocated);
            t.next_producer_id = Some(producer_id);
        }
        t.producer_epoch = t.producer_epoch.saturating_add(1);
        // Every end moves the epoch on, or (exhausted) the producer id.
        debug_assert!(t.producer_epoch > current.producer_epoch || t.next_producer_id.is_some());
        t.updated_ms = now_ms;
        (t, allocation)
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
        records.push(Entry::of(
            now_ms,
            emit::transaction_changed(&completed(current, now_ms)),
        ));
        records
    }

    /// Transactions open past their timeout are aborted at the next epoch (fencing their
    /// producer); with those left ending for `ENDING_TAKEOVER_MS`, they are what still needs
    /// markers. At most `max` of those, and at most `max` ids idle past `id_expiration_ms`
    /// with nothing open are forgotten (Kafka's `transactional.id.expiration.ms`).
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
                TransactionStatus::PrepareCommit | TransactionStatus::PrepareAbort
                    if now_ms.saturating_sub(t.updated_ms) >= ENDING_TAKEOVER_MS =>
                {
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
        if fence && t.producer_epoch < EPOCH_EXHAUSTED_FROM {
            t.producer_epoch += 1;
            // A fenced producer's EndTxn is no retry of anything.
            t.ended_as = None;
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

/// An ending transaction once complete: on the next producer id, if its end moved to one.
fn completed(current: &Transaction, now_ms: i64) -> Transaction {
    let mut t = current.clone();
    t.status = match current.status {
        TransactionStatus::PrepareCommit => TransactionStatus::CompleteCommit,
        _ => TransactionStatus::CompleteAbort,
    };
    if let Some(next) = t.next_producer_id.take() {
        t.producer_id = next;
        t.producer_epoch = 0;
    }
    t.partitions.clear();
    t.pending_offsets.clear();
    t.started_ms = -1;
    t.updated_ms = now_ms;
    t
}
