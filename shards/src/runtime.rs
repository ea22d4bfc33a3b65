//! Builds the executors from config: one shard per listed CPU, plus the coordinator (on the
//! shard executor of its CPU, or its own), wired with bounded lock-free queues (a full mesh
//! between shards, a pair from each shard to the coordinator), and runs them until shutdown.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use futures::future::{select, Either};
use futures::FutureExt;
use glommio::{LocalExecutorBuilder, Placement};
use shoal_coordinator::{AnyReply, CoordinatorMetrics, Envelope, TopicsView};
use shoal_wal::ObjectStore;

use crate::coordinator_shard::CoordinatorShard;
use crate::lifecycle::{keep_sweeping, with_deadline, Latch, Tasks};
use crate::peer::{PeerEnvelope, PeerReply};
use crate::rpc::{self, ClientEnds, RpcClient, ServerEnds};
use crate::shard::ShardWiring;
use crate::{RuntimeConfig, Shard, ShardError};

/// What the engine runs on each shard once it is wired: its listener, which returns only if
/// it cannot serve.
pub type ServeFn =
    Arc<dyn Fn(Rc<Shard>) -> Pin<Box<dyn Future<Output = Result<(), ShardError>>>> + Send + Sync>;

/// How long a shard may take to commit what it buffered when the broker stops. Producers of
/// anything left were never answered, so nothing acknowledged is lost past it.
const DRAIN_MAX: Duration = Duration::from_secs(30);
/// How long an executor waits, as it ends, for file operations still on its blocking thread.
const BLOCKING_SETTLE_MAX: Duration = Duration::from_secs(5);

type PeerClientEnds = ClientEnds<PeerEnvelope, PeerReply>;
type PeerServerEnds = ServerEnds<PeerEnvelope, PeerReply>;

/// Runs the broker's executors until `shutdown` opens (a signal, or any executor that cannot
/// go on), then drains every shard's buffer, lets the coordinator answer the last commits,
/// and returns the first failure.
pub fn run(config: RuntimeConfig, serve: ServeFn, shutdown: Arc<Latch>) -> Result<(), ShardError> {
    let shard_count = config.shard_cores.len();
    if shard_count == 0 {
        return Err(ShardError::Config("no shard cores configured".into()));
    }
    let topics = Arc::new(ArcSwap::from_pointee(TopicsView::default()));
    let shards_drained = Arc::new(Latch::new(shard_count));
    let coordinator_metrics = Arc::new(CoordinatorMetrics::default());

    let mut coordinator_clients = Vec::new();
    let mut coordinator_servers = Vec::new();
    for _ in 0..shard_count {
        let (client, server) = rpc::channel_pair::<Envelope, AnyReply>(config.shards.queue_depth);
        coordinator_clients.push(client);
        coordinator_servers.push(server);
    }
    let (mut mesh_clients, mut mesh_servers) = peer_mesh(shard_count, config.shards.queue_depth);

    let coordinator_work = CoordinatorWork {
        shard: CoordinatorShard {
            dir: config.coordinator_dir(),
            view: topics.clone(),
            queue_depth: config.shards.queue_depth * shard_count,
            maintenance: config.maintenance.clone(),
            snapshot_log_bytes: config.snapshot_log_bytes,
            database: config.coordinator_database.clone(),
            holder: format!("node {} (pid {})", config.node_id, std::process::id()),
            shared_log: config.shared_coordinator_log,
            metrics: coordinator_metrics.clone(),
            duties: config.duties.clone(),
            startup_timeout: config.startup_timeout,
        },
        servers: coordinator_servers,
        store: config.store.clone(),
        drained: shards_drained.clone(),
        shutdown: shutdown.clone(),
    };
    let mut coordinator = start_coordinator(coordinator_work, &config)?;

    let mut shards = Vec::new();
    for (index, core) in config.shard_cores.iter().copied().enumerate().rev() {
        let wiring = ShardStart {
            index,
            config: config.clone(),
            topics: topics.clone(),
            ends: (
                coordinator_clients.pop().expect("one per shard"),
                mesh_clients.pop().expect("one row per shard"),
                mesh_servers.pop().expect("one row per shard"),
            ),
            serve: serve.clone(),
            shutdown: shutdown.clone(),
            drained: shards_drained.clone(),
            coordinator_metrics: coordinator_metrics.clone(),
            hosted: coordinator.hosted_by(index),
        };
        let handle = builder(&format!("shard-{index}"), core, &config)
            .spawn(move || wiring.run())
            .map_err(|e| ShardError::Executor(e.to_string()))?;
        shards.push(handle);
    }
    drop(coordinator_clients);
    join_all(shards, coordinator)
}

