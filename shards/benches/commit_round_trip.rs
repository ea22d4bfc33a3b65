//! Commit round trip from a shard to the coordinator shard over the lock-free queue
//! (`cargo bench -p shoal-shards`): a client executor sends CommitFile requests of 10 batches
//! each to a coordinator executor and measures the time to the answer.
//! - on tmpfs (/dev/shm), where fdatasync costs nothing: the queue and the state machine;
//! - on the data disk: including the group-committed fdatasync, with commits per sync;
//! - with the log in PostgreSQL (`[coordinator] kind = "postgres"`), one row per round.
//!
//! Each case runs closed-loop with 1 and with 64 concurrent committers, with executors that
//! park at once when idle and with executors that spin 100 us first (glommio's
//! spin_before_park, `[shards] spin_before_park_us` in the broker). Results are printed
//! and written to perf-results/<date>-commit-round-trip.json with the workload
//! (`-- postgres`: the PostgreSQL cases alone, to <date>-commit-round-trip-postgres.json).

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use glommio::{LocalExecutorBuilder, Placement};
use hdrhistogram::Histogram;
use serde_json::json;
use shoal_coordinator::commands::{CommitFile, CreateTopic, ListOffsets};
use shoal_coordinator::*;
use shoal_pg::testing::{TestPostgres, PASSWORD};
use shoal_pg::PgConfig;
use shoal_shards::coordinator_shard::CoordinatorShard;
use shoal_shards::rpc::{self, RpcClient};
use shoal_shards::MaintenanceConfig;
use shoal_wal::{LocalStore, ObjectStore};

mod perf_results;

const PHASE: Duration = Duration::from_secs(3);
const BATCHES_PER_COMMIT: usize = 10;

fn maintenance_off() -> MaintenanceConfig {
    let never = Duration::from_secs(3600);
    MaintenanceConfig {
        retention_check_interval: never,
        retention_step_batches: 1,
        producer_id_expiration: never,
        file_cleaner_interval: never,
        file_cleaner_grace: never,
        orphan_scan_interval: never,
        orphan_grace: never,
        delegation_token_check_interval: never,
    }
}

