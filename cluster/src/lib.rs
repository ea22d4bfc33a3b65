//! Many brokers, one cluster: stateless brokers sharing one object store and the
//! coordinator's PostgreSQL database. Each registers itself with a lease and renews it on a
//! thread of its own (`membership`); any broker serves any partition, and each partition's
//! clients are sent to one broker, in their own zone when they say which (`placement`). How
//! the broker answers Metadata with it is the broker's (`shoal::cluster::routing`).

mod error;
pub mod membership;
pub mod placement;

pub use error::MembershipError;
pub use membership::{ClusterView, Member, Membership};
