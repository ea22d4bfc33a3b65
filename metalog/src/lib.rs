//! Every durable back end of the coordinator's metadata log: the local log (generations of
//! framed records, snapshots, recovery, inspection and repair), the PostgreSQL log and the
//! log a cluster's brokers share (with its tail, the brokers' leases and the lock on the
//! cluster-wide duties), and the group-committing core that runs the state machine's
//! commands in rounds and makes each round durable before it answers. All of Shoal's SQL
//! is here.

pub mod brokers;
pub mod core;
pub mod duties;
pub mod error;
pub mod format;
pub mod inspect;
pub mod log;
pub mod log_backend;
pub mod log_tail;
pub mod pipeline;
pub mod postgres_log;
pub mod problems;
pub mod recovery;
pub mod repair;
pub mod snapshots;

pub use crate::core::{now_ms, CoordinatorCore};
pub use duties::Duties;
pub use error::MetaLogError;
pub use pipeline::RoundPipeline;
