use shoal_coordinator::CoordinatorError;
use thiserror::Error;

/// Failures of the coordinator's log and recovery.
#[derive(Debug, Error)]
pub enum MetaLogError {
    #[error("metadata log I/O on {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    State(#[from] CoordinatorError),
    /// The metadata on disk is not what was written: refuse to start rather than guess.
    #[error("{0}")]
    Damaged(String),
    #[error("coordinator database: {message}")]
    Database {
        message: String,
        /// Worth trying again: a lost connection, a timeout, PostgreSQL restarting.
        transient: bool,
    },
    /// Another broker holds the writer role now: this one must stop serving.
    #[error("{0}")]
    Fenced(String),
    /// Another broker of a shared log wrote the row this broker's round was appending, whose
    /// append failed: the round's decisions were never made; the state is rebuilt from the log.
    #[error("{0}")]
    LostRace(String),
    /// The command was not decided (its round was lost to another broker's): retry it.
    #[error("the coordinator could not decide the command; retry")]
    Unavailable,
}

impl MetaLogError {
    /// Worth trying again (on a new connection): PostgreSQL failed for a passing reason.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            MetaLogError::Database {
                transient: true,
                ..
            }
        )
    }
}
