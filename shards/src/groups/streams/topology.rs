//! A streams application's topology as its members send it (KIP-1071), and the topology
//! configured against the cluster's topics: how many tasks each subtopology has, which
//! internal topics (repartition and changelog) must be created and with how many
//! partitions, or why the group cannot be given tasks yet (a status for its members).

use std::collections::{BTreeMap, BTreeSet};

use crate::groups::consumer::group::Topics;
use crate::groups::GroupError;

/// Why a group's members get no tasks (or are told something), as the heartbeat's status
/// codes say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StatusCode {
    StaleTopology = 0,
    MissingSourceTopics = 1,
    IncorrectlyPartitionedTopics = 2,
    MissingInternalTopics = 3,
    ShutdownApplication = 4,
}

/// An internal topic as the topology declares it: a partition count of 0 is decided by the
/// broker (always so for changelogs); its configs go to the topic when created.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct TopicInfo {
    pub name: String,
    pub partitions: i32,
    pub replication_factor: i16,
    pub configs: Vec<(String, String)>,
}

/// Indexes into its subtopology's source and repartition source topics of topics that must
/// have as many partitions as each other.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct CopartitionGroup {
    pub source_topics: Vec<i16>,
    pub repartition_source_topics: Vec<i16>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Subtopology {
    pub id: String,
    pub source_topics: Vec<String>,
    pub repartition_sink_topics: Vec<String>,
    pub changelog_topics: Vec<TopicInfo>,
    pub repartition_source_topics: Vec<TopicInfo>,
    pub copartition_groups: Vec<CopartitionGroup>,
}

impl Subtopology {
    /// Every topic its tasks read: source topics, then repartition sources.
    pub fn inputs(&self) -> impl Iterator<Item = &str> {
        let repartition = self
            .repartition_source_topics
            .iter()
            .map(|t| t.name.as_str());
        self.source_topics
            .iter()
            .map(String::as_str)
            .chain(repartition)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Topology {
    pub epoch: i32,
    /// Sorted by id.
    pub subtopologies: Vec<Subtopology>,
}

/// A topic the broker creates for the group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InternalTopic {
    pub name: String,
    pub partitions: i32,
    pub configs: Vec<(String, String)>,
}

/// The topology against the topics as they are now.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Configured {
    /// Each subtopology's task count; empty while `status` says why the group has no tasks.
    pub tasks: BTreeMap<String, i32>,
    /// Each input topic's partition count (internal ones as they are to be).
    pub partitions: BTreeMap<String, i32>,
    pub status: Option<(StatusCode, String)>,
    pub to_create: Vec<InternalTopic>,
}

impl Configured {
    pub fn is_ready(&self) -> bool {
        self.status.is_none()
    }

    /// The topic partitions task `partition` of `subtopology` reads.
    pub fn task_partitions<'a>(
        &'a self,
        subtopology: &'a Subtopology,
        partition: i32,
    ) -> impl Iterator<Item = &'a str> + 'a {
        subtopology
            .inputs()
            .filter(move |t| self.partitions.get(*t).is_some_and(|&n| partition < n))
    }
}

/// Bounds on what a topology may hold, so a member cannot grow the group without limit.
pub const MAX_SUBTOPOLOGIES: usize = 1_000;
pub const MAX_TOPICS_PER_SUBTOPOLOGY: usize = 1_000;

impl Topology {
    /// Kafka's checks of a topology a member joins with: changelog partition counts are the
    /// broker's to decide, copartition indexes must name topics, expressions as sources are
    /// not served (Kafka 4.4 refuses them too).
    pub fn validate(&self) -> Result<(), GroupError> {
        if self.subtopologies.len() > MAX_SUBTOPOLOGIES {
            return Err(GroupError::InvalidRequest);
        }
        let mut ids = BTreeSet::new();
        for s in &self.subtopologies {
            let topics = s.source_topics.len()
                + s.repartition_source_topics.len()
                + s.changelog_topics.len()
                + s.repartition_sink_topics.len();
            if topics > MAX_TOPICS_PER_SUBTOPOLOGY || !ids.insert(&s.id) {
                return Err(GroupError::InvalidRequest);
            }
            if s.changelog_topics.iter().any(|t| t.partitions != 0) {
                return Err(GroupError::StreamsInvalidTopology);
            }
            let in_range =
                |indexes: &[i16], len: usize| indexes.iter().all(|&i| i >= 0 && (i as usize) < len);
            for group in &s.copartition_groups {
                if !in_range(&group.source_topics, s.source_topics.len())
                    || !in_range(
                        &group.repartition_source_topics,
                        s.repartition_source_topics.len(),
                    )
                {
                    return Err(GroupError::StreamsInvalidTopology);
                }
            }
        }
        Ok(())
    }

