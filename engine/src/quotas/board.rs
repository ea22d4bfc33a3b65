//! Every shard's one place to find a client's rates: a rate per quota kind and measured
//! identity (`QuotaKey`), shared by the shards so that one client's connections count
//! together. Looked up once per connection and quota (then cached until the quotas change),
//! never per request; rates nobody holds and that would count nothing are dropped as new
//! ones arrive, so the table is bounded by the live connections.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use shoal_coordinator::client_quotas::QuotaKey;

use super::rate::{WindowedRate, Windows};

/// The quotas a client's usage is measured against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuotaKind {
    /// Produce request bytes per second.
    Produce,
    /// Fetch response bytes per second.
    Fetch,
    /// Request handling time, in percent of one core.
    Request,
    /// Partitions created or deleted per second (KIP-599).
    Mutation,
}

impl QuotaKind {
    pub const COUNT: usize = 4;

    /// The quota's name in AlterClientQuotas and kafka-configs.
    pub fn key(self) -> &'static str {
        match self {
            QuotaKind::Produce => "producer_byte_rate",
            QuotaKind::Fetch => "consumer_byte_rate",
            QuotaKind::Request => "request_percentage",
            QuotaKind::Mutation => "controller_mutation_rate",
        }
    }

    /// What one recorded unit is worth against the quota: request time is recorded in
    /// nanoseconds, and a quota of 100 is one core's whole second.
    pub fn quota_units(self, quota: f64) -> f64 {
        match self {
            QuotaKind::Produce | QuotaKind::Fetch | QuotaKind::Mutation => quota,
            QuotaKind::Request => quota * 1e7,
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

pub struct QuotaBoard {
    windows: Windows,
    shards: usize,
    clock: Instant,
    rates: Mutex<Rates>,
}

#[derive(Default)]
struct Rates {
    by_key: HashMap<(QuotaKind, QuotaKey), Arc<WindowedRate>>,
    /// The table's size after it was last pruned; it is pruned again at twice that.
    pruned_at: usize,
}

impl QuotaBoard {
    pub fn new(windows: Windows, shards: usize) -> Arc<QuotaBoard> {
        Arc::new(QuotaBoard {
            windows,
            shards,
            clock: Instant::now(),
            rates: Mutex::new(Rates::default()),
        })
    }

    /// Milliseconds of the board's clock (the time every rate is recorded at).
    pub fn now_ms(&self) -> u64 {
        self.clock.elapsed().as_millis() as u64
    }

    /// The rate of `kind` measured for `key`, made on first use.
    pub fn rate(&self, kind: QuotaKind, key: &QuotaKey) -> Arc<WindowedRate> {
        let mut rates = self.rates.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(rate) = rates.by_key.get(&(kind, key.clone())) {
            return rate.clone();
        }
        if rates.by_key.len() >= rates.pruned_at.max(64) * 2 {
            let now_ms = self.now_ms();
            rates
                .by_key
                .retain(|_, rate| Arc::strong_count(rate) > 1 || !rate.idle(now_ms));
            rates.pruned_at = rates.by_key.len();
        }
        let rate = Arc::new(WindowedRate::new(self.windows, self.shards));
        rates.by_key.insert((kind, key.clone()), rate.clone());
        rate
    }

    pub fn windows(&self) -> Windows {
        self.windows
    }

    #[cfg(test)]
    fn tracked(&self) -> usize {
        self.rates.lock().unwrap().by_key.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(client: &str) -> QuotaKey {
        QuotaKey {
            user: None,
            client_id: Some(client.to_string()),
        }
    }

    #[test]
    fn one_rate_per_kind_and_identity() {
        let board = QuotaBoard::new(
            Windows {
                count: 11,
                size_ms: 1000,
            },
            2,
        );
        let a = board.rate(QuotaKind::Produce, &key("a"));
        assert!(Arc::ptr_eq(&a, &board.rate(QuotaKind::Produce, &key("a"))));
        assert!(!Arc::ptr_eq(&a, &board.rate(QuotaKind::Fetch, &key("a"))));
        assert!(!Arc::ptr_eq(&a, &board.rate(QuotaKind::Produce, &key("b"))));
    }

    #[test]
    fn unheld_rates_that_count_nothing_are_dropped() {
        let board = QuotaBoard::new(
            Windows {
                count: 1,
                size_ms: 1,
            },
            1,
        );
        let held = board.rate(QuotaKind::Produce, &key("held"));
        for i in 0..10_000 {
            board.rate(QuotaKind::Produce, &key(&i.to_string()));
        }
        // Each new client found the others idle (never recorded) and unheld.
        assert!(board.tracked() < 300, "{}", board.tracked());
        assert!(Arc::ptr_eq(
            &held,
            &board.rate(QuotaKind::Produce, &key("held"))
        ));
    }
}
