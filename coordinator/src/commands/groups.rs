//! Committed offsets of consumer groups.

use crate::command::{Command, Round};
use crate::messages::{OffsetCommitEntry, StoredOffset, TopicPartition};
use crate::ErrorKind;

/// OffsetCommit: one answer per entry.
#[derive(Debug, Clone)]
pub struct CommitOffsets {
    pub group: String,
    pub offsets: Vec<OffsetCommitEntry>,
}

impl Command for CommitOffsets {
    type Reply = Vec<Option<ErrorKind>>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let (results, record) =
            round
                .state()
                .commit_offsets(&self.group, &self.offsets, round.now_ms());
        if let Some(record) = record {
            round.append(&record);
        }
        results
    }
}

/// OffsetFetch: the listed partitions, or all the group committed when None.
#[derive(Debug, Clone)]
pub struct FetchOffsets {
    pub group: String,
    pub partitions: Option<Vec<TopicPartition>>,
}

impl Command for FetchOffsets {
    type Reply = Vec<(TopicPartition, Option<StoredOffset>)>;
    const WRITE: bool = false;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        round
            .state()
            .fetch_offsets(&self.group, self.partitions.as_deref())
    }
}

/// DeleteGroups: every committed offset of the group. Whether it had any.
#[derive(Debug, Clone)]
pub struct DeleteGroup {
    pub group: String,
}

impl Command for DeleteGroup {
    type Reply = bool;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let Some(record) = round.state().delete_group(&self.group, round.now_ms()) else {
            return false;
        };
        round.append(&record);
        true
    }
}

/// OffsetDelete: the offsets of the listed partitions only (none: nothing is deleted).
/// Whether the group has offsets.
#[derive(Debug, Clone)]
pub struct DeleteOffsets {
    pub group: String,
    pub partitions: Vec<TopicPartition>,
}

impl Command for DeleteOffsets {
    type Reply = bool;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let (existed, record) =
            round
                .state()
                .delete_offsets(&self.group, &self.partitions, round.now_ms());
        if let Some(record) = record {
            round.append(&record);
        }
        existed
    }
}

/// Offsets of groups that committed nothing for `retention_ms` and are not `active` expire,
/// at most `max` groups per call; how many did.
#[derive(Debug, Clone)]
pub struct ExpireOffsets {
    pub retention_ms: i64,
    pub active: Vec<String>,
    pub max: usize,
}

impl Command for ExpireOffsets {
    type Reply = usize;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let now_ms = round.now_ms();
        let before_ms = now_ms.saturating_sub(self.retention_ms);
        let records =
            round
                .state()
                .offset_expiry_records(before_ms, &self.active, self.max, now_ms);
        round.append_all(&records);
        records.len()
    }
}

/// Groups with committed offsets, sorted.
#[derive(Debug, Clone)]
pub struct ListOffsetGroups;

impl Command for ListOffsetGroups {
    type Reply = Vec<String>;
    const WRITE: bool = false;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        round.state().offset_groups()
    }
}
