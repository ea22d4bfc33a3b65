//! Streams groups (KIP-1071), in which the broker keeps the application's topology, creates
//! its internal topics and assigns its tasks: the topology and its configuration against the
//! topics, the task assignor, one member's reconciliation, one group's heartbeat rules, the
//! groups of a shard (`registry`) and the requests and calls that reach them.

pub mod assignor;
pub mod calls;
pub mod group;
pub mod reconcile;
pub mod registry;
mod requests;
pub mod stored;
pub mod tasks;
pub mod topology;
