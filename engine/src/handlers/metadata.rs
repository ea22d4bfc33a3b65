use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::acl::code;
use shoal_coordinator::{ErrorKind, TopicMeta};
use shoal_protocol::ResponseError;

use super::{topics, Broker};
use crate::handlers::Call;
use crate::kafka::error_codes;

pub async fn handle(call: &Call<'_>, request: MetadataRequest) -> MetadataResponse {
    let broker = call.broker;
    let version = call.version;
    let node = BrokerId(broker.config.node_id);
    let (host, port) = call.advertised();
    let mut response = MetadataResponse::default()
        .with_brokers(vec![MetadataResponseBroker::default()
            .with_node_id(node)
            .with_host(StrBytes::from_string(host))
            .with_port(port)])
        .with_cluster_id(Some(StrBytes::from_string(
            broker.config.cluster_id.clone(),
        )))
        .with_controller_id(node);
    // v0 asks for all topics with an empty list, later versions with null.
    let wanted = match request.topics {
        Some(list) if !(version == 0 && list.is_empty()) => list,
        _ => {
            let view = broker.shard.topics.load();
            // Topics the client may not describe are left out, as Kafka does.
            let mut all: Vec<_> = view
                .all()
                .filter(|t| call.authorized(code::DESCRIBE, code::TOPIC, &t.name))
                .cloned()
                .collect();
            all.sort_by(|a, b| a.name.cmp(&b.name));
            response.topics = all.iter().map(|t| describe(broker, t)).collect();
            return response;
        }
    };
    let auto_create = version < 4 || request.allow_auto_topic_creation;
    for topic in wanted {
        let result = match &topic.name {
            Some(name) => {
                let name = name.0.as_str();
                let may_create = auto_create && call.may_create_topic(name);
                match call.check_topic(code::DESCRIBE, name) {
                    Ok(()) => topics::resolve(broker, name, may_create).await,
                    // Kafka creates a topic the client may create but not describe, and
                    // answers TOPIC_AUTHORIZATION_FAILED either way.
                    Err(denied) => {
                        if may_create {
                            let _ = topics::resolve(broker, name, true).await;
                        }
                        Err(denied)
                    }
                }
            }
            None => broker
                .shard
                .topics
                .load()
                .by_id(&topic.topic_id)
                .cloned()
                .ok_or(ErrorKind::UnknownTopicOrPartition)
                .and_then(|meta| call.check_topic(code::DESCRIBE, &meta.name).map(|()| meta)),
        };
        response.topics.push(match result {
            Ok(meta) => describe(broker, &meta),
            Err(error) => {
                let code = match (error, &topic.name) {
                    (ErrorKind::UnknownTopicOrPartition, None) => {
                        ResponseError::UnknownTopicId.code()
                    }
                    _ => error_codes::code_of(Some(error)),
                };
                MetadataResponseTopic::default()
                    .with_error_code(code)
                    .with_name(topic.name.clone())
                    .with_topic_id(topic.topic_id)
            }
        });
    }
    response
}

/// A diskless partition never changes leader (this broker serves it), so its epoch stays 0.
pub const LEADER_EPOCH: i32 = 0;

fn describe(broker: &Broker, topic: &TopicMeta) -> MetadataResponseTopic {
    let node = BrokerId(broker.config.node_id);
    MetadataResponseTopic::default()
        .with_name(Some(TopicName(StrBytes::from_string(topic.name.clone()))))
        .with_topic_id(topic.id)
        .with_partitions(
            (0..topic.partitions)
                .map(|index| {
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
