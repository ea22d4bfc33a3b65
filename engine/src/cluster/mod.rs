//! Many brokers, one cluster: who is in it and which broker serves which partition are
//! `shoal_cluster`'s; how Metadata and FindCoordinator answer with them is `routing`.

pub mod routing;

pub use shoal_cluster::{membership, placement, Member, Membership};
