//! Share groups (KIP-932): queues on Kafka topics. A share-partition's record states and
//! their durable form (`partition`), how partitions are spread over members (`assignor`),
//! one group's members, sessions and share-partitions (`group`), the groups of a shard
//! (`registry`, with what they take from the shard's groups in `requests`), the calls that
//! reach them from any shard (`calls`), what a fetch sends (`delivery`), and a
//! share-partition's state as the coordinator's log keeps it (`stored`).

pub mod assignor;
pub mod calls;
pub mod delivery;
pub mod group;
#[cfg(test)]
mod group_tests;
pub mod partition;
#[cfg(test)]
mod partition_tests;
pub mod registry;
mod requests;
pub mod stored;
