//! Rewriting stored batches as background work of the shard owning each partition: merging
//! small WAL objects into larger per-partition ones, and compacting topics with
//! cleanup.policy=compact. Each shard asks the coordinator which of its partitions have work,
//! rewrites them one at a time in the background queue (lower share than requests, yielding
//! to them every half millisecond of work, reading at a bounded rate), and has each new object swapped in by the coordinator, which refuses
//! the swap if the batches changed since they were read. In a cluster only the broker
//! holding the cluster duties rewrites, so each partition is rewritten in one place.

mod compact;
mod compaction_metrics;
mod key_map;
mod merge;
mod output;
mod reading;

pub use compaction_metrics::{render_compaction, COMPACTION_STATUS};

use std::rc::Rc;
use std::time::{Duration, Instant};

use shoal_coordinator::commands::PlanRewrites;
use shoal_coordinator::state::MergePolicy;
use shoal_coordinator::{RewriteKind, RewritePlan};

use crate::{RuntimeConfig, Shard};

/// Partitions one shard rewrites per check.
const PLANS_PER_CHECK: usize = 64;
/// The most CPU a rewrite takes before it lets requests run: glommio would otherwise let a
/// background queue run for its 100 ms preemption slice.
const SLICE: Duration = Duration::from_micros(500);
/// Idle time a rate-limited rewrite may make up for at once: short, so that it reads evenly
/// rather than in bursts a second's worth at a time.
const CATCH_UP: Duration = Duration::from_millis(100);

/// Keeps a shard's rewriting in its place: yields to requests every `SLICE` of work, and
/// reads at most `[rewrite] io_max_bytes_per_second` (Kafka's
/// log.cleaner.io.max.bytes.per.second), so merging behind a loaded producer falls behind
/// instead of taking its disk or network.
pub struct Pace {
    since: Instant,
    rate: u64,
    window: Instant,
    bytes: u64,
}

impl Pace {
    fn new(bytes_per_second: u64) -> Pace {
        Pace {
            since: Instant::now(),
            rate: bytes_per_second,
            window: Instant::now(),
            bytes: 0,
        }
    }

    pub async fn step(&mut self) {
        if self.since.elapsed() >= SLICE {
            glommio::executor().yield_task_queue_now().await;
            self.since = Instant::now();
        }
    }

    /// Counts `bytes` read, and waits while reading is ahead of the rate.
    pub async fn charge(&mut self, bytes: u64) {
        if self.rate == 0 {
            return;
        }
        let due = |bytes: u64| Duration::from_secs_f64(bytes as f64 / self.rate as f64);
        if self.window.elapsed() > due(self.bytes) + CATCH_UP {
            self.window = Instant::now();
            self.bytes = 0;
        }
        self.bytes += bytes;
        let ahead = due(self.bytes).saturating_sub(self.window.elapsed());
        if !ahead.is_zero() {
            glommio::timer::sleep(ahead).await;
        }
    }
}

/// What one rewrite of a partition did.
#[derive(Debug, Default, Clone, Copy)]
pub struct Outcome {
    /// Bytes rewritten (read in the rewriting pass).
    pub bytes: u64,
    /// Objects swapped in.
    pub objects: u64,
    pub records_removed: u64,
    /// Keys in compaction's map.
    pub keys: usize,
    /// A swap lost its race: the partition changed; the next check starts over.
    pub lost: bool,
}

impl Outcome {
    fn lost(mut self) -> Outcome {
        self.lost = true;
        self
    }
}

/// Starts the shard's rewriting loop, unless `[rewrite] check_interval_ms` is 0.
pub fn start(shard: &Rc<Shard>) {
    let interval = shard.config.rewrite.check_interval_ms;
    if interval == 0 {
        return;
    }
    let running = rewrite_loop(shard.clone(), Duration::from_millis(interval));
    shard.tasks.spawn_background("rewrite", running);
}

async fn rewrite_loop(shard: Rc<Shard>, interval: Duration) {
    let pace = &mut Pace::new(shard.config.rewrite.io_max_bytes_per_second);
    loop {
        glommio::timer::sleep(interval).await;
        if !shard.config.duties.held() {
            continue;
        }
        let plan = PlanRewrites {
            shard_index: shard.index,
            shard_count: shard.config.shard_cores.len(),
            merge: merge_policy(&shard.config),
            max: PLANS_PER_CHECK,
        };
        let plans = match shard.coordinator.run(plan).await {
            Ok(plans) => plans,
            Err(e) => {
                tracing::debug!(error = %e, "no rewrite plans this time");
                continue;
            }
        };
        for plan in plans {
            rewrite_partition(&shard, &plan, pace).await;
        }
    }
}

/// What `[rewrite]` says is worth merging, on this broker's store.
fn merge_policy(config: &RuntimeConfig) -> MergePolicy {
    let rewrite = &config.rewrite;
    MergePolicy {
        min_bytes: rewrite.merge_min_bytes,
        max_age_ms: rewrite.merge_max_age_ms as i64,
        below_bytes: rewrite.merge_below_bytes(&config.store),
    }
}

async fn rewrite_partition(shard: &Shard, plan: &RewritePlan, pace: &mut Pace) {
    let started = Instant::now();
    let done = match plan.kind {
        RewriteKind::Merge => merge::merge(shard, plan, pace).await,
        RewriteKind::Compact => compact::compact(shard, plan, pace).await,
    };
    let topic = shard
        .topics
        .load()
        .by_id(&plan.partition.topic_id)
        .map(|t| t.name.clone())
        .unwrap_or_default();
    if let Ok(outcome) = &done {
        let totals = crate::metrics::PartitionRewrites {
            bytes: outcome.bytes,
            objects: outcome.objects,
            records_removed: outcome.records_removed,
            last_run_ms: crate::maintenance::now_ms(),
        };
        let partition = (topic.clone(), plan.partition.partition);
        shard.metrics.rewrote(partition, totals);
    }
    match done {
        Ok(outcome) => tracing::info!(
            topic,
            partition = plan.partition.partition,
            kind = ?plan.kind,
            bytes_read = outcome.bytes,
            objects = outcome.objects,
            records_removed = outcome.records_removed,
            keys = outcome.keys,
            lost_race = outcome.lost,
            ms = started.elapsed().as_millis() as u64,
            "rewrote a partition"
        ),
        Err(e) => tracing::warn!(
            topic,
            partition = plan.partition.partition,
            kind = ?plan.kind,
            error = %e,
            "a rewrite stopped and left the partition as it was; it is tried again later"
        ),
    }
}
