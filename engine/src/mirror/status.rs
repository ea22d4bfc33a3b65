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

#[derive(Default)]
pub struct MirrorStatus {
    source: Mutex<HashMap<TopicPartition, SourceOffsets>>,
}

impl MirrorStatus {
    pub fn record(&self, partition: TopicPartition, offsets: SourceOffsets) {
        if let Ok(mut source) = self.source.lock() {
            source.insert(partition, offsets);
        }
    }

    pub fn get(&self, partition: &TopicPartition) -> Option<SourceOffsets> {
        self.source.lock().ok()?.get(partition).copied()
    }
}
