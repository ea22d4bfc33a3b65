//! Topic lookup and creation shared by Metadata, Produce and CreateTopics.

use std::sync::Arc;

use shoal_coordinator::acl::Operation;
use shoal_coordinator::commands::CreateTopic;
use shoal_coordinator::topic_configs::TopicOverrides;
use shoal_coordinator::{ErrorKind, TopicMeta, TopicPartition, TopicsView};
use uuid::Uuid;

use crate::context::{Broker, Call};

pub async fn create(
    broker: &Broker,
    name: &str,
    partitions: i32,
    overrides: TopicOverrides,
) -> Result<Arc<TopicMeta>, ErrorKind> {
    let request = CreateTopic {
        name: name.to_string(),
        partitions,
        overrides,
    };
    match broker.shard.coordinator.run(request).await {
        Ok(result) => result,
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
    match create(broker, name, partitions, TopicOverrides::new()).await {
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

/// Flattens a request's topics into (partition, value) pairs, in request order; `id` maps a
/// topic to its id, or None for a topic that is skipped (unknown).
pub fn partition_values<'a, T, P: 'a>(
    topics: &'a [T],
    id: impl Fn(&T) -> Option<Uuid>,
    partitions: impl Fn(&'a T) -> &'a [P],
    value: impl Fn(&P) -> (i32, i64),
) -> Vec<(TopicPartition, i64)> {
    topics
        .iter()
        .filter_map(|t| id(t).map(|topic_id| (topic_id, partitions(t))))
        .flat_map(|(topic_id, ps)| {
            let value = &value;
            ps.iter().map(move |p| {
                let (partition, v) = value(p);
                (
                    TopicPartition {
                        topic_id,
                        partition,
                    },
                    v,
                )
            })
        })
        .collect()
}

/// The name of a topic as a request gives it: looked up by `topic_id` in `ids` where the
/// request's version names topics by id (None: no topic has the id), else `name` itself.
pub fn requested_name<'a>(
    ids: Option<&'a TopicsView>,
    topic_id: &Uuid,
    name: &'a str,
) -> Option<&'a str> {
    match ids {
        Some(view) => view.by_id(topic_id).map(|meta| meta.name.as_str()),
        None => Some(name),
    }
}

/// Each requested topic's name, in order: from `ids_from_version` on looked up by its id
/// (None: no topic has the id), before that the name the request gives.
pub fn requested_names<'a>(
    version: i16,
    ids_from_version: i16,
    view: &'a TopicsView,
    topics: impl Iterator<Item = (&'a Uuid, &'a str)>,
) -> Vec<Option<&'a str>> {
    let ids = (version >= ids_from_version).then_some(view);
    topics
        .map(|(id, name)| requested_name(ids, id, name))
        .collect()
}

/// The id of the topic named `name` if it exists and the client may do `operation` on it;
/// else the error its partitions are answered with. Authorization comes first, so a client
/// learns nothing of a topic it may not see.
pub fn permitted(
    call: &Call<'_>,
    view: &TopicsView,
    name: &str,
    operation: Operation,
) -> Result<Uuid, ErrorKind> {
    call.check_topic(operation, name)?;
    view.by_name(name)
        .map(|meta| meta.id)
        .ok_or(ErrorKind::UnknownTopicOrPartition)
}

/// The coordinator's answers to a `partition_values` list, taken back in request order: each
/// partition gets its answer, its topic's error if `partition_values` skipped the topic, or
/// `NotAvailable` if the coordinator gave no answers.
pub struct Answers<R> {
    answers: Option<std::vec::IntoIter<R>>,
}

impl<R> Answers<R> {
    pub fn new(answers: Option<Vec<R>>) -> Self {
        Answers {
            answers: answers.map(Vec::into_iter),
        }
    }

    /// `topic` is what `permitted` said of the partition's topic.
    pub fn next(&mut self, topic: Result<Uuid, ErrorKind>) -> Result<R, ErrorKind> {
        topic?;
        self.answers
            .as_mut()
            .and_then(Iterator::next)
            .ok_or(ErrorKind::NotAvailable)
    }
}
