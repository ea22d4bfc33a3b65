//! What a handler's call knows of the client's quotas: the throttle its answer carries, the
//! handling time it is charged, and the fetch bytes it may send.

use std::time::{Duration, Instant};

use crate::context::Call;
use crate::quotas::{extend, QuotaKind};

impl Call<'_> {
    /// The client is to wait `ms` before its next request: the answer says so and the
    /// connection is not read from meanwhile.
    pub fn throttle(&self, ms: u64) {
        // Throttles come only from a connection's quotas.
        let Some(until) = self.client.quotas.as_ref().and_then(|q| q.mute(ms)) else {
            return;
        };
        extend(&self.throttled_until, until);
    }

    /// What is left of the client's throttle (ms): an answer sent after a wait (a produce
    /// waits for its commit) tells only the rest, so the client's own wait (KIP-219) ends
    /// when its connection is read from again.
    pub fn throttle_left_ms(&self) -> u64 {
        self.throttled_until.get().map_or(0, |until| {
            until.saturating_duration_since(Instant::now()).as_millis() as u64
        })
    }

    /// Whether this request's handling time counts toward a `request_percentage` quota.
    pub fn measures_request_time(&self) -> bool {
        !self.request_quota_exempt
            && self
                .client
                .quotas
                .as_ref()
                .is_some_and(|q| q.limited(QuotaKind::Request, &self.client.id))
    }

    /// Charges the time the handler ran to the client's `request_percentage`.
    pub fn charge_request_time(&self, busy: Duration) {
        if let Some(quotas) = &self.client.quotas {
            let nanos = u64::try_from(busy.as_nanos()).unwrap_or(u64::MAX);
            self.throttle(quotas.record(QuotaKind::Request, &self.client.id, nanos));
        }
    }

    /// Whether `partitions` may be created or deleted under the client's
    /// `controller_mutation_rate` (KIP-599). From the versions that can carry
    /// THROTTLING_QUOTA_EXCEEDED (`strict`), a client already over its quota is refused;
    /// older ones are always let through. Either way what is done is counted and throttled.
    pub fn mutation_within_quota(&self, partitions: u64, strict: bool) -> bool {
        let Some(quotas) = &self.client.quotas else {
            return true;
        };
        let id = &self.client.id;
        let over_ms = quotas.throttle_ms(QuotaKind::Mutation, id);
        if strict && over_ms > 0 {
            self.throttle(over_ms);
            return false;
        }
        self.throttle(quotas.record(QuotaKind::Mutation, id, partitions));
        true
    }

    /// The most a fetch answer may carry under the client's `consumer_byte_rate`.
    pub fn fetch_quota_bytes(&self) -> Option<u64> {
        let quotas = self.client.quotas.as_ref()?;
        quotas.most_per_answer(QuotaKind::Fetch, &self.client.id)
    }

    /// Counts a fetch answer of `bytes` toward the client's `consumer_byte_rate`: true if it
    /// may be sent; false if the client is over its quota, and is to be answered with nothing
    /// (the bytes are not counted) after waiting the throttle time, as Kafka does.
    pub fn fetch_within_quota(&self, bytes: u64) -> bool {
        let Some(quotas) = &self.client.quotas else {
            return true;
        };
        let throttle_ms = quotas.record(QuotaKind::Fetch, &self.client.id, bytes);
        if throttle_ms == 0 {
            return true;
        }
        quotas.unrecord(QuotaKind::Fetch, &self.client.id, bytes);
        self.throttle(throttle_ms);
        false
    }
}
