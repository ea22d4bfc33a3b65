//! `[log]`: how the broker writes its log, and what a log filter is.

use serde::{Deserialize, Serialize};
use tracing_subscriber::EnvFilter;

/// `[log]`: how the broker writes its log (to standard output).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// `text` (coloured only on a terminal) or `json` (one object a line).
    pub format: LogFormat,
    /// A filter in RUST_LOG's syntax (`info`, `warn,shoal=debug`); RUST_LOG, when set, wins,
    /// and the dynamic broker config `log.level` changes it at run time. Unset: `info`.
    pub level: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// `directives` as a filter (RUST_LOG's syntax), or why they are not one.
pub fn parse_filter(directives: &str) -> Result<EnvFilter, String> {
    EnvFilter::try_new(directives).map_err(|e| format!("'{directives}' is not a log filter: {e}"))
}
