//! What became of each request to the object store, counted by operation and outcome, for
//! the metrics endpoint: the request bill by kind, and errors, timeouts and throttling.

use std::cell::RefCell;
use std::collections::BTreeMap;

use crate::WalError;

/// Counts by (operation, outcome); one executor's client touches them.
#[derive(Default)]
pub struct RequestOutcomes {
    counts: RefCell<BTreeMap<(&'static str, &'static str), u64>>,
}

impl RequestOutcomes {
    /// Counts one request: answered with `status`, or failed with `error`.
    pub fn record(&self, op: &'static str, result: Result<u16, &WalError>) {
        let outcome = match result {
            Ok(200..=399) => "ok",
            Ok(404) => "not_found",
            Ok(429 | 503) => "throttled",
            Ok(400..=499) => "client_error",
            Ok(_) => "server_error",
            Err(WalError::Timeout(_)) => "timeout",
            Err(_) => "transport",
        };
        *self.counts.borrow_mut().entry((op, outcome)).or_default() += 1;
    }

    pub fn snapshot(&self) -> Vec<((&'static str, &'static str), u64)> {
        self.counts.borrow().iter().map(|(k, v)| (*k, *v)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_failures_fall_into_outcomes() {
        let outcomes = RequestOutcomes::default();
        for status in [200, 206, 404, 503, 429, 403, 500] {
            outcomes.record("GetObject", Ok(status));
        }
        outcomes.record("PutObject", Err(&WalError::Timeout("PutObject")));
        let counts: BTreeMap<_, _> = outcomes.snapshot().into_iter().collect();
        assert_eq!(counts[&("GetObject", "ok")], 2);
        assert_eq!(counts[&("GetObject", "throttled")], 2);
        assert_eq!(counts[&("GetObject", "not_found")], 1);
        assert_eq!(counts[&("GetObject", "client_error")], 1);
        assert_eq!(counts[&("GetObject", "server_error")], 1);
        assert_eq!(counts[&("PutObject", "timeout")], 1);
    }
}
