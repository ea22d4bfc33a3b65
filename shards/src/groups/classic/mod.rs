//! Groups of the classic rebalance protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup): one
//! group's state machine (`group`, with its moves to and from the consumer protocol in
//! `migration`), and the requests and answers that reach it from any shard (`messages`, with
//! the descriptions and listings every kind of group answers in). Its membership is volatile:
//! clients rejoin after a restart.

pub mod group;
#[cfg(test)]
mod group_tests;
pub mod messages;

pub use group::{Group, Phase};
