//! What the coordinator's integration tests share: an executor to run on, a core on
//! PostgreSQL, and commands that create a topic and commit files to it. Each test binary uses
//! part of it.
#![allow(dead_code)]

use std::sync::Arc;

use arc_swap::ArcSwap;
use glommio::LocalExecutorBuilder;
use shoal_coordinator::commands::*;
use shoal_coordinator::*;
use shoal_metalog::postgres_log::WriterRole;
use shoal_metalog::*;

/// An empty topic catalogue for a core to publish into.
pub fn view() -> Arc<ArcSwap<TopicsView>> {
    Arc::new(ArcSwap::from_pointee(TopicsView::default()))
}

/// A core whose log is in PostgreSQL, or why it refused to start.
pub async fn open_postgres(
    config: &shoal_pg::PgConfig,
    holder: &str,
    role: WriterRole,
    snapshot_log_bytes: u64,
) -> Result<CoordinatorCore, MetaLogError> {
    CoordinatorCore::open_postgres(config, holder, role, view(), snapshot_log_bytes).await
}

pub fn run<F: std::future::Future<Output = ()> + 'static>(f: impl FnOnce() -> F + Send + 'static) {
    LocalExecutorBuilder::default()
        .io_memory(1 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

pub async fn produce(core: &mut CoordinatorCore, topic: uuid::Uuid, files: usize) {
    for f in 0..files {
        let batches = (0..10)
            .map(|i| CommitBatch {
                partition: TopicPartition {
                    topic_id: topic,
                    partition: i % 3,
                },
                byte_offset: i as u32 * 100,
                size_bytes: 100,
                offset_count: 5,
                max_timestamp: 1000 + f as i64,
                producer_id: -1,
                producer_epoch: -1,
                base_sequence: -1,
                kind: shoal_coordinator::BatchKind::Plain,
                kept_base_offset: None,
                joins_transaction: false,
            })
            .collect();
        let request = CommitFile {
            object: NewObject::uploaded(format!("wal/{}", uuid::Uuid::new_v4()), 1000, 0),
            batches,
        };
        core.run(request).await.unwrap();
    }
}

/// One plain batch of 5 records in partition 0, in object `key`.
pub fn commit_file(topic: uuid::Uuid, key: &str) -> CommitFile {
    CommitFile {
        object: NewObject::uploaded(key, 100, 0),
        batches: vec![CommitBatch {
            partition: TopicPartition {
                topic_id: topic,
                partition: 0,
            },
            byte_offset: 0,
            size_bytes: 100,
            offset_count: 5,
            max_timestamp: 1,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            kind: shoal_coordinator::BatchKind::Plain,
            kept_base_offset: None,
            joins_transaction: false,
        }],
    }
}

pub async fn create_topic(core: &mut CoordinatorCore) -> uuid::Uuid {
    let request = CreateTopic {
        name: "t".into(),
        partitions: 3,
        overrides: Default::default(),
    };
    core.run(request).await.unwrap().unwrap().id
}

/// How many snapshots PostgreSQL holds and the first log row left (0 for none).
pub async fn snapshots_and_first_row(config: &shoal_pg::PgConfig) -> (i64, i64) {
    let mut db = shoal_pg::Connection::connect(config).await.unwrap();
    let rows = db
        .query(
            "SELECT (SELECT count(*) FROM coordinator_snapshots), \
             coalesce((SELECT min(seq) FROM coordinator_log), 0)",
            &[],
        )
        .await
        .unwrap();
    (rows[0].i64(0).unwrap(), rows[0].i64(1).unwrap())
}
