//! Cluster mirroring (KIP-1279): mirrors, their topics and partition states, batches stored
//! at the source's offsets, truncation, and what operators and other clusters read.

use uuid::Uuid;

use crate::command::{Command, Round};
use crate::entry::Entry;
use crate::messages::{
    CommitBatch, CommitBatchResult, MirrorDescription, MirrorEvent, MirroredTopic, NewObject,
    TopicPartition,
};
use crate::state::CoordinatorState;
use crate::topic_configs::TopicOverrides;
use crate::ErrorKind;

/// One answer per topic, in request order.
pub type TopicAnswers = Vec<Result<(), ErrorKind>>;

/// CreateMirror: a mirror and its settings (name/value pairs).
#[derive(Debug, Clone)]
pub struct CreateMirror {
    pub name: String,
    pub config: Vec<(String, String)>,
}

impl Command for CreateMirror {
    type Reply = Result<(), ErrorKind>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let record = round
            .state()
            .create_mirror(&self.name, &self.config, round.now_ms())?;
        append_topic_change(round, &[record]);
        Ok(())
    }
}

#[derive(Debug, Clone)]
pub struct AddTopicsToMirror {
    pub mirror: String,
    pub topics: Vec<MirroredTopic>,
}

impl Command for AddTopicsToMirror {
    type Reply = TopicAnswers;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        each_topic(round, &self.topics, |state, topic, now_ms| {
            state.add_topic_to_mirror(&self.mirror, topic, Uuid::new_v4(), now_ms)
        })
    }
}

/// Failover: the topics stop mirroring and become writable.
#[derive(Debug, Clone)]
pub struct RemoveTopicsFromMirror {
    pub mirror: String,
    pub topics: Vec<String>,
}

impl Command for RemoveTopicsFromMirror {
    type Reply = TopicAnswers;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        each_topic(round, &self.topics, |state, name, now_ms| {
            state.remove_topic_from_mirror(&self.mirror, name, now_ms)
        })
    }
}

/// Pause (or resume, `pause: false`) mirror topics.
#[derive(Debug, Clone)]
pub struct PauseMirrorTopics {
    pub topics: Vec<String>,
    pub pause: bool,
}

impl Command for PauseMirrorTopics {
    type Reply = TopicAnswers;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        each_topic(round, &self.topics, |state, name, now_ms| {
            Ok(vec![state.pause_mirror_topic(name, self.pause, now_ms)?])
        })
    }
}

/// Metadata sync of one mirror topic: the source's partition count and settings.
#[derive(Debug, Clone)]
pub struct SyncMirrorTopic {
    pub name: String,
    pub partitions: i32,
    /// The source topic's values of the configs a mirror takes (`mirrored_configs`), when
    /// they were read.
    pub configs: Option<TopicOverrides>,
}

impl Command for SyncMirrorTopic {
    type Reply = Result<(), ErrorKind>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let now_ms = round.now_ms();
        let records =
            round
                .state()
                .sync_mirror_topic(&self.name, self.partitions, self.configs, now_ms)?;
        append_topic_change(round, &records);
        Ok(())
    }
}

/// What the fetchers report about their partitions in one round, in one command; each
/// partition's state after its event, or why the transition was refused.
#[derive(Debug, Clone)]
pub struct MirrorEvents {
    pub events: Vec<(TopicPartition, MirrorEvent)>,
}

impl Command for MirrorEvents {
    type Reply = Vec<Result<shoal_mirror::PartitionMirror, ErrorKind>>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        self.events
            .iter()
            .map(|(partition, event)| {
                let (mirror, record) =
                    round
                        .state()
                        .mirror_event(*partition, *event, round.now_ms())?;
                if let Some(record) = record {
                    append_topic_change(round, &[record]);
                }
                Ok(mirror)
            })
            .collect()
    }
}

/// Batches fetched from the source, stored in one object, committed at their own offsets.
#[derive(Debug, Clone)]
pub struct CommitMirrored {
    pub object: NewObject,
    /// Each keeps its source offsets (`kept_base_offset` set).
    pub batches: Vec<CommitBatch>,
}

impl Command for CommitMirrored {
    type Reply = Vec<CommitBatchResult>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let decided = round
            .state()
            .commit_mirrored(&self.object, &self.batches, round.now_ms());
        super::batches::append_commit(round, decided)
    }
}

/// Drops local records from `offset` on.
#[derive(Debug, Clone)]
pub struct Truncate {
    pub partition: TopicPartition,
    pub offset: i64,
}

impl Command for Truncate {
    type Reply = Result<(), ErrorKind>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        if let Some(record) = round
            .state()
            .truncate(self.partition, self.offset, round.now_ms())?
        {
            round.append(&record);
        }
        Ok(())
    }
}

/// (name, source bootstrap servers, topic count) of every mirror.
#[derive(Debug, Clone)]
pub struct ListMirrors;

impl Command for ListMirrors {
    type Reply = Vec<(String, String, i32)>;
    const WRITE: bool = false;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        round.state().list_mirrors()
    }
}

/// A mirror's settings and partitions; None for an unknown mirror.
#[derive(Debug, Clone)]
pub struct DescribeMirror {
    pub name: String,
}

impl Command for DescribeMirror {
    type Reply = Option<MirrorDescription>;
    const WRITE: bool = false;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let state = round.state();
        state
            .mirror_config(&self.name)
            .zip(state.mirror_partitions(&self.name))
            .map(|(config, topics)| MirrorDescription { config, topics })
    }
}

/// (topic, partition) → the last mirrored offset in `mirror`, 0 when unknown.
#[derive(Debug, Clone)]
pub struct LastMirroredOffsets {
    pub mirror: String,
    pub partitions: Vec<(String, i32)>,
}

impl Command for LastMirroredOffsets {
    type Reply = Vec<i64>;
    const WRITE: bool = false;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        self.partitions
            .iter()
            .map(|(topic, p)| round.state().last_mirrored_offset(&self.mirror, topic, *p))
            .collect()
    }
}

/// Mirror records change what the shards' topic view shows (read-only, mirror names).
/// A change to each topic in turn, in request order, each appended before the next is
/// decided (a later topic sees what an earlier one changed); one answer per topic.
fn each_topic<T>(
    round: &mut Round<'_>,
    topics: &[T],
    mut change: impl FnMut(&CoordinatorState, &T, i64) -> Result<Vec<Entry>, ErrorKind>,
) -> TopicAnswers {
    topics
        .iter()
        .map(|topic| {
            let records = change(round.state(), topic, round.now_ms())?;
            append_topic_change(round, &records);
            Ok(())
        })
        .collect()
}

fn append_topic_change(round: &mut Round<'_>, records: &[Entry]) {
    round.append_all(records);
    round.topics_changed();
}
