//! Shard-per-core executors: placement from config, partition→shard routing, the lock-free
//! queues between shards and to the coordinator shard, the per-shard produce pipeline and the
//! fetch path with its cache.

pub mod client_regex;
pub mod config;
pub mod coordinator_shard;
pub mod error;
pub mod fetch;
pub mod groups;
pub mod lifecycle;
pub mod live_settings;
mod local_coordinator;
pub mod maintenance;
pub mod messages;
pub mod metrics;
pub mod mirror;
pub mod peer;
pub mod produce;
pub mod rewrite;
pub mod routing;
pub mod rpc;
pub mod runtime;
pub mod shard;
pub mod signal;
pub mod table_progress;
pub mod transaction_markers;
pub mod turnstile;

pub use config::{FetchConfig, ProduceConfig, RewriteConfig, RuntimeConfig, ShardsConfig};
pub use error::ShardError;
pub use groups::GroupConfig;
pub use lifecycle::Latch;
pub use live_settings::{LiveSettings, LiveValues};
pub use maintenance::MaintenanceConfig;
pub use messages::*;
pub use metrics::ShardMetrics;
pub use runtime::{run, ServeFn};
pub use shard::{Shard, ShardWiring};
