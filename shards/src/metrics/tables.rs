//! The broker's own metric families, each declared once. A shard counts into the fields the
//! macros generate; `ShardMetrics::snapshot` copies them and `MetricsSnapshot::render` writes
//! them under these names. Families that other modules render (mirror lag, group lag,
//! compaction) are declared beside their renderers; `catalogue.rs` lists them all.

use std::sync::atomic::AtomicU64;

use shoal_coordinator::CoordinatorMetrics;

use super::family::Family;
use super::instruments::{
    Counter, Gauge, Histogram, HistogramSnapshot, LATENCY_BUCKETS_S, SIZE_BUCKETS_BYTES,
};
use super::rewrites::PartitionRewrites;

pub const REQUESTS: Family =
    Family::counter("shoal_requests_total", "Kafka requests answered, by API.").by(&["api"]);
pub const REQUEST_DURATION: Family = Family::histogram(
    "shoal_request_duration_seconds",
    "Time to handle a request and encode its answer, by API (Produce includes the WAL commit; Fetch its wait).",
)
.by(&["api"]);

shard_counters! {
    /// A shard's counters, summed over shards by a scrape.
    ShardCounters => CounterCopies {
        produce_bytes_in: "shoal_produce_bytes_in_total", "Bytes of record batches produced.";
        fetch_bytes_out: "shoal_fetch_bytes_out_total", "Bytes of record batches fetched.";
        wal_objects_uploaded: "shoal_wal_objects_uploaded_total", "WAL objects written to the object store.";
        wal_upload_failures: "shoal_wal_upload_failures_total",
            "WAL objects whose upload failed after every attempt (their producers got KAFKA_STORAGE_ERROR).";
        rewrite_bytes_read: "shoal_rewrite_bytes_read_total", "Bytes read by merging and compaction.";
        rewrite_bytes_written: "shoal_rewrite_bytes_written_total", "Bytes written by merging and compaction.";
        rewrite_objects_written: "shoal_rewrite_objects_written_total", "Objects written by merging and compaction.";
        rewrite_swaps_lost: "shoal_rewrite_swaps_lost_total",
            "Rewrites discarded because the partition changed meanwhile (they are redone).";
        compaction_records_removed: "shoal_compaction_records_removed_total",
            "Records compaction dropped (superseded or expired).";
        connections_refused: "shoal_connections_refused_total",
            "Connections closed at once because max.connections or max.connections.per.ip was reached.";
        sasl_reauthentications: "shoal_sasl_reauthentications_total",
            "SASL sessions that re-authenticated on their connection before they ended (KIP-368).";
        sasl_sessions_expired: "shoal_sasl_sessions_expired_total",
            "Connections closed because their SASL session ended without re-authentication.";
        quota_throttles: "shoal_quota_throttles_total", "Answers that told a client over a quota to wait.";
        quota_throttle_ms: "shoal_quota_throttle_milliseconds_total", "Milliseconds those answers told clients to wait.";
        fetch_cache_hits: "shoal_fetch_cache_hits_total", "Fetches served from the cache of recent objects.";
        fetch_cache_misses: "shoal_fetch_cache_misses_total", "Fetches that read the object store.";
        /// Partitions whose records a fetch found laid out ahead for it (`fetch::read_ahead`).
        fetch_read_ahead_hits: "shoal_fetch_read_ahead_hits_total",
            "Partitions whose records a fetch found read and laid out ahead for it (a consumer catching up).";
    }
}

impl ShardCounters {
    /// Record-batch bytes a Fetch or ShareFetch answer carries.
    pub fn count_fetched(&self, bytes: usize) {
        self.fetch_bytes_out.add(bytes as u64);
    }
}

/// Computed at a scrape from the two cache counters above.
pub const FETCH_CACHE_HIT_RATIO: Family = Family::gauge(
    "shoal_fetch_cache_hit_ratio",
    "Hits over hits and misses since start.",
);

