//! Broker metrics: lock-free counters and fixed-bucket histograms shared by every executor,
//! rendered in the Prometheus text format on demand.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
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

pub struct Histogram {
    bounds: &'static [f64],
    buckets: Vec<AtomicU64>,
    count: AtomicU64,
    /// In millionths of the unit, so the sum stays an integer.
    sum_micros: AtomicU64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            buckets: (0..bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum_micros: AtomicU64::new(0),
        }
    }

    pub fn observe(&self, value: f64) {
        if let Some(i) = self.bounds.iter().position(|b| value <= *b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_micros
            .fetch_add((value * 1e6) as u64, Ordering::Relaxed);
    }

    pub fn observe_duration(&self, d: Duration) {
        self.observe(d.as_secs_f64());
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0;
        let sep = if labels.is_empty() { "" } else { "," };
        for (bound, bucket) in self.bounds.iter().zip(&self.buckets) {
            cumulative += bucket.load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {cumulative}"
            );
        }
        let count = self.count.load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {count}");
        let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let braces = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        let _ = writeln!(out, "{name}_sum{braces} {sum}");
        let _ = writeln!(out, "{name}_count{braces} {count}");
    }
}

pub struct BrokerMetrics {
    requests: Vec<AtomicU64>,
    request_seconds: Vec<Histogram>,
    pub produce_bytes_in: AtomicU64,
    pub fetch_bytes_out: AtomicU64,
    pub wal_objects_uploaded: AtomicU64,
    pub wal_upload_failures: AtomicU64,
    pub wal_object_bytes: Histogram,
    pub wal_upload_seconds: Histogram,
    pub commit_seconds: Histogram,
    pub fetch_cache_hits: AtomicU64,
    pub fetch_cache_misses: AtomicU64,
    /// Per shard: objects uploading or waiting to commit, and bytes in the open buffer.
    pub wal_in_flight: Vec<AtomicU64>,
    pub wal_buffer_bytes: Vec<AtomicU64>,
    pub coordinator: Arc<CoordinatorMetrics>,
}

impl BrokerMetrics {
    pub fn new(shards: usize) -> BrokerMetrics {
        BrokerMetrics {
            requests: (0..API_KEYS).map(|_| AtomicU64::new(0)).collect(),
            request_seconds: (0..API_KEYS)
                .map(|_| Histogram::new(&LATENCY_BUCKETS_S))
                .collect(),
            produce_bytes_in: AtomicU64::new(0),
            fetch_bytes_out: AtomicU64::new(0),
            wal_objects_uploaded: AtomicU64::new(0),
            wal_upload_failures: AtomicU64::new(0),
            wal_object_bytes: Histogram::new(&SIZE_BUCKETS_BYTES),
            wal_upload_seconds: Histogram::new(&LATENCY_BUCKETS_S),
            commit_seconds: Histogram::new(&LATENCY_BUCKETS_S),
            fetch_cache_hits: AtomicU64::new(0),
            fetch_cache_misses: AtomicU64::new(0),
            wal_in_flight: (0..shards).map(|_| AtomicU64::new(0)).collect(),
            wal_buffer_bytes: (0..shards).map(|_| AtomicU64::new(0)).collect(),
            coordinator: Arc::new(CoordinatorMetrics::default()),
        }
    }

