//! The coordinator's in-memory state and its only mutation path, `apply(&Entry)`
//! (`apply.rs`). Operations (`writes.rs` and the module of each domain) validate against the
//! state and describe their outcome as the log's generated records (`emit.rs` builds the
//! larger ones), which are then applied as they are, so a replay of the log reaches exactly
//! the same state. Reads are in `reads.rs`, retention and garbage-collection queries in
//! `cleaning.rs`, merging and compaction in `rewrites.rs`.

mod acls;
mod apply;
mod batch_entry;
mod broker_configs;
mod cleaning;
mod client_quotas;
pub mod consumer_groups;
mod delegation_tokens;
pub(crate) mod emit;
mod features;
mod group_claims;
mod groups;
mod mirrors;
mod partition_transactions;
pub mod producers;
mod reads;
mod rewrites;
pub mod schema_registry;
mod scram;
pub mod share_states;
mod snapshot;
pub mod stored_groups;
pub mod streams_groups;
mod transaction_endings;
pub mod transactions;
mod view_changes;
mod writes;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use shoal_auth::ScramCredential;
use uuid::Uuid;

use crate::acl::AclBinding;
use crate::messages::TopicPartition;
use crate::records::{TopicConfig, Transaction};
use crate::topic_configs::TopicOverrides;
use batch_entry::BatchEntry;
use groups::GroupOffsets;
use partition_transactions::PartitionTransactions;
use producers::ProducerState;

pub use groups::{GROUP_ID_MAX_BYTES, OFFSET_METADATA_MAX_BYTES};
pub use mirrors::TopicMirror;
pub use rewrites::MergePolicy;
pub use scram::{ScramAlteration, UserScramCredentials};
pub use writes::is_valid_topic_name;

