//! The table writer's one error: a setting it cannot work with, or a thread it cannot start.

#[derive(Debug, thiserror::Error)]
pub enum WriterError {
    #[error("{0}")]
    Config(String),
}
