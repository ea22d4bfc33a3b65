//! Cluster mirroring's moving parts (KIP-1279): the client of a source cluster, the fetchers
//! that walk each mirrored partition through its states and copy the source's batches at the
//! source's offsets, and the metadata sync that copies topic configs and group offsets. They
//! run on each shard of a broker (`Host` is what they need of it); the mirror APIs' handlers
//! stay with the broker's other handlers, and the states and configs are `shoal_mirror`'s.

pub mod client;
mod error;
pub mod fetch_round;
pub mod fetcher;
mod host;
pub mod metadata_sync;
pub mod session;

pub use error::FetchError;
pub use host::Host;
