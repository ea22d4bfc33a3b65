use thiserror::Error;

/// Every failure this crate reports.
#[derive(Debug, Error)]
pub enum ShardError {
    #[error("executor setup failed: {0}")]
    Executor(String),
    #[error("the queue to {0} is closed")]
    QueueClosed(&'static str),
    /// The coordinator did not decide the command (its round was lost to another broker's).
    #[error("the coordinator could not decide the command; retry")]
    CoordinatorUnavailable,
    /// A rewrite (merging or compaction) stopped; the partition is left as it was.
    #[error("rewrite stopped: {0}")]
    Rewrite(String),
    #[error("configuration: {0}")]
    Config(String),
    /// A start-up step failed for good or did not finish in time.
    #[error("start-up: {0}")]
    Startup(String),
    #[error(transparent)]
    Wal(#[from] shoal_wal::WalError),
    #[error(transparent)]
    Coordinator(#[from] shoal_metalog::MetaLogError),
}
