//! Share groups' share-partition states (KIP-932): written by the broker holding the
//! share-partition before it answers the acquisitions and acknowledgements that changed them,
//! read back by a broker that finds a share-partition it holds nothing of (after a restart, or
//! taking it over from another broker of a cluster), and listed for DescribeShareGroupOffsets.

use shoal_protocol::records::ShoalShareStateRecord;
use uuid::Uuid;

use crate::command::{Command, Round};
use crate::entry::Entry;

/// Share-partition states, in one entry of the log. Each is written only at the version
/// after the one the log holds (1 where it holds none): a broker that lost a share-partition
/// to another, which read it and wrote since, cannot write over it. The reply lists the
/// states refused, by their index in `states`; the writer drops what it held of them.
#[derive(Debug, Clone)]
pub struct WriteShareStates {
    pub states: Vec<ShoalShareStateRecord>,
}

impl Command for WriteShareStates {
    type Reply = Vec<usize>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let mut refused = Vec::new();
        let mut records = Vec::with_capacity(self.states.len());
        for (index, state) in self.states.into_iter().enumerate() {
            let held =
                round
                    .state()
                    .share_state_version(&state.group_id, state.topic_id, state.partition);
            match state.state_version == held + 1 {
                true => records.push(state.into()),
                false => refused.push(index),
            }
        }
        if !records.is_empty() {
            round.append(&Entry::new(round.now_ms(), records));
        }
        refused
    }
}

/// One share-partition's state as last written.
#[derive(Debug, Clone)]
pub struct ReadShareState {
    pub group: String,
    pub topic_id: Uuid,
    pub partition: i32,
}

impl Command for ReadShareState {
    type Reply = Option<ShoalShareStateRecord>;
    const WRITE: bool = false;
    const FRESH: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        round
            .state()
            .share_state(&self.group, self.topic_id, self.partition)
    }
}

/// The groups with share-partition states in the log: share groups, with or without members
/// (ListGroups names them after a restart, before any member is back).
#[derive(Debug, Clone)]
pub struct ListShareGroups;

impl Command for ListShareGroups {
    type Reply = Vec<String>;
    const WRITE: bool = false;
    const FRESH: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        round.state().share_state_groups()
    }
}

/// Whether the log holds any share-partition state of a group (ShareGroupDescribe of a
/// group without members, after a restart).
#[derive(Debug, Clone)]
pub struct HasShareStates {
    pub group: String,
}

impl Command for HasShareStates {
    type Reply = bool;
    const WRITE: bool = false;
    const FRESH: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        round.state().has_share_states(&self.group)
    }
}

/// Every share-partition state of a group.
#[derive(Debug, Clone)]
pub struct ReadShareGroupStates {
    pub group: String,
}

impl Command for ReadShareGroupStates {
    type Reply = Vec<ShoalShareStateRecord>;
    const WRITE: bool = false;
    const FRESH: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        round.state().share_states_of(&self.group)
    }
}
