//! The consumer group protocol (KIP-848), in which the broker assigns partitions and members
//! reconcile towards their targets by heartbeat. So far its pure parts: the assignors and one
//! member's reconciliation. Not yet served: ConsumerGroupHeartbeat and ConsumerGroupDescribe
//! still answer UNSUPPORTED_VERSION, and nothing of it is stored.

pub mod assignor;
pub mod group;
pub mod reconcile;
