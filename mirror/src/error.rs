use thiserror::Error;

/// Why a mirror operation was refused. The engine maps each to its Kafka error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Error)]
pub enum MirrorError {
    #[error("the partition's mirror state does not allow this")]
    InvalidRequest,
    #[error("invalid mirror name")]
    InvalidMirrorName,
    #[error("no such mirror")]
    UnknownMirror,
    #[error("a mirror with this name exists")]
    MirrorAlreadyExists,
    #[error("the topic is already in a mirror")]
    TopicAlreadyInMirror,
    #[error("the topic is not in this mirror")]
    TopicNotInMirror,
    #[error("the mirror topic is already paused")]
    AlreadyPaused,
    #[error("the mirror topic is not paused")]
    NotPaused,
    #[error("invalid mirror config: {0}")]
    InvalidConfig(&'static str),
}
