//! The Kafka listener on every shard and the per-connection request loop.

mod connection;
mod listener;
mod metrics_http;
mod request;

pub use listener::serve_shard;
