//! Topic lookup and creation shared by Metadata, Produce and CreateTopics.

use std::sync::Arc;

use shoal_coordinator::{ErrorKind, Request, Response, TopicConfig, TopicMeta};

use super::Broker;

pub async fn create(
    broker: &Broker,
    name: &str,
    partitions: i32,
    config: TopicConfig,
) -> Result<Arc<TopicMeta>, ErrorKind> {
    let request = Request::CreateTopic {
        name: name.to_string(),
        partitions,
        config,
    };
    match broker.shard.coordinator_call(request).await {
        Ok(Response::CreateTopic(result)) => result,
        _ => Err(ErrorKind::NotAvailable),
    }
}

/// The topic named `name`, created with the default partition count if it does not exist
/// and `auto_create` allows it.
pub async fn resolve(
    broker: &Broker,
    name: &str,
    auto_create: bool,
) -> Result<Arc<TopicMeta>, ErrorKind> {
    if let Some(topic) = broker.shard.topics.load().by_name(name) {
        return Ok(topic.clone());
    }
    if !(auto_create && broker.config.auto_create_topics) {
        return Err(ErrorKind::UnknownTopicOrPartition);
    }
    let partitions = broker.config.default_partitions;
    match create(broker, name, partitions, TopicConfig::default()).await {
        // Another connection created it first.
        Err(ErrorKind::TopicAlreadyExists) => broker
            .shard
            .topics
            .load()
            .by_name(name)
            .cloned()
            .ok_or(ErrorKind::UnknownTopicOrPartition),
        other => other,
    }
}
