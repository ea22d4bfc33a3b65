//! Kafka wire details that every handler shares: error codes and answers for requests Shoal
//! does not serve.

pub mod error_codes;
pub mod unsupported;
