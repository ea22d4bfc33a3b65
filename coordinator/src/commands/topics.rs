//! Topics and partitions: create, grow, delete, change settings.

use std::sync::Arc;

use uuid::Uuid;

use crate::command::{Command, Round};
use crate::messages::TopicPartition;
use crate::topic_configs::TopicOverrides;
use crate::view::TopicMeta;
use crate::ErrorKind;

/// CreateTopics: a new topic with a fresh id.
#[derive(Debug, Clone)]
pub struct CreateTopic {
    pub name: String,
    pub partitions: i32,
    /// The configs it sets itself (the others follow the cluster-wide defaults).
    pub overrides: TopicOverrides,
}

impl Command for CreateTopic {
    type Reply = Result<Arc<TopicMeta>, ErrorKind>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let now_ms = round.now_ms();
        let id = Uuid::new_v4();
        let record = round.state().create_topic_setting(
            &self.name,
            self.partitions,
            id,
            &self.overrides,
            now_ms,
        )?;
        round.append(&record);
        round.topics_changed();
        round
            .state()
            .topic_meta(&self.name)
            .map(Arc::new)
            .ok_or(ErrorKind::UnknownTopicOrPartition)
    }
}

/// DisklessCreatePartitions and CreatePartitions: create a topic with a given id, or grow
/// it; idempotent.
#[derive(Debug, Clone)]
pub struct CreatePartitions {
    pub topic_id: Uuid,
    pub name: String,
    pub total_partitions: i32,
}

impl Command for CreatePartitions {
    type Reply = Result<(), ErrorKind>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let now_ms = round.now_ms();
        let record = round.state().create_partitions(
            self.topic_id,
            &self.name,
            self.total_partitions,
            now_ms,
        )?;
        if let Some(record) = record {
            round.append(&record);
            round.topics_changed();
        }
        Ok(())
    }
}

/// DeleteTopics: the id of the topic deleted.
#[derive(Debug, Clone)]
pub struct DeleteTopic {
    pub name: String,
}

impl Command for DeleteTopic {
    type Reply = Result<Uuid, ErrorKind>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let (id, entry) = round.state().delete_topic(&self.name, round.now_ms())?;
        round.append(&entry);
        round.topics_changed();
        Ok(id)
    }
}

/// AlterConfigs / IncrementalAlterConfigs: the topic's whole new settings.
#[derive(Debug, Clone)]
pub struct AlterTopicConfig {
    pub name: String,
    /// The configs it sets itself (the others follow the cluster-wide defaults).
    pub overrides: TopicOverrides,
}

impl Command for AlterTopicConfig {
    type Reply = Result<(), ErrorKind>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let now_ms = round.now_ms();
        if let Some(record) =
            round
                .state()
                .alter_topic_config(&self.name, &self.overrides, now_ms)?
        {
            round.append(&record);
            round.topics_changed();
        }
        Ok(())
    }
}

/// DescribeLogDirs: the bytes each partition's live batches hold, in the order asked (None:
/// no such partition).
#[derive(Debug, Clone)]
pub struct PartitionSizes {
    pub partitions: Vec<TopicPartition>,
}

impl Command for PartitionSizes {
    type Reply = Vec<Option<u64>>;
    const WRITE: bool = false;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        self.partitions
            .iter()
            .map(|tp| round.state().partition_size(*tp))
            .collect()
    }
}
