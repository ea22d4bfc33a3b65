use thiserror::Error;

/// Why this broker cannot join its cluster (or stay in it).
#[derive(Debug, Error)]
#[error("{0}")]
pub struct MembershipError(pub String);
