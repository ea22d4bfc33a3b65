//! Broker metrics: each family declared once (`tables.rs`, or beside the module that renders
//! it), counted per shard without sharing (`instruments.rs`), summed and rendered at a scrape
//! (`shard.rs`), listed for `docs/metrics.md` (`catalogue.rs`).

#[macro_use]
mod declare;
pub mod catalogue;
mod family;
mod instruments;
mod rewrites;
mod shard;
mod tables;

pub use family::{Family, MetricKind};
pub use instruments::{Counter, Gauge, Histogram};
pub use rewrites::PartitionRewrites;
pub use shard::{MetricsSnapshot, ShardMetrics};
