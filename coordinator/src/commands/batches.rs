//! Batches and the files holding them: commits, reads, DeleteRecords, retention and the
//! garbage collector's questions.

use crate::command::{Command, Round};
use crate::messages::{
    CommitBatch, CommitBatchResult, FindBatchesRequest, FindBatchesResult, ListOffsetsResult,
    NewObject, TopicPartition,
};
use crate::metrics::CoordinatorMetrics;
use shoal_protocol::records::ShoalFilesDeletedRecord;

use crate::entry::Entry;
use crate::ErrorKind;

/// CommitFile: offsets for an object's batches, in object order, one answer per batch.
#[derive(Debug, Clone)]
pub struct CommitFile {
    pub object: NewObject,
    pub batches: Vec<CommitBatch>,
}

impl Command for CommitFile {
    type Reply = Vec<CommitBatchResult>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let decided = round
            .state()
            .commit_file(&self.object, &self.batches, round.now_ms());
        append_commit(round, decided)
    }
}

/// Appends an object's commit (CommitFile's or CommitMirrored's) and counts the batches it
/// placed; the per-batch answers.
pub(super) fn append_commit(
    round: &mut Round<'_>,
    (results, record): (Vec<CommitBatchResult>, Option<Entry>),
) -> Vec<CommitBatchResult> {
    let placed = results
        .iter()
        .filter(|r| r.error.is_none() && !r.is_duplicate)
        .count();
    CoordinatorMetrics::add(&round.metrics.batches_committed, placed as u64);
    if let Some(record) = record {
        round.append(&record);
    }
    results
}

/// DeleteRecords: offsets per partition (-1: the high watermark); the new log start offsets.
#[derive(Debug, Clone)]
pub struct DeleteRecords {
    pub partitions: Vec<(TopicPartition, i64)>,
}

impl Command for DeleteRecords {
    type Reply = Vec<Result<i64, ErrorKind>>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        self.partitions
            .iter()
            .map(|(tp, offset)| {
                let (log_start_offset, record) =
                    round.state().delete_records(*tp, *offset, round.now_ms())?;
                if let Some(record) = record {
                    round.append(&record);
                }
                Ok(log_start_offset)
            })
            .collect()
    }
}

/// ListOffsets with Kafka's special timestamps (see `messages::LATEST_TIMESTAMP` and others).
#[derive(Debug, Clone)]
pub struct ListOffsets {
    pub partitions: Vec<(TopicPartition, i64)>,
    /// Kafka's isolation level READ_COMMITTED: "latest" is the last stable offset.
    pub read_committed: bool,
}

impl Command for ListOffsets {
    type Reply = Vec<ListOffsetsResult>;
    const WRITE: bool = false;
    const FRESH: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        self.partitions
            .iter()
            .map(|(tp, timestamp)| {
                round
                    .state()
                    .list_offsets(*tp, *timestamp, self.read_committed)
            })
            .collect()
    }
}

/// FindBatches: batch coordinates from each offset, spending one byte budget.
#[derive(Debug, Clone)]
pub struct FindBatches {
    pub partitions: Vec<FindBatchesRequest>,
    pub max_bytes: u32,
}

impl Command for FindBatches {
    type Reply = Vec<FindBatchesResult>;
    const WRITE: bool = false;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        round.state().find_batches(&self.partitions, self.max_bytes)
    }
}

/// DescribeFiles: whether each object still holds live batches.
#[derive(Debug, Clone)]
pub struct DescribeFiles {
    pub object_keys: Vec<String>,
}

impl Command for DescribeFiles {
    type Reply = Vec<bool>;
    const WRITE: bool = false;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        self.object_keys
            .iter()
            .map(|key| round.state().has_live_batches(key))
            .collect()
    }
}

/// Objects unreferenced since before `older_than_ms`, at most `max`.
#[derive(Debug, Clone)]
pub struct ExpiredFiles {
    pub older_than_ms: i64,
    pub max: usize,
}

impl Command for ExpiredFiles {
    type Reply = Vec<String>;
    const WRITE: bool = false;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        round
            .state()
            .expired_deletable_files(self.older_than_ms, self.max)
    }
}

/// Garbage collection deleted these objects from the store.
#[derive(Debug, Clone)]
pub struct FilesDeleted {
    pub object_keys: Vec<String>,
}

impl Command for FilesDeleted {
    type Reply = ();
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let deleted = ShoalFilesDeletedRecord {
            object_keys: self.object_keys,
        };
        round.append(&Entry::of(round.now_ms(), deleted));
    }
}

/// One bounded step of retention (and of forgetting idle producers); how many records it
/// wrote (0: nothing left to do).
#[derive(Debug, Clone)]
pub struct EnforceRetention {
    pub max_batches: usize,
    /// Producers idle this long are forgotten (Kafka's producer.id.expiration.ms).
    pub producer_expiration_ms: i64,
}

impl Command for EnforceRetention {
    type Reply = usize;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let now_ms = round.now_ms();
        let idle_before_ms = now_ms.saturating_sub(self.producer_expiration_ms);
        let mut records = round.state().retention_records(now_ms, self.max_batches);
        records.extend(round.state().producer_expiry_records(
            idle_before_ms,
            self.max_batches,
            now_ms,
        ));
        round.append_all(&records);
        records.len()
    }
}
