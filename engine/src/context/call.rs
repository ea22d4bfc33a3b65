//! What a handler works with besides its request: the broker, the client and the connection
//! it came on, the ACL checks its API may make, and its quota throttle.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

use super::{AclCheck, ApiSpec, Broker};
use crate::quotas::ConnectionQuotas;
use crate::security::Session;

/// What a handler works with besides its request.
pub struct Call<'a> {
    pub broker: &'a Broker,
    /// The request's version.
    pub version: i16,
    pub client: &'a ClientInfo,
    /// The ACL checks the registry declares for this API: the only ones the handler may make.
    pub checks: &'static [AclCheck],
    /// Until when the client is to wait before its next request (the longest of its quotas'
    /// throttles); the answer carries what is left of it when it is sent.
    pub throttled_until: Cell<Option<Instant>>,
    /// Not counted toward `request_percentage`: the internal APIs and the login exchange.
    pub request_quota_exempt: bool,
}

/// Who sent a request, as DescribeGroups reports members, and the connection it came on.
#[derive(Clone)]
pub struct ClientInfo {
    pub id: String,
    /// Kafka's form: "/127.0.0.1".
    pub host: String,
    pub session: Rc<Session>,
    /// The connection's quota accounting; None for handlers called without a connection.
    pub quotas: Option<Rc<ConnectionQuotas>>,
}

impl Default for ClientInfo {
    /// A PLAINTEXT client, for handlers called without a connection.
    fn default() -> Self {
        ClientInfo {
            id: String::new(),
            host: String::new(),
            session: Rc::new(Session::plaintext()),
            quotas: None,
        }
    }
}

impl<'a> Call<'a> {
    pub fn new(
        broker: &'a Broker,
        version: i16,
        client: &'a ClientInfo,
        spec: &'static ApiSpec,
    ) -> Call<'a> {
        Call {
            broker,
            version,
            client,
            checks: spec.checks,
            throttled_until: Cell::new(None),
            request_quota_exempt: spec.internal || spec.before_authentication,
        }
    }
}

impl Call<'_> {
    /// The host and port of the listener the client came in on, as Metadata advertises it.
    pub fn advertised(&self) -> (String, i32) {
        let listener = &self.client.session.listener;
        if listener.advertised_port == 0 {
            // A session without a real listener (handlers called directly).
            return (
                self.broker.advertised_host.clone(),
                self.broker.advertised_port,
            );
        }
        (listener.advertised_host.clone(), listener.advertised_port)
    }

    /// The finalized level of a feature (KIP-584) as this shard's view has it now.
    pub fn feature_level(&self, feature: &str) -> i16 {
        self.broker.shard.topics.load().features().level(feature)
    }
}
