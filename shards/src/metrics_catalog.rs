//! Every metric family the Prometheus endpoint exports: name, type, labels and meaning. A
//! scrape's `# HELP` lines come from here, `docs/metrics.md` is written from it (a test keeps
//! the two equal), and tests fail if a family is exported without an entry or an entry names
//! a family no broker exports.

pub struct MetricDoc {
    pub name: &'static str,
    pub kind: &'static str,
    pub labels: &'static str,
    pub help: &'static str,
}

const fn doc(
    name: &'static str,
    kind: &'static str,
    labels: &'static str,
    help: &'static str,
) -> MetricDoc {
    MetricDoc {
        name,
        kind,
        labels,
        help,
    }
}

pub const METRICS: &[MetricDoc] = &[
    doc("shoal_requests_total", "counter", "api", "Kafka requests answered, by API."),
    doc(
        "shoal_request_duration_seconds",
        "histogram",
        "api",
        "Time to handle a request and encode its answer, by API (Produce includes the WAL commit; Fetch its wait).",
    ),
    doc("shoal_produce_bytes_in_total", "counter", "", "Bytes of record batches produced."),
    doc("shoal_fetch_bytes_out_total", "counter", "", "Bytes of record batches fetched."),
    doc("shoal_wal_objects_uploaded_total", "counter", "", "WAL objects written to the object store."),
    doc(
        "shoal_wal_upload_failures_total",
        "counter",
        "",
        "WAL objects whose upload failed after every attempt (their producers got KAFKA_STORAGE_ERROR).",
    ),
    doc("shoal_wal_object_bytes", "histogram", "", "Size of each WAL object uploaded."),
    doc("shoal_wal_upload_duration_seconds", "histogram", "", "Time to upload one WAL object, retries included."),
    doc(
        "shoal_commit_duration_seconds",
        "histogram",
        "",
        "Time for the coordinator to commit one uploaded object's batches (assign their offsets).",
    ),
    doc("shoal_wal_objects_in_flight", "gauge", "shard", "Objects uploading or waiting for their commit."),
    doc("shoal_wal_buffer_bytes", "gauge", "shard", "Bytes in the open WAL buffer."),
    doc("shoal_connections", "gauge", "shard", "Client connections open."),
    doc(
        "shoal_request_memory_bytes",
        "gauge",
        "shard",
        "Bytes of the shard's request memory budget (max.in.flight.request.bytes) held by requests and their answers.",
    ),
    doc("shoal_fetch_cache_hits_total", "counter", "", "Fetches served from the cache of recent objects."),
    doc("shoal_fetch_cache_misses_total", "counter", "", "Fetches that read the object store."),
    doc("shoal_fetch_read_ahead_hits_total", "counter", "", "Partitions whose records a fetch found read and laid out ahead for it (a consumer catching up)."),
    doc("shoal_fetch_cache_hit_ratio", "gauge", "", "Hits over hits and misses since start."),
    doc("shoal_rewrite_bytes_read_total", "counter", "", "Bytes read by merging and compaction."),
    doc("shoal_rewrite_bytes_written_total", "counter", "", "Bytes written by merging and compaction."),
    doc("shoal_rewrite_objects_written_total", "counter", "", "Objects written by merging and compaction."),
    doc(
        "shoal_rewrite_swaps_lost_total",
        "counter",
        "",
        "Rewrites discarded because the partition changed meanwhile (they are redone).",
    ),
    doc("shoal_compaction_records_removed_total", "counter", "", "Records compaction dropped (superseded or expired)."),
    doc(
        "shoal_rewrite_partition_bytes_total",
        "counter",
        "topic, partition",
        "Bytes written by rewrites of the partition on this broker.",
    ),
    doc(
        "shoal_rewrite_partition_objects_total",
        "counter",
        "topic, partition",
        "Objects written by rewrites of the partition on this broker.",
    ),
    doc(
        "shoal_compaction_partition_records_removed_total",
        "counter",
        "topic, partition",
        "Records compaction dropped from the partition on this broker.",
    ),
    doc(
        "shoal_rewrite_partition_last_run_timestamp_seconds",
        "gauge",
        "topic, partition",
        "When the partition's last rewrite on this broker ended (Unix seconds).",
    ),
    doc(
        "shoal_compaction_dirty_ratio",
        "gauge",
        "topic, partition",
        "Of a compacted partition's cleanable bytes, the share not yet compacted.",
    ),
    doc(
        "shoal_compaction_lag_seconds",
        "gauge",
        "topic, partition",
        "Age of a compacted partition's oldest record not yet compacted.",
    ),
    doc("shoal_quota_throttles_total", "counter", "", "Answers that told a client over a quota to wait."),
    doc(
        "shoal_quota_throttle_milliseconds_total",
        "counter",
        "",
        "Milliseconds those answers told clients to wait.",
    ),
    doc(
        "shoal_mirror_lag_records",
        "gauge",
        "mirror, topic, partition",
        "Source high watermark minus local end offset, per mirrored partition, at the last fetch.",
    ),
    doc(
        "shoal_group_lag_records",
        "gauge",
        "group",
        "Records between a group's committed offsets and the high watermarks, summed over the partitions it committed (0 where it committed past the end).",
    ),
    doc(
        "shoal_group_lag_max_records",
        "gauge",
        "group",
        "The same lag on the group's partition that trails most.",
    ),
    doc(
        "shoal_object_store_requests_total",
        "counter",
        "operation, outcome",
        "Requests to an S3 store by operation (PutObject, GetObject, ...) and outcome: ok, not_found, throttled (429/503), client_error, server_error, timeout, transport. Failed PutObjects are retried; those that failed every attempt count in shoal_wal_upload_failures_total. None for a local store.",
    ),
    doc("shoal_coordinator_log_syncs_total", "counter", "", "Syncs of the coordinator's metadata log."),
    doc("shoal_coordinator_write_requests_total", "counter", "", "Coordinator commands that wrote."),
    doc("shoal_coordinator_read_requests_total", "counter", "", "Coordinator commands that only read."),
    doc("shoal_coordinator_batches_committed_total", "counter", "", "Batches given offsets by the coordinator."),
    doc("shoal_coordinator_snapshots_total", "counter", "", "Snapshots of the coordinator's state written."),
    doc(
        "shoal_coordinator_read_barriers_total",
        "counter",
        "",
        "Reads that first caught up with the shared log (clusters).",
    ),
    doc(
        "shoal_coordinator_lost_rounds_total",
        "counter",
        "",
        "Coordinator rounds whose write lost to another broker's (clusters); redone.",
    ),
];

