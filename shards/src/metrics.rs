//! Broker metrics. Each shard counts into its own plain counters (`ShardMetrics`, never shared
//! between threads, so counting costs an add and no cache line moves between cores); a scrape
//! asks every shard for a snapshot, sums them and renders the Prometheus text format.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use shoal_coordinator::CoordinatorMetrics;

/// Upper bounds of the latency buckets, in seconds (100 µs to 10 s).
const LATENCY_BUCKETS_S: [f64; 14] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 10.0,
];
/// Upper bounds of the object size buckets, in bytes (64 KiB to 64 MiB).
const SIZE_BUCKETS_BYTES: [f64; 7] = [
    65536.0, 262144.0, 1048576.0, 4194304.0, 8388608.0, 16777216.0, 67108864.0,
];
/// Kafka's and the Diskless API keys are below 128; the mirror APIs (1000 and up) take the
/// slots after them.
const API_KEYS: usize = 128 + MIRROR_KEYS;
const MIRROR_KEYS: usize = 16;
const MIRROR_KEY_BASE: i16 = 1000;

fn slot_of(api_key: i16) -> Option<usize> {
    match api_key {
        0..=127 => Some(api_key as usize),
        k if (MIRROR_KEY_BASE..MIRROR_KEY_BASE + MIRROR_KEYS as i16).contains(&k) => {
            Some(128 + (k - MIRROR_KEY_BASE) as usize)
        }
        _ => None,
    }
}

fn key_of(slot: usize) -> i16 {
    if slot < 128 {
        slot as i16
    } else {
        MIRROR_KEY_BASE + (slot - 128) as i16
    }
}

#[derive(Default)]
pub struct Counter(Cell<u64>);

impl Counter {
    pub fn add(&self, n: u64) {
        self.0.set(self.0.get().wrapping_add(n));
    }

    pub fn get(&self) -> u64 {
        self.0.get()
    }
}

#[derive(Default)]
pub struct Gauge(Cell<u64>);

impl Gauge {
    pub fn set(&self, value: u64) {
        self.0.set(value);
    }

    pub fn add(&self, n: u64) {
        self.0.set(self.0.get().wrapping_add(n));
    }

    pub fn sub(&self, n: u64) {
        self.0.set(self.0.get().saturating_sub(n));
    }

    pub fn get(&self) -> u64 {
        self.0.get()
    }
}

/// One shard's gauges, rendered with a `shard` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct ShardGauges {
    shard: usize,
    wal_in_flight: u64,
    wal_buffer_bytes: u64,
    connections: u64,
    request_memory_bytes: u64,
}

pub struct Histogram {
    bounds: &'static [f64],
    buckets: Vec<Cell<u64>>,
    count: Cell<u64>,
    /// In millionths of the unit, so the sum stays an integer.
    sum_micros: Cell<u64>,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            buckets: (0..bounds.len()).map(|_| Cell::new(0)).collect(),
            count: Cell::new(0),
            sum_micros: Cell::new(0),
        }
    }

    pub fn observe(&self, value: f64) {
        if let Some(i) = self.bounds.iter().position(|b| value <= *b) {
            self.buckets[i].set(self.buckets[i].get() + 1);
        }
        self.count.set(self.count.get() + 1);
        self.sum_micros
            .set(self.sum_micros.get().wrapping_add((value * 1e6) as u64));
    }

    pub fn observe_duration(&self, d: Duration) {
        self.observe(d.as_secs_f64());
    }

    fn snapshot(&self) -> HistogramSnapshot {
        HistogramSnapshot {
            bounds: self.bounds,
            buckets: self.buckets.iter().map(Cell::get).collect(),
            count: self.count.get(),
            sum_micros: self.sum_micros.get(),
        }
    }
}

/// One shard's counters; only its own executor touches them.
pub struct ShardMetrics {
    pub shard: usize,
    requests: Vec<Counter>,
    request_seconds: Vec<Histogram>,
    pub produce_bytes_in: Counter,
    pub fetch_bytes_out: Counter,
    pub wal_objects_uploaded: Counter,
    pub wal_upload_failures: Counter,
    pub wal_object_bytes: Histogram,
    pub wal_upload_seconds: Histogram,
    pub commit_seconds: Histogram,
    /// Merging and compaction: bytes read and written, objects stored, swaps that lost
    /// their race, records compaction dropped.
    pub rewrite_bytes_read: Counter,
    pub rewrite_bytes_written: Counter,
    pub rewrite_objects_written: Counter,
    pub rewrite_swaps_lost: Counter,
    pub compaction_records_removed: Counter,
    /// Answers that told a client over a quota to wait, and the milliseconds they told.
    pub quota_throttles: Counter,
    pub quota_throttle_ms: Counter,
    pub fetch_cache_hits: Counter,
    pub fetch_cache_misses: Counter,
    /// Partitions whose records a fetch found laid out ahead for it (`fetch::read_ahead`).
    pub fetch_read_ahead_hits: Counter,
    /// Objects uploading or waiting to commit, and bytes in the open buffer.
    pub wal_in_flight: Gauge,
    pub wal_buffer_bytes: Gauge,
    /// Client connections this shard serves, and the bytes of its request memory budget
    /// that requests and their answers hold.
    pub connections: Gauge,
    pub request_memory_bytes: Gauge,
    /// What rewriting did to each partition this shard rewrote, by (topic, partition).
    pub partition_rewrites: RefCell<BTreeMap<(String, i32), PartitionRewrites>>,
}

