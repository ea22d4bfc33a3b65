//! Counters shared by the worker threads, the live progress line, and latency histograms.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

#[derive(Default)]
pub struct LiveStats {
    pub records: AtomicU64,
    pub bytes: AtomicU64,
    pub errors: AtomicU64,
    /// The Kafka error code of the latest failure, for the report.
    pub last_error_code: std::sync::atomic::AtomicI32,
}

impl LiveStats {
    pub fn add(&self, records: u64, bytes: u64) {
        self.records.fetch_add(records, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }
}

/// Latencies in microseconds, up to an hour.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds")
}

/// Merges per-thread histograms at the end of a run.
pub type SharedHistogram = Arc<Mutex<Histogram<u64>>>;

/// Prints one line per second until `stop` says so.
pub fn progress(
    label: &'static str,
    stats: Arc<LiveStats>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) {
    std::thread::spawn(move || {
        let started = Instant::now();
        let (mut last_records, mut last_bytes) = (0, 0);
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_secs(1));
            let records = stats.records.load(Ordering::Relaxed);
            let bytes = stats.bytes.load(Ordering::Relaxed);
            eprintln!(
                "[{label} {:>4.0}s] {:>10} rec/s {:>8.1} MB/s errors {}",
                started.elapsed().as_secs_f64(),
                records - last_records,
                (bytes - last_bytes) as f64 / 1e6,
                stats.errors.load(Ordering::Relaxed)
            );
            last_records = records;
            last_bytes = bytes;
        }
    });
}

pub fn percentiles(h: &Histogram<u64>) -> serde_json::Value {
    let ms = |v: u64| (v as f64 / 1000.0 * 1000.0).round() / 1000.0;
    serde_json::json!({
        "count": h.len(),
        "p50": ms(h.value_at_quantile(0.5)),
        "p90": ms(h.value_at_quantile(0.9)),
        "p99": ms(h.value_at_quantile(0.99)),
        "p999": ms(h.value_at_quantile(0.999)),
        "max": ms(h.max()),
    })
}
