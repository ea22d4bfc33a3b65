//! Every coordinator command, by domain. Each file holds the commands of one part of the
//! state and how each runs in a round.

mod acls;
mod batches;
mod broker_configs;
mod delegation_tokens;
mod features;
mod groups;
mod mirrors;
mod producers;
mod quotas;
mod rewrites;
mod schema_registry;
mod scram;
mod share_groups;
mod topics;
mod transactions;

pub use acls::*;
pub use batches::*;
pub use broker_configs::*;
pub use delegation_tokens::*;
pub use features::*;
pub use groups::*;
pub use mirrors::*;
pub use producers::*;
pub use quotas::*;
pub use rewrites::*;
pub use schema_registry::*;
pub use scram::*;
pub use share_groups::*;
pub use topics::*;
pub use transactions::*;
