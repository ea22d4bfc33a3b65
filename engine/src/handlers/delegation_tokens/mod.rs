//! The delegation-token APIs (KIP-48): CreateDelegationToken, RenewDelegationToken,
//! ExpireDelegationToken and DescribeDelegationToken, with Kafka's rules for who may ask.
//! Tokens live in the coordinator's log and reach every shard with the topic catalogue; their
//! HMACs are derived here from `delegation.token.secret.key`, never stored. A client logs in
//! with a token by SCRAM (`handlers::sasl`).

pub mod change_expiry;
pub mod create;
pub mod describe;

use shoal_auth::delegation_token::token_hmac;
use shoal_auth::plain::constant_time_eq;
use shoal_coordinator::delegation_tokens::DelegationToken;
use shoal_protocol::ResponseError;

use crate::context::Call;

/// Kafka's principal type for users, the only one a token's renewers may have.
pub const USER_TYPE: &str = shoal_auth::Principal::USER_TYPE;

/// Kafka's first check: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on a PLAINTEXT or anonymous
/// connection, or one that logged in with a token.
fn may_ask(call: &Call<'_>) -> Result<(), ResponseError> {
    match call.client.session.may_use_token_apis() {
        true => Ok(()),
        false => Err(ResponseError::DelegationTokenRequestNotAllowed),
    }
}

/// The secret key, or DELEGATION_TOKEN_AUTH_DISABLED without one.
fn secret_key<'a>(call: &'a Call<'_>) -> Result<&'a str, ResponseError> {
    call.broker
        .config
        .delegation_token
        .secret_key
        .as_deref()
        .ok_or(ResponseError::DelegationTokenAuthDisabled)
}

/// The id of the token whose HMAC this is (compared in constant time), if any.
fn token_with_hmac(call: &Call<'_>, secret_key: &str, hmac: &[u8]) -> Option<String> {
    let view = call.broker.shard.topics.load();
    view.delegation_tokens()
        .keys()
        .find(|id| constant_time_eq(&token_hmac(secret_key, id), hmac))
        .cloned()
}

/// "Type:name" as Kafka prints a principal, from its two parts.
fn principal(kind: &str, name: &str) -> String {
    format!("{kind}:{name}")
}

/// A stored principal split into (type, name); a name may hold ':'.
fn principal_parts(principal: &str) -> (&str, &str) {
    principal.split_once(':').unwrap_or((USER_TYPE, principal))
}

/// Whether the token may be described to `requester`: its owner and renewers see it, others
/// with DESCRIBE on the token or DESCRIBE_TOKENS on its owner (Kafka's filter).
fn may_describe(call: &Call<'_>, requester: &str, id: &str, token: &DelegationToken) -> bool {
    use shoal_coordinator::acl::{Operation, ResourceType};
    token.owned_or_renewed_by(requester)
        || call.authorized(Operation::Describe, ResourceType::DelegationToken, id)
        || call.authorized(Operation::DescribeTokens, ResourceType::User, &token.owner)
}
