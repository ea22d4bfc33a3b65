//! What a shard's mirror fetchers last learned of each mirrored partition it owns: the
//! source's high watermark and log start, and the local end after the round. Owned by that
//! shard (no lock); other shards ask for it over the peer queues (DescribeMirrors, a scrape).
//! Bounded by the number of mirrored partitions the shard owns.

use std::cell::RefCell;
use std::collections::HashMap;

use shoal_coordinator::TopicPartition;

use crate::metrics::Family;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceOffsets {
    pub high_watermark: i64,
    pub log_start_offset: i64,
}

/// One partition's progress, as the lag metric reports it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct MirrorLag {
    pub mirror: String,
    pub topic: String,
    pub partition: i32,
    pub lag_records: i64,
}

#[derive(Debug, Clone)]
struct Progress {
    mirror: String,
    topic: String,
    source: SourceOffsets,
    destination_end: i64,
}

#[derive(Default)]
pub struct MirrorProgress {
    partitions: RefCell<HashMap<TopicPartition, Progress>>,
}

impl MirrorProgress {
    pub fn record(
        &self,
        mirror: &str,
        topic: &str,
        partition: TopicPartition,
        source: SourceOffsets,
        destination_end: i64,
    ) {
        self.partitions.borrow_mut().insert(
            partition,
            Progress {
                mirror: mirror.to_string(),
                topic: topic.to_string(),
                source,
                destination_end,
            },
        );
    }

    pub fn source(&self, partition: &TopicPartition) -> Option<SourceOffsets> {
        self.partitions.borrow().get(partition).map(|p| p.source)
    }

    pub fn lags(&self) -> Vec<MirrorLag> {
        self.partitions
            .borrow()
            .iter()
            .map(|(tp, p)| MirrorLag {
                mirror: p.mirror.clone(),
                topic: p.topic.clone(),
                partition: tp.partition,
                lag_records: (p.source.high_watermark - p.destination_end).max(0),
            })
            .collect()
    }
}

pub const MIRROR_LAG: Family = Family::gauge(
    "shoal_mirror_lag_records",
    "Source high watermark minus local end offset, per mirrored partition, at the last fetch.",
)
.by(&["mirror", "topic", "partition"]);

/// `shoal_mirror_lag_records` per mirrored partition, in Prometheus text format.
pub fn render_lags(mut lags: Vec<MirrorLag>) -> String {
    lags.sort();
    let mut out = String::new();
    MIRROR_LAG.header(&mut out);
    for l in lags {
        MIRROR_LAG.sample(
            &mut out,
            &[&l.mirror, &l.topic, &l.partition],
            l.lag_records,
        );
    }
    out
}
