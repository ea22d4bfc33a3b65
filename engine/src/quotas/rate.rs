//! A client's usage as Kafka's quota sensors measure it: a sum over the last `quota.window.num`
//! windows of `quota.window.size.seconds`, divided by the time they span. Each shard counts
//! into its own slots (no other shard writes them); a rate sums every shard's, so a client
//! spreading its connections over shards is held to one quota.
//!
//! One difference from Kafka, on purpose: Kafka measures a new client over at least all but
//! one window, which lets it send ten seconds' worth of its quota at once and then, as that
//! window expires, most of it again (a client held to 1 MB/s averages 1.1–1.14 MB/s over its
//! first 20 s). Here a new client is measured over the time since its first request, at least
//! one window, so it averages its quota from the start.

use std::sync::atomic::{AtomicU64, Ordering};

pub use shoal_config::quotas::{Windows, MAX_WINDOWS};

/// One window of one shard: which window it counts (its number since the clock's start)
/// and what was recorded in it.
#[derive(Default)]
struct Sample {
    window: AtomicU64,
    value: AtomicU64,
}

/// One shard's windows, on cache lines of their own so shards do not contend.
#[repr(align(128))]
struct ShardSamples {
    samples: Box<[Sample]>,
}

pub struct WindowedRate {
    windows: Windows,
    /// When the first value was recorded, in ms of the board's clock (+1; 0: never).
    started_ms: AtomicU64,
    /// The last time anything was recorded (ms of the board's clock, +1; 0: never).
    last_recorded_ms: AtomicU64,
    shards: Box<[ShardSamples]>,
}

impl WindowedRate {
    pub fn new(windows: Windows, shards: usize) -> WindowedRate {
        assert!((1..=MAX_WINDOWS).contains(&windows.count) && windows.size_ms > 0);
        let shards = (0..shards.max(1))
            .map(|_| ShardSamples {
                samples: (0..windows.count).map(|_| Sample::default()).collect(),
            })
            .collect();
        WindowedRate {
            windows,
            started_ms: AtomicU64::new(0),
            last_recorded_ms: AtomicU64::new(0),
            shards,
        }
    }

    /// Adds `value` at `now_ms`, counted by `shard` (the one shard that writes its slots).
    pub fn record(&self, shard: usize, now_ms: u64, value: u64) {
        let _ =
            self.started_ms
                .compare_exchange(0, now_ms + 1, Ordering::Relaxed, Ordering::Relaxed);
        self.last_recorded_ms.store(now_ms + 1, Ordering::Relaxed);
        let sample = self.current(shard, now_ms);
        sample.value.fetch_add(value, Ordering::Relaxed);
    }

    /// Takes back a value recorded in this window (a fetch answered without its records).
    pub fn unrecord(&self, shard: usize, now_ms: u64, value: u64) {
        let sample = self.current(shard, now_ms);
        let kept = sample.value.load(Ordering::Relaxed).saturating_sub(value);
        sample.value.store(kept, Ordering::Relaxed);
    }

    /// `shard`'s sample for the window holding `now_ms`, emptied if it held an older window.
    fn current(&self, shard: usize, now_ms: u64) -> &Sample {
        let window = now_ms / self.windows.size_ms;
        let samples = &self.shards[shard % self.shards.len()].samples;
        let sample = &samples[(window % self.windows.count as u64) as usize];
        if sample.window.load(Ordering::Relaxed) != window {
            sample.value.store(0, Ordering::Relaxed);
            sample.window.store(window, Ordering::Relaxed);
        }
        sample
    }

    /// What every shard recorded in the windows that are not yet out of date at `now_ms`.
    pub fn total(&self, now_ms: u64) -> u64 {
        let window = now_ms / self.windows.size_ms;
        let oldest = (window + 1).saturating_sub(self.windows.count as u64);
        let mut total = 0u64;
        for shard in self.shards.iter() {
            for sample in shard.samples.iter() {
                let w = sample.window.load(Ordering::Relaxed);
                if (oldest..=window).contains(&w) {
                    total = total.saturating_add(sample.value.load(Ordering::Relaxed));
                }
            }
        }
        total
    }

    /// The time the rate is measured over at `now_ms` (Kafka's `Rate.windowSize`): from the
    /// start of the oldest window still counted (or the first record, if later), lengthened to
    /// at least one whole window.
    pub fn elapsed_ms(&self, now_ms: u64) -> u64 {
        let size = self.windows.size_ms;
        let window = now_ms / size;
        let oldest_window_ms = (window + 1).saturating_sub(self.windows.count as u64) * size;
        let started_ms = self.started_ms.load(Ordering::Relaxed).saturating_sub(1);
        let elapsed = now_ms - oldest_window_ms.max(started_ms.min(now_ms));
        match elapsed < size {
            true => elapsed + size,
            false => elapsed,
        }
    }

