//! Share groups (KIP-932): queues on Kafka topics. So far the share-partition's record states
//! and their durable form (`partition`); the group, its sessions and the ShareFetch /
//! ShareAcknowledge handlers that use it are to come (issue 48).

pub mod partition;
#[cfg(test)]
mod partition_tests;
