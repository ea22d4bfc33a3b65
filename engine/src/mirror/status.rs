//! What the fetchers last learned of each mirrored partition's source (high watermark, log
//! start), shared by all shards for DescribeMirrors and the lag metric. Bounded by the number
//! of mirrored partitions; written once per fetch round per partition.

use std::collections::HashMap;
use std::sync::Mutex;

use shoal_coordinator::TopicPartition;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceOffsets {
    pub high_watermark: i64,
    pub log_start_offset: i64,
}

/// A partition's mirror progress as the fetcher last saw it, for the lag metric.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Progress {
    mirror: String,
    topic: String,
    source: SourceOffsets,
    destination_end: i64,
}

#[derive(Default)]
pub struct MirrorStatus {
    source: Mutex<HashMap<TopicPartition, Progress>>,
}

impl MirrorStatus {
    pub fn record(
        &self,
        mirror: &str,
        topic: &str,
        partition: TopicPartition,
        source: SourceOffsets,
        destination_end: i64,
    ) {
        if let Ok(mut all) = self.source.lock() {
            all.insert(
                partition,
                Progress {
                    mirror: mirror.to_string(),
                    topic: topic.to_string(),
                    source,
                    destination_end,
                },
            );
        }
    }

    pub fn get(&self, partition: &TopicPartition) -> Option<SourceOffsets> {
        self.source.lock().ok()?.get(partition).map(|p| p.source)
    }

    /// `shoal_mirror_lag_records` per mirrored partition, in Prometheus text format.
    pub fn render(&self) -> String {
        let Ok(all) = self.source.lock() else {
            return String::new();
        };
        let mut lines: Vec<String> = all
            .iter()
            .map(|(tp, p)| {
                format!(
                    "shoal_mirror_lag_records{{mirror=\"{}\",topic=\"{}\",partition=\"{}\"}} {}\n",
                    p.mirror,
                    p.topic,
                    tp.partition,
                    (p.source.high_watermark - p.destination_end).max(0)
                )
            })
            .collect();
        lines.sort();
        let mut out = String::from(
            "# HELP shoal_mirror_lag_records Source high watermark minus local end offset, per mirrored partition, at the last fetch.\n# TYPE shoal_mirror_lag_records gauge\n",
        );
        out.extend(lines);
        out
    }
}
