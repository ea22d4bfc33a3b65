//! Who may connect and as whom: named listeners with Kafka's security protocols, TLS, SASL
//! authentication, and each connection's principal.

pub mod certificate;
pub mod listeners;
pub mod plain;
pub mod principal;
pub mod scram;
pub mod scram_client;
pub mod session;
pub mod stream;
pub mod tls;

pub use listeners::Listener;
pub use principal::Principal;
pub use session::{AuthState, Mechanism, Session};
pub use tls::TlsServer;
