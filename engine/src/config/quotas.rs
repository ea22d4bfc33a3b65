//! `[quotas]`: how client quotas are measured.

use serde::{Deserialize, Serialize};

/// How client quotas are measured (Kafka's `quota.window.*`): a client's rate is what it did
/// in the last `window_num` windows of `window_size_seconds`, and it is throttled for at
/// most their span.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct QuotasConfig {
    pub window_num: usize,
    pub window_size_seconds: u64,
}

impl QuotasConfig {
    pub fn windows(&self) -> crate::quotas::Windows {
        crate::quotas::Windows {
            count: self.window_num,
            size_ms: self.window_size_seconds * 1000,
        }
    }
}

impl Default for QuotasConfig {
    fn default() -> Self {
        QuotasConfig {
            window_num: 11,
            window_size_seconds: 1,
        }
    }
}
