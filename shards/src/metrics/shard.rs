//! One shard's metrics and a scrape's sum of them. Each shard counts into its own `ShardMetrics`
//! (only its executor touches them); a scrape asks every shard for a snapshot, merges them and
//! renders the Prometheus text format through the families of `tables.rs`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Duration;

use shoal_coordinator::CoordinatorMetrics;

use super::instruments::{Counter, Histogram, HistogramSnapshot, LATENCY_BUCKETS_S};
use super::rewrites::PartitionRewrites;
use super::tables::{
    CounterCopies, GaugeCopies, HistogramCopies, ShardCounters, ShardGauges, ShardHistograms,
    COORDINATOR, FETCH_CACHE_HIT_RATIO, PARTITION_REWRITES, REQUESTS, REQUEST_DURATION,
    STORE_REQUESTS,
};

/// Kafka's API keys are below 128; Shoal's own (the mirror APIs from 1000, the Diskless APIs
/// from 1093) take the slots after them.
const API_KEYS: usize = KAFKA_KEYS + SHOAL_KEYS;
const KAFKA_KEYS: usize = 128;
const SHOAL_KEYS: usize = 128;
const SHOAL_KEY_BASE: i16 = 1000;

fn slot_of(api_key: i16) -> Option<usize> {
    match api_key {
        0..=127 => Some(api_key as usize),
        k if (SHOAL_KEY_BASE..SHOAL_KEY_BASE + SHOAL_KEYS as i16).contains(&k) => {
            Some(KAFKA_KEYS + (k - SHOAL_KEY_BASE) as usize)
        }
        _ => None,
    }
}

fn key_of(slot: usize) -> i16 {
    if slot < KAFKA_KEYS {
        slot as i16
    } else {
        SHOAL_KEY_BASE + (slot - KAFKA_KEYS) as i16
    }
}

/// One shard's counters; only its own executor touches them.
pub struct ShardMetrics {
    pub shard: usize,
    requests: Vec<Counter>,
    request_seconds: Vec<Histogram>,
    pub counters: ShardCounters,
    pub histograms: ShardHistograms,
    pub gauges: ShardGauges,
    /// What rewriting did to each partition this shard rewrote, by (topic, partition).
    pub partition_rewrites: RefCell<BTreeMap<(String, i32), PartitionRewrites>>,
}

impl ShardMetrics {
    pub fn new(shard: usize) -> ShardMetrics {
        ShardMetrics {
            shard,
            requests: (0..API_KEYS).map(|_| Counter::default()).collect(),
            request_seconds: (0..API_KEYS)
                .map(|_| Histogram::new(&LATENCY_BUCKETS_S))
                .collect(),
            counters: ShardCounters::default(),
            histograms: ShardHistograms::default(),
            gauges: ShardGauges::default(),
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
            counters: self.counters.copy(),
            histograms: self.histograms.copy(),
            gauges: vec![(self.shard, self.gauges.copy())],
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

/// The values of one or more shards, summed; what a scrape renders.
#[derive(Debug, Clone)]
pub struct MetricsSnapshot {
    requests: Vec<u64>,
    request_seconds: Vec<HistogramSnapshot>,
    counters: CounterCopies,
    histograms: HistogramCopies,
    /// Each shard's gauges, by shard index.
    gauges: Vec<(usize, GaugeCopies)>,
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
        self.counters.merge(&other.counters);
        self.histograms.merge(&other.histograms);
        self.gauges.extend_from_slice(&other.gauges);
        self.gauges.sort_by_key(|(shard, _)| *shard);
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
        self.render_requests(&mut out, api_name);
        for (family, value) in ShardCounters::FAMILIES.iter().zip(self.counters.values()) {
            family.header(&mut out);
            family.sample(&mut out, &[], value);
        }
        let (hits, misses) = (
            self.counters.fetch_cache_hits,
            self.counters.fetch_cache_misses,
        );
        let ratio = match hits + misses {
            0 => 0.0,
            total => hits as f64 / total as f64,
        };
        FETCH_CACHE_HIT_RATIO.header(&mut out);
        FETCH_CACHE_HIT_RATIO.sample(&mut out, &[], ratio);
        for (family, histogram) in ShardHistograms::FAMILIES
            .iter()
            .zip(self.histograms.values())
        {
            family.header(&mut out);
            histogram.render(&mut out, family, &[]);
        }
        for (i, family) in ShardGauges::FAMILIES.iter().enumerate() {
            family.header(&mut out);
            for (shard, gauges) in &self.gauges {
                family.sample(&mut out, &[shard], gauges.values()[i]);
            }
        }
        for (family, value) in &PARTITION_REWRITES {
            family.header(&mut out);
            for ((topic, partition), rewrites) in &self.partition_rewrites {
                family.sample(&mut out, &[topic, partition], value(rewrites));
            }
        }
        STORE_REQUESTS.header(&mut out);
        for ((operation, outcome), n) in &self.store_requests {
            STORE_REQUESTS.sample(&mut out, &[operation, outcome], n);
        }
        for (family, counter) in &COORDINATOR {
            family.header(&mut out);
            family.sample(&mut out, &[], CoordinatorMetrics::get(counter(coordinator)));
        }
        out
    }

    /// Requests and their durations, for each API called at least once.
    fn render_requests(&self, out: &mut String, api_name: impl Fn(i16) -> String) {
        let called: Vec<(usize, String)> = (0..self.requests.len())
            .filter(|i| self.requests[*i] > 0)
            .map(|i| (i, api_name(key_of(i))))
            .collect();
        REQUESTS.header(out);
        for (i, api) in &called {
            REQUESTS.sample(out, &[api], self.requests[*i]);
        }
        REQUEST_DURATION.header(out);
        for (i, api) in &called {
            self.request_seconds[*i].render(out, &REQUEST_DURATION, &[api]);
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
        a.counters.produce_bytes_in.add(100);
        b.counters.produce_bytes_in.add(20);
        b.gauges.wal_in_flight.set(3);
        let mut sum = a.snapshot();
        sum.merge(&b.snapshot());
        let text = sum.render(|k| format!("key{k}"), &CoordinatorMetrics::default());
        assert!(text.contains("shoal_requests_total{api=\"key0\"} 2"));
        assert!(text.contains("shoal_request_duration_seconds_bucket{api=\"key0\",le=\"0.005\"} 1"));
        assert!(text.contains("shoal_request_duration_seconds_bucket{api=\"key0\",le=\"+Inf\"} 2"));
        assert!(text.contains("shoal_request_duration_seconds_count{api=\"key0\"} 2"));
        assert!(text.contains("shoal_produce_bytes_in_total 120"));
        assert!(text.contains("shoal_wal_objects_in_flight{shard=\"0\"} 0"));
        assert!(text.contains("shoal_wal_objects_in_flight{shard=\"1\"} 3"));
        assert!(!text.contains("key1"), "APIs never called are left out");
    }

    #[test]
    fn shoal_own_api_keys_are_counted_under_their_keys() {
        let metrics = ShardMetrics::new(0);
        for key in [1004, 1095, 1100] {
            metrics.request_done(key, Duration::from_millis(1));
        }
        metrics.request_done(5000, Duration::from_millis(1));
        let text = metrics
            .snapshot()
            .render(|k| format!("key{k}"), &CoordinatorMetrics::default());
        for key in ["key1004", "key1095", "key1100"] {
            assert!(text.contains(&format!("shoal_requests_total{{api=\"{key}\"}} 1")));
        }
        assert!(
            !text.contains("key5000"),
            "a key outside every range has no slot"
        );
    }
}
