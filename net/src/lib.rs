//! Network helpers every client and server of Shoal's shares on glommio sockets: deadlines for
//! any future, TLS client settings (system CAs plus a configured CA file), and a byte stream
//! that is plain TCP or TLS over it; and, for threads that may block, one HTTP(S) request and an OAUTHBEARER client's
//! tokens.

pub mod deadline;
pub mod error;
pub mod http_client;
pub mod oauth_token;
pub mod start_retry;
pub mod tls_client;
pub mod tls_stream;

pub use deadline::within;
pub use error::NetError;
pub use tls_stream::TcpOrTls;
