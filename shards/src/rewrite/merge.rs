//! Merging: a partition's batches are copied, byte for byte, out of the small multi-partition
//! WAL objects produce writes into objects of this partition alone, up to the configured
//! size, so a catch-up read touches few objects.

use shoal_coordinator::{is_rewritten_object, RewritePlan};

use super::output::{Output, Swap};
use super::reading::Batches;
use super::{Outcome, Pace};
use crate::{Shard, ShardError};

pub async fn merge(
    shard: &Shard,
    plan: &RewritePlan,
    pace: &mut Pace,
) -> Result<Outcome, ShardError> {
    let config = &shard.config.rewrite;
    let mut outcome = Outcome::default();
    let mut output = Output::new(plan.partition, config.object_max_bytes);
    let mut batches = Batches::new(shard, plan.partition, plan.from_offset, plan.end_offset);
    while let Some(step) = batches.next_step(pace).await? {
        for (read, bytes) in step {
            // Batches merged already end a run: a swap replaces consecutive batches only.
            if is_rewritten_object(&read.object_key) {
                if output.swap(shard, None).await? == Swap::Lost {
                    return Ok(outcome.lost());
                }
                continue;
            }
            if !output.is_empty() && output.len() + bytes.len() > config.object_max_bytes {
                if output.swap(shard, None).await? == Swap::Lost {
                    return Ok(outcome.lost());
                }
                outcome.objects += 1;
            }
            outcome.bytes += bytes.len() as u64;
            output.push(read, Some(&bytes))?;
            pace.step().await;
        }
    }
    if !output.is_empty() {
        if output.swap(shard, None).await? == Swap::Lost {
            return Ok(outcome.lost());
        }
        outcome.objects += 1;
    }
    Ok(outcome)
}
