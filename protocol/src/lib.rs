//! The Kafka wire protocol as Shoal speaks it, shared by the broker, the benchmark, the
//! `shoal mirror` CLI and the mirror source client: framing and headers (`frame`), one codec
//! family (kafka-protocol's traits, implemented for Shoal's own Diskless* and mirror messages
//! and the coordinator's metadata records by code generated from their schemas), and every
//! error code in one table (`codes`), the config codes beside them (`config_codes`).

pub mod acl_codes;
pub mod client;
pub mod codes;
pub mod config_codes;
pub mod consumer_protocol;
pub mod diskless;
mod error;
pub mod frame;
pub mod message_codec;
pub mod messages;
pub mod mirror;
pub mod records;
#[cfg(test)]
mod sample;
pub mod sasl_login;
pub mod shapes;
pub mod wire;

pub use codes::{ErrorCode, MirrorCode, ResponseError};
pub use error::ProtocolError;
pub use kafka_protocol;
