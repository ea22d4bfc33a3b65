//! The Kafka listener on every shard and the per-connection request loop.

mod connection;
mod listener;

pub use listener::serve_shard;
