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

/// The most windows a rate keeps (`window_num` is checked against it).
pub const MAX_WINDOWS: usize = 64;

/// How windows are laid out: their count and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Windows {
    pub count: usize,
    pub size_ms: u64,
}

impl Windows {
    /// The longest a client is throttled for at once: every window's span.
    pub fn span_ms(&self) -> u64 {
        self.count as u64 * self.size_ms
    }
}

impl QuotasConfig {
    pub fn windows(&self) -> Windows {
        Windows {
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