    /// What the topology holds in memory: its strings (ids, topic names, configs) and an
    /// overhead per subtopology and topic.
    pub fn memory_bytes(&self) -> usize {
        const ENTRY_BYTES: usize = 64;
        let info = |t: &TopicInfo| {
            ENTRY_BYTES
                + t.name.len()
                + t.configs
                    .iter()
                    .map(|(k, v)| k.len() + v.len())
                    .sum::<usize>()
        };
        self.subtopologies
            .iter()
            .map(|s| {
                let names = s.source_topics.iter().chain(&s.repartition_sink_topics);
                ENTRY_BYTES
                    + s.id.len()
                    + names.map(|n| ENTRY_BYTES + n.len()).sum::<usize>()
                    + s.changelog_topics.iter().map(info).sum::<usize>()
                    + s.repartition_source_topics.iter().map(info).sum::<usize>()
            })
            .sum()
    }

    pub fn subtopology(&self, id: &str) -> Option<&Subtopology> {
        self.subtopologies.iter().find(|s| s.id == id)
    }

    /// What the topology is against `topics`: partition counts of repartition topics follow
    /// the subtopologies that write them, copartitioned topics are made alike, and each
    /// subtopology has as many tasks as its widest input.
    pub fn configure(&self, topics: &impl Topics) -> Configured {
        let mut configured = Configured::default();
        match self.input_partitions(topics) {
            Ok(partitions) => configured.partitions = partitions,
            Err(status) => {
                configured.status = Some(status);
                return configured;
            }
        }
        for s in &self.subtopologies {
            let widest = s
                .inputs()
                .filter_map(|t| configured.partitions.get(t))
                .max();
            configured
                .tasks
                .insert(s.id.clone(), widest.copied().unwrap_or(0));
        }
        let (to_create, wrong) = self.internal_topics(&configured, topics);
        configured.to_create = to_create;
        configured.status = match (wrong.is_empty(), configured.to_create.is_empty()) {
            (false, _) => Some((
                StatusCode::IncorrectlyPartitionedTopics,
                format!(
                    "Internal topics {} have the wrong partition count.",
                    wrong.join(", ")
                ),
            )),
            (true, false) => {
                let names: Vec<&str> = configured
                    .to_create
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect();
                Some((
                    StatusCode::MissingInternalTopics,
                    format!("Internal topics are missing: {}", names.join(", ")),
                ))
            }
            (true, true) => None,
        };
        if configured.status.is_some() {
            configured.tasks.clear();
        }
        configured
    }

