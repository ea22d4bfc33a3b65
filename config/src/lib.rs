//! The broker's configuration file (TOML), its defaults and their validation. See
//! `shoal.example.toml` at the repository root for every key with comments. One file per
//! owner of a table: security (SASL, TLS, ACLs, tokens), Kafka's listener strings, the object
//! store, the coordinator and its PostgreSQL settings, the cluster, quotas, the log; the
//! schema registry's and the table writer's tables are their crates' own. The checks are in
//! `validate.rs`, the executors' settings drawn from it in `runtime.rs`. The broker (`shoal`)
//! names this crate `shoal::config`.

mod broker;
mod cluster;
mod coordinator;
mod coordinator_database;
pub mod dead_letters;
mod error;
pub mod listeners;
pub mod log;
mod object_store;
pub mod quotas;
mod runtime;
mod security;
#[cfg(test)]
mod tests;
mod validate;

pub use broker::BrokerConfig;
pub use cluster::ClusterConfig;
pub use error::ConfigError;
pub use log::{LogConfig, LogFormat};

pub use coordinator::{CoordinatorConfig, CoordinatorKind};
pub use dead_letters::DeadLettersConfig;
pub use object_store::{LocalLayoutKind, ObjectStoreConfig, StoreKind};
pub use quotas::QuotasConfig;
pub use security::{
    AuthorizerConfig, ClientAuth, DelegationTokenConfig, OAuthBearerConfig, SaslConfig, SslConfig,
};
pub use validate::BUFFER_MAX_BYTES_LIMIT;
