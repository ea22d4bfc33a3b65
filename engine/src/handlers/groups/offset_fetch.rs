//! OffsetFetch: v1-7 ask for one group, v8+ for several. A partition without a committed
//! offset answers -1, as Kafka does.

use std::collections::BTreeMap;

use shoal_coordinator::commands::{FetchOffsets, PendingTransactionOffsets};
use shoal_coordinator::TopicsView;
use shoal_coordinator::{ErrorKind, StoredOffset, TopicPartition};
use shoal_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use shoal_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use shoal_protocol::messages::{GroupId, OffsetFetchRequest, OffsetFetchResponse, TopicName};
use shoal_protocol::ResponseError;
use uuid::Uuid;

use super::{owned, text};
use crate::context::Call;
use crate::handlers::topics::{permitted, requested_name};
use crate::kafka::error_codes;
use shoal_coordinator::acl::Operation;

/// Versions from 10 on name topics by id (KIP-848).
const TOPIC_IDS_FROM_VERSION: i16 = 10;

/// One partition's answer: (index, offset, leader epoch, metadata, error).
type Fetched = BTreeMap<String, Vec<(i32, i64, i32, String, Option<ErrorKind>)>>;

pub async fn handle(call: &Call<'_>, request: OffsetFetchRequest) -> OffsetFetchResponse {
    if call.version < 8 {
        return one_group_before_v8(call, request).await;
    }
    let view = call.broker.shard.topics.load();
    let mut groups = Vec::with_capacity(request.groups.len());
    for group in &request.groups {
        groups.push(one_group(call, &view, group, request.require_stable).await);
    }
    OffsetFetchResponse::default().with_groups(groups)
}

/// v1-7: one group, topics by name.
async fn one_group_before_v8(call: &Call<'_>, request: OffsetFetchRequest) -> OffsetFetchResponse {
    let topics = request.topics.as_ref().map(|ts| {
        ts.iter()
            .map(|t| (owned(&t.name.0), t.partition_indexes.clone()))
            .collect()
    });
    let group = owned(&request.group_id.0);
    let (error, fetched) = fetch_group(call, &group, topics, request.require_stable).await;
    let topics = fetched
        .into_iter()
        .map(|(name, partitions)| {
            OffsetFetchResponseTopic::default()
                .with_name(TopicName(text(name)))
                .with_partitions(
                    partitions
                        .into_iter()
                        .map(|(index, offset, epoch, metadata, refused)| {
                            OffsetFetchResponsePartition::default()
                                .with_partition_index(index)
                                .with_committed_offset(offset)
                                .with_committed_leader_epoch(epoch)
                                .with_metadata(Some(text(metadata)))
                                .with_error_code(error_codes::code_of(error.or(refused)))
                        })
                        .collect(),
                )
        })
        .collect();
    OffsetFetchResponse::default()
        .with_topics(topics)
        .with_error_code(error_codes::code_of(error))
}

/// One group of a v8+ request; from v10 topics by id.
async fn one_group(
    call: &Call<'_>,
    view: &TopicsView,
    group: &OffsetFetchRequestGroup,
    require_stable: bool,
) -> OffsetFetchResponseGroup {
    let by_id = call.version >= TOPIC_IDS_FROM_VERSION;
    let ids = by_id.then_some(view);
    // By id, a topic no id names is answered UNKNOWN_TOPIC_ID partition by partition.
    let mut unknown_ids = Vec::new();
    let topics = group.topics.as_ref().map(|ts| {
        ts.iter()
            .filter_map(|t| {
                let name = requested_name(ids, &t.topic_id, &t.name.0);
                if name.is_none() {
                    unknown_ids.push((t.topic_id, t.partition_indexes.clone()));
                }
                name.map(|name| (name.to_string(), t.partition_indexes.clone()))
            })
            .collect()
    });
    let (error, fetched) =
        fetch_group(call, &owned(&group.group_id.0), topics, require_stable).await;
    let mut topics: Vec<OffsetFetchResponseTopics> = fetched
        .into_iter()
        .map(|(name, partitions)| {
            let topic_id = match by_id {
                true => view.by_name(&name).map_or(Uuid::nil(), |m| m.id),
                false => Uuid::nil(),
            };
            OffsetFetchResponseTopics::default()
                .with_name(TopicName(text(name)))
                .with_topic_id(topic_id)
                .with_partitions(
                    partitions
                        .into_iter()
                        .map(|(index, offset, epoch, metadata, refused)| {
                            OffsetFetchResponsePartitions::default()
                                .with_partition_index(index)
                                .with_committed_offset(offset)
                                .with_committed_leader_epoch(epoch)
                                .with_metadata(Some(text(metadata)))
                                .with_error_code(error_codes::code_of(refused))
                        })
                        .collect(),
                )
        })
        .collect();
    topics.extend(unknown_ids.into_iter().map(|(topic_id, partitions)| {
        let unknown = |index| {
            OffsetFetchResponsePartitions::default()
                .with_partition_index(index)
                .with_committed_offset(-1)
                .with_error_code(ResponseError::UnknownTopicId.code())
        };
        OffsetFetchResponseTopics::default()
            .with_topic_id(topic_id)
            .with_partitions(partitions.into_iter().map(unknown).collect())
    }));
    OffsetFetchResponseGroup::default()
        .with_group_id(GroupId(group.group_id.0.clone()))
        .with_topics(topics)
        .with_error_code(error_codes::code_of(error))
}

