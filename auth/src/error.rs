//! Why a client's OAUTHBEARER login, or the keys it is checked with, was refused. Messages
//! name the fault, never a token's or a key's bytes.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AuthError {
    #[error("malformed OAUTHBEARER message: {0}")]
    ClientMessage(&'static str),
    #[error("token refused: {0}")]
    Token(String),
    /// The token names a key id no key of the set has (the provider may have rotated).
    #[error("token refused: no key with id {0:?}")]
    UnknownKey(String),
    #[error("JWKS unusable: {0}")]
    Jwks(String),
}
