//! The declaration of one served API, as the handler registry lists each: its key, versions,
//! ACL checks and properties.

use bytes::Bytes;
use shoal_coordinator::acl::{Operation, ResourceType};
use shoal_protocol::ProtocolError;

/// An ACL check: an operation on a kind of resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AclCheck {
    pub operation: Operation,
    pub resource: ResourceType,
}

/// One served API.
#[derive(Debug, Clone, Copy)]
pub struct ApiSpec {
    pub key: i16,
    /// The name in logs and metrics: the request type's, without "Request".
    pub name: &'static str,
    pub min_version: i16,
    pub max_version: i16,
    /// Every ACL check the handler may make (Kafka's documented operations for the API); the
    /// handler's calls are held to this list (`Call::authorized`). Empty only for what is
    /// served before a login and what its owner decides.
    pub checks: &'static [AclCheck],
    /// The same, as `shoal apis` explains it (which topics, groups or ids each applies to).
    pub authorization: &'static str,
    /// For other brokers and operator tools, not clients: the coordinator's Diskless*
    /// operations and mirror state writes (to be closed to clients with ACLs: ClusterAction).
    pub internal: bool,
    /// Served before a SASL listener's client has authenticated (ApiVersions and the SASL
    /// exchange itself); every other request then closes the connection.
    pub before_authentication: bool,
    /// Authorized by what the request names rather than by ACLs: a delegation token's owner
    /// and renewers may renew and expire it, as on Kafka.
    pub decided_by_owner: bool,
    /// For versions outside the range: the API's response carrying an error code, where the
    /// response has a top-level one (else the connection is closed).
    pub error_answer: Option<ErrorAnswer>,
}

pub type ErrorAnswer = fn(i16, i32, i16) -> Result<Bytes, ProtocolError>;

impl ApiSpec {
    pub fn serves(&self, version: i16) -> bool {
        (self.min_version..=self.max_version).contains(&version)
    }

    /// The framed error answer for `version`, if this API's response can carry one and the
    /// codec knows the version.
    pub fn error_answer(&self, version: i16, correlation_id: i32, code: i16) -> Option<Bytes> {
        self.error_answer
            .and_then(|answer| answer(version, correlation_id, code).ok())
    }
}
