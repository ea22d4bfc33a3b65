//! The KIP-1279 APIs: mirror administration (create, add/remove topics, pause/resume), what
//! operators read (list, describe) and the state exchanges between clusters (last mirrored
//! offsets, read/write states). Each is declared in the handler registry.

pub mod admin;
pub mod describe;
pub mod states;
