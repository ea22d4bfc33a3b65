//! Coordinator benchmarks (`cargo bench -p shoal-coordinator`):
//! 1. CommitFile throughput of the state machine on one core, in memory: 1,000 partitions,
//!    100 batches per file (validation, offset assignment, record building and applying).
//! 2. FindBatches latency for a tailing consumer with 1,000,000 batches held.
//! 3. Restart time with 10,000,000 committed batches: snapshot load plus log replay.
//! 4. FindBatches through the whole core with 1,000,000 batches committed through its log,
//!    local and in PostgreSQL (a server started by the bench), and restart from each log.
//!
//! Results are printed and written to perf-results/<date>-coordinator.json with the workload.
//! Set SHOAL_BENCH_RESTART_BATCHES to change the size of the restart run.

use std::sync::Arc;
use std::time::Instant;

use arc_swap::ArcSwap;
use glommio::LocalExecutorBuilder;
use hdrhistogram::Histogram;
use serde_json::json;
use shoal_coordinator::commands::*;
use shoal_coordinator::*;
use shoal_metalog::postgres_log::WriterRole;
use shoal_metalog::*;
use shoal_pg::testing::{TestPostgres, PASSWORD};
use shoal_pg::PgConfig;
use uuid::Uuid;

const PARTITIONS: i32 = 1000;
const BATCHES_PER_FILE: usize = 100;

fn topic_state() -> (CoordinatorState, Uuid) {
    let mut state = CoordinatorState::default();
    let id = Uuid::from_u128(42);
    let record = state
        .create_topic("bench", PARTITIONS, id, TopicConfig::default(), 0)
        .unwrap();
    state.apply(&record);
    (state, id)
}

/// One file's batches, spread round-robin over the partitions from `start`.
fn file_batches(topic_id: Uuid, start: usize) -> Vec<CommitBatch> {
    (0..BATCHES_PER_FILE)
        .map(|i| CommitBatch {
            partition: TopicPartition {
                topic_id,
                partition: ((start + i) % PARTITIONS as usize) as i32,
            },
            byte_offset: (i * 1024) as u32,
            size_bytes: 1024,
            offset_count: 10,
            max_timestamp: 1_700_000_000_000,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            kind: shoal_coordinator::BatchKind::Plain,
            kept_base_offset: None,
            joins_transaction: false,
        })
        .collect()
}

fn fill(state: &mut CoordinatorState, topic_id: Uuid, files: usize) {
    for f in 0..files {
        let object = NewObject::uploaded(format!("wal/{f}"), 1 << 20, 0);
        let (_, record) = state.commit_file(&object, &file_batches(topic_id, f * 7), 0);
        state.apply(&record.expect("new key"));
    }
}

fn commit_throughput() -> serde_json::Value {
    let (mut state, topic_id) = topic_state();
    let files = 20_000;
    let keys: Vec<NewObject> = (0..files)
        .map(|f| NewObject::uploaded(format!("wal/{f:08}"), 1 << 20, 0))
        .collect();
    let batches: Vec<Vec<CommitBatch>> = (0..64).map(|f| file_batches(topic_id, f * 7)).collect();
    let mut frames = Vec::with_capacity(16 << 20);
    let started = Instant::now();
    for (f, key) in keys.iter().enumerate() {
        let (results, record) = state.commit_file(key, &batches[f % batches.len()], 0);
        let record = record.expect("new key");
        frames.clear();
        shoal_coordinator::frames::encode_frame(&record, &mut frames);
        state.apply(&record);
        assert!(results[0].error.is_none());
    }
    let seconds = started.elapsed().as_secs_f64();
    let total = (files * BATCHES_PER_FILE) as f64;
    json!({
        "workload": {"partitions": PARTITIONS, "batches_per_file": BATCHES_PER_FILE, "files": files,
                      "includes": "commit_file checks + offset assignment, log record encoding, apply"},
        "batches_per_s": (total / seconds).round(),
        "files_per_s": (files as f64 / seconds).round(),
        "target_batches_per_s": 2_000_000,
    })
}

