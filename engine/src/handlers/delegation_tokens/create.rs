//! CreateDelegationToken: a token owned by the requester, or by another user when the
//! requester may CREATE_TOKENS on that user, with renewers that are users.

use bytes::Bytes;
use kafka_protocol::protocol::StrBytes;
use shoal_auth::delegation_token::token_hmac;
use shoal_coordinator::acl::{Operation, ResourceType};
use shoal_coordinator::commands::CreateDelegationToken;
use shoal_coordinator::delegation_tokens::RENEWERS_MAX;
use shoal_coordinator::ErrorKind;
use shoal_protocol::messages::{CreateDelegationTokenRequest, CreateDelegationTokenResponse};
use shoal_protocol::ResponseError;

use super::{may_ask, principal, principal_parts, secret_key, USER_TYPE};
use crate::context::Call;
use crate::kafka::error_codes::error_code;

pub async fn handle(
    call: &Call<'_>,
    request: CreateDelegationTokenRequest,
) -> CreateDelegationTokenResponse {
    let requester = call.client.session.principal().to_string();
    let owner = match (&request.owner_principal_type, &request.owner_principal_name) {
        (Some(kind), Some(name)) if !name.is_empty() => principal(kind, name),
        _ => requester.clone(),
    };
    let (owner_type, owner_name) = principal_parts(&owner);
    let answer = CreateDelegationTokenResponse::default()
        .with_principal_type(StrBytes::from_string(owner_type.to_string()))
        .with_principal_name(StrBytes::from_string(owner_name.to_string()))
        .with_token_requester_principal_type(StrBytes::from_string(
            principal_parts(&requester).0.to_string(),
        ))
        .with_token_requester_principal_name(StrBytes::from_string(
            principal_parts(&requester).1.to_string(),
        ));
    let secret = match checked(call, &request, &owner, &requester) {
        Ok(secret) => secret,
        Err(error) => return answer.with_error_code(error.code()),
    };
    let token_id = kafka_uuid();
    let command = CreateDelegationToken {
        token_id: token_id.clone(),
        owner,
        requester,
        renewers: request
            .renewers
            .iter()
            .map(|r| principal(&r.principal_type, &r.principal_name))
            .collect(),
        max_lifetime_ms: request.max_lifetime_ms,
        lifetimes: call.broker.config.delegation_token.lifetimes(),
    };
    let made = match call.broker.shard.coordinator.run(command).await {
        Ok(made) => made,
        Err(_) => Err(ErrorKind::NotAvailable),
    };
    match made {
        Ok(token) => {
            tracing::info!(owner = %token.owner, requester = %token.requester, token_id, "delegation token created");
            answer
                .with_issue_timestamp_ms(token.issue_timestamp_ms)
                .with_expiry_timestamp_ms(token.expiry_timestamp_ms)
                .with_max_timestamp_ms(token.max_timestamp_ms)
                .with_hmac(Bytes::from(token_hmac(secret, &token_id)))
                .with_token_id(StrBytes::from_string(token_id))
        }
        Err(kind) => answer.with_error_code(error_code(kind).code()),
    }
}

/// Kafka's checks, in its order, then Shoal's: the secret key when the token may be made.
fn checked<'a>(
    call: &'a Call<'_>,
    request: &CreateDelegationTokenRequest,
    owner: &str,
    requester: &str,
) -> Result<&'a str, ResponseError> {
    may_ask(call)?;
    if owner != requester && !call.authorized(Operation::CreateTokens, ResourceType::User, owner) {
        return Err(ResponseError::DelegationTokenAuthorizationFailed);
    }
    let renewers = &request.renewers;
    if renewers
        .iter()
        .any(|r| r.principal_type.as_str() != USER_TYPE)
    {
        return Err(ResponseError::InvalidPrincipalType);
    }
    let secret = secret_key(call)?;
    // Shoal's principals are users: a token owned by another type could not log in as it.
    if principal_parts(owner).0 != USER_TYPE {
        return Err(ResponseError::InvalidPrincipalType);
    }
    if renewers.len() > RENEWERS_MAX {
        return Err(ResponseError::InvalidRequest);
    }
    Ok(secret)
}

/// A random id as Kafka prints its Uuids (URL-safe base64 of 16 bytes, no padding), as its
/// controller names tokens.
fn kafka_uuid() -> String {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    URL_SAFE_NO_PAD.encode(uuid::Uuid::new_v4().as_bytes())
}
