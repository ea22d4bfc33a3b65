//! Who may connect and as whom: named listeners with Kafka's security protocols, SASL
//! authentication, and each connection's principal.

pub mod listeners;
pub mod plain;
pub mod principal;
pub mod scram;
pub mod session;

pub use listeners::Listener;
pub use principal::Principal;
pub use session::{AuthState, Mechanism, Session};
