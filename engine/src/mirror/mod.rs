//! Cluster mirroring (KIP-1279): the API handlers. The fetchers, the source client and the
//! metadata sync are `shoal_mirror_fetcher`'s (the broker is their `Host`); the codecs are
//! `shoal_protocol::mirror`.

pub mod handlers;
mod host;
