//! What a server keeps of a SCRAM password: the coordinator stores it, the SCRAM exchange
//! checks a client's proof against it.

/// What a server keeps of a SCRAM password (RFC 5802): never the password itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScramCredential {
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
    pub iterations: i32,
}