/// Where the coordinator runs.
enum CoordinatorPlace {
    /// On this shard's executor (its work taken when that shard starts).
    Hosted {
        shard: usize,
        work: Option<Box<CoordinatorWork>>,
    },
    /// On an executor of its own.
    Own(glommio::ExecutorJoinHandle<Result<(), ShardError>>),
}

impl CoordinatorPlace {
    /// The coordinator's work, for the shard that hosts it.
    fn hosted_by(&mut self, index: usize) -> Option<Box<CoordinatorWork>> {
        match self {
            CoordinatorPlace::Hosted { shard, work } if *shard == index => work.take(),
            _ => None,
        }
    }
}

/// Places the coordinator: on the shard executor of its CPU (to be spawned there), or on an
/// executor of its own, started here.
fn start_coordinator(
    coordinator_work: CoordinatorWork,
    config: &RuntimeConfig,
) -> Result<CoordinatorPlace, ShardError> {
    // On its core's shard executor the coordinator costs no thread of its own: a commit round
    // trip is then a task switch instead of two threads waking each other through eventfds
    // and the kernel's scheduler on the same CPU.
    let host_shard = match config.coordinator_own_executor {
        true => None,
        false => config
            .shard_cores
            .iter()
            .position(|core| *core == config.coordinator_core),
    };
    match host_shard {
        Some(shard) => {
            tracing::info!(shard, "the coordinator runs on the shard's executor");
            Ok(CoordinatorPlace::Hosted {
                shard,
                work: Some(Box::new(coordinator_work)),
            })
        }
        None => {
            tracing::info!(
                core = config.coordinator_core,
                "the coordinator runs on an executor of its own"
            );
            let handle = builder("coordinator", config.coordinator_core, config)
                .spawn(move || async move {
                    keep_sweeping();
                    let result = coordinator_work.run().await;
                    settle_blocking_thread().await;
                    result
                })
                .map_err(|e| ShardError::Executor(e.to_string()))?;
            Ok(CoordinatorPlace::Own(handle))
        }
    }
}

/// The coordinator's work, wherever it runs: its state machine over the object store, until
/// every shard has drained.
struct CoordinatorWork {
    shard: CoordinatorShard,
    servers: Vec<ServerEnds<Envelope, AnyReply>>,
    store: shoal_wal::store::StoreConfig,
    drained: Arc<Latch>,
    shutdown: Arc<Latch>,
}

impl CoordinatorWork {
    async fn run(self) -> Result<(), ShardError> {
        let store = ObjectStore::open(&self.store)?;
        // Shards answer nothing after draining, so no commit is in flight by then.
        let running = self.shard.run(self.servers, store, self.drained.wait());
        let result = stop_all_on_panic(running, &self.shutdown).await;
        if result.is_err() {
            // The shards cannot go on without it.
            self.shutdown.release();
        }
        result
    }
}

/// What one shard's executor starts with.
struct ShardStart {
    index: usize,
    config: RuntimeConfig,
    topics: Arc<ArcSwap<TopicsView>>,
    ends: ShardEnds,
    serve: ServeFn,
    shutdown: Arc<Latch>,
    drained: Arc<Latch>,
    coordinator_metrics: Arc<CoordinatorMetrics>,
    /// The coordinator, when it runs on this shard's executor.
    hosted: Option<Box<CoordinatorWork>>,
}

/// What a shard's executor ends with: its own result, and the hosted coordinator's.
type ShardOutcome = (Result<(), ShardError>, Option<Result<(), ShardError>>);

