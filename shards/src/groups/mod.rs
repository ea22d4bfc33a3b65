//! Groups: classic (`classic/`), consumer protocol (KIP-848, `consumer/`), share groups
//! (KIP-932, `share/`) and streams groups (KIP-1071, `streams/`), each in a module of its own with its state machine (`group.rs`) and,
//! where the broker keeps them durable, their records in the coordinator's log (`stored.rs`).
//! Each group lives on one shard, chosen by a hash of its id; requests from connections on
//! other shards are forwarded there (`calls`). What the kinds share is here: the shard's
//! registry of its groups with their timers, memory budget and claims (`registry`, `claims`),
//! the errors, offsets expiry and lag metrics. Classic membership is volatile (clients rejoin
//! after a restart); consumer-protocol and share groups and committed offsets are durable.

pub mod calls;
mod claims;
pub mod classic;
mod config;
pub mod consumer;
mod deadlines;
mod error;
mod expiry;
mod lag_metrics;
mod registry;
pub mod share;
pub mod streams;

pub use calls::{owner_of_group, GroupCall};
pub use claims::Claimer;
pub use classic::{Group, Phase};
pub use config::{GroupConfig, MigrationPolicy};
pub use error::GroupError;
pub use expiry::expire_offsets_loop;
pub use lag_metrics::{render_group_lags, GROUP_LAGS};
pub use registry::Groups;
