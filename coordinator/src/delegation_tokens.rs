//! Delegation tokens (KIP-48) as Kafka's controller keeps them: who a token acts as, who may
//! renew it, and until when it holds. What a token is worth to a client, its HMAC, is not
//! here: brokers derive it from the token id with `delegation.token.secret.key`, so the log
//! never holds a credential.

use std::collections::BTreeMap;
use std::sync::Arc;

use shoal_protocol::records::{ShoalDelegationTokenRecord, ShoalDelegationTokenRemovedRecord};

/// The most tokens kept at once: each costs memory on every broker, and Kafka sets no bound.
pub const DELEGATION_TOKENS_MAX: usize = 100_000;
/// The most renewers one token names.
pub const RENEWERS_MAX: usize = 1_000;

/// Tokens by id, shared between the coordinator's state and the topic catalogue the shards
/// read.
pub type DelegationTokens = Arc<BTreeMap<String, DelegationToken>>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelegationToken {
    /// The principal it acts as, e.g. `User:alice`.
    pub owner: String,
    /// The principal that created it.
    pub requester: String,
    /// Principals besides the owner that may renew or expire it.
    pub renewers: Vec<String>,
    pub issue_timestamp_ms: i64,
    /// The latest its expiry can be moved to.
    pub max_timestamp_ms: i64,
    pub expiry_timestamp_ms: i64,
}

impl DelegationToken {
    /// Kafka's test: past its expiry or its maximum lifetime.
    pub fn is_expired(&self, now_ms: i64) -> bool {
        self.max_timestamp_ms < now_ms || self.expiry_timestamp_ms < now_ms
    }

    /// The owner and the renewers may renew, expire and describe a token.
    pub fn owned_or_renewed_by(&self, principal: &str) -> bool {
        self.owner == principal || self.renewers.iter().any(|r| r == principal)
    }

    pub fn record(&self, token_id: &str) -> ShoalDelegationTokenRecord {
        ShoalDelegationTokenRecord {
            token_id: token_id.to_string(),
            owner: self.owner.clone(),
            requester: self.requester.clone(),
            renewers: self.renewers.clone(),
            issue_timestamp_ms: self.issue_timestamp_ms,
            max_timestamp_ms: self.max_timestamp_ms,
            expiry_timestamp_ms: self.expiry_timestamp_ms,
        }
    }

    pub fn of_record(record: &ShoalDelegationTokenRecord) -> DelegationToken {
        DelegationToken {
            owner: record.owner.clone(),
            requester: record.requester.clone(),
            renewers: record.renewers.clone(),
            issue_timestamp_ms: record.issue_timestamp_ms,
            max_timestamp_ms: record.max_timestamp_ms,
            expiry_timestamp_ms: record.expiry_timestamp_ms,
        }
    }
}

/// The brokers' token lifetimes: Kafka's `delegation.token.max.lifetime.ms` and
/// `delegation.token.expiry.time.ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenLifetimes {
    pub max_lifetime_ms: i64,
    pub expiry_time_ms: i64,
}

impl TokenLifetimes {
    /// (max timestamp, expiry timestamp) of a token created at `now_ms`: the request's
    /// lifetime if shorter than the broker's (≤ 0: the broker's), expiring after the renew
    /// period and no later than its maximum.
    pub fn of_new_token(&self, now_ms: i64, requested_max_lifetime_ms: i64) -> (i64, i64) {
        let lifetime = match requested_max_lifetime_ms {
            ms if ms > 0 => ms.min(self.max_lifetime_ms),
            _ => self.max_lifetime_ms,
        };
        let max = now_ms.saturating_add(lifetime);
        (max, max.min(now_ms.saturating_add(self.expiry_time_ms)))
    }

    /// A renewal's new expiry: the requested period if shorter than the broker's (≤ 0: the
    /// broker's), no later than the token's maximum.
    pub fn renewed_expiry(&self, token: &DelegationToken, now_ms: i64, period_ms: i64) -> i64 {
        let period = match period_ms {
            ms if ms > 0 => ms.min(self.expiry_time_ms),
            _ => self.expiry_time_ms,
        };
        token.max_timestamp_ms.min(now_ms.saturating_add(period))
    }
}

/// Why a stored token record cannot be applied.
pub(crate) fn check_token_record(record: &ShoalDelegationTokenRecord) -> Result<(), String> {
    if record.token_id.is_empty() {
        return Err("a delegation token without an id".into());
    }
    if record.renewers.len() > RENEWERS_MAX {
        return Err(format!(
            "delegation token {} names {} renewers (at most {RENEWERS_MAX})",
            record.token_id,
            record.renewers.len()
        ));
    }
    if record.expiry_timestamp_ms > record.max_timestamp_ms {
        return Err(format!(
            "delegation token {} expires after its maximum lifetime",
            record.token_id
        ));
    }
    Ok(())
}

pub(crate) fn removed(token_id: &str) -> ShoalDelegationTokenRemovedRecord {
    ShoalDelegationTokenRemovedRecord {
        token_id: token_id.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400_000;
    const LIFETIMES: TokenLifetimes = TokenLifetimes {
        max_lifetime_ms: 7 * DAY,
        expiry_time_ms: DAY,
    };

    #[test]
    fn a_new_token_expires_after_the_renew_period_within_its_lifetime() {
        assert_eq!(
            LIFETIMES.of_new_token(1_000, -1),
            (1_000 + 7 * DAY, 1_000 + DAY)
        );
        // A shorter lifetime asked for is taken, and caps the expiry.
        assert_eq!(LIFETIMES.of_new_token(1_000, 500), (1_500, 1_500));
        // A longer one is not.
        assert_eq!(LIFETIMES.of_new_token(0, 30 * DAY), (7 * DAY, DAY));
        assert_eq!(LIFETIMES.of_new_token(i64::MAX - 1, -1).0, i64::MAX);
    }

    #[test]
    fn renewals_never_pass_the_maximum() {
        let token = DelegationToken {
            owner: "User:alice".into(),
            requester: "User:alice".into(),
            renewers: vec!["User:bob".into()],
            issue_timestamp_ms: 0,
            max_timestamp_ms: 7 * DAY,
            expiry_timestamp_ms: DAY,
        };
        assert_eq!(LIFETIMES.renewed_expiry(&token, DAY, -1), 2 * DAY);
        assert_eq!(LIFETIMES.renewed_expiry(&token, DAY, 60_000), DAY + 60_000);
        assert_eq!(LIFETIMES.renewed_expiry(&token, 6 * DAY + 5, 0), 7 * DAY);
        assert!(token.owned_or_renewed_by("User:bob"));
        assert!(!token.owned_or_renewed_by("User:carol"));
        assert!(!token.is_expired(DAY));
        assert!(token.is_expired(DAY + 1));
    }
}
