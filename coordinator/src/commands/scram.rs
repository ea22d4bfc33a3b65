//! SCRAM credentials: AlterUserScramCredentials, DescribeUserScramCredentials, and the
//! lookup a login makes.

use crate::command::{Command, Round};
use crate::state::{ScramAlteration, UserScramCredentials};
use crate::ErrorKind;
use shoal_auth::ScramCredential;

/// Each user's alterations, applied all or none per user; one result per user.
#[derive(Debug, Clone)]
pub struct AlterScramCredentials {
    pub users: Vec<(String, Vec<ScramAlteration>)>,
}

impl Command for AlterScramCredentials {
    type Reply = Vec<(String, Result<(), ErrorKind>)>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        self.users
            .into_iter()
            .map(|(user, alterations)| {
                let result = round
                    .state()
                    .alter_scram(&user, &alterations, round.now_ms())
                    .map(|records| round.append_all(&records));
                (user, result)
            })
            .collect()
    }
}

/// DescribeUserScramCredentials: each named user's mechanisms and iterations (None: all).
#[derive(Debug, Clone)]
pub struct DescribeScramCredentials {
    pub users: Option<Vec<String>>,
}

impl Command for DescribeScramCredentials {
    type Reply = Vec<UserScramCredentials>;
    const WRITE: bool = false;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        round.state().describe_scram(self.users.as_deref())
    }
}

/// The credential a SCRAM login checks against.
#[derive(Debug, Clone)]
pub struct LookupScramCredential {
    pub user: String,
    pub mechanism: i8,
}

impl Command for LookupScramCredential {
    type Reply = Option<ScramCredential>;
    const WRITE: bool = false;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        round
            .state()
            .scram_credential(&self.user, self.mechanism)
            .cloned()
    }
}
