//! One connection's security state: the listener it came in on, where it stands in the SASL
//! exchange, and the principal it acts as once authenticated.

use std::cell::{Cell, Ref, RefCell};
use std::sync::Arc;

use shoal_auth::scram::Exchange;
use shoal_auth::{Principal, SaslMechanism};
use shoal_config::listeners::{Listener, SecurityProtocol};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthState {
    /// A SASL listener's new connection: SaslHandshake comes next.
    AwaitingHandshake,
    /// SaslAuthenticate with this mechanism comes next.
    AwaitingToken(SaslMechanism),
    /// After a v0 SaslHandshake: the next frame is the mechanism's bare token, not a request.
    AwaitingBareToken(SaslMechanism),
    Authenticated,
    /// An authenticated session logging in again with this mechanism (KIP-368): its
    /// requests go on meanwhile.
    Reauthenticating(SaslMechanism),
    /// Authentication failed: the connection closes once the answer is written.
    Failed,
}

/// Whom a SCRAM login with a delegation token acts as once proved, and until when.
#[derive(Debug, Clone)]
pub struct TokenOwner {
    pub principal: Principal,
    pub expires_at_ms: i64,
}

#[derive(Debug)]
pub struct Session {
    pub listener: Arc<Listener>,
    state: Cell<AuthState>,
    principal: RefCell<Principal>,
    /// A SCRAM exchange between its first and final messages, and the delegation token's
    /// owner it logs in as when it is a token's.
    scram: RefCell<Option<(Exchange, Option<TokenOwner>)>>,
    /// Why an OAUTHBEARER token was refused, between the error challenge and the client's
    /// acknowledgement of it (RFC 7628 3.2.2).
    refused_token: RefCell<Option<String>>,
    /// The mechanism the session logged in with: a re-authentication must use it again.
    mechanism: Cell<Option<SaslMechanism>>,
    /// When the session ends unless it re-authenticates (KIP-368), in ms since the epoch.
    session_ends_at_ms: Cell<Option<i64>>,
    /// Logged in with a delegation token: it acts as the token's owner, but may not use or
    /// make tokens itself (Kafka's `tokenAuthenticated` principals).
    by_token: Cell<bool>,
}

impl Session {
    pub fn new(listener: Arc<Listener>) -> Session {
        let state = if listener.protocol.uses_sasl() {
            AuthState::AwaitingHandshake
        } else {
            AuthState::Authenticated
        };
        Session {
            listener,
            state: Cell::new(state),
            principal: RefCell::new(Principal::anonymous()),
            scram: RefCell::new(None),
            refused_token: RefCell::new(None),
            mechanism: Cell::new(None),
            session_ends_at_ms: Cell::new(None),
            by_token: Cell::new(false),
        }
    }

    /// A PLAINTEXT session, for handlers called without a connection (tests).
    pub fn plaintext() -> Session {
        Session::new(Arc::new(Listener {
            name: "PLAINTEXT".to_string(),
            address: ([127, 0, 0, 1], 0).into(),
            protocol: SecurityProtocol::Plaintext,
            advertised_host: "127.0.0.1".to_string(),
            advertised_port: 0,
        }))
    }

    pub fn state(&self) -> AuthState {
        self.state.get()
    }

    pub fn is_authenticated(&self) -> bool {
        matches!(
            self.state.get(),
            AuthState::Authenticated | AuthState::Reauthenticating(_)
        )
    }

    /// An authenticated session starts logging in again (KIP-368).
    pub fn start_reauthentication(&self, mechanism: SaslMechanism) {
        self.state.set(AuthState::Reauthenticating(mechanism));
    }

    /// Whether the session ended (its lifetime passed) at `now_ms` without re-authenticating.
    pub fn expired(&self, now_ms: i64) -> bool {
        self.session_ends_at_ms
            .get()
            .is_some_and(|end| now_ms >= end)
    }

    /// The session lasts until `at_ms` (None: for ever).
    pub fn ends_at(&self, at_ms: Option<i64>) {
        self.session_ends_at_ms.set(at_ms);
    }

    pub fn ends_at_ms(&self) -> Option<i64> {
        self.session_ends_at_ms.get()
    }

    /// The mechanism the session logged in with.
    pub fn mechanism(&self) -> Option<SaslMechanism> {
        self.mechanism.get()
    }

    pub fn has_failed(&self) -> bool {
        self.state.get() == AuthState::Failed
    }

    pub fn principal(&self) -> Principal {
        self.principal.borrow().clone()
    }

    /// The principal's name (a quota's user), borrowed: not to be held across an `.await`.
    pub fn principal_name(&self) -> Ref<'_, str> {
        Ref::map(self.principal.borrow(), |p| p.name.as_str())
    }

    /// The handshake chose `mechanism`; `bare`: the token comes without a request (v0).
    pub fn start(&self, mechanism: SaslMechanism, bare: bool) {
        self.mechanism.set(Some(mechanism));
        self.state.set(if bare {
            AuthState::AwaitingBareToken(mechanism)
        } else {
            AuthState::AwaitingToken(mechanism)
        });
    }

    /// A TLS client's certificate names the principal, unless SASL names one later.
    pub fn presented_certificate(&self, principal: Principal) {
        if !self.listener.protocol.uses_sasl() {
            *self.principal.borrow_mut() = principal;
        }
    }

    /// Logged in as `principal`; `by_token`: with a delegation token.
    pub fn authenticated(&self, principal: Principal, by_token: bool) {
        *self.principal.borrow_mut() = principal;
        self.by_token.set(by_token);
        self.state.set(AuthState::Authenticated);
    }

    /// Whether the session logged in with a delegation token.
    pub fn is_token_authenticated(&self) -> bool {
        self.by_token.get()
    }

    /// Kafka's rule for the delegation-token APIs: only a session that proved who it is by
    /// SASL (not with a token) or by a client certificate may ask; a PLAINTEXT session never.
    pub fn may_use_token_apis(&self) -> bool {
        let proved = match self.listener.protocol {
            SecurityProtocol::Plaintext => false,
            SecurityProtocol::Ssl => self.principal.borrow().name != Principal::ANONYMOUS_NAME,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl => true,
        };
        proved && !self.by_token.get()
    }

    /// An OAUTHBEARER token was refused and the error challenge sent; `why` is logged when
    /// the client acknowledges it.
    pub fn refuse_token(&self, why: String) {
        *self.refused_token.borrow_mut() = Some(why);
    }

    /// The refusal awaiting the client's acknowledgement, taken out.
    pub fn take_refused_token(&self) -> Option<String> {
        self.refused_token.borrow_mut().take()
    }

    pub fn failed(&self) {
        self.scram.borrow_mut().take();
        self.state.set(AuthState::Failed);
    }

    /// The SCRAM exchange in progress, taken out (None before the first message).
    pub fn take_scram(&self) -> Option<(Exchange, Option<TokenOwner>)> {
        self.scram.borrow_mut().take()
    }

    pub fn keep_scram(&self, exchange: Exchange, token_owner: Option<TokenOwner>) {
        *self.scram.borrow_mut() = Some((exchange, token_owner));
    }
}
