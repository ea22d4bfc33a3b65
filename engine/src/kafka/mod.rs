//! Kafka wire details that every handler shares: error codes, supported versions, framing.

pub mod codec;
pub mod error_codes;
pub mod unsupported;
pub mod versions;
