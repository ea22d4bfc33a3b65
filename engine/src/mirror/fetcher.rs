//! Mirror fetchers: on each shard, one task per mirror with partitions this shard owns. A task
//! walks its partitions through the state machine (asking the coordinator to record each
//! transition), asks the source for last mirrored offsets while PREPARING, and fetches the
//! MIRRORING ones from the source like a follower, storing what it gets at the source's offsets.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;
use std::time::{Duration, Instant};

use kafka_protocol::protocol::Request as _;
use shoal_coordinator::commands::{DescribeMirror, MirrorEvents};
use shoal_coordinator::{MirrorEvent, TopicPartition};
use shoal_mirror::{MirrorConfig, MirrorState, PartitionMirror};
use shoal_protocol::mirror::LastMirroredOffsetsRequest;

use super::client::SourceClient;
use super::fetch_round::{fetch_round, prepare};
use crate::context::Broker;

/// How often the manager looks for mirrors whose partitions this shard owns.
const DISCOVERY_INTERVAL: Duration = Duration::from_millis(200);
const SOURCE_TIMEOUT: Duration = Duration::from_secs(10);

/// A mirrored partition this shard owns, as the topic view shows it.
#[derive(Debug, Clone)]
pub struct OwnedPartition {
    pub topic: String,
    pub partition: TopicPartition,
    pub mirror: PartitionMirror,
}

pub async fn run(broker: Rc<Broker>) {
    let mut running: HashSet<String> = HashSet::new();
    let finished: Rc<std::cell::RefCell<Vec<String>>> = Default::default();
    loop {
        for name in finished.borrow_mut().drain(..) {
            running.remove(&name);
        }
        for name in owned_partitions(&broker, None).into_keys() {
            if running.insert(name.clone()) {
                let broker = broker.clone();
                let finished = finished.clone();
                glommio::spawn_local(async move {
                    mirror_task(&broker, &name).await;
                    finished.borrow_mut().push(name);
                })
                .detach();
            }
        }
        glommio::timer::sleep(DISCOVERY_INTERVAL).await;
    }
}

/// Active mirrored partitions this shard owns, by mirror name (of one mirror when `only`).
pub fn owned_partitions(
    broker: &Broker,
    only: Option<&str>,
) -> BTreeMap<String, Vec<OwnedPartition>> {
    let view = broker.shard.topics.load();
    let mut by_mirror: BTreeMap<String, Vec<OwnedPartition>> = BTreeMap::new();
    for topic in view.all() {
        let Some(mirror) = &topic.mirror else {
            continue;
        };
        if mirror.removed || only.is_some_and(|name| name != mirror.name) {
            continue;
        }
        for (index, state) in mirror.partitions.iter().enumerate() {
            let partition = TopicPartition {
                topic_id: topic.id,
                partition: index as i32,
            };
            if state.is_read_only()
                && broker.shard.owner_of(&partition) == broker.shard.index
                && broker.mirrors_partition(&partition)
            {
                by_mirror
                    .entry(mirror.name.clone())
                    .or_default()
                    .push(OwnedPartition {
                        topic: topic.name.clone(),
                        partition,
                        mirror: state.clone(),
                    });
            }
        }
    }
    by_mirror
}

/// What one mirror's task keeps between rounds.
pub struct Session {
    pub name: String,
    pub config: MirrorConfig,
    pub client: Option<SourceClient>,
    /// Whether the source serves LastMirroredOffsets (another Shoal); plain Kafka does not,
    /// and then there is nothing to truncate to but 0.
    pub source_knows_mirrors: bool,
    /// Where to fetch next when that is past the local end (the source's log start moved).
    pub fetch_from: HashMap<TopicPartition, i64>,
    config_loaded_at: Instant,
}

impl Session {
    pub fn new(name: &str, config: MirrorConfig) -> Session {
        Session {
            name: name.to_string(),
            config,
            client: None,
            source_knows_mirrors: false,
            fetch_from: HashMap::new(),
            config_loaded_at: Instant::now(),
        }
    }

    /// Connects to the source and learns whether it speaks KIP-1279.
    pub async fn connect(&mut self) -> Result<(), crate::EngineError> {
        let max_response = self.config.fetch_response_max_bytes as usize + (1 << 20);
        let client = SourceClient::connect(&self.config, SOURCE_TIMEOUT, max_response).await?;
        // KIP-1279 itself is optional in a source: without it, mirroring starts at offset 0.
        self.source_knows_mirrors = client.serves(LastMirroredOffsetsRequest::KEY);
        self.client = Some(client);
        Ok(())
    }
}

