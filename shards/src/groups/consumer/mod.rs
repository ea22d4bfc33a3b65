//! The consumer group protocol (KIP-848), in which the broker assigns partitions and members
//! reconcile towards their targets by heartbeat: the assignors, one member's reconciliation,
//! one group's heartbeat rules, the groups of a shard (`registry`), the requests and calls
//! that reach them (`requests`, `calls`), and a group's records in the coordinator's log
//! (`stored`): every change is stored before the member is answered, and a
//! broker that claims the group reads it back, so members go on after a restart or a move.

pub mod assignor;
pub mod calls;
pub mod classic;
pub mod description;
pub mod group;
#[cfg(test)]
mod model_checks;
pub mod reconcile;
pub mod registry;
mod requests;
pub mod stored;
