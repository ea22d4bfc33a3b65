//! The KIP-1164 Diskless* coordinator APIs on the wire: codecs generated at build time from
//! the JSON schemas in `engine/schemas/`, and the flexible-encoding primitives they use.

pub mod messages;
pub mod wire;