/// Reads one gauge out of a shard's.
type GaugeValue = fn(&ShardGauges) -> u64;

/// Reads one metric's value out of a partition's rewrites.
type RewriteValue = fn(&PartitionRewrites) -> f64;

/// One partition's rewrites on this shard since the broker started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionRewrites {
    pub bytes: u64,
    pub objects: u64,
    pub records_removed: u64,
    /// When the last rewrite of it ended, in ms since the epoch.
    pub last_run_ms: i64,
}

impl ShardMetrics {
    pub fn new(shard: usize) -> ShardMetrics {
        ShardMetrics {
            shard,
            requests: (0..API_KEYS).map(|_| Counter::default()).collect(),
            request_seconds: (0..API_KEYS)
                .map(|_| Histogram::new(&LATENCY_BUCKETS_S))
                .collect(),
            produce_bytes_in: Counter::default(),
            fetch_bytes_out: Counter::default(),
            wal_objects_uploaded: Counter::default(),
            wal_upload_failures: Counter::default(),
            wal_object_bytes: Histogram::new(&SIZE_BUCKETS_BYTES),
            wal_upload_seconds: Histogram::new(&LATENCY_BUCKETS_S),
            commit_seconds: Histogram::new(&LATENCY_BUCKETS_S),
            rewrite_bytes_read: Counter::default(),
            rewrite_bytes_written: Counter::default(),
            rewrite_objects_written: Counter::default(),
            rewrite_swaps_lost: Counter::default(),
            compaction_records_removed: Counter::default(),
            quota_throttles: Counter::default(),
            quota_throttle_ms: Counter::default(),
            fetch_cache_hits: Counter::default(),
            fetch_cache_misses: Counter::default(),
            fetch_read_ahead_hits: Counter::default(),
            wal_in_flight: Gauge::default(),
            wal_buffer_bytes: Gauge::default(),
            connections: Gauge::default(),
            request_memory_bytes: Gauge::default(),
            partition_rewrites: RefCell::new(BTreeMap::new()),
        }
    }

    /// Adds a rewrite of `topic`'s `partition` that ended at `now_ms`.
    pub fn rewrote(&self, (topic, partition): (String, i32), done: PartitionRewrites) {
        let mut rewrites = self.partition_rewrites.borrow_mut();
        let totals = rewrites.entry((topic, partition)).or_default();
        totals.bytes += done.bytes;
        totals.objects += done.objects;
        totals.records_removed += done.records_removed;
        totals.last_run_ms = done.last_run_ms;
    }

    pub fn request_done(&self, api_key: i16, elapsed: Duration) {
        if let Some(i) = slot_of(api_key) {
            self.requests[i].add(1);
            self.request_seconds[i].observe_duration(elapsed);
        }
    }

    /// A copy of every value, to send to the shard that renders a scrape.
    pub fn snapshot(&self) -> MetricsSnapshot {
        MetricsSnapshot {
            requests: self.requests.iter().map(Counter::get).collect(),
            request_seconds: self
                .request_seconds
                .iter()
                .map(Histogram::snapshot)
                .collect(),
            counters: [
                self.produce_bytes_in.get(),
                self.fetch_bytes_out.get(),
                self.wal_objects_uploaded.get(),
                self.wal_upload_failures.get(),
                self.rewrite_bytes_read.get(),
                self.rewrite_bytes_written.get(),
                self.rewrite_objects_written.get(),
                self.rewrite_swaps_lost.get(),
                self.compaction_records_removed.get(),
                self.quota_throttles.get(),
                self.quota_throttle_ms.get(),
                self.fetch_cache_hits.get(),
                self.fetch_cache_misses.get(),
                self.fetch_read_ahead_hits.get(),
            ],
            histograms: [
                self.wal_object_bytes.snapshot(),
                self.wal_upload_seconds.snapshot(),
                self.commit_seconds.snapshot(),
            ],
            gauges: vec![ShardGauges {
                shard: self.shard,
                wal_in_flight: self.wal_in_flight.0.get(),
                wal_buffer_bytes: self.wal_buffer_bytes.0.get(),
                connections: self.connections.0.get(),
                request_memory_bytes: self.request_memory_bytes.0.get(),
            }],
            partition_rewrites: self
                .partition_rewrites
                .borrow()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            store_requests: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone)]
struct HistogramSnapshot {
    bounds: &'static [f64],
    buckets: Vec<u64>,
    count: u64,
    sum_micros: u64,
}

impl HistogramSnapshot {
    fn merge(&mut self, other: &HistogramSnapshot) {
        debug_assert_eq!(self.bounds, other.bounds);
        for (mine, theirs) in self.buckets.iter_mut().zip(&other.buckets) {
            *mine += theirs;
        }
        self.count += other.count;
        self.sum_micros = self.sum_micros.wrapping_add(other.sum_micros);
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0;
        let sep = if labels.is_empty() { "" } else { "," };
        for (bound, bucket) in self.bounds.iter().zip(&self.buckets) {
            cumulative += bucket;
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {cumulative}"
            );
        }
        let count = self.count;
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {count}");
        let sum = self.sum_micros as f64 / 1e6;
        let braces = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        let _ = writeln!(out, "{name}_sum{braces} {sum}");
        let _ = writeln!(out, "{name}_count{braces} {count}");
    }
}

