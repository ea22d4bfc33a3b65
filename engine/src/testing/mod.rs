//! The middle test layer: a whole broker in-process (shard executors, the coordinator, a
//! local object store in a temporary directory) whose handlers a test calls directly, without
//! sockets or client libraries. Slower than a unit test, far faster than the integration
//! tests, and able to look inside (metrics, stores, coordinator state).

#[cfg(test)]
mod consumer_group_tests;
#[cfg(test)]
mod delegation_token_tests;
#[cfg(test)]
mod fetch_tests;
#[cfg(test)]
mod group_claim_tests;
mod harness;
#[cfg(test)]
mod list_offsets_tests;
#[cfg(test)]
mod mirror_tests;
#[cfg(test)]
mod produce_tests;
#[cfg(test)]
mod streams_group_tests;
#[cfg(test)]
mod transaction_tests;

pub use harness::*;
