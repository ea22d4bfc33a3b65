//! Metadata sync (KIP-1279), every `mirror.metadata.refresh.interval.ms` per mirror, run by one
//! shard (of one broker in a cluster): mirror topics grow with their source's partition count, take its retention and size
//! settings (not `message.timestamp.type`, which the KIP excludes), and consumer groups that are
//! not active here get the source's committed offsets for mirror topics, so consumers can move
//! over at failover.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::commands::{
    CommitOffsets, DescribeMirror, FetchOffsets, ListMirrors, SyncMirrorTopic,
};
use shoal_coordinator::{OffsetCommitEntry, TopicConfig, TopicPartition};
use shoal_mirror::MirrorConfig;
use shoal_protocol::config_codes::ConfigResource;
use shoal_protocol::messages::describe_configs_request::DescribeConfigsResource;
use shoal_protocol::messages::metadata_request::MetadataRequestTopic;
use shoal_protocol::messages::{
    DescribeConfigsRequest, DescribeConfigsResponse, GroupId, ListGroupsRequest,
    ListGroupsResponse, MetadataRequest, MetadataResponse, OffsetFetchRequest, OffsetFetchResponse,
    TopicName,
};
use shoal_shards::groups::classic::calls::DescribeGroup;

use super::client::{
    first_time, SourceClient, DESCRIBE_CONFIGS, LIST_GROUPS, METADATA, OFFSET_FETCH,
};
use crate::FetchError;
use crate::Host;
use shoal_coordinator::topic_configs::set_topic_config;
use shoal_coordinator::topic_configs::{mirrored_configs, TopicOverrides};
use shoal_protocol::codes as error_codes;

const TICK: Duration = Duration::from_secs(1);
const SOURCE_TIMEOUT: Duration = Duration::from_secs(10);
const RESPONSE_MAX_BYTES: usize = 64 << 20;

pub async fn run(broker: std::rc::Rc<dyn Host>) {
    let mut last_sync: HashMap<String, Instant> = HashMap::new();
    loop {
        glommio::timer::sleep(TICK).await;
        if !broker.runs_cluster_chores() {
            continue;
        }
        let Ok(mirrors) = broker.shard().coordinator.run(ListMirrors).await else {
            continue;
        };
        for (name, _, _) in mirrors {
            let Ok(Some(described)) = broker
                .shard()
                .coordinator
                .run(DescribeMirror { name: name.clone() })
                .await
            else {
                continue;
            };
            let interval = Duration::from_millis(described.config.metadata_refresh_interval_ms);
            if last_sync
                .get(&name)
                .is_some_and(|at| at.elapsed() < interval)
            {
                continue;
            }
            last_sync.insert(name.clone(), Instant::now());
            // Paused topics skip metadata sync, as they skip fetching.
            let topics: Vec<String> = described
                .topics
                .iter()
                .filter(|(_, ps)| !ps.iter().any(|p| p.mirror.paused))
                .map(|(t, _)| t.clone())
                .collect();
            if topics.is_empty() {
                continue;
            }
            if let Err(e) = sync(&*broker, &described.config, &topics).await {
                tracing::warn!(mirror = %name, error = %e, "metadata sync failed");
            }
        }
    }
}

async fn sync(
    broker: &dyn Host,
    source: &MirrorConfig,
    topics: &[String],
) -> Result<(), FetchError> {
    let mut client = SourceClient::connect(source, SOURCE_TIMEOUT, RESPONSE_MAX_BYTES).await?;
    let counts = partition_counts(&mut client, topics).await?;
    // Configs and group offsets are optional in a source: without them, or when they fail,
    // the rest of the sync goes on.
    let mut configs = match client.serves(DESCRIBE_CONFIGS.key) {
        true => topic_configs(&mut client, topics)
            .await
            .unwrap_or_else(|e| {
                if first_time(format!("{} configs", client.address)) {
                    tracing::warn!(source = %client.address, error = %e,
                        "the source's topic configs cannot be read; mirror topics keep their own");
                }
                HashMap::new()
            }),
        false => HashMap::new(),
    };
    for topic in topics {
        let Some(partitions) = counts.get(topic) else {
            continue;
        };
        let request = SyncMirrorTopic {
            name: topic.clone(),
            partitions: *partitions,
            configs: configs.remove(topic),
        };
        let _ = broker.shard().coordinator.run(request).await;
    }
    if client.serves(LIST_GROUPS.key) && client.serves(OFFSET_FETCH.key) {
        sync_group_offsets(broker, &mut client, topics).await?;
    }
    Ok(())
}

