//! Cluster mirroring (KIP-1279) on the wire: the codecs generated from `engine/schemas/mirror/`
//! and the API handlers.

pub mod cli;
pub mod client;
mod fetch_round;
pub mod fetcher;
pub mod handlers;
pub mod messages;
pub mod metadata_sync;
pub mod status;