async fn mirror_task(broker: &Broker, name: &str) {
    let mut session: Option<Session> = None;
    loop {
        let Some(partitions) = owned_partitions(broker, Some(name)).remove(name) else {
            return;
        };
        let stale = session.as_ref().is_none_or(|s| {
            s.config_loaded_at.elapsed()
                > Duration::from_millis(s.config.metadata_refresh_interval_ms)
        });
        if stale {
            match load_config(broker, name).await {
                Some(config) => {
                    let s = session.get_or_insert_with(|| Session::new(name, config.clone()));
                    if s.config.bootstrap_servers != config.bootstrap_servers {
                        s.client = None;
                    }
                    s.config = config;
                    s.config_loaded_at = Instant::now();
                }
                None => return,
            }
        }
        let s = session.as_mut().expect("loaded above");
        if s.client.is_none() {
            match s.connect().await {
                Ok(()) => {}
                Err(e) => {
                    tracing::warn!(mirror = %name, error = %e, "source unreachable; retried after fetch.backoff.ms (check bootstrap.servers, the network and the security settings)");
                    fail_all(broker, &partitions).await;
                    pause_for(Duration::from_millis(s.config.fetch_backoff_ms as u64)).await;
                    retry_due(broker, &partitions).await;
                    continue;
                }
            }
        }
        let mut to_fetch = Vec::new();
        let mut round_events = Vec::new();
        for p in partitions {
            match p.mirror.state {
                MirrorState::Initializing if !p.mirror.paused => {
                    round_events.push((p.partition, MirrorEvent::BeginPreparing));
                }
                MirrorState::Preparing if !p.mirror.paused => {
                    if let Err(e) = prepare(broker, s, &p).await {
                        tracing::warn!(mirror = %name, topic = %p.topic, error = %e, "prepare failed");
                        s.client = None;
                        event(broker, p.partition, failed()).await;
                    }
                }
                MirrorState::Failed => {
                    round_events.push((p.partition, MirrorEvent::RetryIfDue));
                }
                MirrorState::Mirroring if !p.mirror.paused => to_fetch.push(p),
                _ => {}
            }
        }
        events(broker, round_events).await;
        if to_fetch.is_empty() {
            pause_for(DISCOVERY_INTERVAL).await;
            continue;
        }
        if let Err(e) = fetch_round(broker, s, &to_fetch).await {
            tracing::warn!(mirror = %name, error = %e, "fetch from the source failed; retried after fetch.backoff.ms (check the source cluster and the network)");
            s.client = None;
            fail_all(broker, &to_fetch).await;
            pause_for(Duration::from_millis(s.config.fetch_backoff_ms as u64)).await;
        }
    }
}

async fn load_config(broker: &Broker, name: &str) -> Option<MirrorConfig> {
    let request = DescribeMirror {
        name: name.to_string(),
    };
    match broker.shard.coordinator.run(request).await {
        Ok(Some(d)) => Some(d.config),
        _ => None,
    }
}

pub fn failed() -> MirrorEvent {
    MirrorEvent::Failed {
        jitter: fastrand::f64(),
    }
}

/// Records a transition; the coordinator refuses the ones the state no longer allows.
pub async fn event(broker: &Broker, partition: TopicPartition, event: MirrorEvent) {
    events(broker, vec![(partition, event)]).await;
}

/// Records several partitions' transitions in one coordinator write.
pub async fn events(broker: &Broker, events: Vec<(TopicPartition, MirrorEvent)>) {
    if events.is_empty() {
        return;
    }
    let request = MirrorEvents {
        events: events.clone(),
    };
    if let Ok(results) = broker.shard.coordinator.run(request).await {
        for ((partition, event), result) in events.iter().zip(results) {
            if let Err(e) = result {
                tracing::debug!(?partition, ?event, error = ?e, "mirror transition refused");
            }
        }
    }
}

async fn fail_all(broker: &Broker, partitions: &[OwnedPartition]) {
    let failing = partitions
        .iter()
        .filter(|p| p.mirror.state != MirrorState::Failed)
        .map(|p| (p.partition, failed()))
        .collect();
    events(broker, failing).await;
}

async fn retry_due(broker: &Broker, partitions: &[OwnedPartition]) {
    let due = partitions
        .iter()
        .map(|p| (p.partition, MirrorEvent::RetryIfDue))
        .collect();
    events(broker, due).await;
}

async fn pause_for(duration: Duration) {
    glommio::timer::sleep(duration).await;
}
