use std::sync::Arc;

use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::acl::{self, Operation, ResourceType};
use shoal_coordinator::{ErrorKind, TopicMeta};
use shoal_protocol::messages::metadata_request::MetadataRequestTopic;
use shoal_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use shoal_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse, TopicName};
use shoal_protocol::ResponseError;

use super::authorize::{CLUSTER_OPERATIONS, TOPIC_OPERATIONS};
use super::topics;
use crate::context::Call;
use crate::kafka::error_codes;

/// The first Metadata version whose answer may name a topic by id alone (a null name).
const TOPIC_NAME_NULLABLE_FROM: i16 = 12;

/// The brokers, the cluster id and the controller (the lowest live node id stands in for
/// the controller, which does not exist).
fn cluster_part(call: &Call<'_>) -> MetadataResponse {
    let brokers: Vec<MetadataResponseBroker> = call
        .cluster_brokers()
        .into_iter()
        .map(|b| {
            MetadataResponseBroker::default()
                .with_node_id(BrokerId(b.node_id))
                .with_host(StrBytes::from_string(b.host))
                .with_port(b.port)
                .with_rack(b.rack.map(StrBytes::from_string))
        })
        .collect();
    let controller = brokers.first().map(|b| b.node_id).unwrap_or(BrokerId(-1));
    MetadataResponse::default()
        .with_brokers(brokers)
        .with_cluster_id(Some(StrBytes::from_string(
            call.broker.config.cluster_id.clone(),
        )))
        .with_controller_id(controller)
}

/// The answer for a topic that was not found or may not be described.
fn refused(topic: &MetadataRequestTopic, error: ErrorKind, version: i16) -> MetadataResponseTopic {
    let by_id = !topic.topic_id.is_nil();
    let code = match error {
        ErrorKind::UnknownTopicOrPartition if by_id || topic.name.is_none() => {
            ResponseError::UnknownTopicId.code()
        }
        _ => error_codes::code_of(Some(error)),
    };
    MetadataResponseTopic::default()
        .with_error_code(code)
        // Before v12 a topic's name is not nullable: "" for an unknown id.
        .with_name(
            (topic.name.clone())
                .or_else(|| (version < TOPIC_NAME_NULLABLE_FROM).then(TopicName::default)),
        )
        .with_topic_id(topic.topic_id)
}

/// A topic asked for by name, created first where the client may and auto-creation is on.
async fn by_name(
    call: &Call<'_>,
    name: &str,
    auto_create: bool,
) -> Result<Arc<TopicMeta>, ErrorKind> {
    let may_create = auto_create && call.may_create_topic(name);
    match call.check_topic(Operation::Describe, name) {
        Ok(()) => topics::resolve(call.broker, name, may_create).await,
        // Kafka creates a topic the client may create but not describe, and answers
        // TOPIC_AUTHORIZATION_FAILED either way.
        Err(denied) => {
            if may_create {
                let _ = topics::resolve(call.broker, name, true).await;
            }
            Err(denied)
        }
    }
}

pub async fn handle(call: &Call<'_>, request: MetadataRequest) -> MetadataResponse {
    let broker = call.broker;
    let version = call.version;
    let mut response = cluster_part(call);
    // v8-v10 may ask what the client may do on the cluster (later versions ask
    // DescribeCluster); every version from 8 on, on each topic.
    if (8..=10).contains(&version) && request.include_cluster_authorized_operations {
        response.cluster_authorized_operations = call.authorized_operations(
            &CLUSTER_OPERATIONS,
            ResourceType::Cluster,
            acl::CLUSTER_NAME,
        );
    }
    let with_operations = version >= 8 && request.include_topic_authorized_operations;
    let describe = |meta: &TopicMeta| {
        let topic = describe(call, meta);
        match with_operations {
            true => topic.with_topic_authorized_operations(call.authorized_operations(
                &TOPIC_OPERATIONS,
                ResourceType::Topic,
                &meta.name,
            )),
            false => topic,
        }
    };
    // v0 asks for all topics with an empty list, later versions with null.
    let wanted = match request.topics {
        Some(list) if !(version == 0 && list.is_empty()) => list,
        _ => {
            let view = broker.shard.topics.load();
            // Topics the client may not describe are left out, as Kafka does.
            let mut all: Vec<_> = view
                .all()
                .filter(|t| call.authorized(Operation::Describe, ResourceType::Topic, &t.name))
                .cloned()
                .collect();
            all.sort_by(|a, b| a.name.cmp(&b.name));
            response.topics = all.iter().map(|t| describe(t)).collect();
            return response;
        }
    };
    let auto_create = version < 4 || request.allow_auto_topic_creation;
    for topic in wanted {
        // A topic is asked for by id when it has one, whatever its name says: the Java
        // client's by-id requests leave the name at its default "" rather than null, as
        // Kafka's broker reads them.
        let by_id = !topic.topic_id.is_nil();
        let result = match &topic.name {
            Some(name) if !by_id => by_name(call, name.0.as_str(), auto_create).await,
            _ => broker
                .shard
                .topics
                .load()
                .by_id(&topic.topic_id)
                .cloned()
                .ok_or(ErrorKind::UnknownTopicOrPartition)
                .and_then(|meta| {
                    call.check_topic(Operation::Describe, &meta.name)
                        .map(|()| meta)
                }),
        };
        response.topics.push(match result {
            Ok(meta) => describe(&meta),
            Err(error) => refused(&topic, error, version),
        });
    }
    response
}

/// A diskless partition has no leader that holds its data (every broker serves it), so its
/// epoch stays 0 whichever broker a client is sent to.
pub const LEADER_EPOCH: i32 = 0;

fn describe(call: &Call<'_>, topic: &TopicMeta) -> MetadataResponseTopic {
    MetadataResponseTopic::default()
        .with_name(Some(TopicName(StrBytes::from_string(topic.name.clone()))))
        .with_topic_id(topic.id)
        .with_partitions(
            (0..topic.partitions)
                .map(|index| {
                    let node = BrokerId(call.partition_leader(topic.id, index));
                    MetadataResponsePartition::default()
                        .with_partition_index(index)
                        .with_leader_id(node)
                        // One leader for the partition's whole life: epoch 0.
                        .with_leader_epoch(LEADER_EPOCH)
                        .with_replica_nodes(vec![node])
                        .with_isr_nodes(vec![node])
                })
                .collect(),
        )
}
