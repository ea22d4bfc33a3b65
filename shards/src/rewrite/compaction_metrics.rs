//! Where compaction stands per partition, as Prometheus gauges: the dirty share of the
//! cleanable bytes, and how long the oldest dirty record has waited (Kafka's compaction lag).

use shoal_coordinator::CompactionStatus;

use crate::metrics::Family;

/// Reads one figure out of a partition's compaction status at a scrape's time (ms).
pub type StatusValue = fn(&CompactionStatus, i64) -> f64;

pub const COMPACTION_STATUS: [(Family, StatusValue); 2] = [
    (
        Family::gauge(
            "shoal_compaction_dirty_ratio",
            "Of a compacted partition's cleanable bytes, the share not yet compacted.",
        )
        .by(&["topic", "partition"]),
        |s, _| match s.cleanable_bytes {
            0 => 0.0,
            total => s.dirty_bytes as f64 / total as f64,
        },
    ),
    (
        Family::gauge(
            "shoal_compaction_lag_seconds",
            "Age of a compacted partition's oldest record not yet compacted.",
        )
        .by(&["topic", "partition"]),
        |s, now_ms| {
            let lag_ms = s
                .oldest_dirty_ms
                .map_or(0, |t| now_ms.saturating_sub(t).max(0));
            lag_ms as f64 / 1000.0
        },
    ),
];

pub fn render_compaction(status: &[CompactionStatus], now_ms: i64) -> String {
    let mut out = String::new();
    for (family, value) in &COMPACTION_STATUS {
        family.header(&mut out);
        for s in status {
            family.sample(&mut out, &[&s.topic, &s.partition], value(s, now_ms));
        }
    }
    out
}
