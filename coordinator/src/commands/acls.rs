//! CreateAcls, DeleteAcls and DescribeAcls. A change republishes the catalogue the shards
//! authorize against.

use crate::acl::{AclBinding, AclFilter};
use crate::command::{Command, Round};
use crate::entry::Entry;
use crate::state::emit;

/// One result per binding: Err says why it was refused.
#[derive(Debug, Clone)]
pub struct CreateAcls {
    pub bindings: Vec<AclBinding>,
}

impl Command for CreateAcls {
    type Reply = Vec<Result<(), &'static str>>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let results = self
            .bindings
            .iter()
            .map(|binding| {
                let record = round.state().create_acl(binding, round.now_ms())?;
                if let Some(record) = record {
                    round.append(&record);
                }
                Ok(())
            })
            .collect();
        round.topics_changed();
        results
    }
}

/// The bindings each filter matched, which are deleted.
#[derive(Debug, Clone)]
pub struct DeleteAcls {
    pub filters: Vec<AclFilter>,
}

impl Command for DeleteAcls {
    type Reply = Vec<Vec<AclBinding>>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let deleted = self
            .filters
            .iter()
            .map(|filter| {
                let matched = round.state().matching_acls(filter);
                for binding in &matched {
                    round.append(&Entry::of(round.now_ms(), emit::acl_deleted(binding)));
                }
                matched
            })
            .collect();
        round.topics_changed();
        deleted
    }
}

#[derive(Debug, Clone)]
pub struct DescribeAcls {
    pub filter: AclFilter,
}

impl Command for DescribeAcls {
    type Reply = Vec<AclBinding>;
    const WRITE: bool = false;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        round.state().matching_acls(&self.filter)
    }
}
