//! How a command fails, and its exit status: a broker's refusal (1) or a failure to connect or
//! to make sense of an answer (2).

use std::fmt;

#[derive(Debug)]
pub enum AdminError {
    /// A broker could not be reached.
    Connect(String),
    /// An answer that could not be read, or a command that makes no sense.
    Protocol(String),
    /// A broker refused: Kafka's error code and message.
    Refused { code: i16, message: String },
    /// A schema registry refused: its HTTP status, error code and message.
    Registry {
        status: u16,
        code: u32,
        message: String,
    },
}

impl AdminError {
    pub fn exit_status(&self) -> i32 {
        match self {
            AdminError::Refused { .. } | AdminError::Registry { .. } => 1,
            _ => 2,
        }
    }
}

impl fmt::Display for AdminError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdminError::Connect(e) => write!(f, "cannot connect to {e}"),
            AdminError::Protocol(e) => write!(f, "{e}"),
            AdminError::Registry {
                status,
                code,
                message,
            } => write!(f, "registry error {code} (HTTP {status}): {message}"),
            AdminError::Refused { code, message } => {
                // Kafka's codes and the mirror APIs' own; "error N" is what scripts match.
                let name = shoal_protocol::ErrorCode::from_code(*code)
                    .map(|e| e.name())
                    .unwrap_or_else(|| "UNKNOWN".to_string());
                match message.is_empty() {
                    true => write!(f, "{name} (error {code})"),
                    false => write!(f, "{name} (error {code}): {message}"),
                }
            }
        }
    }
}

/// A Kafka error code as a result.
pub fn check(code: i16, message: Option<&str>) -> Result<(), AdminError> {
    match code {
        0 => Ok(()),
        _ => Err(AdminError::Refused {
            code,
            message: message.unwrap_or_default().to_string(),
        }),
    }
}

/// The one item an answer about one thing holds (a group, a coordinator key); an answer
/// without it is the broker's fault.
pub fn only_item<T>(items: impl IntoIterator<Item = T>, api: &str) -> Result<T, AdminError> {
    (items.into_iter().next())
        .ok_or_else(|| AdminError::Protocol(format!("{api} answered nothing")))
}
