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
    #[error("mirror source: {0}")]
    Source(String),
    /// The source (address) closed the connection or failed mid-answer.
    #[error("mirror source: {0}: no answer: {1}")]
    SourceClosed(String, String),
    /// The source (address) answered with bytes that do not decode as the response.
    #[error("mirror source: {0}: answer not understood: {1}")]
    SourceUndecodable(String, String),
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
}
