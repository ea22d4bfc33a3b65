//! Mirror fetchers: on each shard, one task per mirror with partitions this shard owns. A task
//! walks its partitions through the state machine (asking the coordinator to record each
//! transition), asks the source for last mirrored offsets while PREPARING, and fetches the
//! MIRRORING ones from the source like a follower, storing what it gets at the source's offsets.

use std::collections::{BTreeMap, HashSet};
use std::rc::Rc;
use std::time::{Duration, Instant};

use shoal_coordinator::commands::DescribeMirror;
use shoal_coordinator::{MirrorEvent, TopicPartition};
use shoal_mirror::{MirrorConfig, MirrorState};

use super::fetch_round::{fetch_round, prepare};
use super::session::{event, events, failed, OwnedPartition, Session};
use crate::Host;

/// How often the manager looks for mirrors whose partitions this shard owns.
const DISCOVERY_INTERVAL: Duration = Duration::from_millis(200);

pub async fn run(broker: Rc<dyn Host>) {
    let mut running: HashSet<String> = HashSet::new();
    let finished: Rc<std::cell::RefCell<Vec<String>>> = Default::default();
    loop {
        for name in finished.borrow_mut().drain(..) {
            running.remove(&name);
        }
        for name in owned_partitions(&*broker, None).into_keys() {
            if running.insert(name.clone()) {
                let broker = broker.clone();
                let finished = finished.clone();
                glommio::spawn_local(async move {
                    mirror_task(&*broker, &name).await;
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
    broker: &dyn Host,
    only: Option<&str>,
) -> BTreeMap<String, Vec<OwnedPartition>> {
    let view = broker.shard().topics.load();
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
                && broker.shard().owner_of(&partition) == broker.shard().index
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

async fn mirror_task(broker: &dyn Host, name: &str) {
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

async fn load_config(broker: &dyn Host, name: &str) -> Option<MirrorConfig> {
    let request = DescribeMirror {
        name: name.to_string(),
    };
    match broker.shard().coordinator.run(request).await {
        Ok(Some(d)) => Some(d.config),
        _ => None,
    }
}

async fn fail_all(broker: &dyn Host, partitions: &[OwnedPartition]) {
    let failing = partitions
        .iter()
        .filter(|p| p.mirror.state != MirrorState::Failed)
        .map(|p| (p.partition, failed()))
        .collect();
    events(broker, failing).await;
}

async fn retry_due(broker: &dyn Host, partitions: &[OwnedPartition]) {
    let due = partitions
        .iter()
        .map(|p| (p.partition, MirrorEvent::RetryIfDue))
        .collect();
    events(broker, due).await;
}

async fn pause_for(duration: Duration) {
    glommio::timer::sleep(duration).await;
}
