use thiserror::Error;

/// Why a frame could not be read, decoded or encoded.
#[derive(Debug, Error)]
pub enum ProtocolError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("malformed {what}: {detail}")]
    Malformed { what: &'static str, detail: String },
    #[error("cannot encode {what}: {detail}")]
    Encode { what: &'static str, detail: String },
    #[error("a frame of {size} bytes is out of bounds (at most {max})")]
    FrameSize { size: i64, max: usize },
    #[error("unknown API key {0}")]
    UnknownApi(i16),
    #[error("response correlation id {got}, expected {expected}")]
    CorrelationMismatch { got: i32, expected: i32 },
}

impl ProtocolError {
    pub(crate) fn malformed(what: &'static str, e: impl std::fmt::Display) -> Self {
        ProtocolError::Malformed {
            what,
            detail: e.to_string(),
        }
    }

    pub(crate) fn encode(what: &'static str, e: impl std::fmt::Display) -> Self {
        ProtocolError::Encode {
            what,
            detail: e.to_string(),
        }
    }
}
