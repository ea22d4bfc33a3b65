use thiserror::Error;

/// What goes wrong talking to a mirror's source, or storing what it sent.
#[derive(Debug, Error)]
pub enum FetchError {
    #[error("mirror source: {0}")]
    Source(String),
    /// The source (address) closed the connection or failed mid-answer.
    #[error("mirror source: {0}: no answer: {1}")]
    SourceClosed(String, String),
    /// The source (address) answered with bytes that do not decode as the response.
    #[error("mirror source: {0}: answer not understood: {1}")]
    SourceUndecodable(String, String),
    #[error("cannot encode a request to the source: {0}")]
    Encode(String),
}
