//! Merging: a partition's batches are copied, byte for byte, out of the small multi-partition
//! WAL objects produce writes into objects of this partition alone, up to the configured
//! size, so a catch-up read touches few objects. Only the partition's small shares of WAL
//! objects are merged (`MergePolicy::merges_share`), and only those are read: a share is its
//! consecutive batches in one object, split as the coordinator's plan splits them.

use shoal_coordinator::state::MergePolicy;
use shoal_coordinator::{is_rewritten_object, BatchCoordinate, RewritePlan};

use super::output::{Output, Swap};
use super::reading::{read_bytes, Batches};
use super::{Outcome, Pace};
use crate::{Shard, ShardError};

pub async fn merge(
    shard: &Shard,
    plan: &RewritePlan,
    policy: MergePolicy,
    pace: &mut Pace,
) -> Result<Outcome, ShardError> {
    let config = &shard.config.rewrite;
    let mut merging = Merging {
        shard,
        policy,
        output: Output::new(plan.partition, config.object_max_bytes),
        wanted: Vec::new(),
        wanted_bytes: 0,
        outcome: Outcome::default(),
    };
    let mut batches = Batches::new(shard, plan.partition, plan.from_offset, plan.end_offset);
    // The share being found: batches of one object, settled once the next object begins.
    let mut share: Vec<BatchCoordinate> = Vec::new();
    while let Some(step) = batches.next_coordinates().await? {
        for batch in step {
            if share
                .first()
                .is_some_and(|b| b.object_key != batch.object_key)
            {
                let whole = std::mem::take(&mut share);
                if merging.settle(whole, pace).await? == Swap::Lost {
                    return Ok(merging.outcome.lost());
                }
            }
            share.push(batch);
        }
    }
    if merging.settle(share, pace).await? == Swap::Lost || merging.swap(pace).await? == Swap::Lost {
        return Ok(merging.outcome.lost());
    }
    Ok(merging.outcome)
}

struct Merging<'a> {
    shard: &'a Shard,
    policy: MergePolicy,
    output: Output,
    /// Shares to merge, not read yet: read together, a step's worth at a time.
    wanted: Vec<BatchCoordinate>,
    wanted_bytes: u64,
    outcome: Outcome,
}

impl Merging<'_> {
    /// Takes a whole share to be merged, or, when it is merged already or large enough to
    /// stay, swaps in what comes before it: a swap replaces consecutive batches only.
    async fn settle(
        &mut self,
        share: Vec<BatchCoordinate>,
        pace: &mut Pace,
    ) -> Result<Swap, ShardError> {
        let Some(first) = share.first() else {
            return Ok(Swap::Done);
        };
        let bytes: u64 = share.iter().map(|b| b.size_bytes as u64).sum();
        if is_rewritten_object(&first.object_key) || !self.policy.merges_share(bytes) {
            return self.swap(pace).await;
        }
        self.wanted.extend(share);
        self.wanted_bytes += bytes;
        if self.wanted_bytes >= self.shard.config.rewrite.read_step_bytes as u64 {
            return self.copy_wanted(pace).await;
        }
        Ok(Swap::Done)
    }

    /// Reads the wanted shares and copies them into the output, swapping it in whenever the
    /// next batch would pass `[rewrite] object_max_bytes`.
    async fn copy_wanted(&mut self, pace: &mut Pace) -> Result<Swap, ShardError> {
        let wanted = std::mem::take(&mut self.wanted);
        self.wanted_bytes = 0;
        let object_max_bytes = self.shard.config.rewrite.object_max_bytes;
        for (read, bytes) in read_bytes(self.shard, wanted, pace).await? {
            let output = &self.output;
            if !output.is_empty()
                && output.len() + bytes.len() > object_max_bytes
                && self.swap_output().await? == Swap::Lost
            {
                return Ok(Swap::Lost);
            }
            self.outcome.bytes += bytes.len() as u64;
            self.output.push(read, Some(&bytes))?;
            pace.step().await;
        }
        Ok(Swap::Done)
    }

    /// Swaps in every share taken so far.
    async fn swap(&mut self, pace: &mut Pace) -> Result<Swap, ShardError> {
        if self.copy_wanted(pace).await? == Swap::Lost {
            return Ok(Swap::Lost);
        }
        self.swap_output().await
    }

    async fn swap_output(&mut self) -> Result<Swap, ShardError> {
        if self.output.is_empty() {
            return Ok(Swap::Done);
        }
        let swapped = self.output.swap(self.shard, None).await?;
        if swapped == Swap::Done {
            self.outcome.objects += 1;
        }
        Ok(swapped)
    }
}
