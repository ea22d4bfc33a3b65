//! The transaction parts of the log's entries: a transactional id's state as one
//! `ShoalTransactionRecord`, and which batches of a committed file are transactional or
//! markers, as a `ShoalTransactionalBatchesRecord` in the file's own entry (so a file is
//! never applied without them).

use shoal_protocol::records::*;

use crate::messages::TopicPartition;
use crate::records::{BatchKind, CommittedBatch, CommittedOffset, Transaction, TransactionStatus};

pub(crate) fn transaction_record(t: &Transaction) -> AnyRecord {
    ShoalTransactionRecord {
        transactional_id: t.transactional_id.clone(),
        producer_id: t.producer_id,
        producer_epoch: t.producer_epoch,
        timeout_ms: t.timeout_ms,
        state: status_code(t.status),
        started_ms: t.started_ms,
        updated_ms: t.updated_ms,
        partitions: t
            .partitions
            .iter()
            .map(|tp| ShoalTransactionPartition {
                topic_id: tp.topic_id,
                partition_index: tp.partition,
            })
            .collect(),
        pending_offsets: t
            .pending_offsets
            .iter()
            .map(|(group, o)| ShoalTransactionOffset {
                group_id: group.clone(),
                topic_id: o.topic_id,
                partition_index: o.partition,
                committed_offset: o.offset,
                leader_epoch: o.leader_epoch,
                metadata: o.metadata.clone(),
            })
            .collect(),
    }
    .into()
}

pub(crate) fn transaction_of(r: ShoalTransactionRecord) -> Result<Transaction, String> {
    Ok(Transaction {
        status: status_of(r.state)
            .ok_or_else(|| format!("transaction state {} is unknown", r.state))?,
        transactional_id: r.transactional_id,
        producer_id: r.producer_id,
        producer_epoch: r.producer_epoch,
        timeout_ms: r.timeout_ms,
        started_ms: r.started_ms,
        updated_ms: r.updated_ms,
        partitions: r
            .partitions
            .into_iter()
            .map(|p| TopicPartition {
                topic_id: p.topic_id,
                partition: p.partition_index,
            })
            .collect(),
        pending_offsets: r
            .pending_offsets
            .into_iter()
            .map(|o| {
                let offset = CommittedOffset {
                    topic_id: o.topic_id,
                    partition: o.partition_index,
                    offset: o.committed_offset,
                    leader_epoch: o.leader_epoch,
                    metadata: o.metadata,
                };
                (o.group_id, offset)
            })
            .collect(),
    })
}

/// The kinds of a file's batches that are not plain, if any is not.
pub(crate) fn batch_kinds_record(batches: &[CommittedBatch]) -> Option<AnyRecord> {
    let listed: Vec<ShoalTransactionalBatch> = batches
        .iter()
        .enumerate()
        .filter(|(_, b)| b.kind != BatchKind::Plain)
        .map(|(index, b)| ShoalTransactionalBatch {
            index: index as i32,
            kind: kind_code(b.kind),
        })
        .collect();
    (!listed.is_empty()).then(|| ShoalTransactionalBatchesRecord { batches: listed }.into())
}

/// Marks the listed batches with their kinds; indexes must rise and lie within the file.
pub(crate) fn apply_batch_kinds(
    batches: &mut [CommittedBatch],
    r: &ShoalTransactionalBatchesRecord,
) -> Result<(), String> {
    let mut previous = -1i64;
    for listed in &r.batches {
        let index = listed.index as i64;
        if index <= previous || index >= batches.len() as i64 {
            return Err(format!(
                "transactional batch index {index} out of order or range"
            ));
        }
        previous = index;
        batches[index as usize].kind = match listed.kind {
            1 => BatchKind::Transactional,
            2 => BatchKind::CommitMarker,
            3 => BatchKind::AbortMarker,
            other => return Err(format!("batch kind {other} is unknown")),
        };
    }
    Ok(())
}

fn kind_code(kind: BatchKind) -> i8 {
    match kind {
        BatchKind::Plain => 0,
        BatchKind::Transactional => 1,
        BatchKind::CommitMarker => 2,
        BatchKind::AbortMarker => 3,
    }
}

fn status_code(status: TransactionStatus) -> i8 {
    match status {
        TransactionStatus::Empty => 0,
        TransactionStatus::Ongoing => 1,
        TransactionStatus::PrepareCommit => 2,
        TransactionStatus::PrepareAbort => 3,
        TransactionStatus::CompleteCommit => 4,
        TransactionStatus::CompleteAbort => 5,
    }
}

fn status_of(code: i8) -> Option<TransactionStatus> {
    Some(match code {
        0 => TransactionStatus::Empty,
        1 => TransactionStatus::Ongoing,
        2 => TransactionStatus::PrepareCommit,
        3 => TransactionStatus::PrepareAbort,
        4 => TransactionStatus::CompleteCommit,
        5 => TransactionStatus::CompleteAbort,
        _ => return None,
    })
}
