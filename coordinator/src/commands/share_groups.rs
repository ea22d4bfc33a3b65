//! Share groups' share-partition states (KIP-932): written by the broker holding the group
//! before it answers the acknowledgements that changed them, read back by a broker that finds
//! a share-partition it holds nothing of (after a restart), and listed for
//! DescribeShareGroupOffsets.

use shoal_protocol::records::ShoalShareStateRecord;
use uuid::Uuid;

use crate::command::{Command, Round};
use crate::entry::Entry;

/// Share-partition states, in one entry of the log.
#[derive(Debug, Clone)]
pub struct WriteShareStates {
    pub states: Vec<ShoalShareStateRecord>,
}

impl Command for WriteShareStates {
    type Reply = ();
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        if self.states.is_empty() {
            return;
        }
        let records = self.states.into_iter().map(Into::into).collect();
        round.append(&Entry::new(round.now_ms(), records));
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
