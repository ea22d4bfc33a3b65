//! Merging and compaction: which partitions have rewriting to do, and the swap that puts a
//! rewrite's object in place of the batches it read.

use crate::command::{Command, Round};
use crate::messages::{BatchCoordinate, CompactionStatus, NewObject, RewritePlan, TopicPartition};
use crate::state::MergePolicy;
use crate::ErrorKind;

/// The partitions a shard owns that have rewriting to do now, at most `max`.
#[derive(Debug, Clone)]
pub struct PlanRewrites {
    pub shard_index: usize,
    pub shard_count: usize,
    pub merge: MergePolicy,
    pub max: usize,
}

impl Command for PlanRewrites {
    type Reply = Vec<RewritePlan>;
    const WRITE: bool = false;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let shard = (self.shard_index, self.shard_count.max(1));
        round
            .state()
            .rewrite_plans(shard, self.merge, round.now_ms(), self.max)
    }
}

/// Replaces `replaced` (the batches as the rewriter read them, in offset order) with
/// `batches`, stored in `object` (None when every record was dropped). Ok(true): swapped;
/// Ok(false): the batches had changed since (retention, DeleteRecords, another rewrite), and
/// the object is left for garbage collection.
#[derive(Debug, Clone)]
pub struct RewriteBatches {
    pub partition: TopicPartition,
    pub object: Option<NewObject>,
    pub replaced: Vec<BatchCoordinate>,
    pub batches: Vec<BatchCoordinate>,
    /// The compaction checkpoint this swap completes, if it ends a compaction pass.
    pub cleaned_offset: Option<i64>,
}

impl Command for RewriteBatches {
    type Reply = Result<bool, ErrorKind>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let (swapped, entry) = round.state().rewrite_batches(
            self.partition,
            self.object.as_ref(),
            &self.replaced,
            &self.batches,
            self.cleaned_offset,
            round.now_ms(),
        )?;
        if let Some(entry) = entry {
            round.append(&entry);
        }
        Ok(swapped)
    }
}

/// Where compaction stands in every partition of every compacted topic (metrics).
#[derive(Debug, Clone)]
pub struct DescribeCompaction;

impl Command for DescribeCompaction {
    type Reply = Vec<CompactionStatus>;
    const WRITE: bool = false;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        round.state().compaction_status(round.now_ms())
    }
}
