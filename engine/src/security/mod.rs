//! Who may connect and as whom: named listeners with Kafka's security protocols, TLS, SASL
//! authentication, and each connection's principal.

pub mod oauth;
pub mod session;
pub mod stream;
pub mod tls;

pub use oauth::OAuthValidator;
pub use session::{AuthState, Session};
pub use shoal_auth::{certificate, plain, scram, Principal};
pub use shoal_config::listeners::Listener;
pub use tls::TlsServer;