impl ShardStart {
    async fn run(self) -> ShardOutcome {
        keep_sweeping();
        let coordinator = self.hosted.map(|work| glommio::spawn_local(work.run()));
        let running = run_shard(
            self.index,
            self.config,
            self.topics,
            self.ends,
            self.serve,
            &self.shutdown,
            self.coordinator_metrics,
        );
        let result = stop_all_on_panic(running, &self.shutdown).await;
        if result.is_err() {
            self.shutdown.release();
        }
        // Counted also on failure, so the coordinator never waits for a shard that is gone.
        self.drained.count_down();
        // A hosted coordinator answers the other shards' last commits before this executor
        // may end.
        let hosted_result = match coordinator {
            Some(coordinator) => Some(coordinator.await),
            None => None,
        };
        settle_blocking_thread().await;
        (result, hosted_result)
    }
}

/// Waits for every executor; a failed coordinator is the cause of the shards' closed queues,
/// so it is reported first, then the first shard's failure.
fn join_all(
    shards: Vec<glommio::ExecutorJoinHandle<ShardOutcome>>,
    coordinator: CoordinatorPlace,
) -> Result<(), ShardError> {
    let mut first_error = None;
    let mut coordinator_result = None;
    for handle in shards {
        match handle.join() {
            Ok((shard_result, hosted_result)) => {
                if let Err(e) = shard_result {
                    first_error = first_error.or(Some(e));
                }
                coordinator_result = coordinator_result.or(hosted_result);
            }
            Err(e) => first_error = first_error.or(Some(ShardError::Executor(e.to_string()))),
        }
    }
    if let CoordinatorPlace::Own(handle) = coordinator {
        coordinator_result = Some(
            handle
                .join()
                .unwrap_or_else(|e| Err(ShardError::Executor(e.to_string()))),
        );
    }
    match coordinator_result {
        Some(Err(e)) => Err(e),
        _ => first_error.map_or(Ok(()), Err),
    }
}

/// Waits for the executor's blocking thread (directory scans, renames: file operations
/// io_uring has no form of) to finish what background work left on it. That thread panics if
/// it finishes an operation after its executor is gone; it takes operations in order, so an
/// empty one queued now returns once every earlier one has.
async fn settle_blocking_thread() {
    let settled = glommio::executor().spawn_blocking(|| ());
    if with_deadline(BLOCKING_SETTLE_MAX, settled).await.is_none() {
        tracing::warn!("a file operation was still running as the broker stopped");
    }
}

/// Runs an executor's work; if it panics, the whole broker stops (rather than the others
/// waiting forever for it) and the executor fails with the panic's message.
async fn stop_all_on_panic(
    work: impl Future<Output = Result<(), ShardError>>,
    shutdown: &Latch,
) -> Result<(), ShardError> {
    match AssertUnwindSafe(work).catch_unwind().await {
        Ok(result) => result,
        Err(panic) => {
            shutdown.release();
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic".to_string());
            Err(ShardError::Executor(format!("panicked: {message}")))
        }
    }
}

type ShardEnds = (
    ClientEnds<Envelope, AnyReply>,
    Vec<Option<PeerClientEnds>>,
    Vec<Option<PeerServerEnds>>,
);

/// One shard's life: connect its queues, serve once the coordinator has recovered, and on
/// shutdown stop accepting, stop background work and commit what it buffered.
async fn run_shard(
    index: usize,
    config: RuntimeConfig,
    topics: Arc<ArcSwap<TopicsView>>,
    (coordinator_ends, peer_clients, peer_servers): ShardEnds,
    serve: ServeFn,
    shutdown: &Latch,
    coordinator_metrics: Arc<CoordinatorMetrics>,
) -> Result<(), ShardError> {
    let config = Rc::new(config);
    let store = Rc::new(ObjectStore::open(&config.store)?);
    let tasks = Tasks::new();
    // Serve clients only once every executor is wired and the coordinator has recovered its
    // state: within the start-up's time for that recovery and as much again (a broker half
    // up, some shards serving and others not, is worse than one that stops saying why), and
    // not past a signal to stop.
    let patience = config.startup_timeout * 2;
    let started = start_shard(
        index,
        config,
        topics,
        store,
        coordinator_metrics,
        tasks.clone(),
        (coordinator_ends, peer_clients, peer_servers),
    );
    let started = with_deadline(patience, started);
    let shard = match select(Box::pin(shutdown.wait()), Box::pin(started)).await {
        // Stopped while starting: no client was served here, and what other shards handed
        // over meanwhile was never acknowledged (answers wait for commits).
        Either::Left(_) => return Ok(()),
        Either::Right((Some(started), _)) => started?,
        Either::Right((None, _)) => {
            return Err(ShardError::Startup(format!(
                "shard {index}: the executors were not wired and the coordinator did not \
                 answer within {} ms of the start (twice startup_timeout_ms)",
                patience.as_millis()
            )))
        }
    };
    let serving = tasks.spawn_request(serve(shard.clone()));
    crate::rewrite::start(&shard);
    if index == 0 {
        let interval = shard.config.maintenance.retention_check_interval;
        tasks.spawn_background(
            "offset expiry",
            crate::groups::expire_offsets_loop(shard.clone(), interval),
        );
    }
    let outcome = match select(Box::pin(shutdown.wait()), serving).await {
        Either::Left(((), serving)) => {
            serving.cancel();
            Ok(())
        }
        // The listener gave up (it could not bind): the whole broker stops.
        Either::Right((served, _)) => served.unwrap_or(Ok(())),
    };
    tasks.stop_background();
    if with_deadline(DRAIN_MAX, shard.flush()).await.is_none() {
        tracing::error!(
            shard = index,
            seconds = DRAIN_MAX.as_secs(),
            "could not commit everything buffered in time; those producers were not answered and retry (idempotent ones without duplicates)"
        );
    } else {
        tracing::info!(shard = index, "shard drained");
    }
    outcome
}

