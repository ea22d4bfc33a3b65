use thiserror::Error;

/// Every failure this crate reports.
#[derive(Debug, Error)]
pub enum NetError {
    /// A TLS setting that cannot be used; the message names the file where one is at fault.
    #[error("{0}")]
    Config(String),
    /// An HTTP request that failed; the message names the URL.
    #[error("{0}")]
    Http(String),
}
