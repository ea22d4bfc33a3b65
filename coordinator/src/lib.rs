//! The diskless coordinator (KIP-1164): an I/O-free state machine that assigns offsets, the
//! durable metadata log it is rebuilt from, and the group-committing core that joins them.
//! The executor and channel wiring live in `shoal-shards`; this crate never spawns.

pub mod acl;
pub mod command;
pub mod commands;
pub mod core;
pub mod error;
pub mod format;
pub mod frames;
pub mod inspect;
pub mod log;
pub mod log_backend;
pub mod messages;
pub mod metrics;
pub mod pipeline;
pub mod postgres_log;
pub mod problems;
pub mod record_codec;
pub mod records;
pub mod recovery;
pub mod repair;
pub mod snapshots;
pub mod state;
mod transaction_codec;
pub mod view;

pub use crate::command::{AnyReply, Command, Envelope, Round};
pub use crate::core::CoordinatorCore;
pub use error::{CoordinatorError, ErrorKind};
pub use messages::*;
pub use metrics::CoordinatorMetrics;
pub use pipeline::RoundPipeline;
pub use records::{BatchKind, TopicCompression, TopicConfig, Transaction, TransactionStatus};
pub use state::transactions::{TransactionEnding, TransactionalInit};
pub use state::CoordinatorState;
pub use view::{MirrorMeta, TopicMeta, TopicsView};