fn run_case(
    base: &Path,
    concurrency: usize,
    spin: Duration,
    reads_only: bool,
    database: Option<(PgConfig, bool)>,
) -> serde_json::Value {
    let dir: PathBuf = base.join(format!("case-{}", uuid::Uuid::new_v4()));
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let (client_end, server_end) = rpc::channel_pair::<Envelope, AnyReply>(1024);
    let metrics = Arc::new(CoordinatorMetrics::default());
    let done = Arc::new(AtomicBool::new(false));
    let coordinator = {
        let shard = CoordinatorShard {
            dir: dir.join("coordinator"),
            view: Arc::new(ArcSwap::from_pointee(TopicsView::default())),
            queue_depth: 4096,
            maintenance: maintenance_off(),
            snapshot_log_bytes: u64::MAX,
            metrics: metrics.clone(),
            shared_log: database.as_ref().is_some_and(|(_, shared)| *shared),
            database: database.map(|(config, _)| config),
            holder: "bench".into(),
            duties: shoal_metalog::Duties::unheld(),
            startup_timeout: std::time::Duration::from_secs(60),
        };
        let objects = dir.join("objects");
        let done = done.clone();
        LocalExecutorBuilder::new(Placement::Fixed(0))
            .io_memory(1 << 20)
            .spin_before_park(spin)
            .spawn(move || async move {
                let store = ObjectStore::Local(Box::new(
                    LocalStore::new(objects, shoal_wal::LocalLayout::Files).unwrap(),
                ));
                let finished = async move {
                    while !done.load(Ordering::Acquire) {
                        glommio::timer::sleep(Duration::from_millis(5)).await;
                    }
                };
                shard.run(vec![server_end], store, finished).await.unwrap();
            })
            .unwrap()
    };
    let client = LocalExecutorBuilder::new(Placement::Fixed(1 % cores))
        .io_memory(1 << 20)
        .spin_before_park(spin)
        .spawn(move || async move {
            let client = RpcClient::connect("coordinator", client_end).await;
            let create = CreateTopic {
                name: "bench".into(),
                partitions: 100,
                overrides: Default::default(),
            };
            let topic_id = client.run(create).await.unwrap().unwrap().id;
            let histogram = Rc::new(RefCell::new(Histogram::<u64>::new(3).unwrap()));
            let deadline = Instant::now() + PHASE;
            let tasks: Vec<_> = (0..concurrency)
                .map(|worker| {
                    let client = client.clone();
                    let histogram = histogram.clone();
                    glommio::spawn_local(async move {
                        let mut n = 0usize;
                        while Instant::now() < deadline {
                            let batches: Vec<CommitBatch> = (0..BATCHES_PER_COMMIT)
                                .map(|i| CommitBatch {
                                    partition: TopicPartition {
                                        topic_id,
                                        partition: ((worker + i + n) % 100) as i32,
                                    },
                                    byte_offset: (i * 1024) as u32,
                                    size_bytes: 1024,
                                    offset_count: 10,
                                    max_timestamp: 0,
                                    producer_id: -1,
                                    producer_epoch: -1,
                                    base_sequence: -1,
                                    kind: shoal_coordinator::BatchKind::Plain,
                                    kept_base_offset: None,
                                    joins_transaction: false,
                                })
                                .collect();
                            let request = if reads_only {
                                // The same hop without a log write: the queue's own cost.
                                Envelope::new(ListOffsets {
                                    read_committed: false,
                                    partitions: vec![(batches[0].partition, -1)],
                                })
                            } else {
                                Envelope::new(CommitFile {
                                    object: NewObject::uploaded(
                                        format!("wal/{worker}-{n}"),
                                        1 << 20,
                                        0,
                                    ),
                                    batches,
                                })
                            };
                            let started = Instant::now();
                            client.call(request).await.unwrap();
                            let micros = started.elapsed().as_nanos() as u64;
                            histogram.borrow_mut().record(micros).unwrap();
                            n += 1;
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await;
            }
            let h = histogram.borrow();
            (
                h.len(),
                h.value_at_quantile(0.5),
                h.value_at_quantile(0.99),
                h.max(),
            )
        })
        .unwrap();
    let (commits, p50, p99, max) = client.join().unwrap();
    done.store(true, Ordering::Release);
    coordinator.join().unwrap();
    let syncs = CoordinatorMetrics::get(&metrics.log_syncs);
    let _ = std::fs::remove_dir_all(&dir);
    json!({
        "request": if reads_only { "ListOffsets (no log write)" } else { "CommitFile" },
        "spin_before_park_us": spin.as_micros() as u64,
        "concurrency": concurrency,
        "commits": commits,
        "commits_per_s": (commits as f64 / PHASE.as_secs_f64()).round(),
        "latency_us": {"p50": p50 as f64 / 1000.0, "p99": p99 as f64 / 1000.0, "max": max as f64 / 1000.0},
        "log_syncs": syncs,
        "commits_per_sync": if syncs > 0 { ((commits as f64 / syncs as f64) * 10.0).round() / 10.0 } else { 0.0 },
    })
}

/// The floor under any queue that wakes a parked receiver: two plain threads on CPUs 0 and 1
/// hand a counter back and forth, each parking (a futex wait) until the other unparks it. One
/// round is two wake-ups, like a request and its answer over the queue.
fn wake_up_floor() -> serde_json::Value {
    use std::sync::atomic::AtomicU64;
    let rounds_done = Arc::new(AtomicU64::new(0));
    let asked = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    let pin = move |i: usize| {
        if let Some(core) = cores.get(i % cores.len().max(1)) {
            core_affinity::set_for_current(*core);
        }
    };
    let caller = std::thread::current();
    let answerer = {
        let (rounds_done, asked, stop, pin) = (
            rounds_done.clone(),
            asked.clone(),
            stop.clone(),
            pin.clone(),
        );
        std::thread::spawn(move || {
            pin(0);
            let mut seen = 0;
            while !stop.load(Ordering::Acquire) {
                let now = asked.load(Ordering::Acquire);
                if now == seen {
                    std::thread::park_timeout(Duration::from_millis(10));
                    continue;
                }
                seen = now;
                rounds_done.store(now, Ordering::Release);
                caller.unpark();
            }
        })
    };
    pin(1);
    let mut histogram = Histogram::<u64>::new(3).unwrap();
    let started = Instant::now();
    let mut round = 0;
    while started.elapsed() < PHASE {
        round += 1;
        let sent = Instant::now();
        asked.store(round, Ordering::Release);
        answerer.thread().unpark();
        while rounds_done.load(Ordering::Acquire) != round {
            std::thread::park();
        }
        histogram.record(sent.elapsed().as_nanos() as u64).unwrap();
    }
    stop.store(true, Ordering::Release);
    answerer.thread().unpark();
    answerer.join().unwrap();
    json!({
        "request": "none: two threads, park/unpark ping-pong",
        "rounds": histogram.len(),
        "latency_us": {"p50": histogram.value_at_quantile(0.5) as f64 / 1000.0,
                       "p99": histogram.value_at_quantile(0.99) as f64 / 1000.0,
                       "max": histogram.max() as f64 / 1000.0},
    })
}

fn main() {
    let tmpfs = Path::new("/dev/shm");
    let disk = std::env::temp_dir();
    let mut cases = Vec::new();
    // `cargo bench --bench commit_round_trip -- postgres` runs the PostgreSQL cases alone,
    // `-- hop` the queue hop and the wake-up floor alone.
    let part = std::env::args().find(|a| a == "postgres" || a == "hop");
    let runs = |name: &str| part.as_deref().is_none_or(|only| only == name);
    for (label, base) in [
        ("tmpfs (fdatasync is free)", tmpfs),
        ("data disk (with fdatasync)", disk.as_path()),
    ] {
        for (concurrency, spin_us) in [(1, 0), (1, 100), (64, 0), (64, 100)] {
            if !runs("storage") {
                break;
            }
            let spin = Duration::from_micros(spin_us);
            let result = run_case(base, concurrency, spin, false, None);
            println!("{label}, {concurrency} committers, spin {spin_us} us: {result}");
            cases.push(json!({"storage": label, "result": result}));
        }
    }
    if runs("hop") {
        for spin_us in [0, 100] {
            let result = run_case(tmpfs, 1, Duration::from_micros(spin_us), true, None);
            println!("queue hop only, spin {spin_us} us: {result}");
            cases.push(json!({"storage": "none (read request)", "result": result}));
        }
        let result = wake_up_floor();
        println!("wake-up floor (no queue, no executor): {result}");
        cases.push(json!({"storage": "none (thread wake-up floor)", "result": result}));
    }
    // The same rounds with the log in PostgreSQL (a fresh server per case, on the data disk,
    // synchronous_commit on, SCRAM login over loopback), with one round in flight at a time
    // and with more (`[coordinator] pool_size`, one connection each).
    let label = "PostgreSQL (loopback, one row per round)";
    // Shared: the log as a cluster's brokers write it (each round locks it and reads what
    // others wrote first), here with one broker: the rounds one database takes per second.
    for (concurrency, pool_size, shared) in [
        (1, 1, false),
        (1, 2, false),
        (64, 1, false),
        (64, 2, false),
        (64, 4, false),
        (1, 1, true),
        (64, 1, true),
    ] {
        if !runs("postgres") {
            break;
        }
        let server = TestPostgres::start();
        let mut database = PgConfig::from_url(&server.url(), Some(PASSWORD.into())).unwrap();
        database.pool_size = pool_size;
        let database = Some((database, shared));
        let result = run_case(&disk, concurrency, Duration::ZERO, false, database);
        let writer = if shared { "shared" } else { "sole" };
        println!("{label}, {concurrency} committers, pool_size {pool_size}, {writer}: {result}");
        cases.push(
            json!({"storage": label, "pool_size": pool_size, "writer": writer,
                          "result": result}),
        );
    }
    let report = json!({
        "bench": "shards/benches/commit_round_trip.rs",
        "workload": {"batches_per_commit": BATCHES_PER_COMMIT, "partitions": 100,
                      "phase_seconds": PHASE.as_secs(), "closed_loop": true,
                      "placement": "coordinator executor on CPU 0, committing executor on CPU 1"},
        "machine": {"cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)},
        "target": "p99 <= 20 us excluding fsync",
        "cases": cases,
    });
    let name = match part.as_deref() {
        Some(only) => format!("commit-round-trip-{only}"),
        None => "commit-round-trip".to_string(),
    };
    perf_results::write(&name, &report);
}
