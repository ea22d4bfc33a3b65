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
    #[error("coordinator database: {0}")]
    Database(String),
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