/// In `MetricsSnapshot::counters` order; the fetch cache's two stay last (the hit ratio).
const COUNTER_NAMES: [&str; 14] = [
    "shoal_produce_bytes_in_total",
    "shoal_fetch_bytes_out_total",
    "shoal_wal_objects_uploaded_total",
    "shoal_wal_upload_failures_total",
    "shoal_rewrite_bytes_read_total",
    "shoal_rewrite_bytes_written_total",
    "shoal_rewrite_objects_written_total",
    "shoal_rewrite_swaps_lost_total",
    "shoal_compaction_records_removed_total",
    "shoal_quota_throttles_total",
    "shoal_quota_throttle_milliseconds_total",
    "shoal_fetch_cache_hits_total",
    "shoal_fetch_cache_misses_total",
    "shoal_fetch_read_ahead_hits_total",
];
const HISTOGRAM_NAMES: [&str; 3] = [
    "shoal_wal_object_bytes",
    "shoal_wal_upload_duration_seconds",
    "shoal_commit_duration_seconds",
];

/// The values of one or more shards, summed; what a scrape renders.
#[derive(Debug, Clone)]
pub struct MetricsSnapshot {
    requests: Vec<u64>,
    request_seconds: Vec<HistogramSnapshot>,
    counters: [u64; 14],
    histograms: [HistogramSnapshot; 3],
    gauges: Vec<ShardGauges>,
    partition_rewrites: Vec<((String, i32), PartitionRewrites)>,
    /// Object store requests by (operation, outcome): the shard's store fills them in.
    pub store_requests: BTreeMap<(&'static str, &'static str), u64>,
}

impl MetricsSnapshot {
    pub fn merge(&mut self, other: &MetricsSnapshot) {
        for (mine, theirs) in self.requests.iter_mut().zip(&other.requests) {
            *mine += theirs;
        }
        for (mine, theirs) in self.request_seconds.iter_mut().zip(&other.request_seconds) {
            mine.merge(theirs);
        }
        for (mine, theirs) in self.counters.iter_mut().zip(&other.counters) {
            *mine += theirs;
        }
        for (mine, theirs) in self.histograms.iter_mut().zip(&other.histograms) {
            mine.merge(theirs);
        }
        self.gauges.extend_from_slice(&other.gauges);
        self.gauges.sort_unstable();
        self.partition_rewrites
            .extend_from_slice(&other.partition_rewrites);
        self.partition_rewrites.sort_by(|a, b| a.0.cmp(&b.0));
        for (key, n) in &other.store_requests {
            *self.store_requests.entry(*key).or_default() += n;
        }
    }