pub use crate::records::PARTITIONS_PER_TOPIC_MAX;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct PartitionState {
    log_start_offset: i64,
    high_watermark: i64,
    /// Ordered by offset; consecutive entries never overlap.
    batches: VecDeque<BatchEntry>,
    /// Bytes of the live batches, for retention.bytes.
    size_bytes: u64,
    producers: HashMap<i64, ProducerState>,
    transactions: PartitionTransactions,
    mirror: shoal_mirror::PartitionMirror,
    /// Compaction's checkpoint: below it each key has only its latest record.
    cleaned_offset: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct TopicState {
    name: String,
    /// In effect: its own settings and, for the rest, the cluster-wide defaults.
    config: TopicConfig,
    /// The configs it sets itself (for a topic an older Shoal wrote whole: what differed
    /// from Kafka's defaults, the only default there was then).
    overrides: TopicOverrides,
    partitions: Vec<PartitionState>,
    mirror: Option<TopicMirror>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct FileState {
    object_key: Arc<str>,
    live_batches: u64,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CoordinatorState {
    topics: HashMap<Uuid, TopicState>,
    topic_ids: HashMap<String, Uuid>,
    /// Objects with live batches.
    files: HashMap<u64, FileState>,
    file_ids: HashMap<Arc<str>, u64>,
    next_file_id: u64,
    /// Objects no live batch references any more, with the time they became so; garbage
    /// collection deletes them from the store after a grace period.
    deletable_files: BTreeMap<Arc<str>, i64>,
    next_producer_id: i64,
    /// Committed offsets by consumer group.
    groups: HashMap<String, GroupOffsets>,
    /// Each group's latest coordinator claim; only its holder may write the group's offsets.
    group_claims: HashMap<String, crate::messages::GroupClaim>,
    /// Groups' dynamic configs (the GROUP config resource), by group.
    group_configs: BTreeMap<String, Vec<(String, String)>>,
    /// The finalized feature levels (KIP-584).
    features: crate::features::FinalizedFeatures,
    /// Dynamic broker configs (the BROKER config resource), by broker (-1: the default).
    broker_configs: crate::broker_configs::BrokerConfigs,
    /// Consumer-protocol groups' epochs, targets and members, by group.
    consumer_groups: HashMap<String, consumer_groups::StoredConsumerGroup>,
    /// Streams groups' (KIP-1071) epochs, topologies, targets and members, by group.
    streams_groups: HashMap<String, streams_groups::StoredStreamsGroup>,
    /// Share-partition states (KIP-932) by group, topic and partition.
    share_states: share_states::ShareStates,
    /// Mirrors (KIP-1279) and their settings.
    mirrors: BTreeMap<String, Vec<(String, String)>>,
    /// The schema registry: schemas, subjects' versions, settings.
    schema_registry: schema_registry::SchemaRegistry,
    /// SCRAM credentials by user and mechanism code.
    scram_credentials: BTreeMap<(String, i8), ScramCredential>,
    /// Delegation tokens by id, published to the shards with the topic catalogue.
    delegation_tokens: crate::delegation_tokens::DelegationTokens,
    /// ACL bindings (CreateAcls), published to the shards with the topic catalogue.
    acls: BTreeSet<AclBinding>,
    /// Client quotas by entity (AlterClientQuotas).
    client_quotas: BTreeMap<
        crate::client_quotas::QuotaEntity,
        BTreeMap<String, crate::client_quotas::QuotaValue>,
    >,
    /// Transactional ids and their transactions.
    transactions: BTreeMap<String, Transaction>,
    /// Producer id → its transactional id (derived from `transactions`).
    transactional_producers: HashMap<i64, String>,
    /// The view's images changed since it was last published (not compared: not state).
    view_changes: view_changes::ViewChanges,
}

impl TopicState {
    /// Mirrored by `mirror` now (not removed from it).
    fn is_in_mirror(&self, mirror: &str) -> bool {
        self.mirror
            .as_ref()
            .is_some_and(|m| !m.removed && m.name == mirror)
    }

    fn mirror_meta(&self) -> Option<crate::view::MirrorMeta> {
        self.mirror.as_ref().map(|m| crate::view::MirrorMeta {
            name: m.name.clone(),
            removed: m.removed,
            partitions: self.partitions.iter().map(|p| p.mirror.clone()).collect(),
        })
    }
}

impl CoordinatorState {
    /// A new object with `live` batches: a live file, or garbage from the start when none is
    /// live (an empty key names no object).
    fn hold_object(&mut self, object_key: Arc<str>, file_id: u64, live: u64, at_ms: i64) {
        if live > 0 {
            self.file_ids.insert(object_key.clone(), file_id);
            self.files.insert(
                file_id,
                FileState {
                    object_key,
                    live_batches: live,
                },
            );
        } else if !object_key.is_empty() {
            self.deletable_files.insert(object_key, at_ms);
        }
    }

    fn release_batch(&mut self, file_id: u64, at_ms: i64) {
        if let Some(file) = self.files.get_mut(&file_id) {
            file.live_batches = file.live_batches.saturating_sub(1);
            if file.live_batches == 0 {
                let file = self.files.remove(&file_id).expect("present");
                self.file_ids.remove(&file.object_key);
                self.deletable_files.insert(file.object_key, at_ms);
            }
        }
    }

    /// The timestamp type batches of the topic are appended with (0 CreateTime, 1 LogAppendTime).
    fn timestamp_type(&self, topic_id: Uuid) -> i8 {
        self.topics
            .get(&topic_id)
            .map_or(0, |t| t.config.log_append_time as i8)
    }

    /// An object key already committed (live or deletable): a repeated commit of it (a retry
    /// over the wire) must not append its batches twice.
    fn is_known_object(&self, object_key: &str) -> bool {
        self.file_ids.contains_key(object_key) || self.deletable_files.contains_key(object_key)
    }

    fn partition(&self, tp: TopicPartition) -> Option<&PartitionState> {
        let index = usize::try_from(tp.partition).ok()?;
        self.topics.get(&tp.topic_id)?.partitions.get(index)
    }

    fn partition_mut(&mut self, topic_id: Uuid, partition: i32) -> Option<&mut PartitionState> {
        let index = usize::try_from(partition).ok()?;
        self.topics.get_mut(&topic_id)?.partitions.get_mut(index)
    }
}
