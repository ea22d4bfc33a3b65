//! The diskless coordinator (KIP-1164) as an I/O-free state machine: typed commands, the
//! metadata records it appends and applies, its state and snapshots, ACL decisions. It does
//! no I/O and never spawns, so the model and property tests drive it alone; the durable logs
//! it is rebuilt from live in `shoal-metalog`, the executor wiring in `shoal-shards`.

pub mod acl;
pub mod broker_configs;
pub mod client_quotas;
pub mod command;
pub mod commands;
pub mod delegation_tokens;
pub mod entry;
pub mod error;
pub mod features;
pub mod frames;
pub mod messages;
pub mod metrics;
pub mod records;
pub mod registry_records;
pub mod state;
pub mod topic_configs;
pub mod view;

pub use crate::command::{AnyReply, Command, Envelope, Round};
pub use entry::Entry;
pub use error::{CoordinatorError, ErrorKind};
pub use messages::*;
pub use metrics::CoordinatorMetrics;
pub use records::{
    CleanupPolicy, CompactionConfig, SchemaValidation, SubjectNameStrategy, TopicCompression,
    TopicConfig, Transaction, TransactionStatus,
};
pub use state::transactions::{TransactionEnd, TransactionEnding, TransactionalInit};
pub use state::CoordinatorState;
pub use view::{MirrorMeta, TopicMeta, TopicsView};
