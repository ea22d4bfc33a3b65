//! RenewDelegationToken and ExpireDelegationToken: the token named by its HMAC gets a new
//! expiry (or, expired with a negative period, is removed), if the requester owns or renews
//! it.

use shoal_coordinator::commands::ChangeDelegationTokenExpiry;
use shoal_coordinator::ErrorKind;
use shoal_protocol::messages::{
    ExpireDelegationTokenRequest, ExpireDelegationTokenResponse, RenewDelegationTokenRequest,
    RenewDelegationTokenResponse,
};
use shoal_protocol::ResponseError;

use super::{may_ask, secret_key, token_with_hmac};
use crate::context::Call;
use crate::kafka::error_codes::error_code;

/// Kafka's expiry timestamp in an answer that carries an error.
const ERROR_TIMESTAMP: i64 = -1;

pub async fn renew(
    call: &Call<'_>,
    request: RenewDelegationTokenRequest,
) -> RenewDelegationTokenResponse {
    let (error, expiry) = match change(call, &request.hmac, false, request.renew_period_ms).await {
        Ok(expiry) => (0, expiry),
        Err(code) => (code, ERROR_TIMESTAMP),
    };
    RenewDelegationTokenResponse::default()
        .with_error_code(error)
        .with_expiry_timestamp_ms(expiry)
}

pub async fn expire(
    call: &Call<'_>,
    request: ExpireDelegationTokenRequest,
) -> ExpireDelegationTokenResponse {
    let period = request.expiry_time_period_ms;
    let (error, expiry) = match change(call, &request.hmac, true, period).await {
        Ok(expiry) => (0, expiry),
        Err(code) => (code, ERROR_TIMESTAMP),
    };
    ExpireDelegationTokenResponse::default()
        .with_error_code(error)
        .with_expiry_timestamp_ms(expiry)
}

/// The token's new expiry, or the code of Kafka's refusal.
async fn change(call: &Call<'_>, hmac: &[u8], expire: bool, period_ms: i64) -> Result<i64, i16> {
    let refused = |error: ResponseError| error.code();
    may_ask(call).map_err(refused)?;
    let secret = secret_key(call).map_err(refused)?;
    let token_id = token_with_hmac(call, secret, hmac)
        .ok_or(ResponseError::DelegationTokenNotFound)
        .map_err(refused)?;
    let command = ChangeDelegationTokenExpiry {
        token_id: token_id.clone(),
        requester: call.client.session.principal().to_string(),
        expire,
        period_ms,
        lifetimes: call.broker.config.delegation_token.lifetimes(),
    };
    let changed = match call.broker.shard.coordinator.run(command).await {
        Ok(changed) => changed,
        Err(_) => Err(ErrorKind::NotAvailable),
    };
    match changed {
        Ok(expiry) => {
            tracing::info!(token_id, expire, expiry, "delegation token expiry changed");
            Ok(expiry)
        }
        Err(kind) => Err(error_code(kind).code()),
    }
}