/// `text` with a `# HELP` line before each family's `# TYPE` line.
pub fn with_help(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + METRICS.len() * 100);
    for line in text.lines() {
        if let Some(name) = line
            .strip_prefix("# TYPE ")
            .and_then(|rest| rest.split_whitespace().next())
        {
            if let Some(doc) = METRICS.iter().find(|m| m.name == name) {
                out.push_str("# HELP ");
                out.push_str(name);
                out.push(' ');
                out.push_str(doc.help);
                out.push('\n');
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// `docs/metrics.md`.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Metrics\n\n\
         What `GET /metrics` on `metrics_listen` exports (Prometheus text format), written from\n\
         `shards/src/metrics_catalog.rs` (`SHOAL_WRITE_METRICS_DOC=1 cargo test -p shoal-shards\n\
         metrics_doc` rewrites this file; the test fails while it differs). Counters count since\n\
         the broker started; every shard's are summed. A Grafana dashboard over them is\n\
         [`grafana/shoal.json`](grafana/shoal.json).\n\n\
         | metric | type | labels | meaning |\n|---|---|---|---|\n",
    );
    for m in METRICS {
        let labels = if m.labels.is_empty() { "" } else { m.labels };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            m.name, m.kind, labels, m.help
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::ShardMetrics;
    use shoal_coordinator::CoordinatorMetrics;

    #[test]
    fn every_family_a_scrape_renders_is_documented_and_every_entry_is_rendered() {
        let snapshot = ShardMetrics::new(0).snapshot();
        let text = snapshot.render(|k| k.to_string(), &CoordinatorMetrics::default())
            + &crate::mirror::progress::render_lags(Vec::new())
            + &crate::rewrite::render_compaction(&[], 0)
            + &crate::groups::render_group_lags(&[]);
        let rendered: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        for name in &rendered {
            assert!(
                METRICS.iter().any(|m| m.name == *name),
                "{name} is not documented"
            );
        }
        for m in METRICS {
            assert!(
                rendered.contains(&m.name),
                "{} is documented, not rendered",
                m.name
            );
            let line = format!("# TYPE {} {}", m.name, m.kind);
            assert!(text.contains(&line), "{} is not a {}", m.name, m.kind);
        }
        let helped = with_help(&text);
        assert_eq!(helped.matches("# HELP ").count(), METRICS.len());
    }

    #[test]
    fn metrics_doc_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/metrics.md");
        let written = markdown();
        if std::env::var_os("SHOAL_WRITE_METRICS_DOC").is_some() {
            std::fs::write(&path, &written).unwrap();
        }
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            current == written,
            "docs/metrics.md differs from the catalogue: SHOAL_WRITE_METRICS_DOC=1 cargo test \
             -p shoal-shards metrics_doc"
        );
    }
}
