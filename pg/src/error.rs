use thiserror::Error;

/// Every failure this crate reports.
#[derive(Debug, Error)]
pub enum PgError {
    #[error("PostgreSQL URL: {0}")]
    Config(String),
    #[error("PostgreSQL at {address}: {source}")]
    Io {
        address: String,
        source: std::io::Error,
    },
    #[error("PostgreSQL at {0} did not answer in time")]
    Timeout(String),
    #[error("PostgreSQL closed the connection")]
    Closed,
    #[error("PostgreSQL sent a {len}-byte message; the limit is {limit}")]
    MessageTooLarge { len: usize, limit: usize },
    #[error("an answer from PostgreSQL holds more than {0} bytes")]
    ResponseTooLarge(usize),
    #[error("PostgreSQL protocol: {0}")]
    Protocol(String),
    #[error("PostgreSQL asks for {0} authentication, which Shoal does not offer")]
    UnsupportedAuthentication(&'static str),
    #[error("PostgreSQL asks for a password and none is configured")]
    PasswordRequired,
    #[error("PostgreSQL {severity} {code}: {message}{detail}")]
    Server {
        severity: String,
        /// The SQLSTATE, e.g. 40001 for a serialization failure.
        code: String,
        message: String,
        /// ": " and the server's detail, or empty.
        detail: String,
    },
    #[error("schema migration: {0}")]
    Migration(String),
    #[error("column {column}: {problem}")]
    Column { column: usize, problem: String },
}

impl PgError {
    /// The SQLSTATE of a server error.
    pub fn code(&self) -> Option<&str> {
        match self {
            PgError::Server { code, .. } => Some(code),
            _ => None,
        }
    }

    /// Worth trying again, on a new connection if this one broke: serialization failures,
    /// deadlocks, a server shutting down or starting, and lost connections.
    pub fn is_transient(&self) -> bool {
        match self {
            PgError::Io { .. } | PgError::Timeout(_) | PgError::Closed => true,
            PgError::Server { code, .. } => {
                matches!(
                    code.as_str(),
                    "40001" | "40P01" | "57P01" | "57P02" | "57P03"
                ) || code.starts_with("08")
            }
            _ => false,
        }
    }
}