/// The group's committed offsets for `topics` (name → partitions), or all of them when None:
/// DESCRIBE on the group, and on each topic (others are refused by name, left out of "all").
/// `require_stable` (KIP-447): a partition with offsets pending in an open transaction gets
/// UNSTABLE_OFFSET_COMMIT, so a read_committed consumer waits rather than starts behind them.
async fn fetch_group(
    call: &Call<'_>,
    group: &str,
    topics: Option<Vec<(String, Vec<i32>)>>,
    require_stable: bool,
) -> (Option<ErrorKind>, Fetched) {
    if let Err(denied) = call.check_group(Operation::Describe, group) {
        return (Some(denied), Fetched::new());
    }
    let broker = call.broker;
    let view = broker.shard.topics.load();
    let permitted = |name: &str| permitted(call, &view, name, Operation::Describe);
    let partitions = topics.as_ref().map(|ts| {
        ts.iter()
            .filter_map(|(name, ps)| permitted(name).ok().map(|id| (id, ps)))
            .flat_map(|(topic_id, ps)| {
                ps.iter().map(move |p| TopicPartition {
                    topic_id,
                    partition: *p,
                })
            })
            .collect::<Vec<_>>()
    });
    let request = FetchOffsets {
        group: group.to_string(),
        partitions,
    };
    let stored = match broker.shard.coordinator.run(request).await {
        Ok(stored) => stored,
        _ => return (Some(ErrorKind::NotAvailable), Fetched::new()),
    };
    let pending = if require_stable {
        let request = PendingTransactionOffsets {
            group: group.to_string(),
        };
        match broker.shard.coordinator.run(request).await {
            Ok(pending) => pending,
            _ => return (Some(ErrorKind::NotAvailable), Fetched::new()),
        }
    } else {
        Default::default()
    };
    let unstable = |tp: &TopicPartition| {
        pending
            .contains(tp)
            .then_some(ErrorKind::UnstableOffsetCommit)
    };
    let by_partition: BTreeMap<TopicPartition, Option<StoredOffset>> = stored.into_iter().collect();
    let answer = |stored: Option<&StoredOffset>| match stored {
        Some(s) => (s.offset, s.leader_epoch, s.metadata.clone()),
        None => (-1, -1, String::new()),
    };
    let mut fetched = Fetched::new();
    match topics {
        Some(topics) => {
            for (name, ps) in topics {
                let id = permitted(&name);
                let refused = id
                    .err()
                    .filter(|e| *e != ErrorKind::UnknownTopicOrPartition);
                let id = id.ok();
                let entry = fetched.entry(name).or_default();
                for p in ps {
                    let tp = id.map(|topic_id| TopicPartition {
                        topic_id,
                        partition: p,
                    });
                    let stored = tp
                        .and_then(|tp| by_partition.get(&tp))
                        .and_then(Option::as_ref);
                    let (offset, epoch, metadata) = answer(stored);
                    let error = refused.or_else(|| tp.as_ref().and_then(unstable));
                    entry.push((p, offset, epoch, metadata, error));
                }
            }
        }
        None => {
            for (tp, stored) in &by_partition {
                let Some(meta) = view.by_id(&tp.topic_id) else {
                    continue;
                };
                if permitted(&meta.name).is_err() {
                    continue;
                }
                let (offset, epoch, metadata) = answer(stored.as_ref());
                fetched.entry(meta.name.clone()).or_default().push((
                    tp.partition,
                    offset,
                    epoch,
                    metadata,
                    unstable(tp),
                ));
            }
        }
    }
    (None, fetched)
}