    /// The Prometheus text exposition format (version 0.0.4).
    pub fn render(
        &self,
        api_name: impl Fn(i16) -> String,
        coordinator: &CoordinatorMetrics,
    ) -> String {
        let mut out = String::with_capacity(16 << 10);
        out.push_str("# TYPE shoal_requests_total counter\n");
        for (i, n) in self.requests.iter().enumerate() {
            if *n > 0 {
                let _ = writeln!(
                    out,
                    "shoal_requests_total{{api=\"{}\"}} {n}",
                    api_name(key_of(i))
                );
            }
        }
        out.push_str("# TYPE shoal_request_duration_seconds histogram\n");
        for (i, h) in self.request_seconds.iter().enumerate() {
            if self.requests[i] > 0 {
                let labels = format!("api=\"{}\"", api_name(key_of(i)));
                h.render(&mut out, "shoal_request_duration_seconds", &labels);
            }
        }
        let coordinator_counters = [
            ("shoal_coordinator_log_syncs_total", &coordinator.log_syncs),
            (
                "shoal_coordinator_write_requests_total",
                &coordinator.write_requests,
            ),
            (
                "shoal_coordinator_read_requests_total",
                &coordinator.read_requests,
            ),
            (
                "shoal_coordinator_batches_committed_total",
                &coordinator.batches_committed,
            ),
            ("shoal_coordinator_snapshots_total", &coordinator.snapshots),
            (
                "shoal_coordinator_read_barriers_total",
                &coordinator.read_barriers,
            ),
            (
                "shoal_coordinator_lost_rounds_total",
                &coordinator.lost_rounds,
            ),
        ];
        let counters = COUNTER_NAMES.iter().copied().zip(self.counters).chain(
            coordinator_counters
                .into_iter()
                .map(|(name, c)| (name, CoordinatorMetrics::get(c))),
        );
        for (name, value) in counters {
            let _ = writeln!(out, "# TYPE {name} counter\n{name} {value}");
        }
        let [.., hits, misses] = self.counters;
        let total = (hits + misses) as f64;
        let ratio = if total > 0.0 {
            hits as f64 / total
        } else {
            0.0
        };
        let _ = writeln!(
            out,
            "# TYPE shoal_fetch_cache_hit_ratio gauge\nshoal_fetch_cache_hit_ratio {ratio}"
        );
        for (name, h) in HISTOGRAM_NAMES.iter().zip(&self.histograms) {
            let _ = writeln!(out, "# TYPE {name} histogram");
            h.render(&mut out, name, "");
        }
        let shard_gauges: [(&str, GaugeValue); 4] = [
            ("shoal_wal_objects_in_flight", |g| g.wal_in_flight),
            ("shoal_wal_buffer_bytes", |g| g.wal_buffer_bytes),
            ("shoal_connections", |g| g.connections),
            ("shoal_request_memory_bytes", |g| g.request_memory_bytes),
        ];
        for (name, value) in shard_gauges {
            let _ = writeln!(out, "# TYPE {name} gauge");
            for gauges in &self.gauges {
                let _ = writeln!(
                    out,
                    "{name}{{shard=\"{}\"}} {}",
                    gauges.shard,
                    value(gauges)
                );
            }
        }
        self.render_partition_rewrites(&mut out);
        out.push_str("# TYPE shoal_object_store_requests_total counter\n");
        for ((operation, outcome), n) in &self.store_requests {
            let _ = writeln!(
                out,
                "shoal_object_store_requests_total{{operation=\"{operation}\",outcome=\"{outcome}\"}} {n}"
            );
        }
        out
    }

    fn render_partition_rewrites(&self, out: &mut String) {
        let families: [(&str, &str, RewriteValue); 4] = [
            ("shoal_rewrite_partition_bytes_total", "counter", |r| {
                r.bytes as f64
            }),
            ("shoal_rewrite_partition_objects_total", "counter", |r| {
                r.objects as f64
            }),
            (
                "shoal_compaction_partition_records_removed_total",
                "counter",
                |r| r.records_removed as f64,
            ),
            (
                "shoal_rewrite_partition_last_run_timestamp_seconds",
                "gauge",
                |r| r.last_run_ms as f64 / 1000.0,
            ),
        ];
        for (name, kind, value) in families {
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for ((topic, partition), r) in &self.partition_rewrites {
                let _ = writeln!(
                    out,
                    "{name}{{topic=\"{topic}\",partition=\"{partition}\"}} {}",
                    value(r)
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_count_alone_and_a_scrape_sums_them() {
        let (a, b) = (ShardMetrics::new(0), ShardMetrics::new(1));
        a.request_done(0, Duration::from_millis(3));
        b.request_done(0, Duration::from_millis(30));
        a.produce_bytes_in.add(100);
        b.produce_bytes_in.add(20);
        b.wal_in_flight.set(3);
        let mut sum = a.snapshot();
        sum.merge(&b.snapshot());
        let text = sum.render(|k| format!("key{k}"), &CoordinatorMetrics::default());
        assert!(text.contains("shoal_requests_total{api=\"key0\"} 2"));
        assert!(text.contains("shoal_request_duration_seconds_bucket{api=\"key0\",le=\"0.005\"} 1"));
        assert!(text.contains("shoal_request_duration_seconds_bucket{api=\"key0\",le=\"+Inf\"} 2"));
        assert!(text.contains("shoal_produce_bytes_in_total 120"));
        assert!(text.contains("shoal_wal_objects_in_flight{shard=\"0\"} 0"));
        assert!(text.contains("shoal_wal_objects_in_flight{shard=\"1\"} 3"));
        assert!(!text.contains("key1"), "APIs never called are left out");
    }
}
