//! Delegation tokens (KIP-48): CreateDelegationToken, RenewDelegationToken and
//! ExpireDelegationToken as Kafka's controller decides them, and the sweep of expired tokens.
//! The broker has checked the requester's right to ask and found the token by its HMAC;
//! every change is published with the topic catalogue, where logins look tokens up.

use crate::command::{Command, Round};
use crate::delegation_tokens::{DelegationToken, TokenLifetimes};
use crate::ErrorKind;

/// A new token, `token_id` drawn by the broker; its timestamps are set here, from the
/// round's clock. The reply: the token as made.
#[derive(Debug, Clone)]
pub struct CreateDelegationToken {
    pub token_id: String,
    pub owner: String,
    pub requester: String,
    pub renewers: Vec<String>,
    /// The request's maximum lifetime (≤ 0: the broker's).
    pub max_lifetime_ms: i64,
    pub lifetimes: TokenLifetimes,
}

impl Command for CreateDelegationToken {
    type Reply = Result<DelegationToken, ErrorKind>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let now = round.now_ms();
        let (max, expiry) = self.lifetimes.of_new_token(now, self.max_lifetime_ms);
        let token = DelegationToken {
            owner: self.owner,
            requester: self.requester,
            renewers: self.renewers,
            issue_timestamp_ms: now,
            max_timestamp_ms: max,
            expiry_timestamp_ms: expiry,
        };
        let entry = round
            .state()
            .create_delegation_token(&self.token_id, token.clone(), now)?;
        round.append(&entry);
        round.topics_changed();
        Ok(token)
    }
}

/// RenewDelegationToken (`expire` false) or ExpireDelegationToken (`expire` true) of the token
/// `token_id` by `requester`. The reply: the token's new expiry timestamp.
#[derive(Debug, Clone)]
pub struct ChangeDelegationTokenExpiry {
    pub token_id: String,
    pub requester: String,
    pub expire: bool,
    /// The request's renew period or expiry period.
    pub period_ms: i64,
    pub lifetimes: TokenLifetimes,
}

impl Command for ChangeDelegationTokenExpiry {
    type Reply = Result<i64, ErrorKind>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let now = round.now_ms();
        let state = round.state();
        let (expiry, entry) = match self.expire {
            false => state.renew_delegation_token(
                &self.token_id,
                &self.requester,
                self.period_ms,
                &self.lifetimes,
                now,
            ),
            true => {
                state.expire_delegation_token(&self.token_id, &self.requester, self.period_ms, now)
            }
        }?;
        round.append(&entry);
        round.topics_changed();
        Ok(expiry)
    }
}

/// Removes tokens past their expiry, at most `max` per round; the reply counts them.
#[derive(Debug, Clone)]
pub struct RemoveExpiredDelegationTokens {
    pub max: usize,
}

impl Command for RemoveExpiredDelegationTokens {
    type Reply = usize;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let entries = round
            .state()
            .expired_delegation_tokens(round.now_ms(), self.max);
        if !entries.is_empty() {
            round.append_all(&entries);
            round.topics_changed();
        }
        entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::scan_frames;
    use crate::state::CoordinatorState;
    use crate::CoordinatorMetrics;

    const LIFETIMES: TokenLifetimes = TokenLifetimes {
        max_lifetime_ms: 10_000,
        expiry_time_ms: 1_000,
    };

    fn run<C: Command>(state: &mut CoordinatorState, log: &mut Vec<u8>, at: i64, c: C) -> C::Reply {
        let metrics = CoordinatorMetrics::default();
        c.run(&mut Round::new(state, log, at, &metrics))
    }

    fn create(id: &str) -> CreateDelegationToken {
        CreateDelegationToken {
            token_id: id.into(),
            owner: "User:alice".into(),
            requester: "User:admin".into(),
            renewers: vec!["User:bob".into()],
            max_lifetime_ms: -1,
            lifetimes: LIFETIMES,
        }
    }

    fn change(id: &str, by: &str, expire: bool, period_ms: i64) -> ChangeDelegationTokenExpiry {
        ChangeDelegationTokenExpiry {
            token_id: id.into(),
            requester: by.into(),
            expire,
            period_ms,
            lifetimes: LIFETIMES,
        }
    }

    #[test]
    fn tokens_are_renewed_expired_and_swept_as_kafka_does_and_survive_replay() {
        let (mut state, mut log) = (CoordinatorState::default(), Vec::new());
        let made = run(&mut state, &mut log, 100, create("t1")).unwrap();
        assert_eq!(
            (made.max_timestamp_ms, made.expiry_timestamp_ms),
            (10_100, 1_100)
        );
        assert_eq!(
            run(&mut state, &mut log, 100, create("t1")),
            Err(ErrorKind::InvalidRequest),
            "ids are unique"
        );
        run(&mut state, &mut log, 100, create("t2")).unwrap();
        run(&mut state, &mut log, 100, create("t3")).unwrap();
        assert_eq!(state.topics_view().delegation_tokens().len(), 3);

        // The owner and renewers may renew; no one else; never past the maximum.
        assert_eq!(
            run(
                &mut state,
                &mut log,
                500,
                change("t1", "User:bob", false, -1)
            ),
            Ok(1_500)
        );
        assert_eq!(
            run(
                &mut state,
                &mut log,
                500,
                change("t1", "User:carol", false, -1)
            ),
            Err(ErrorKind::DelegationTokenOwnerMismatch)
        );
        assert_eq!(
            run(
                &mut state,
                &mut log,
                500,
                change("t9", "User:alice", false, -1)
            ),
            Err(ErrorKind::DelegationTokenNotFound)
        );
        assert_eq!(
            run(
                &mut state,
                &mut log,
                9_500,
                change("t1", "User:alice", false, 900)
            ),
            Err(ErrorKind::DelegationTokenExpired)
        );
        // Expiring later moves the expiry; expiring at once removes the token.
        assert_eq!(
            run(
                &mut state,
                &mut log,
                600,
                change("t1", "User:alice", true, 100)
            ),
            Ok(700)
        );
        assert_eq!(
            run(
                &mut state,
                &mut log,
                600,
                change("t2", "User:alice", true, -1)
            ),
            Ok(600)
        );
        assert!(!state.delegation_tokens().contains_key("t2"));

        // The sweep removes what has expired (t1 at 700, t3 at 1_100), not the rest.
        assert_eq!(
            run(
                &mut state,
                &mut log,
                800,
                RemoveExpiredDelegationTokens { max: 10 }
            ),
            1
        );
        assert_eq!(
            state.delegation_tokens().keys().collect::<Vec<_>>(),
            vec!["t3"]
        );
        let image = state.encode_snapshot();
        assert_eq!(CoordinatorState::decode_snapshot(&image).unwrap(), state);
        let mut replayed = CoordinatorState::default();
        for entry in &scan_frames(&log).entries {
            replayed.apply(entry);
        }
        assert_eq!(replayed, state);
        assert_eq!(
            run(
                &mut state,
                &mut log,
                2_000,
                RemoveExpiredDelegationTokens { max: 10 }
            ),
            1
        );
        assert!(state.topics_view().delegation_tokens().is_empty());
    }
}