    pub fn count(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn set(gauge: &AtomicU64, value: u64) {
        gauge.store(value, Ordering::Relaxed);
    }

    pub fn request_done(&self, api_key: i16, elapsed: Duration) {
        if let Some(i) = slot_of(api_key) {
            self.requests[i].fetch_add(1, Ordering::Relaxed);
            self.request_seconds[i].observe_duration(elapsed);
        }
    }

    /// The Prometheus text exposition format (version 0.0.4).
    pub fn render(&self, api_name: impl Fn(i16) -> String) -> String {
        let mut out = String::with_capacity(16 << 10);
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        out.push_str("# TYPE shoal_requests_total counter\n");
        for (i, c) in self.requests.iter().enumerate() {
            let n = load(c);
            if n > 0 {
                let _ = writeln!(
                    out,
                    "shoal_requests_total{{api=\"{}\"}} {n}",
                    api_name(key_of(i))
                );
            }
        }
        out.push_str("# TYPE shoal_request_duration_seconds histogram\n");
        for (i, h) in self.request_seconds.iter().enumerate() {
            if load(&self.requests[i]) > 0 {
                let labels = format!("api=\"{}\"", api_name(key_of(i)));
                h.render(&mut out, "shoal_request_duration_seconds", &labels);
            }
        }
        let counters = [
            ("shoal_produce_bytes_in_total", &self.produce_bytes_in),
            ("shoal_fetch_bytes_out_total", &self.fetch_bytes_out),
            (
                "shoal_wal_objects_uploaded_total",
                &self.wal_objects_uploaded,
            ),
            ("shoal_wal_upload_failures_total", &self.wal_upload_failures),
            ("shoal_fetch_cache_hits_total", &self.fetch_cache_hits),
            ("shoal_fetch_cache_misses_total", &self.fetch_cache_misses),
            (
                "shoal_coordinator_log_syncs_total",
                &self.coordinator.log_syncs,
            ),
            (
                "shoal_coordinator_write_requests_total",
                &self.coordinator.write_requests,
            ),
            (
                "shoal_coordinator_read_requests_total",
                &self.coordinator.read_requests,
            ),
            (
                "shoal_coordinator_batches_committed_total",
                &self.coordinator.batches_committed,
            ),
            (
                "shoal_coordinator_snapshots_total",
                &self.coordinator.snapshots,
            ),
        ];
        for (name, counter) in counters {
            let _ = writeln!(out, "# TYPE {name} counter\n{name} {}", load(counter));
        }
        let hits = load(&self.fetch_cache_hits) as f64;
        let total = hits + load(&self.fetch_cache_misses) as f64;
        let ratio = if total > 0.0 { hits / total } else { 0.0 };
        let _ = writeln!(
            out,
            "# TYPE shoal_fetch_cache_hit_ratio gauge\nshoal_fetch_cache_hit_ratio {ratio}"
        );
        let histograms = [
            ("shoal_wal_object_bytes", &self.wal_object_bytes),
            (
                "shoal_wal_upload_duration_seconds",
                &self.wal_upload_seconds,
            ),
            ("shoal_commit_duration_seconds", &self.commit_seconds),
        ];
        for (name, h) in histograms {
            let _ = writeln!(out, "# TYPE {name} histogram");
            h.render(&mut out, name, "");
        }
        let gauges = [
            ("shoal_wal_objects_in_flight", &self.wal_in_flight),
            ("shoal_wal_buffer_bytes", &self.wal_buffer_bytes),
        ];
        for (name, per_shard) in gauges {
            let _ = writeln!(out, "# TYPE {name} gauge");
            for (shard, g) in per_shard.iter().enumerate() {
                let _ = writeln!(out, "{name}{{shard=\"{shard}\"}} {}", load(g));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_histograms_and_gauges() {
        let m = BrokerMetrics::new(2);
        m.request_done(0, Duration::from_millis(3));
        m.request_done(0, Duration::from_millis(30));
        BrokerMetrics::count(&m.produce_bytes_in, 100);
        BrokerMetrics::set(&m.wal_in_flight[1], 3);
        let text = m.render(|k| format!("key{k}"));
        assert!(text.contains("shoal_requests_total{api=\"key0\"} 2"));
        assert!(text.contains("shoal_request_duration_seconds_bucket{api=\"key0\",le=\"0.005\"} 1"));
        assert!(text.contains("shoal_request_duration_seconds_bucket{api=\"key0\",le=\"+Inf\"} 2"));
        assert!(text.contains("shoal_produce_bytes_in_total 100"));
        assert!(text.contains("shoal_wal_objects_in_flight{shard=\"1\"} 3"));
        assert!(!text.contains("key1"), "APIs never called are left out");
    }
}
