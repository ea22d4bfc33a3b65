//! A committed object's news, for the shards that own its partitions. Writes are buffered by
//! the shard that received them, whatever partitions they name; the cache of recent objects and
//! the long polls waiting for data live with each partition's owner, so the owners are told.

use std::collections::BTreeMap;
use std::rc::Rc;

use shoal_coordinator::{owner_shard, TopicPartition};
use shoal_wal::ObjectBody;

use crate::fetch::LocalData;
use crate::peer::{Committed, PeerClient};

pub struct CommitFanout {
    pub local_data: Rc<LocalData>,
    /// Indexed by shard; `None` at this shard's own index.
    pub peers: Vec<Option<Rc<PeerClient>>>,
}

impl CommitFanout {
    /// `ends` holds the end offset (last offset + 1) of each accepted batch of the object.
    /// Other owners are told without waiting: the producers' answers do not depend on it, as
    /// a fetch finds the batches at the coordinator whether or not its shard has heard.
    pub fn on_committed(
        &self,
        key: &str,
        data: &ObjectBody,
        ends: impl IntoIterator<Item = (TopicPartition, i64)>,
    ) {
        let mut by_owner: BTreeMap<usize, Vec<(TopicPartition, i64)>> = BTreeMap::new();
        for (partition, end) in ends {
            let owner = owner_shard(&partition, self.peers.len());
            by_owner.entry(owner).or_default().push((partition, end));
        }
        for (owner, ends) in by_owner {
            match &self.peers[owner] {
                None => self.local_data.on_committed(key, data, ends),
                Some(peer) => {
                    let peer = peer.clone();
                    let call = Committed {
                        key: key.to_string(),
                        data: data.clone(),
                        ends,
                    };
                    // Fails only when the owner is shutting down: nothing is left to tell.
                    glommio::spawn_local(async move { peer.ask(call).await }).detach();
                }
            }
        }
    }
}
