//! Cluster mirroring (KIP-1279): the API handlers, the source client, the fetchers and the
//! metadata sync. The codecs are `shoal_protocol::mirror`.

pub mod client;
pub mod fetch_round;
pub mod fetcher;
pub mod handlers;
pub mod metadata_sync;
pub mod session;