async fn partition_counts(
    client: &mut SourceClient,
    topics: &[String],
) -> Result<HashMap<String, i32>, FetchError> {
    let request = MetadataRequest::default()
        .with_topics(Some(
            topics
                .iter()
                .map(|t| {
                    MetadataRequestTopic::default()
                        .with_name(Some(TopicName(StrBytes::from_string(t.clone()))))
                })
                .collect(),
        ))
        .with_allow_auto_topic_creation(false);
    let response: MetadataResponse = client.call_api(METADATA, &request, Duration::ZERO).await?;
    Ok(response
        .topics
        .iter()
        .filter(|t| t.error_code == error_codes::NONE)
        .filter_map(|t| Some((t.name.as_ref()?.0.to_string(), t.partitions.len() as i32)))
        .collect())
}

async fn topic_configs(
    client: &mut SourceClient,
    topics: &[String],
) -> Result<HashMap<String, TopicOverrides>, FetchError> {
    let request = DescribeConfigsRequest::default().with_resources(
        topics
            .iter()
            .map(|t| {
                DescribeConfigsResource::default()
                    .with_resource_type(ConfigResource::Topic as i8)
                    .with_resource_name(StrBytes::from_string(t.clone()))
                    .with_configuration_keys(Some(
                        mirrored_configs().map(StrBytes::from_static_str).collect(),
                    ))
            })
            .collect(),
    );
    let response: DescribeConfigsResponse = client
        .call_api(DESCRIBE_CONFIGS, &request, Duration::ZERO)
        .await?;
    let mut configs = HashMap::new();
    for result in response.results {
        if result.error_code != error_codes::NONE {
            continue;
        }
        // The source's settings are the mirror topic's own (the coordinator records them so).
        let (mut config, mut own) = (TopicConfig::default(), TopicOverrides::new());
        for entry in &result.configs {
            let name = entry.name.as_str();
            if mirrored_configs().any(|m| m == name) {
                let value = entry.value.as_ref().map(|v| v.as_str());
                if set_topic_config(&mut config, &mut own, name, value).is_err() {
                    tracing::debug!(name, ?value, "source config value not usable here");
                }
            }
        }
        configs.insert(result.resource_name.to_string(), own);
    }
    Ok(configs)
}

/// Committed offsets of the source's groups, for mirror topics, copied to groups that have no
/// members here. Unchanged offsets are not written again.
async fn sync_group_offsets(
    broker: &dyn Host,
    client: &mut SourceClient,
    topics: &[String],
) -> Result<(), FetchError> {
    let listed: ListGroupsResponse = client
        .call_api(LIST_GROUPS, &ListGroupsRequest::default(), Duration::ZERO)
        .await?;
    let view = broker.shard().topics.load();
    for group in listed.groups {
        let group_id = group.group_id.0.to_string();
        if active_here(broker, &group_id).await {
            continue;
        }
        let request = OffsetFetchRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group_id.clone())))
            .with_topics(None);
        let fetched: OffsetFetchResponse = client
            .call_api(OFFSET_FETCH, &request, Duration::ZERO)
            .await?;
        let mut entries = Vec::new();
        for topic in &fetched.topics {
            let name = topic.name.0.as_str();
            let Some(meta) = view
                .by_name(name)
                .filter(|_| topics.iter().any(|t| t == name))
            else {
                continue;
            };
            for p in &topic.partitions {
                if p.error_code == error_codes::NONE && p.committed_offset >= 0 {
                    entries.push(OffsetCommitEntry {
                        partition: TopicPartition {
                            topic_id: meta.id,
                            partition: p.partition_index,
                        },
                        offset: p.committed_offset,
                        leader_epoch: p.committed_leader_epoch,
                        metadata: p
                            .metadata
                            .as_ref()
                            .map(|m| m.to_string())
                            .unwrap_or_default(),
                    });
                }
            }
        }
        let changed = only_changed(broker, &group_id, entries).await;
        if !changed.is_empty() {
            // Only groups no broker of this cluster has coordinated: never over a live
            // coordinator's offsets.
            let request = CommitOffsets {
                group: group_id,
                claim: None,
                offsets: changed,
            };
            let _ = broker.shard().coordinator.run(request).await;
        }
    }
    Ok(())
}

async fn active_here(broker: &dyn Host, group: &str) -> bool {
    matches!(
        broker.shard().group_call(group, DescribeGroup(group.to_string())).await,
        Ok(Some(d)) if !d.members.is_empty()
    )
}

/// The entries whose offset differs from what the group has committed here.
async fn only_changed(
    broker: &dyn Host,
    group: &str,
    entries: Vec<OffsetCommitEntry>,
) -> Vec<OffsetCommitEntry> {
    if entries.is_empty() {
        return entries;
    }
    let request = FetchOffsets {
        group: group.to_string(),
        partitions: Some(entries.iter().map(|e| e.partition).collect()),
    };
    let Ok(current) = broker.shard().coordinator.run(request).await else {
        return entries;
    };
    entries
        .into_iter()
        .zip(current)
        .filter(|(e, (_, stored))| stored.as_ref().is_none_or(|s| s.offset != e.offset))
        .map(|(e, _)| e)
        .collect()
}
