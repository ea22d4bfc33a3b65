use thiserror::Error;

/// Every failure the broker binary reports.
#[derive(Debug, Error)]
pub enum EngineError {
    #[error("configuration: {0}")]
    Config(String),
    /// Another process owns what this broker needs (its data directory, its port).
    #[error("refusing to start: {0}")]
    InUse(String),
    /// `[iceberg]` names something the table writer cannot work with.
    #[error("configuration: {0}")]
    TableWriter(#[from] shoal_iceberg_writer::WriterError),
    #[error(transparent)]
    Shards(#[from] shoal_shards::ShardError),
    #[error(transparent)]
    Protocol(#[from] shoal_protocol::ProtocolError),
    #[error("malformed request: {0}")]
    MalformedRequest(String),
    #[error("cannot encode response: {0}")]
    Encode(String),
    #[error(transparent)]
    MirrorSource(#[from] shoal_mirror_fetcher::FetchError),
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
}

impl From<shoal_config::ConfigError> for EngineError {
    fn from(error: shoal_config::ConfigError) -> Self {
        EngineError::Config(error.0)
    }
}

impl From<shoal_cluster::MembershipError> for EngineError {
    fn from(error: shoal_cluster::MembershipError) -> Self {
        EngineError::Config(error.0)
    }
}
