//! Client quotas enforced as Kafka enforces them (KIP-13, KIP-124, KIP-219): each client's
//! produce bytes, fetch bytes and handling time are measured over windows against the quota
//! AlterClientQuotas set for it; a client over its quota is told how long to wait
//! (`ThrottleTimeMs`) and its connection is not read from for that long.
//!
//! Quotas hold per broker, as in Kafka: every shard of a broker counts toward one rate per
//! client, and each broker of a cluster measures its own clients.

mod board;
mod busy;
mod connection;
mod rate;
mod throttle;

pub use board::{QuotaBoard, QuotaKind};
pub use busy::Busy;
pub use connection::{extend, ConnectionQuotas};
pub use rate::{Windows, MAX_WINDOWS};
pub use throttle::{client_waits_by_itself, ThrottleTime};
