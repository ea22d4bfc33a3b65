//! The values a shard counts into: plain cells, never shared between threads, so counting costs
//! an add and no cache line moves between cores. A scrape copies them (`HistogramSnapshot` for a
//! histogram) and sums the copies of every shard.

use std::cell::Cell;
use std::fmt::Display;
use std::time::Duration;

use super::family::Family;

/// Upper bounds of the latency buckets, in seconds (100 µs to 10 s).
pub const LATENCY_BUCKETS_S: [f64; 14] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 10.0,
];
/// Upper bounds of the object size buckets, in bytes (64 KiB to 64 MiB).
pub const SIZE_BUCKETS_BYTES: [f64; 7] = [
    65536.0, 262144.0, 1048576.0, 4194304.0, 8388608.0, 16777216.0, 67108864.0,
];

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

pub struct Histogram {
    bounds: &'static [f64],
    buckets: Vec<Cell<u64>>,
    count: Cell<u64>,
    /// In millionths of the unit, so the sum stays an integer.
    sum_micros: Cell<u64>,
}

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Histogram {
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

    pub fn snapshot(&self) -> HistogramSnapshot {
        HistogramSnapshot {
            bounds: self.bounds,
            buckets: self.buckets.iter().map(Cell::get).collect(),
            count: self.count.get(),
            sum_micros: self.sum_micros.get(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct HistogramSnapshot {
    bounds: &'static [f64],
    buckets: Vec<u64>,
    count: u64,
    sum_micros: u64,
}

impl HistogramSnapshot {
    pub fn merge(&mut self, other: &HistogramSnapshot) {
        debug_assert_eq!(self.bounds, other.bounds);
        for (mine, theirs) in self.buckets.iter_mut().zip(&other.buckets) {
            *mine += theirs;
        }
        self.count += other.count;
        self.sum_micros = self.sum_micros.wrapping_add(other.sum_micros);
    }

    /// The cumulative `_bucket` series, then `_sum` and `_count`, of one series of `family`.
    pub fn render(&self, out: &mut String, family: &Family, label_values: &[&dyn Display]) {
        let mut cumulative = 0;
        for (bound, bucket) in self.bounds.iter().zip(&self.buckets) {
            cumulative += bucket;
            family.series(out, "_bucket", label_values, Some(bound), cumulative);
        }
        family.series(out, "_bucket", label_values, Some(&"+Inf"), self.count);
        let sum = self.sum_micros as f64 / 1e6;
        family.series(out, "_sum", label_values, None, sum);
        family.series(out, "_count", label_values, None, self.count);
    }
}
