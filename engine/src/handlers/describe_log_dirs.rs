//! DescribeLogDirs: what `kafka-log-dirs`, the Admin client's `describeLogDirs` and Kafka UIs
//! (AKHQ, kafbat, Redpanda Console) read topic sizes from. A diskless broker has no log
//! directories: each broker answers one directory standing for the object store, holding the
//! partitions it leads, each sized as the bytes of its live batches. Kafka's tools add the
//! sizes up over the brokers, so each partition is counted once, by its leader.

use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::acl::Operation;
use shoal_coordinator::commands::PartitionSizes;
use shoal_coordinator::{TopicMeta, TopicPartition, TopicsView};
use shoal_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use shoal_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse, TopicName};
use shoal_protocol::ResponseError;

use shoal_wal::StoreConfig;

use crate::context::Call;

/// The partitions asked for (all when the request names none) that this broker leads,
/// topic by topic in name order; a topic or partition it does not host is left out, as Kafka
/// does.
fn led_here<'v>(
    call: &Call<'_>,
    view: &'v TopicsView,
    request: &DescribeLogDirsRequest,
) -> Vec<(&'v TopicMeta, Vec<i32>)> {
    let node_id = call.broker.config.node_id;
    let leads = |meta: &TopicMeta, partition: i32| {
        (0..meta.partitions).contains(&partition)
            && call.partition_leader(meta.id, partition) == node_id
    };
    let mut wanted: Vec<(&TopicMeta, Vec<i32>)> = match &request.topics {
        None => view
            .all()
            .map(|meta| {
                let led = (0..meta.partitions).filter(|p| leads(meta, *p));
                (&**meta, led.collect())
            })
            .collect(),
        Some(topics) => topics
            .iter()
            .filter_map(|t| view.by_name(t.topic.0.as_str()).map(|meta| (&**meta, t)))
            .map(|(meta, t)| {
                let led = t.partitions.iter().copied().filter(|p| leads(meta, *p));
                (meta, led.collect())
            })
            .collect(),
    };
    wanted.retain(|(_, partitions)| !partitions.is_empty());
    wanted.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    wanted
}

pub async fn handle(call: &Call<'_>, request: DescribeLogDirsRequest) -> DescribeLogDirsResponse {
    // Kafka: DESCRIBE on the cluster, or nothing (from v3 with a top-level error).
    if !call.authorized_on_cluster(Operation::Describe) {
        return DescribeLogDirsResponse::default()
            .with_error_code(ResponseError::ClusterAuthorizationFailed.code());
    }
    let view = call.broker.shard.topics.load();
    let wanted = led_here(call, &view, &request);
    let partitions: Vec<TopicPartition> = wanted
        .iter()
        .flat_map(|(meta, ps)| {
            ps.iter().map(|p| TopicPartition {
                topic_id: meta.id,
                partition: *p,
            })
        })
        .collect();
    let count = partitions.len();
    let sizes = match call
        .broker
        .shard
        .coordinator
        .run(PartitionSizes { partitions })
        .await
    {
        Ok(sizes) if sizes.len() == count => sizes,
        _ => {
            return DescribeLogDirsResponse::default()
                .with_error_code(ResponseError::KafkaStorageError.code())
        }
    };
    let mut sizes = sizes.into_iter();
    let topics = wanted
        .into_iter()
        .map(|(meta, ps)| {
            let partitions = ps
                .into_iter()
                .zip(sizes.by_ref())
                // A partition deleted between the view and the query is left out.
                .filter_map(|(index, size)| {
                    size.map(|bytes| {
                        DescribeLogDirsPartition::default()
                            .with_partition_index(index)
                            .with_partition_size(bytes as i64)
                    })
                })
                .collect();
            DescribeLogDirsTopic::default()
                .with_name(TopicName(StrBytes::from_string(meta.name.clone())))
                .with_partitions(partitions)
        })
        .collect();
    let store = DescribeLogDirsResult::default()
        .with_log_dir(StrBytes::from_string(store_name(call)))
        .with_topics(topics);
    DescribeLogDirsResponse::default().with_results(vec![store])
}

/// The directory name a tool shows for the object store: the local store's directory, or the
/// bucket and prefix.
fn store_name(call: &Call<'_>) -> String {
    let config = &call.broker.config;
    match config.object_store.store(&config.data_dir) {
        StoreConfig::Local { root, .. } => root.display().to_string(),
        StoreConfig::S3(s3) => format!("s3://{}/{}", s3.bucket, s3.key_prefix),
    }
}
