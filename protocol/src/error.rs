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
    /// The broker answered a SASL request with an error: its code and message.
    #[error("SASL login refused: error {code}{}", message.as_ref().map(|m| format!(": {m}")).unwrap_or_default())]
    LoginRefused { code: i16, message: Option<String> },
    /// The broker's SASL tokens do not make a login (malformed, or no proof it knows the
    /// password).
    #[error("SASL: {0}")]
    Login(String),
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