    /// Each input topic's partition count (internal ones as they are to be), or the status
    /// that says why they cannot be known.
    fn input_partitions(
        &self,
        topics: &impl Topics,
    ) -> Result<BTreeMap<String, i32>, (StatusCode, String)> {
        let missing: BTreeSet<&str> = self
            .subtopologies
            .iter()
            .flat_map(|s| &s.source_topics)
            .filter(|t| topics.lookup(t).is_none())
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            let names: Vec<&str> = missing.into_iter().collect();
            let detail = format!("Source topics {} are missing.", names.join(", "));
            return Err((StatusCode::MissingSourceTopics, detail));
        }
        let mut partitions = BTreeMap::new();
        for t in self.subtopologies.iter().flat_map(|s| &s.source_topics) {
            partitions.insert(t.clone(), topics.lookup(t).expect("checked").1);
        }
        let fixed: BTreeSet<&str> = self
            .repartition_topics()
            .filter(|t| t.partitions > 0)
            .map(|t| t.name.as_str())
            .collect();
        for t in self.repartition_topics().filter(|t| t.partitions > 0) {
            partitions.insert(t.name.clone(), t.partitions);
        }
        self.size_repartition_topics(&mut partitions, topics);
        self.copartition(&mut partitions, &fixed)
            .map_err(|detail| (StatusCode::IncorrectlyPartitionedTopics, detail))?;
        for s in &self.subtopologies {
            let unknown: Vec<&str> = s
                .inputs()
                .filter(|t| !partitions.contains_key(*t))
                .collect();
            if !unknown.is_empty() {
                let detail = format!(
                    "The partition counts of {} are unknown.",
                    unknown.join(", ")
                );
                return Err((StatusCode::MissingSourceTopics, detail));
            }
        }
        Ok(partitions)
    }

    /// A repartition topic without a count of its own has as many partitions as the widest
    /// input of the subtopologies writing it (which may themselves read repartition topics,
    /// hence the rounds until nothing changes); one written by none, as it exists.
    fn size_repartition_topics(
        &self,
        partitions: &mut BTreeMap<String, i32>,
        topics: &impl Topics,
    ) {
        loop {
            let mut changed = false;
            for t in self.repartition_topics().filter(|t| t.partitions == 0) {
                let widest = self
                    .subtopologies
                    .iter()
                    .filter(|s| s.repartition_sink_topics.contains(&t.name))
                    .filter_map(|s| s.inputs().filter_map(|i| partitions.get(i)).max())
                    .max()
                    .copied();
                if let Some(n) = widest.filter(|n| partitions.get(&t.name) != Some(n)) {
                    partitions.insert(t.name.clone(), n);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        for t in self.repartition_topics() {
            if !partitions.contains_key(&t.name) {
                if let Some((_, n)) = topics.lookup(&t.name) {
                    partitions.insert(t.name.clone(), n);
                }
            }
        }
    }

    /// The internal topics (repartition sources and changelogs) that do not exist, with the
    /// partition counts they are to have, and the names of those that exist with another.
    fn internal_topics(
        &self,
        configured: &Configured,
        topics: &impl Topics,
    ) -> (Vec<InternalTopic>, Vec<String>) {
        let (mut to_create, mut wrong): (Vec<InternalTopic>, Vec<String>) = Default::default();
        for s in &self.subtopologies {
            let internal = s
                .repartition_source_topics
                .iter()
                .map(|t| (t, configured.partitions[&t.name]))
                .chain(
                    s.changelog_topics
                        .iter()
                        .map(|t| (t, configured.tasks[&s.id])),
                );
            for (t, wanted) in internal {
                match topics.lookup(&t.name) {
                    Some((_, n)) if n != wanted => wrong.push(t.name.clone()),
                    Some(_) => {}
                    None if to_create.iter().any(|c| c.name == t.name) => {}
                    None => to_create.push(InternalTopic {
                        name: t.name.clone(),
                        partitions: wanted,
                        configs: t.configs.clone(),
                    }),
                }
            }
        }
        (to_create, wrong)
    }

    fn repartition_topics(&self) -> impl Iterator<Item = &TopicInfo> {
        self.subtopologies
            .iter()
            .flat_map(|s| &s.repartition_source_topics)
    }

    /// Copartitioned topics get one partition count: the source topics' (which must agree),
    /// else the widest of the repartition topics'; a repartition topic with a count of its
    /// own must agree too.
    fn copartition(
        &self,
        partitions: &mut BTreeMap<String, i32>,
        fixed: &BTreeSet<&str>,
    ) -> Result<(), String> {
        for s in &self.subtopologies {
            for group in &s.copartition_groups {
                let sources: Vec<&str> = group
                    .source_topics
                    .iter()
                    .map(|&i| s.source_topics[i as usize].as_str())
                    .collect();
                let repartition: Vec<&str> = group
                    .repartition_source_topics
                    .iter()
                    .map(|&i| s.repartition_source_topics[i as usize].name.as_str())
                    .collect();
                let counts: BTreeSet<i32> = sources
                    .iter()
                    .chain(repartition.iter().filter(|t| fixed.contains(*t)))
                    .filter_map(|t| partitions.get(*t).copied())
                    .collect();
                let count = match counts.len() {
                    0 => repartition
                        .iter()
                        .filter_map(|t| partitions.get(*t))
                        .max()
                        .copied(),
                    1 => counts.first().copied(),
                    _ => {
                        let names: Vec<&str> =
                            sources.iter().chain(&repartition).copied().collect();
                        return Err(format!(
                            "The copartitioned topics {} have different partition counts.",
                            names.join(", ")
                        ));
                    }
                };
                if let Some(count) = count {
                    for t in repartition.iter().filter(|t| !fixed.contains(*t)) {
                        partitions.insert(t.to_string(), count);
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn topics(list: &[(&str, i32)]) -> BTreeMap<String, (Uuid, i32)> {
        list.iter()
            .map(|(n, p)| (n.to_string(), (Uuid::new_v4(), *p)))
            .collect()
    }

    fn info(name: &str, partitions: i32) -> TopicInfo {
        TopicInfo {
            name: name.into(),
            partitions,
            ..Default::default()
        }
    }

    /// Clicks re-keyed into a repartition topic, counted (a changelog) and joined with a
    /// table it is copartitioned with: the shape of the Java tests' application.
    fn counts() -> Topology {
        Topology {
            epoch: 0,
            subtopologies: vec![
                Subtopology {
                    id: "0".into(),
                    source_topics: vec!["clicks".into()],
                    repartition_sink_topics: vec!["app-rekey-repartition".into()],
                    ..Default::default()
                },
                Subtopology {
                    id: "1".into(),
                    source_topics: vec!["pages".into()],
                    repartition_source_topics: vec![info("app-rekey-repartition", 0)],
                    changelog_topics: vec![info("app-counts-changelog", 0)],
                    copartition_groups: vec![CopartitionGroup {
                        source_topics: vec![0],
                        repartition_source_topics: vec![0],
                    }],
                    ..Default::default()
                },
            ],
        }
    }

    #[test]
    fn internal_topics_are_sized_from_their_writers_and_copartitioned_sources() {
        let configured = counts().configure(&topics(&[("clicks", 4), ("pages", 3)]));
        assert_eq!(
            configured.status.as_ref().map(|s| s.0),
            Some(StatusCode::MissingInternalTopics)
        );
        let made: Vec<(&str, i32)> = configured
            .to_create
            .iter()
            .map(|t| (t.name.as_str(), t.partitions))
            .collect();
        // The repartition topic follows the table it is joined with, not the 4 clicks.
        assert_eq!(
            made,
            [("app-rekey-repartition", 3), ("app-counts-changelog", 3)]
        );
        let ready = counts().configure(&topics(&[
            ("clicks", 4),
            ("pages", 3),
            ("app-rekey-repartition", 3),
            ("app-counts-changelog", 3),
        ]));
        assert!(ready.is_ready());
        assert_eq!(
            ready.tasks,
            BTreeMap::from([("0".into(), 4), ("1".into(), 3)])
        );
    }

    #[test]
    fn missing_and_mispartitioned_topics_are_statuses_without_tasks() {
        let missing = counts().configure(&topics(&[("clicks", 3)]));
        assert_eq!(
            missing.status.as_ref().map(|s| s.0),
            Some(StatusCode::MissingSourceTopics)
        );
        assert!(missing.status.unwrap().1.contains("pages"));
        let wrong = counts().configure(&topics(&[
            ("clicks", 3),
            ("pages", 3),
            ("app-rekey-repartition", 3),
            ("app-counts-changelog", 5),
        ]));
        assert_eq!(
            wrong.status.map(|s| s.0),
            Some(StatusCode::IncorrectlyPartitionedTopics)
        );
        assert!(wrong.tasks.is_empty());
    }

    #[test]
    fn changelogs_with_a_partition_count_and_bad_indexes_are_refused() {
        let mut topology = counts();
        topology.subtopologies[1].changelog_topics[0].partitions = 2;
        assert_eq!(topology.validate(), Err(GroupError::StreamsInvalidTopology));
        let mut topology = counts();
        topology.subtopologies[1].copartition_groups[0].source_topics = vec![3];
        assert_eq!(topology.validate(), Err(GroupError::StreamsInvalidTopology));
        assert_eq!(counts().validate(), Ok(()));
    }
}