fn find_batches_latency() -> serde_json::Value {
    let (mut state, topic_id) = topic_state();
    // 10,000 files × 100 batches = 1,000,000 batches, 1,000 per partition.
    fill(&mut state, topic_id, 10_000);
    assert_eq!(state.batch_count(), 1_000_000);
    let mut histogram = Histogram::<u64>::new(3).unwrap();
    let mut found_batches = 0usize;
    for i in 0..200_000u64 {
        let partition = ((i * 7919) % PARTITIONS as u64) as i32;
        let tp = TopicPartition {
            topic_id,
            partition,
        };
        let high = state.high_watermark(tp).unwrap();
        // A tailing consumer asks from just behind the end: one batch to return.
        let request = FindBatchesRequest {
            read_committed: false,
            partition: tp,
            offset: high - 1,
            max_partition_bytes: 1 << 20,
            max_batches: u32::MAX,
        };
        let started = Instant::now();
        let found = state.find_batches(std::slice::from_ref(&request), 50 << 20);
        histogram
            .record(started.elapsed().as_nanos() as u64)
            .unwrap();
        found_batches += found[0].batches.len();
    }
    assert_eq!(found_batches, 200_000);
    json!({
        "workload": {"batches_held": 1_000_000, "partitions": PARTITIONS,
                      "request": "one partition, offset = high watermark - 1", "samples": 200_000},
        "latency_ns": {"p50": histogram.value_at_quantile(0.5), "p99": histogram.value_at_quantile(0.99),
                        "p999": histogram.value_at_quantile(0.999), "max": histogram.max()},
        "target_p99_ns": 5_000,
    })
}

fn restart_time(batches: usize) -> serde_json::Value {
    let dir = std::env::temp_dir().join(format!("shoal-bench-restart-{}", Uuid::new_v4()));
    let d = dir.clone();
    let result = LocalExecutorBuilder::default()
        .io_memory(1 << 20)
        .spawn(move || async move {
            let (mut state, topic_id) = topic_state();
            let build = Instant::now();
            fill(&mut state, topic_id, batches / BATCHES_PER_FILE);
            let build_s = build.elapsed().as_secs_f64();
            std::fs::create_dir_all(&d).unwrap();
            shoal_metalog::format::write_format(&d).unwrap();
            // As the coordinator does: the new generation's log exists before its snapshot.
            shoal_metalog::log::MetadataLog::open_for_append(&d, 1, 0)
                .await
                .unwrap();
            let write = Instant::now();
            let image_bytes = snapshots::write_snapshot(&d, 1, &state).await.unwrap();
            let snapshot_write_s = write.elapsed().as_secs_f64();
            // A short log after the snapshot, as after a normal run.
            {
                let view = Arc::new(ArcSwap::from_pointee(TopicsView::default()));
                let mut core = CoordinatorCore::open(&d, view, u64::MAX).await.unwrap();
                let request = CommitFile {
                    object: NewObject::uploaded("wal/after-snapshot", 1 << 20, 0),
                    batches: file_batches(topic_id, 0),
                };
                core.run(request).await.unwrap();
            }
            let started = Instant::now();
            let view = Arc::new(ArcSwap::from_pointee(TopicsView::default()));
            let core = CoordinatorCore::open(&d, view, u64::MAX).await.unwrap();
            let restart_s = started.elapsed().as_secs_f64();
            assert_eq!(core.state().batch_count(), batches + BATCHES_PER_FILE);
            drop(state);
            json!({
                "workload": {"committed_batches": batches, "partitions": PARTITIONS,
                              "snapshot_bytes": image_bytes, "log_after_snapshot_batches": BATCHES_PER_FILE,
                              "note": "page cache warm (snapshot just written)"},
                "restart_seconds": (restart_s * 1000.0).round() / 1000.0,
                "state_build_seconds": (build_s * 1000.0).round() / 1000.0,
                "snapshot_write_seconds": (snapshot_write_s * 1000.0).round() / 1000.0,
                "target_seconds": 3,
            })
        })
        .unwrap()
        .join()
        .unwrap();
    std::fs::remove_dir_all(dir).unwrap();
    result
}

