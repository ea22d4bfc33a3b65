//! A PostgreSQL client for glommio executors: the wire protocol from the runtime-free
//! `postgres-protocol` crate, driven over Shoal's own sockets (tokio-postgres would need a
//! tokio runtime beside every executor), plus versioned schema migrations applied once under
//! an advisory lock. The coordinator's PostgreSQL back end is built on it.

mod config;
mod connection;
mod error;
pub mod migrations;
#[cfg(feature = "testing")]
pub mod testing;
pub mod wire;

pub use config::{PgConfig, SslMode};
pub use connection::Connection;
pub use error::PgError;
pub use migrations::Migration;
pub use wire::{Param, Row};
