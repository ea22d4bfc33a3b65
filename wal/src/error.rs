use thiserror::Error;

/// Every failure this crate reports.
#[derive(Debug, Error)]
pub enum WalError {
    #[error("record batch too short: {0} bytes")]
    BatchTooShort(usize),
    #[error("record batch declares {declared} bytes but {available} are present")]
    BatchLengthMismatch { declared: usize, available: usize },
    #[error("unsupported record batch magic {0} (only magic 2 is accepted)")]
    UnsupportedMagic(i8),
    #[error("record batch CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    CrcMismatch { stored: u32, computed: u32 },
    #[error("record batch declares {0} records")]
    InvalidRecordCount(i32),
    #[error("invalid records: {0}")]
    InvalidRecords(String),
    /// One record of the batch, by its index in it, is at fault.
    #[error("invalid record {index}: {what}")]
    InvalidRecord { index: i32, what: String },
    #[error("record {index}'s timestamp {timestamp} is negative")]
    InvalidTimestamp { index: i32, timestamp: i64 },
    #[error("unknown compression codec {0}")]
    UnknownCodec(i16),
    #[error("compressed records do not inflate: {0}")]
    CorruptCompression(String),
    #[error("object of {0} bytes exceeds the 2 GiB object limit")]
    ObjectTooLarge(usize),
    #[error("object {key} is shorter than the requested range {offset}+{len}")]
    ShortObject {
        key: String,
        offset: u64,
        len: usize,
    },
    #[error(
        "object store write to {key} stopped short: {written} of {wanted} bytes at offset \
         {offset} (is the disk full?)"
    )]
    ShortWrite {
        key: String,
        offset: u64,
        wanted: usize,
        written: usize,
    },
    #[error("object {key} holds {found} bytes after writing {expected}")]
    SizeMismatch {
        key: String,
        expected: u64,
        found: u64,
    },
    #[error("object {0} not found")]
    NotFound(String),
    #[error("{op}: the object store answered HTTP {status}: {message}")]
    Http {
        op: &'static str,
        status: u16,
        message: String,
    },
    #[error("{0}: the object store did not answer in time")]
    Timeout(&'static str),
    #[error("{op}: {message}")]
    Transport {
        op: &'static str,
        message: String,
        /// A reset or refused connection, not a refused TLS certificate.
        transient: bool,
    },
    #[error("object store unreachable: {0}")]
    Unreachable(String),
    #[error("object store configuration: {0}")]
    Config(String),
    #[error("object store I/O on {key}: {source}")]
    Io {
        key: String,
        #[source]
        source: std::io::Error,
    },
}

impl WalError {
    /// Worth trying again: the store did not answer in time, the connection failed or broke,
    /// or it answered that it is busy or failing (5xx, 429), not that the request is wrong.
    pub fn is_transient(&self) -> bool {
        match self {
            WalError::Timeout(_) => true,
            WalError::Transport { transient, .. } => *transient,
            WalError::Http { status, .. } => *status >= 500 || *status == 429,
            _ => false,
        }
    }

    pub fn io(key: &str, source: impl Into<std::io::Error>) -> Self {
        WalError::Io {
            key: key.to_string(),
            source: source.into(),
        }
    }
}

impl From<shoal_net::NetError> for WalError {
    fn from(e: shoal_net::NetError) -> Self {
        match e {
            shoal_net::NetError::Config(message) | shoal_net::NetError::Http(message) => {
                WalError::Config(message)
            }
        }
    }
}
