use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;
use futures::FutureExt;
use kafka_protocol::protocol::{Request, StrBytes};
use shoal_coordinator::commands::CreateTopic;
use shoal_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use shoal_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use shoal_protocol::messages::{
    FetchRequest, FetchResponse, ProduceRequest, ProduceResponse, TopicName,
};
use shoal_shards::{Latch, ServeFn, ShardError};
use shoal_wal::batch::BatchBuilder;
use shoal_wal::decompress::Codec;

use crate::config::BrokerConfig;
use crate::context::{Broker, Call, ClientInfo};
use crate::dynamic_configs::LiveConfigs;
use crate::handlers::registry;
use crate::quotas::QuotaBoard;
use crate::server::ConnectionLimits;

/// A fresh directory under the system's temporary directory.
pub fn temp_dir(label: &str) -> TestDir {
    let dir = std::env::temp_dir().join(format!("shoal-{label}-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    TestDir(dir)
}

/// A test's data directory, removed when the test is done with it: segments are preallocated
/// (tens of MiB each), and a run leaves a directory per test.
pub struct TestDir(PathBuf);

impl std::ops::Deref for TestDir {
    type Target = std::path::Path;

    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Defaults for an in-process broker in `dir`: two shards sharing the machine's CPUs, small
/// io_uring registrations (tests run in parallel processes under one `ulimit -l`).
pub fn test_config(dir: &std::path::Path) -> BrokerConfig {
    let mut config = BrokerConfig {
        data_dir: dir.to_path_buf(),
        ..BrokerConfig::default()
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    config.shards.cores = vec![0, 1 % cores];
    config.shards.io_memory_bytes = 256 << 10;
    config
}

/// Runs a broker with `config` until `body` (run on shard 0 with its handlers' context)
/// finishes, then shuts it down the way a signal does (draining every buffer). Panics if the
/// broker failed or the body panicked.
pub fn run_broker<F, Fut>(config: BrokerConfig, body: F)
where
    F: Fn(Rc<Broker>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let runtime = config.runtime().expect("a test config");
    let shutdown = Arc::new(Latch::new(1));
    let runtime_shards = runtime.shard_cores.len();
    let config = Arc::new(config);
    let body = Arc::new(body);
    let stop = shutdown.clone();
    let serve: ServeFn = Arc::new(move |shard| {
        let (config, body, stop) = (config.clone(), body.clone(), stop.clone());
        Box::pin(async move {
            if shard.index != 0 {
                // Other shards only answer their peers.
                return futures::future::pending().await;
            }
            let quotas = QuotaBoard::new(config.quotas.windows(), runtime_shards);
            let limits =
                ConnectionLimits::new(config.max_connections, config.max_connections_per_ip);
            let live = LiveConfigs::new(config.clone(), shard.config.live.clone(), limits, None);
            let broker = Rc::new(Broker::new(shard, config, None, quotas, live, None));
            // A failed assertion stops the broker cleanly (an error from the listener's place
            // stops every executor) and fails the run with its message.
            let outcome = AssertUnwindSafe(body(broker)).catch_unwind().await;
            if outcome.is_ok() {
                stop.release();
            }
            outcome.map_err(|panic| {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                ShardError::Executor(format!("the test body panicked: {message}"))
            })
        })
    });
    shoal_shards::run(runtime, serve, shutdown).expect("the broker ran and the test passed");
}

/// A handler context for `broker` serving request type `R` at `version`, held to the ACL
/// checks the registry declares for `R`.
pub fn call<'a, R: Request>(broker: &'a Broker, version: i16, client: &'a ClientInfo) -> Call<'a> {
    let spec = registry::spec(R::KEY).expect("a served API");
    Call::new(broker, version, client, spec)
}

/// Creates `name` with `partitions` through the coordinator; its id.
pub async fn create_topic(broker: &Broker, name: &str, partitions: i32) -> uuid::Uuid {
    let create = CreateTopic {
        name: name.into(),
        partitions,
        overrides: Default::default(),
    };
    let created = broker.shard.coordinator.run(create).await;
    created
        .expect("the coordinator answers")
        .expect("the topic is created")
        .id
}

pub fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_string()))
}

/// An uncompressed v2 batch holding one record per value, CRC-32C set, base offset 0.
pub fn record_batch(values: &[&[u8]]) -> Bytes {
    let timestamp: i64 = 1_700_000_000_000;
    let batch = values
        .iter()
        .fold(BatchBuilder::new(timestamp), |batch, value| {
            batch.record(timestamp, None, Some(value), &[])
        });
    Bytes::from(batch.build(Codec::None).expect("an uncompressed batch"))
}

/// Produce v9 of one batch to `topic`/`partition` with acks=all.
pub fn produce_request(topic: &str, partition: i32, records: Bytes) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(topic_name(topic))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(records))])])
}

/// (error code, base offset) of a one-partition produce answer.
pub fn produced(response: &ProduceResponse) -> (i16, i64) {
    let p = &response.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

/// Fetch v12 of one partition from `offset`.
pub fn fetch_request(topic: &str, partition: i32, offset: i64, max_wait_ms: i32) -> FetchRequest {
    FetchRequest::default()
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_topics(vec![FetchTopic::default()
            .with_topic(topic_name(topic))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(partition)
                .with_fetch_offset(offset)
                .with_partition_max_bytes(1 << 20)])])
}

/// (error code, high watermark, record bytes) of a one-partition fetch answer.
pub fn fetched(response: &FetchResponse) -> (i16, i64, Bytes) {
    let p = &response.responses[0].partitions[0];
    (
        p.error_code,
        p.high_watermark,
        p.records.clone().unwrap_or_default(),
    )
}