/// Connects the shard's queues (every channel end waits for its peer, so all are connected
/// at once), makes the shard, serves its peers, and waits for the coordinator to answer, which
/// it does once it has recovered its state.
async fn start_shard(
    index: usize,
    config: Rc<RuntimeConfig>,
    topics: Arc<ArcSwap<TopicsView>>,
    store: Rc<ObjectStore>,
    coordinator_metrics: Arc<CoordinatorMetrics>,
    tasks: Rc<Tasks>,
    (coordinator_ends, peer_clients, peer_servers): ShardEnds,
) -> Result<Rc<Shard>, ShardError> {
    let clients = futures::future::join_all(peer_clients.into_iter().map(|ends| async {
        match ends {
            Some(ends) => Some(RpcClient::connect("peer shard", ends).await),
            None => None,
        }
    }));
    let servers = futures::future::join_all(
        peer_servers
            .into_iter()
            .flatten()
            .map(|ends| ends.connect()),
    );
    let (coordinator, peers, servers) = futures::join!(
        RpcClient::connect("coordinator", coordinator_ends),
        clients,
        servers
    );
    let wiring = ShardWiring {
        topics,
        coordinator,
        peers,
        store,
        coordinator_metrics,
        tasks: tasks.clone(),
    };
    let shard = Rc::new(Shard::new(index, config, wiring));
    for server in servers {
        let shard = shard.clone();
        tasks.spawn_request(rpc::serve(server, move |request| {
            request.serve(shard.clone())
        }));
    }
    shard.wait_for_coordinator().await?;
    Ok(shard)
}

fn builder(name: &str, core: usize, config: &RuntimeConfig) -> LocalExecutorBuilder {
    LocalExecutorBuilder::new(Placement::Fixed(core))
        .name(name)
        .io_memory(config.shards.io_memory_bytes)
        .spin_before_park(config.shards.spin_before_park())
}

/// `clients[i][j]` lets shard i call shard j; `servers[j][i]` is where j serves i.
#[allow(clippy::type_complexity)]
fn peer_mesh(
    shard_count: usize,
    depth: usize,
) -> (
    Vec<Vec<Option<PeerClientEnds>>>,
    Vec<Vec<Option<PeerServerEnds>>>,
) {
    let mut clients: Vec<Vec<Option<PeerClientEnds>>> = (0..shard_count)
        .map(|_| (0..shard_count).map(|_| None).collect())
        .collect();
    let mut servers: Vec<Vec<Option<PeerServerEnds>>> = (0..shard_count)
        .map(|_| (0..shard_count).map(|_| None).collect())
        .collect();
    for (i, row) in clients.iter_mut().enumerate() {
        for (j, slot) in row.iter_mut().enumerate() {
            if i != j {
                let (client, server) = rpc::channel_pair(depth);
                *slot = Some(client);
                servers[j][i] = Some(server);
            }
        }
    }
    (clients, servers)
}