    /// The rate per second at `now_ms`.
    pub fn per_second(&self, now_ms: u64) -> f64 {
        let elapsed = self.elapsed_ms(now_ms).max(1) as f64;
        self.total(now_ms) as f64 * 1000.0 / elapsed
    }

    /// How long a client over `quota` (per second) waits so that its rate falls back to it,
    /// as Kafka computes it ((rate − quota) / quota × the time measured over), at most one
    /// span of every window; 0 when within it.
    pub fn throttle_ms(&self, now_ms: u64, quota: f64) -> u64 {
        let rate = self.per_second(now_ms);
        if rate <= quota || quota <= 0.0 {
            return 0;
        }
        let elapsed = self.elapsed_ms(now_ms) as f64;
        let wait = ((rate - quota) / quota * elapsed).round() as u64;
        wait.min(self.windows.span_ms())
    }

    /// Idle since before every window counted now: nothing recorded would count any more.
    pub fn idle(&self, now_ms: u64) -> bool {
        match self.last_recorded_ms.load(Ordering::Relaxed) {
            0 => true,
            last => now_ms.saturating_sub(last - 1) > self.windows.span_ms(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KAFKA: Windows = Windows {
        count: 11,
        size_ms: 1000,
    };

    #[test]
    fn a_new_client_is_measured_from_its_first_request() {
        let rate = WindowedRate::new(KAFKA, 1);
        rate.record(0, 500, 1_000);
        // At its first request the rate is over one window, not over an instant.
        assert_eq!(rate.elapsed_ms(500), 1_000);
        assert_eq!(rate.per_second(500), 1_000.0);
        assert_eq!(rate.throttle_ms(500, 1_000.0), 0);
        // 10 000 bytes over 1.1 s against 1 000/s: waiting until 10 s have passed brings it
        // back to 1 000/s.
        rate.record(0, 600, 9_000);
        assert_eq!(rate.throttle_ms(600, 1_000.0), 8_900);
        assert_eq!(rate.elapsed_ms(2_500), 2_000);
    }

    #[test]
    fn old_windows_stop_counting() {
        let rate = WindowedRate::new(KAFKA, 1);
        rate.record(0, 0, 5_000);
        rate.record(0, 3_500, 1_000);
        assert_eq!(rate.total(10_999), 6_000);
        // At 11 s the window of 0 s is out of date; the one of 3 s still counts.
        assert_eq!(rate.total(11_000), 1_000);
        assert_eq!(rate.elapsed_ms(11_000), 10_000);
        // Reusing the first window's slot starts it empty.
        rate.record(0, 11_000, 7);
        assert_eq!(rate.total(11_000), 1_007);
        assert!(!rate.idle(22_000) && rate.idle(22_001));
    }

    #[test]
    fn every_shard_counts_toward_one_rate() {
        let rate = WindowedRate::new(KAFKA, 4);
        for shard in 0..4 {
            rate.record(shard, 100 * shard as u64, 2_500);
        }
        assert_eq!(rate.total(400), 10_000);
        rate.unrecord(2, 400, 2_500);
        assert_eq!(rate.total(400), 7_500);
    }

    #[test]
    fn throttling_is_bounded_by_the_windows_span() {
        let rate = WindowedRate::new(KAFKA, 1);
        rate.record(0, 0, u64::MAX / 2);
        assert_eq!(rate.throttle_ms(0, 1.0), KAFKA.span_ms());
    }

    #[test]
    fn a_client_held_to_its_throttles_averages_its_quota() {
        // A client on two shards that sends 100 KB whenever it is not throttled, against
        // 1 MB/s: over its first 20 s, and over a minute (past the first windows' expiry).
        let (quota, request) = (1_000_000.0, 100_000);
        for seconds in [20, 60] {
            let rate = WindowedRate::new(KAFKA, 2);
            let (mut now, mut sent, mut shard) = (0u64, 0u64, 0);
            while now < seconds * 1000 {
                rate.record(shard, now, request);
                sent += request;
                shard ^= 1;
                now += rate.throttle_ms(now, quota).max(1);
            }
            let average = sent as f64 / seconds as f64;
            assert!(
                (0.98..1.02).contains(&(average / quota)),
                "{average} bytes/s over {seconds} s"
            );
        }
    }
}
