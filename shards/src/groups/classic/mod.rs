//! Groups of the classic rebalance protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup): one
//! group's state machine (`group`, with its moves to and from the consumer protocol in
//! `migration`), the requests and answers that reach it from any shard (`messages`, with
//! the descriptions and listings every kind of group answers in), the calls that carry them
//! (`calls`), and how the shard's groups answer them (`requests`). Its membership is volatile:
//! clients rejoin after a restart.

pub mod calls;
pub mod group;
#[cfg(test)]
mod group_tests;
pub mod messages;
mod requests;

pub use group::{Group, Phase};
