use thiserror::Error;

/// A configuration the broker cannot run with, and why.
#[derive(Debug, Error)]
#[error("configuration: {0}")]
pub struct ConfigError(pub String);
