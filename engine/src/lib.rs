//! The Shoal broker: configuration, listeners and connections, the API registry with one
//! handler file per Kafka API, the mirror's fetchers and CLI, the cluster's membership. The
//! `shoal` binary (`main.rs`) parses the command line and runs it. With the `testing` feature
//! (and in its own tests) `testing` runs a whole broker in-process for handler-level tests.

pub mod cluster;
pub mod context;
pub mod datadir;
pub mod dynamic_configs;
pub mod error;
pub mod handlers;
pub mod kafka;
pub mod log_filter;
pub mod mirror;
pub mod ownership;
pub mod quotas;
pub mod security;
pub mod server;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use error::EngineError;
/// The broker's configuration file: its own crate, named here as the handlers know it.
pub use shoal_config as config;