shard_histograms! {
    /// A shard's histograms, their buckets summed over shards by a scrape.
    ShardHistograms => HistogramCopies {
        wal_object_bytes: "shoal_wal_object_bytes", SIZE_BUCKETS_BYTES, "Size of each WAL object uploaded.";
        wal_upload_seconds: "shoal_wal_upload_duration_seconds", LATENCY_BUCKETS_S,
            "Time to upload one WAL object, retries included.";
        commit_seconds: "shoal_commit_duration_seconds", LATENCY_BUCKETS_S,
            "Time for the coordinator to commit one uploaded object's batches (assign their offsets).";
    }
}

shard_gauges! {
    /// A shard's gauges, a series a shard.
    ShardGauges => GaugeCopies {
        wal_in_flight: "shoal_wal_objects_in_flight", "Objects uploading or waiting for their commit.";
        wal_buffer_bytes: "shoal_wal_buffer_bytes", "Bytes in the open WAL buffer.";
        connections: "shoal_connections", "Client connections open.";
        request_memory_bytes: "shoal_request_memory_bytes",
            "Bytes of the shard's request memory budget (max.in.flight.request.bytes) held by requests and their answers.";
    }
}

/// Reads one metric's value out of a partition's rewrites.
pub type RewriteValue = fn(&PartitionRewrites) -> f64;

const BY_PARTITION: &[&str] = &["topic", "partition"];

/// What rewrites did to each partition on this broker, a series a partition.
pub const PARTITION_REWRITES: [(Family, RewriteValue); 4] = [
    (
        Family::counter(
            "shoal_rewrite_partition_bytes_total",
            "Bytes written by rewrites of the partition on this broker.",
        )
        .by(BY_PARTITION),
        |r| r.bytes as f64,
    ),
    (
        Family::counter(
            "shoal_rewrite_partition_objects_total",
            "Objects written by rewrites of the partition on this broker.",
        )
        .by(BY_PARTITION),
        |r| r.objects as f64,
    ),
    (
        Family::counter(
            "shoal_compaction_partition_records_removed_total",
            "Records compaction dropped from the partition on this broker.",
        )
        .by(BY_PARTITION),
        |r| r.records_removed as f64,
    ),
    (
        Family::gauge(
            "shoal_rewrite_partition_last_run_timestamp_seconds",
            "When the partition's last rewrite on this broker ended (Unix seconds).",
        )
        .by(BY_PARTITION),
        |r| r.last_run_ms as f64 / 1000.0,
    ),
];

pub const STORE_REQUESTS: Family = Family::counter(
    "shoal_object_store_requests_total",
    "Requests to an S3 store by operation (PutObject, GetObject, ...) and outcome: ok, not_found, throttled (429/503), client_error, server_error, timeout, transport. Failed PutObjects are retried; those that failed every attempt count in shoal_wal_upload_failures_total. None for a local store.",
)
.by(&["operation", "outcome"]);

/// Reads one of the coordinator's own counters.
pub type CoordinatorValue = fn(&CoordinatorMetrics) -> &AtomicU64;

/// The coordinator's counters, kept by the coordinator itself (any thread reads them).
pub const COORDINATOR: [(Family, CoordinatorValue); 7] = [
    (
        Family::counter(
            "shoal_coordinator_log_syncs_total",
            "Syncs of the coordinator's metadata log.",
        ),
        |c| &c.log_syncs,
    ),
    (
        Family::counter(
            "shoal_coordinator_write_requests_total",
            "Coordinator commands that wrote.",
        ),
        |c| &c.write_requests,
    ),
    (
        Family::counter(
            "shoal_coordinator_read_requests_total",
            "Coordinator commands that only read.",
        ),
        |c| &c.read_requests,
    ),
    (
        Family::counter(
            "shoal_coordinator_batches_committed_total",
            "Batches placed in partitions by the coordinator (produced, and mirrored at their source's offsets).",
        ),
        |c| &c.batches_committed,
    ),
    (
        Family::counter(
            "shoal_coordinator_snapshots_total",
            "Snapshots of the coordinator's state written.",
        ),
        |c| &c.snapshots,
    ),
    (
        Family::counter(
            "shoal_coordinator_read_barriers_total",
            "Reads that first caught up with the shared log (clusters).",
        ),
        |c| &c.read_barriers,
    ),
    (
        Family::counter(
            "shoal_coordinator_lost_rounds_total",
            "Coordinator rounds whose write lost to another broker's (clusters); redone.",
        ),
        |c| &c.lost_rounds,
    ),
];
