//! Background work of the coordinator executor: retention in bounded steps, deleting objects
//! that lost their last live batch (after a grace period), and collecting orphans, objects
//! that were stored but never committed (a crash between upload and commit). In a cluster
//! only the broker holding the duties does them.

use std::rc::Rc;
use std::time::{Duration, SystemTime};

use shoal_coordinator::commands::{
    DescribeFiles, EnforceRetention, ExpiredFiles, FilesDeleted, RemoveExpiredDelegationTokens,
};
use shoal_wal::ObjectStore;

use crate::lifecycle::Tasks;
use crate::local_coordinator::LocalCoordinator;
use shoal_coordinator::Command;
use shoal_metalog::Duties;

/// The key prefix every WAL object is stored under.
pub const WAL_PREFIX: &str = "wal";
/// Objects handled per coordinator request, so no round grows without bound.
const FILES_PER_STEP: usize = 1000;
/// Expired delegation tokens removed per coordinator request.
const TOKENS_PER_STEP: usize = 1000;

#[derive(Debug, Clone)]
pub struct MaintenanceConfig {
    pub retention_check_interval: Duration,
    /// Batches one retention step may drop (and producers it may expire).
    pub retention_step_batches: usize,
    /// Producers idle this long are forgotten, bounding the producer state.
    pub producer_id_expiration: Duration,
    pub file_cleaner_interval: Duration,
    /// How long an unreferenced object stays readable for fetches already under way.
    pub file_cleaner_grace: Duration,
    pub orphan_scan_interval: Duration,
    /// Objects younger than this are never treated as orphans: their commit may be in flight.
    pub orphan_grace: Duration,
    /// How often expired delegation tokens are removed.
    pub delegation_token_check_interval: Duration,
}

/// Starts the tasks as background work of the coordinator executor.
pub fn start(
    tasks: &Rc<Tasks>,
    coordinator: LocalCoordinator,
    store: Rc<ObjectStore>,
    config: MaintenanceConfig,
    duties: Duties,
) {
    tasks.spawn_background(
        "retention",
        enforce_retention(coordinator.clone(), config.clone(), duties.clone()),
    );
    tasks.spawn_background(
        "file cleaner",
        clean_files(
            coordinator.clone(),
            store.clone(),
            config.clone(),
            duties.clone(),
        ),
    );
    tasks.spawn_background(
        "delegation token expiry",
        remove_expired_tokens(coordinator.clone(), config.clone(), duties.clone()),
    );
    tasks.spawn_background(
        "orphan scan",
        collect_orphans(coordinator, store, config, duties),
    );
}

pub use shoal_metalog::now_ms;

/// Every `interval` while this broker holds the duties: runs `step` until a round does
/// nothing (each its own bounded round), logging what each did.
async fn step_until_done<C: Command<Reply = usize>>(
    coordinator: LocalCoordinator,
    interval: Duration,
    duties: Duties,
    step: impl Fn() -> C,
    did: &'static str,
) {
    loop {
        glommio::timer::sleep(interval).await;
        if !duties.held() {
            continue;
        }
        loop {
            match coordinator.run(step()).await {
                Some(0) => break,
                Some(count) => tracing::info!(count, "{did}"),
                None => return,
            }
        }
    }
}

async fn enforce_retention(
    coordinator: LocalCoordinator,
    config: MaintenanceConfig,
    duties: Duties,
) {
    let step = || EnforceRetention {
        max_batches: config.retention_step_batches,
        producer_expiration_ms: config.producer_id_expiration.as_millis() as i64,
    };
    let did = "retention moved log start offsets";
    step_until_done(
        coordinator,
        config.retention_check_interval,
        duties,
        step,
        did,
    )
    .await
}

/// Kafka's controller sweep: tokens past their expiry are removed, so they are neither
/// described nor renewed any more.
async fn remove_expired_tokens(
    coordinator: LocalCoordinator,
    config: MaintenanceConfig,
    duties: Duties,
) {
    let step = || RemoveExpiredDelegationTokens {
        max: TOKENS_PER_STEP,
    };
    let interval = config.delegation_token_check_interval;
    let did = "removed expired delegation tokens";
    step_until_done(coordinator, interval, duties, step, did).await
}

async fn clean_files(
    coordinator: LocalCoordinator,
    store: Rc<ObjectStore>,
    config: MaintenanceConfig,
    duties: Duties,
) {
    loop {
        glommio::timer::sleep(config.file_cleaner_interval).await;
        if !duties.held() {
            continue;
        }
        let older_than_ms = now_ms() - config.file_cleaner_grace.as_millis() as i64;
        loop {
            let request = ExpiredFiles {
                older_than_ms,
                max: FILES_PER_STEP,
            };
            let keys = match coordinator.run(request).await {
                Some(keys) if !keys.is_empty() => keys,
                Some(_) => break,
                None => return,
            };
            let deleted = delete_all(&store, keys).await;
            if deleted.is_empty() {
                break; // the store refuses; try again next interval
            }
            tracing::info!(objects = deleted.len(), "deleted unreferenced WAL objects");
            let done = FilesDeleted {
                object_keys: deleted,
            };
            if coordinator.run(done).await.is_none() {
                return;
            }
        }
    }
}

async fn collect_orphans(
    coordinator: LocalCoordinator,
    store: Rc<ObjectStore>,
    config: MaintenanceConfig,
    duties: Duties,
) {
    loop {
        glommio::timer::sleep(config.orphan_scan_interval).await;
        if !duties.held() {
            continue;
        }
        let cutoff = SystemTime::now() - config.orphan_grace;
        let listed = match store.list(WAL_PREFIX).await {
            Ok(listed) => listed,
            Err(e) => {
                tracing::warn!(error = %e, "orphan scan could not list the store; orphans stay until a later scan (does the store allow List?)");
                continue;
            }
        };
        let old: Vec<String> = listed
            .into_iter()
            .filter(|o| o.modified < cutoff)
            .map(|o| o.key)
            .collect();
        for chunk in old.chunks(FILES_PER_STEP) {
            let request = DescribeFiles {
                object_keys: chunk.to_vec(),
            };
            let Some(live) = coordinator.run(request).await else {
                return;
            };
            let orphans: Vec<String> = chunk
                .iter()
                .zip(live)
                .filter(|(_, live)| !live)
                .map(|(key, _)| key.clone())
                .collect();
            if !orphans.is_empty() {
                let deleted = delete_all(&store, orphans).await;
                tracing::info!(
                    objects = deleted.len(),
                    "deleted objects without live batches"
                );
            }
        }
    }
}

/// Deletes what it can; returns the keys that are gone.
async fn delete_all(store: &ObjectStore, keys: Vec<String>) -> Vec<String> {
    match store.delete_many(&keys).await {
        Ok(deleted) => deleted,
        Err(e) => {
            tracing::warn!(objects = keys.len(), error = %e, "could not delete objects; tried again at the next collection (does the store allow Delete?)");
            Vec::new()
        }
    }
}