/// 1,000,000 batches committed through a core's log in rounds of 500 files, then FindBatches
/// as one-command rounds (what a fetch costs the coordinator shard, less the queue hop), then
/// a restart that replays the log.
async fn through_core(open: impl Fn() -> OpenCore) -> serde_json::Value {
    let mut core = open().await;
    let created = core
        .run(CreateTopic {
            name: "bench".into(),
            partitions: PARTITIONS,
            overrides: Default::default(),
        })
        .await
        .unwrap()
        .unwrap();
    let topic_id = created.id;
    let fill = Instant::now();
    for chunk in 0..20 {
        let round = (0..500)
            .map(|i| {
                let f = chunk * 500 + i;
                Envelope::new(CommitFile {
                    object: NewObject::uploaded(format!("wal/{f}"), 1 << 20, 0),
                    batches: file_batches(topic_id, f * 7),
                })
            })
            .collect();
        core.process(round).await.unwrap();
    }
    let fill_s = fill.elapsed().as_secs_f64();
    assert_eq!(core.state().batch_count(), 1_000_000);
    let mut histogram = Histogram::<u64>::new(3).unwrap();
    for i in 0..50_000u64 {
        let tp = TopicPartition {
            topic_id,
            partition: ((i * 7919) % PARTITIONS as u64) as i32,
        };
        let high = core.state().high_watermark(tp).unwrap();
        let request = FindBatches {
            partitions: vec![FindBatchesRequest {
                read_committed: false,
                partition: tp,
                offset: high - 1,
                max_partition_bytes: 1 << 20,
                max_batches: u32::MAX,
            }],
            max_bytes: 50 << 20,
        };
        let started = Instant::now();
        let found = core.run(request).await.unwrap();
        histogram
            .record(started.elapsed().as_nanos() as u64)
            .unwrap();
        assert_eq!(found[0].batches.len(), 1);
    }
    drop(core);
    let restart = Instant::now();
    let reopened = open().await;
    let restart_s = restart.elapsed().as_secs_f64();
    assert_eq!(reopened.state().batch_count(), 1_000_000);
    json!({
        "fill_seconds": (fill_s * 1000.0).round() / 1000.0,
        "find_batches_ns": {"p50": histogram.value_at_quantile(0.5), "p99": histogram.value_at_quantile(0.99),
                             "max": histogram.max()},
        "restart_from_log_seconds": (restart_s * 1000.0).round() / 1000.0,
    })
}

type OpenCore = std::pin::Pin<Box<dyn std::future::Future<Output = CoordinatorCore>>>;

fn find_batches_by_back_end() -> serde_json::Value {
    let dir = std::env::temp_dir().join(format!("shoal-bench-backends-{}", Uuid::new_v4()));
    let server = TestPostgres::start();
    let database = PgConfig::from_url(&server.url(), Some(PASSWORD.into())).unwrap();
    let d = dir.clone();
    let result = LocalExecutorBuilder::default()
        .io_memory(1 << 20)
        .spawn(move || async move {
            let view = || Arc::new(ArcSwap::from_pointee(TopicsView::default()));
            let local = through_core(|| {
                let d = d.clone();
                Box::pin(async move { CoordinatorCore::open(&d, view(), u64::MAX).await.unwrap() })
            })
            .await;
            let postgres = through_core(|| {
                let database = database.clone();
                Box::pin(async move {
                    CoordinatorCore::open_postgres(&database, "bench", WriterRole::Sole, view(), u64::MAX)
                        .await
                        .unwrap()
                })
            })
            .await;
            json!({
                "workload": {"batches": 1_000_000, "partitions": PARTITIONS, "files": 10_000,
                              "files_per_round": 500, "find_batches": "one partition at high watermark - 1, one round each, 50,000 samples",
                              "postgres": "PostgreSQL 15 on loopback, synchronous_commit on, one row per round"},
                "local": local,
                "postgres": postgres,
            })
        })
        .unwrap()
        .join()
        .unwrap();
    let _ = std::fs::remove_dir_all(dir);
    result
}

fn main() {
    let restart_batches = std::env::var("SHOAL_BENCH_RESTART_BATCHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let commit = commit_throughput();
    println!("commit_file: {commit}");
    let find = find_batches_latency();
    println!("find_batches: {find}");
    let restart = restart_time(restart_batches);
    println!("restart: {restart}");
    let back_ends = find_batches_by_back_end();
    println!("by back end: {back_ends}");
    let report = json!({
        "bench": "coordinator/benches/coordinator.rs",
        "machine": {"cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)},
        "commit_file_throughput": commit,
        "find_batches_tailing": find,
        "restart": restart,
        "find_batches_by_back_end": back_ends,
    });
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../perf-results");
    let date = std::process::Command::new("date").arg("+%Y-%m-%d").output();
    let date = date
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let path = out.join(format!("{date}-coordinator.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&report).unwrap()).unwrap();
    println!("wrote {}", path.display());
}
