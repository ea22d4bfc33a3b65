//! SCRAM credentials (RFC 5802), kept durably so logins survive restarts: what
//! AlterUserScramCredentials sets and DescribeUserScramCredentials reports.

use super::CoordinatorState;
use shoal_auth::ScramCredential;

use shoal_protocol::records::{ShoalScramCredentialDeletedRecord, ShoalScramCredentialRecord};

use super::emit;
use crate::entry::Entry;
use crate::ErrorKind;

/// A user's credentials (mechanism code, iterations), or why there are none to describe.
pub type UserScramCredentials = (String, Result<Vec<(i8, i32)>, ErrorKind>);

/// One user's alterations, as AlterUserScramCredentials groups them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScramAlteration {
    Upsert {
        mechanism: i8,
        credential: ScramCredential,
    },
    Delete {
        mechanism: i8,
    },
}

impl CoordinatorState {
    pub fn scram_credential(&self, user: &str, mechanism: i8) -> Option<&ScramCredential> {
        self.scram_credentials.get(&(user.to_string(), mechanism))
    }

    /// The mechanisms and iteration counts of each user's credentials; a named user with none
    /// is `ResourceNotFound`. None names every user that has a credential.
    pub fn describe_scram(&self, users: Option<&[String]>) -> Vec<UserScramCredentials> {
        let of = |user: &str| -> Vec<(i8, i32)> {
            self.scram_credentials
                .iter()
                .filter(|((u, _), _)| u == user)
                .map(|((_, mechanism), c)| (*mechanism, c.iterations))
                .collect()
        };
        match users {
            Some(users) => users
                .iter()
                .map(|user| {
                    let found = of(user);
                    let result = if found.is_empty() {
                        Err(ErrorKind::ResourceNotFound)
                    } else {
                        Ok(found)
                    };
                    (user.clone(), result)
                })
                .collect(),
            None => {
                let mut users: Vec<&String> =
                    self.scram_credentials.keys().map(|(u, _)| u).collect();
                users.dedup();
                users.into_iter().map(|u| (u.clone(), Ok(of(u)))).collect()
            }
        }
    }

    /// The entries for one user's alterations, all or none: deleting a credential that does
    /// not exist fails the user's whole request.
    pub fn alter_scram(
        &self,
        user: &str,
        alterations: &[ScramAlteration],
        now_ms: i64,
    ) -> Result<Vec<Entry>, ErrorKind> {
        alterations
            .iter()
            .map(|alteration| match alteration {
                ScramAlteration::Upsert {
                    mechanism,
                    credential,
                } => Ok(Entry::of(
                    now_ms,
                    emit::scram_credential_set(user, *mechanism, credential),
                )),
                ScramAlteration::Delete { mechanism } => {
                    if self.scram_credential(user, *mechanism).is_none() {
                        return Err(ErrorKind::ResourceNotFound);
                    }
                    let deleted = ShoalScramCredentialDeletedRecord {
                        user: user.to_string(),
                        mechanism: *mechanism,
                    };
                    Ok(Entry::of(now_ms, deleted))
                }
            })
            .collect()
    }
}

impl CoordinatorState {
    pub(super) fn apply_scram_credential(&mut self, r: &ShoalScramCredentialRecord) {
        let credential = ScramCredential {
            salt: r.salt.clone(),
            stored_key: r.stored_key.clone(),
            server_key: r.server_key.clone(),
            iterations: r.iterations,
        };
        self.scram_credentials
            .insert((r.user.clone(), r.mechanism), credential);
    }

    pub(super) fn apply_scram_credential_deleted(&mut self, r: &ShoalScramCredentialDeletedRecord) {
        self.scram_credentials
            .remove(&(r.user.clone(), r.mechanism));
    }
}
