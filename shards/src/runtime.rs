//! Builds the executors from config: one shard per listed CPU, plus the coordinator, wired
//! with bounded lock-free queues (a full mesh between shards, a pair from each shard to the
//! coordinator), and runs them until shutdown.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use glommio::{LocalExecutorBuilder, Placement};
use shoal_coordinator::{AnyReply, Envelope, TopicsView};
use shoal_wal::ObjectStore;

use crate::coordinator_shard::CoordinatorShard;
use crate::rpc::{self, ClientEnds, RpcClient, ServerEnds};
use crate::{BrokerMetrics, PeerRequest, PeerResponse, RuntimeConfig, Shard, ShardError};

/// What the engine runs on each shard once it is wired: its listener.
pub type ServeFn = Arc<dyn Fn(Rc<Shard>) -> Pin<Box<dyn Future<Output = ()>>> + Send + Sync>;

const SHUTDOWN_POLL: Duration = Duration::from_millis(20);

type PeerClientEnds = ClientEnds<PeerRequest, PeerResponse>;
type PeerServerEnds = ServerEnds<PeerRequest, PeerResponse>;

/// Runs the broker's executors until `shutdown` is set, then drains every shard's buffer,
/// lets the coordinator answer the last commits, and returns.
pub fn run(
    config: RuntimeConfig,
    serve: ServeFn,
    shutdown: Arc<AtomicBool>,
    metrics: Arc<BrokerMetrics>,
) -> Result<(), ShardError> {
    let shard_count = config.shard_cores.len();
    if shard_count == 0 {
        return Err(ShardError::Config("no shard cores configured".into()));
    }
    let topics = Arc::new(ArcSwap::from_pointee(TopicsView::default()));
    let shards_drained = Arc::new(AtomicUsize::new(0));

    let mut coordinator_clients = Vec::new();
    let mut coordinator_servers = Vec::new();
    for _ in 0..shard_count {
        let (client, server) = rpc::channel_pair::<Envelope, AnyReply>(config.queue_depth);
        coordinator_clients.push(client);
        coordinator_servers.push(server);
    }
    let (mut mesh_clients, mut mesh_servers) = peer_mesh(shard_count, config.queue_depth);

    let coordinator = {
        let shard = CoordinatorShard {
            dir: config.coordinator_dir(),
            view: topics.clone(),
            queue_depth: config.queue_depth * shard_count,
            maintenance: config.maintenance.clone(),
            snapshot_log_bytes: config.snapshot_log_bytes,
            metrics: metrics.coordinator.clone(),
        };
        let store_config = config.store.clone();
        let drained = shards_drained.clone();
        builder("coordinator", config.coordinator_core, &config)
            .spawn(move || async move {
                let store = ObjectStore::open(&store_config)?;
                // Shards answer nothing after draining, so no commit is in flight by then.
                let all_drained = async move {
                    while drained.load(Ordering::Acquire) < shard_count {
                        glommio::timer::sleep(SHUTDOWN_POLL).await;
                    }
                };
                shard.run(coordinator_servers, store, all_drained).await
            })
            .map_err(|e| ShardError::Executor(e.to_string()))?
    };

    let mut shards = Vec::new();
    for (index, core) in config.shard_cores.iter().copied().enumerate().rev() {
        let coordinator_ends = coordinator_clients.pop().expect("one per shard");
        let peer_clients = mesh_clients.pop().expect("one row per shard");
        let peer_servers = mesh_servers.pop().expect("one row per shard");
        let config = Rc::new(config.clone());
        let config_send = (*config).clone();
        drop(config);
        let topics = topics.clone();
        let serve = serve.clone();
        let shutdown = shutdown.clone();
        let drained = shards_drained.clone();
        let metrics = metrics.clone();
        let handle = builder(&format!("shard-{index}"), core, &config_send)
            .spawn(move || async move {
                let config = Rc::new(config_send);
                let store = Rc::new(ObjectStore::open(&config.store)?);
                // Every channel end waits for its peer, so all are connected at once.
                let clients =
                    futures::future::join_all(peer_clients.into_iter().map(|ends| async {
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
                let shard = Rc::new(Shard::new(
                    index,
                    config,
                    topics,
                    coordinator,
                    peers,
                    store,
                    metrics,
                ));
                for server in servers {
                    let shard = shard.clone();
                    glommio::spawn_local(rpc::serve(server, move |request| {
                        shard.clone().handle_peer(request)
                    }))
                    .detach();
                }
                // Serve clients only once the coordinator has recovered its state.
                shard.wait_for_coordinator().await?;
                let serving = glommio::spawn_local(serve(shard.clone()));
                if index == 0 {
                    let interval = shard.config.maintenance.retention_check_interval;
                    glommio::spawn_local(crate::groups::expire_offsets_loop(
                        shard.clone(),
                        interval,
                    ))
                    .detach();
                }
                while !shutdown.load(Ordering::Relaxed) {
                    glommio::timer::sleep(SHUTDOWN_POLL).await;
                }
                drop(serving);
                shard.flush().await;
                tracing::info!(shard = index, "shard drained");
                drained.fetch_add(1, Ordering::Release);
                Ok::<(), ShardError>(())
            })
            .map_err(|e| ShardError::Executor(e.to_string()))?;
        shards.push(handle);
    }
    drop(coordinator_clients);
    let mut first_error = None;
    for handle in shards {
        match handle.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => first_error = first_error.or(Some(e)),
            Err(e) => first_error = first_error.or(Some(ShardError::Executor(e.to_string()))),
        }
    }
    // A failed coordinator is the cause of the shards' closed queues: report it first.
    match coordinator.join() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => first_error = Some(e),
        Err(e) => first_error = Some(ShardError::Executor(e.to_string())),
    }
    first_error.map_or(Ok(()), Err)
}

fn builder(name: &str, core: usize, config: &RuntimeConfig) -> LocalExecutorBuilder {
    LocalExecutorBuilder::new(Placement::Fixed(core))
        .name(name)
        .io_memory(config.io_memory_bytes)
        .spin_before_park(config.spin_before_park)
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
