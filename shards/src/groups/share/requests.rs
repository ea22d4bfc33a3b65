//! What the share groups take from the shard's `Groups`: the shard's group limits and memory,
//! and the writes of share-partition states to the coordinator's log.

use shoal_coordinator::commands::WriteShareStates;
use shoal_coordinator::TopicPartition;
use shoal_protocol::records::ShoalShareStateRecord;

use super::registry::ShareGroups;
use crate::groups::{GroupError, Groups};

/// What one new share group member is taken to need before it joins.
const MEMBER_ESTIMATE_BYTES: usize = 1024;

impl Groups {
    /// The share groups of this shard.
    pub fn share(&self) -> &ShareGroups {
        &self.share
    }

    /// Whether a classic or consumer-protocol group holds the id (a share group may not).
    pub fn holds_other_than_share(&self, group_id: &str) -> bool {
        self.consumer.contains(group_id)
            || self.streams.contains(group_id)
            || self.classic.borrow().contains_key(group_id)
    }

    /// Whether a new share group, or one more member, fits the shard's group limits.
    pub fn share_may_grow(&self, group_id: &str) -> bool {
        let new_group = !self.share.contains(group_id);
        self.has_room_for(MEMBER_ESTIMATE_BYTES) && !(new_group && self.at_group_limit())
    }

    /// Writes share-partition states to the coordinator's log, durably; the share-partitions
    /// whose state it refused (another broker wrote them since this one read them).
    pub async fn write_share_states(
        &self,
        states: Vec<ShoalShareStateRecord>,
    ) -> Result<Vec<TopicPartition>, GroupError> {
        if states.is_empty() {
            return Ok(Vec::new());
        }
        let partitions: Vec<TopicPartition> = states
            .iter()
            .map(|s| TopicPartition {
                topic_id: s.topic_id,
                partition: s.partition,
            })
            .collect();
        let write = WriteShareStates { states };
        let refused = self
            .claims
            .coordinator()
            .run(write)
            .await
            .map_err(|_| GroupError::CoordinatorNotAvailable)?;
        Ok(refused.into_iter().map(|i| partitions[i]).collect())
    }

    /// Charges what a share group holds now to the shard's group memory.
    pub fn account_share(&self, group_id: &str) {
        self.account(group_id, self.share.memory_bytes(group_id));
    }
}
