//! The Kafka listener on every shard and the per-connection request loop.

mod connection;
mod frame_pool;
mod health;
mod limits;
mod listener;
pub mod memory;
mod metrics_http;
mod request;
mod watchdog;

pub use limits::ConnectionLimits;
pub use listener::{serve_shard, Security};
