//! DescribeDelegationToken: the tokens of the owners asked for (all owners for a null list,
//! none for an empty one) that the requester may see, with their HMACs.

use bytes::Bytes;
use kafka_protocol::protocol::StrBytes;
use shoal_auth::delegation_token::token_hmac;
use shoal_protocol::messages::describe_delegation_token_response::{
    DescribedDelegationToken, DescribedDelegationTokenRenewer,
};
use shoal_protocol::messages::{DescribeDelegationTokenRequest, DescribeDelegationTokenResponse};

use super::{may_ask, may_describe, principal, principal_parts, secret_key};
use crate::context::Call;

pub async fn handle(
    call: &Call<'_>,
    request: DescribeDelegationTokenRequest,
) -> DescribeDelegationTokenResponse {
    let secret = match may_ask(call).and_then(|()| secret_key(call)) {
        Ok(secret) => secret,
        Err(error) => {
            return DescribeDelegationTokenResponse::default().with_error_code(error.code())
        }
    };
    let owners: Option<Vec<String>> = request.owners.as_ref().map(|owners| {
        owners
            .iter()
            .map(|o| principal(&o.principal_type, &o.principal_name))
            .collect()
    });
    let requester = call.client.session.principal().to_string();
    let view = call.broker.shard.topics.load();
    let tokens = view
        .delegation_tokens()
        .iter()
        .filter(|(_, token)| {
            owners
                .as_ref()
                .is_none_or(|owners| owners.iter().any(|o| token.owned_or_renewed_by(o)))
        })
        .filter(|(id, token)| may_describe(call, &requester, id, token))
        .map(|(id, token)| {
            let (owner_type, owner_name) = principal_parts(&token.owner);
            let (requester_type, requester_name) = principal_parts(&token.requester);
            let text = |s: &str| StrBytes::from_string(s.to_string());
            DescribedDelegationToken::default()
                .with_principal_type(text(owner_type))
                .with_principal_name(text(owner_name))
                .with_token_requester_principal_type(text(requester_type))
                .with_token_requester_principal_name(text(requester_name))
                .with_issue_timestamp(token.issue_timestamp_ms)
                .with_expiry_timestamp(token.expiry_timestamp_ms)
                .with_max_timestamp(token.max_timestamp_ms)
                .with_token_id(text(id))
                .with_hmac(Bytes::from(token_hmac(secret, id)))
                .with_renewers(
                    token
                        .renewers
                        .iter()
                        .map(|r| {
                            let (kind, name) = principal_parts(r);
                            DescribedDelegationTokenRenewer::default()
                                .with_principal_type(text(kind))
                                .with_principal_name(text(name))
                        })
                        .collect(),
                )
        })
        .collect();
    DescribeDelegationTokenResponse::default().with_tokens(tokens)
}
