//! Every error code Shoal puts on the wire, in one typed table: Kafka's own (kafka-protocol's
//! `ResponseError`) and, beside them, the codes KIP-1279's prototype uses for mirroring, which
//! Kafka does not define yet.

pub use kafka_protocol::error::ResponseError;

/// No error.
pub const NONE: i16 = 0;

/// KIP-1279's codes (the prototype's numbers; not final upstream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i16)]
pub enum MirrorCode {
    ReadOnlyTopic = 134,
    InvalidMirrorName = 135,
    UnknownMirror = 136,
    TopicAlreadyInMirror = 137,
    TopicNotInMirror = 138,
    MirrorTopicAlreadyPaused = 139,
    MirrorTopicNotPaused = 140,
    /// Not in the prototype's list: CreateMirror with a name in use.
    MirrorAlreadyExists = 141,
}

impl MirrorCode {
    pub const ALL: [MirrorCode; 8] = [
        MirrorCode::ReadOnlyTopic,
        MirrorCode::InvalidMirrorName,
        MirrorCode::UnknownMirror,
        MirrorCode::TopicAlreadyInMirror,
        MirrorCode::TopicNotInMirror,
        MirrorCode::MirrorTopicAlreadyPaused,
        MirrorCode::MirrorTopicNotPaused,
        MirrorCode::MirrorAlreadyExists,
    ];
}

/// An error code as sent: Kafka's, or one of the mirror codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    Kafka(ResponseError),
    Mirror(MirrorCode),
}

impl ErrorCode {
    pub const fn code(self) -> i16 {
        match self {
            ErrorCode::Kafka(e) => e.code(),
            ErrorCode::Mirror(m) => m as i16,
        }
    }

    /// The code read off the wire; None for 0 (no error).
    pub fn from_code(code: i16) -> Option<ErrorCode> {
        if let Some(m) = MirrorCode::ALL.into_iter().find(|m| *m as i16 == code) {
            return Some(ErrorCode::Mirror(m));
        }
        ResponseError::try_from_code(code).map(ErrorCode::Kafka)
    }

    /// The name to show an operator, e.g. `UnknownTopicOrPartition` or `UnknownMirror`.
    pub fn name(self) -> String {
        match self {
            ErrorCode::Kafka(ResponseError::Unknown(code)) => format!("error {code}"),
            ErrorCode::Kafka(e) => format!("{e:?}"),
            ErrorCode::Mirror(m) => format!("{m:?}"),
        }
    }
}

impl From<ResponseError> for ErrorCode {
    fn from(e: ResponseError) -> Self {
        ErrorCode::Kafka(e)
    }
}

impl From<MirrorCode> for ErrorCode {
    fn from(m: MirrorCode) -> Self {
        ErrorCode::Mirror(m)
    }
}

/// The wire value of an outcome: 0 when there is no error.
pub fn code_of(error: Option<ErrorCode>) -> i16 {
    error.map_or(NONE, ErrorCode::code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_read_back_as_what_was_sent() {
        for code in MirrorCode::ALL {
            let e = ErrorCode::from(code);
            assert_eq!(ErrorCode::from_code(e.code()), Some(e));
        }
        let e = ErrorCode::from(ResponseError::UnknownTopicOrPartition);
        assert_eq!(e.code(), 3);
        assert_eq!(ErrorCode::from_code(3), Some(e));
        assert_eq!(ErrorCode::from_code(0), None);
        assert_eq!(e.name(), "UnknownTopicOrPartition");
        // The mirror codes are not Kafka's: none collides with a code Kafka defines.
        for code in MirrorCode::ALL {
            assert!(matches!(
                ResponseError::try_from_code(code as i16),
                Some(ResponseError::Unknown(_))
            ));
        }
    }
}
