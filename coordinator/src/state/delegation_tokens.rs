//! Delegation tokens in the coordinator's state: the decisions of CreateDelegationToken,
//! RenewDelegationToken and ExpireDelegationToken as Kafka's controller makes them, the sweep
//! of expired tokens, and the records' application.

use std::sync::Arc;

use shoal_protocol::records::{ShoalDelegationTokenRecord, ShoalDelegationTokenRemovedRecord};

use super::CoordinatorState;
use crate::delegation_tokens::{
    removed, DelegationToken, DelegationTokens, TokenLifetimes, DELEGATION_TOKENS_MAX,
};
use crate::entry::Entry;
use crate::ErrorKind;

impl CoordinatorState {
    pub fn delegation_tokens(&self) -> &DelegationTokens {
        &self.delegation_tokens
    }

    /// The entry that makes a token, or why it cannot be made.
    pub fn create_delegation_token(
        &self,
        token_id: &str,
        token: DelegationToken,
        now_ms: i64,
    ) -> Result<Entry, ErrorKind> {
        if self.delegation_tokens.len() >= DELEGATION_TOKENS_MAX {
            return Err(ErrorKind::TooManyDelegationTokens);
        }
        if self.delegation_tokens.contains_key(token_id) {
            return Err(ErrorKind::InvalidRequest);
        }
        Ok(Entry::of(now_ms, token.record(token_id)))
    }

    /// Renews a token for `requester`: its new expiry and the entry, or Kafka's refusal
    /// (unknown, expired, or neither owned nor renewed by the requester).
    pub fn renew_delegation_token(
        &self,
        token_id: &str,
        requester: &str,
        period_ms: i64,
        lifetimes: &TokenLifetimes,
        now_ms: i64,
    ) -> Result<(i64, Entry), ErrorKind> {
        let token = self.live_token(token_id, now_ms)?;
        if !token.owned_or_renewed_by(requester) {
            return Err(ErrorKind::DelegationTokenOwnerMismatch);
        }
        let expiry = lifetimes.renewed_expiry(token, now_ms, period_ms);
        Ok((
            expiry,
            self.token_expiring_at(token_id, token, expiry, now_ms),
        ))
    }

    /// Expires a token for `requester` after `period_ms` (< 0: at once, removing it), no later
    /// than its maximum: the new expiry and the entry, or Kafka's refusal.
    pub fn expire_delegation_token(
        &self,
        token_id: &str,
        requester: &str,
        period_ms: i64,
        now_ms: i64,
    ) -> Result<(i64, Entry), ErrorKind> {
        let token = self
            .delegation_tokens
            .get(token_id)
            .ok_or(ErrorKind::DelegationTokenNotFound)?;
        if !token.owned_or_renewed_by(requester) {
            return Err(ErrorKind::DelegationTokenOwnerMismatch);
        }
        if period_ms < 0 {
            return Ok((now_ms, Entry::of(now_ms, removed(token_id))));
        }
        if token.is_expired(now_ms) {
            return Err(ErrorKind::DelegationTokenExpired);
        }
        let expiry = token.max_timestamp_ms.min(now_ms.saturating_add(period_ms));
        Ok((
            expiry,
            self.token_expiring_at(token_id, token, expiry, now_ms),
        ))
    }

    /// Removals of the tokens expired at `now_ms`, at most `max` of them.
    pub fn expired_delegation_tokens(&self, now_ms: i64, max: usize) -> Vec<Entry> {
        self.delegation_tokens
            .iter()
            .filter(|(_, token)| token.is_expired(now_ms))
            .take(max)
            .map(|(id, _)| Entry::of(now_ms, removed(id)))
            .collect()
    }

    fn live_token(&self, token_id: &str, now_ms: i64) -> Result<&DelegationToken, ErrorKind> {
        let token = self
            .delegation_tokens
            .get(token_id)
            .ok_or(ErrorKind::DelegationTokenNotFound)?;
        match token.is_expired(now_ms) {
            true => Err(ErrorKind::DelegationTokenExpired),
            false => Ok(token),
        }
    }

    fn token_expiring_at(
        &self,
        token_id: &str,
        token: &DelegationToken,
        expiry_ms: i64,
        now_ms: i64,
    ) -> Entry {
        let changed = DelegationToken {
            expiry_timestamp_ms: expiry_ms,
            ..token.clone()
        };
        Entry::of(now_ms, changed.record(token_id))
    }

    pub(super) fn apply_delegation_token(&mut self, record: &ShoalDelegationTokenRecord) {
        Arc::make_mut(&mut self.delegation_tokens)
            .insert(record.token_id.clone(), DelegationToken::of_record(record));
    }

    pub(super) fn apply_delegation_token_removed(
        &mut self,
        record: &ShoalDelegationTokenRemovedRecord,
    ) {
        Arc::make_mut(&mut self.delegation_tokens).remove(&record.token_id);
    }
}
