//! What a mirror's task keeps between fetch rounds (its source connection and where to fetch
//! from), the partitions it serves, and how it records their transitions in the coordinator:
//! shared by the task (`fetcher`) and its rounds (`fetch_round`).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use kafka_protocol::protocol::Request as _;
use shoal_coordinator::commands::MirrorEvents;
use shoal_coordinator::{MirrorEvent, TopicPartition};
use shoal_mirror::{MirrorConfig, PartitionMirror};
use shoal_protocol::mirror::LastMirroredOffsetsRequest;

use super::client::SourceClient;
use crate::Host;

const SOURCE_TIMEOUT: Duration = Duration::from_secs(10);

/// A mirrored partition this shard owns, as the topic view shows it.
#[derive(Debug, Clone)]
pub struct OwnedPartition {
    pub topic: String,
    pub partition: TopicPartition,
    pub mirror: PartitionMirror,
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
    /// When `config` was read from the coordinator (the task reloads it now and then).
    pub config_loaded_at: Instant,
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
    pub async fn connect(&mut self) -> Result<(), crate::FetchError> {
        let max_response = self.config.fetch_response_max_bytes as usize + (1 << 20);
        let client = SourceClient::connect(&self.config, SOURCE_TIMEOUT, max_response).await?;
        // KIP-1279 itself is optional in a source: without it, mirroring starts at offset 0.
        self.source_knows_mirrors = client.serves(LastMirroredOffsetsRequest::KEY);
        self.client = Some(client);
        Ok(())
    }
}

pub fn failed() -> MirrorEvent {
    MirrorEvent::Failed {
        jitter: fastrand::f64(),
    }
}

/// Records a transition; the coordinator refuses the ones the state no longer allows.
pub async fn event(broker: &dyn Host, partition: TopicPartition, event: MirrorEvent) {
    events(broker, vec![(partition, event)]).await;
}

/// Records several partitions' transitions in one coordinator write.
pub async fn events(broker: &dyn Host, events: Vec<(TopicPartition, MirrorEvent)>) {
    if events.is_empty() {
        return;
    }
    let request = MirrorEvents {
        events: events.clone(),
    };
    if let Ok(results) = broker.shard().coordinator.run(request).await {
        for ((partition, event), result) in events.iter().zip(results) {
            if let Err(e) = result {
                tracing::debug!(?partition, ?event, error = ?e, "mirror transition refused");
            }
        }
    }
}
