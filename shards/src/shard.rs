//! One shard: the context every connection on this executor works through. It routes each
//! partition to its owner, serves the partitions it owns, and answers its peers.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use futures::future::{select_all, LocalBoxFuture};
use futures::FutureExt;
use shoal_coordinator::commands::ListOffsets;
use shoal_coordinator::{CoordinatorMetrics, ErrorKind, TopicPartition, TopicsView};
use shoal_wal::ObjectStore;

use crate::fetch::{find_batches, goes_on, read_ahead_of, read_partitions, LocalData};
use crate::groups::{owner_of_group, GroupCall, GroupError, Groups};
use crate::lifecycle::Tasks;
use crate::metrics::{MetricsSnapshot, ShardMetrics};
use crate::mirror::progress::{MirrorLag, MirrorProgress, SourceOffsets};
use crate::peer::{
    FetchOwned, MirrorSourcesOwned, OnGroups, PeerClient, ProduceHere, Scrape, WaitForData,
};
use crate::produce::{CommitFanout, ProducePipeline};
use crate::routing::owner_shard;
use crate::rpc::CoordinatorClient;
use crate::{
    PartitionFetch, PartitionFetchResult, PartitionProduce, PartitionProduceResult, RuntimeConfig,
    ShardError,
};

/// The shard whose buffer takes every write of the broker on a store that bills requests.
const UPLOADER_SHARD: usize = 0;

/// How often a long poll in a cluster looks whether other brokers' rows have arrived.
const REMOTE_COMMIT_CHECK: Duration = Duration::from_millis(10);

pub struct Shard {
    pub index: usize,
    pub config: Rc<RuntimeConfig>,
    pub topics: Arc<ArcSwap<TopicsView>>,
    /// The queue to the coordinator executor.
    pub coordinator: Rc<CoordinatorClient>,
    /// Indexed by shard; `None` at this shard's own index.
    peers: Vec<Option<Rc<PeerClient>>>,
    pipeline: Rc<ProducePipeline>,
    pub(crate) local_data: Rc<LocalData>,
    pub(crate) store: Rc<ObjectStore>,
    /// Consumer groups this shard owns.
    pub(crate) groups: Rc<Groups>,
    /// This shard's own counters; a scrape sums every shard's.
    pub metrics: Rc<ShardMetrics>,
    /// Written by the coordinator executor only; read at a scrape.
    pub coordinator_metrics: Arc<CoordinatorMetrics>,
    /// The mirror fetchers' progress for the mirrored partitions this shard owns.
    pub mirror_progress: MirrorProgress,
    /// The executor's task queues and background tasks.
    pub tasks: Rc<Tasks>,
}

/// What a shard is connected to, made by the runtime (or a test harness) on its executor.
pub struct ShardWiring {
    pub topics: Arc<ArcSwap<TopicsView>>,
    pub coordinator: Rc<CoordinatorClient>,
    /// Indexed by shard; `None` at this shard's own index.
    pub peers: Vec<Option<Rc<PeerClient>>>,
    pub store: Rc<ObjectStore>,
    pub coordinator_metrics: Arc<CoordinatorMetrics>,
    pub tasks: Rc<Tasks>,
}

impl Shard {
    pub fn new(index: usize, config: Rc<RuntimeConfig>, wiring: ShardWiring) -> Shard {
        let ShardWiring {
            topics,
            coordinator,
            peers,
            store,
            coordinator_metrics,
            tasks,
        } = wiring;
        let metrics = Rc::new(ShardMetrics::new(index));
        let local_data = Rc::new(LocalData::new(
            config.fetch.cache_max_bytes,
            config.fetch.read_ahead_max_bytes,
        ));
        let fanout = CommitFanout {
            local_data: local_data.clone(),
            peers: peers.clone(),
        };
        let pipeline = ProducePipeline::start(
            config.clone(),
            store.clone(),
            coordinator.clone(),
            fanout,
            metrics.clone(),
        );
        let claimer = crate::groups::Claimer {
            coordinator: coordinator.clone(),
            node_id: config.node_id,
            incarnation: config.incarnation,
            lease_lapses: config.lease_lapses.clone(),
        };
        let groups = Groups::new(config.groups, claimer);
        Shard {
            index,
            groups,
            config,
            topics,
            coordinator,
            peers,
            pipeline,
            local_data,
            store,
            metrics,
            coordinator_metrics,
            mirror_progress: MirrorProgress::default(),
            tasks,
        }
    }

    /// An object's size in the store, or None when it is not there.
    pub async fn object_size(&self, key: &str) -> Result<Option<u64>, shoal_wal::WalError> {
        self.store.size(key).await
    }

    pub fn shard_count(&self) -> usize {
        self.peers.len()
    }

    pub fn owner_of(&self, tp: &TopicPartition) -> usize {
        owner_shard(tp, self.shard_count())
    }

    /// Resolves once the coordinator answers, i.e. after it has replayed its log.
    pub async fn wait_for_coordinator(&self) -> Result<(), ShardError> {
        let probe = ListOffsets {
            read_committed: false,
            partitions: Vec::new(),
        };
        self.coordinator.run(probe).await.map(|_| ())
    }

    /// Splits `items` by owning shard, runs `per_owner` for every owner at once (with `None`
    /// for this shard), and returns the answers in the order of `items`. Slots an owner left
    /// unanswered (a closed queue) hold `unanswered`.
    async fn scatter<'a, T, R: Clone>(
        &self,
        items: Vec<T>,
        partition_of: impl Fn(&T) -> TopicPartition,
        per_owner: impl Fn(Option<Rc<PeerClient>>, Vec<T>) -> LocalBoxFuture<'a, Vec<R>>,
        unanswered: R,
    ) -> Vec<R> {
        let count = items.len();
        let mut by_owner: BTreeMap<usize, (Vec<usize>, Vec<T>)> = BTreeMap::new();
        for (i, item) in items.into_iter().enumerate() {
            let group = by_owner
                .entry(self.owner_of(&partition_of(&item)))
                .or_default();
            group.0.push(i);
            group.1.push(item);
        }
        let (slots, answers): (Vec<Vec<usize>>, Vec<_>) = by_owner
            .into_iter()
            .map(|(owner, (slots, group))| (slots, per_owner(self.peers[owner].clone(), group)))
            .unzip();
        let mut results = vec![unanswered; count];
        for (slots, answers) in slots
            .into_iter()
            .zip(futures::future::join_all(answers).await)
        {
            for (slot, answer) in slots.into_iter().zip(answers) {
                results[slot] = answer;
            }
        }
        results
    }

    /// Produces to any partitions; answers in the order given. The writes go into this
    /// shard's WAL buffer, whichever shards own their partitions (the coordinator assigns
    /// offsets and checks sequences for every shard, and a connection's requests stay in order
    /// on the shard that reads them); on a store that bills each request, into the one buffer
    /// of the broker's uploader, so PUTs do not grow with the shard count.
    pub async fn produce(&self, writes: Vec<PartitionProduce>) -> Vec<PartitionProduceResult> {
        match self.uploader() {
            None => produce_here(&self.pipeline, writes).await,
            Some(uploader) => {
                let count = writes.len();
                uploader.ask(ProduceHere(writes)).await.unwrap_or_else(|_| {
                    vec![PartitionProduceResult::failed(ErrorKind::NotAvailable); count]
                })
            }
        }
    }

    /// The shard that uploads this shard's writes, when it is another.
    fn uploader(&self) -> Option<&Rc<PeerClient>> {
        if self.config.store.bills_requests() {
            self.peers[UPLOADER_SHARD].as_ref()
        } else {
            None
        }
    }

    /// Fetch with Kafka's long-poll rules: answer once `min_bytes` are available, an error
    /// occurred, or `max_wait` passed. `max_bytes` is one budget across all partitions.
    pub async fn fetch(
        &self,
        partitions: Vec<PartitionFetch>,
        max_bytes: u32,
        min_bytes: u32,
        max_wait: Duration,
    ) -> Vec<PartitionFetchResult> {
        let deadline = Instant::now() + max_wait;
        if partitions.is_empty() {
            // Nothing can arrive for it: a long poll of nothing sleeps out its wait.
            glommio::timer::sleep(max_wait).await;
            return Vec::new();
        }
        loop {
            let mut results = self.fetch_once(&partitions, max_bytes).await;
            let available: usize = results.iter().map(|r| r.records.len()).sum();
            let failed = results.iter().any(|r| r.error.is_some());
            if available >= min_bytes as usize || failed || Instant::now() >= deadline {
                spend_budget(&mut results, max_bytes);
                return results;
            }
            // Wait for a commit past what this attempt saw, not past the fetch offsets: data
            // already there but short of min_bytes must not make the loop spin.
            let seen: Vec<PartitionFetch> = partitions
                .iter()
                .zip(&results)
                .map(|(p, r)| PartitionFetch {
                    offset: p.offset.max(r.high_watermark),
                    ..*p
                })
                .collect();
            self.wait_for_news(&seen, deadline).await;
        }
    }

    /// Waits for a commit past `seen` here, or, in a cluster, for rows of other brokers to
    /// reach this broker's coordinator (checked every `REMOTE_COMMIT_CHECK`: a long poll sees
    /// another broker's commit within that plus the notification's delay).
    async fn wait_for_news(&self, seen: &[PartitionFetch], deadline: Instant) {
        if !self.config.shared_coordinator_log {
            return self.wait_for_data(seen, deadline).await;
        }
        let others = &self.coordinator_metrics.rows_from_others;
        let known = CoordinatorMetrics::get(others);
        loop {
            let slice = deadline.min(Instant::now() + REMOTE_COMMIT_CHECK);
            self.wait_for_data(seen, slice).await;
            let now = Instant::now();
            // Woken before the slice ended: a local commit.
            if now < slice || now >= deadline || CoordinatorMetrics::get(others) != known {
                return;
            }
        }
    }

    async fn fetch_once(
        &self,
        partitions: &[PartitionFetch],
        max_bytes: u32,
    ) -> Vec<PartitionFetchResult> {
        self.scatter(
            partitions.to_vec(),
            |p| p.partition,
            |peer, group| match peer {
                None => self.fetch_owned(group, max_bytes).boxed_local(),
                Some(peer) => async move {
                    let call = FetchOwned {
                        partitions: group,
                        max_bytes,
                    };
                    peer.ask(call).await.unwrap_or_default()
                }
                .boxed_local(),
            },
            fetch_failed(ErrorKind::NotAvailable),
        )
        .await
    }

    /// Reads partitions this shard owns.
    pub async fn fetch_owned(
        &self,
        partitions: Vec<PartitionFetch>,
        max_bytes: u32,
    ) -> Vec<PartitionFetchResult> {
        let Some(found) = find_batches(&self.coordinator, &partitions, max_bytes).await else {
            return vec![fetch_failed(ErrorKind::NotAvailable); partitions.len()];
        };
        let mut results: Vec<PartitionFetchResult> = Vec::with_capacity(partitions.len());
        let mut to_read = Vec::new();
        // Partitions whose records were laid out ahead, or are being laid out.
        let mut prepared_for = Vec::new();
        // Where each partition catching up (its batches older than the cache holds) goes on.
        let mut next = Vec::new();
        for (p, found) in partitions.iter().zip(found) {
            if found.error == Some(ErrorKind::UnknownTopicOrPartition) {
                self.local_data.forget_watermark(&p.partition);
            } else {
                self.local_data
                    .observe_watermark(p.partition, found.high_watermark);
            }
            if found.error.is_none() && !found.batches.is_empty() {
                let last = &found.batches.last().expect("not empty").object_key;
                if !self.local_data.cache.borrow().contains(last) {
                    next.extend(goes_on(p, &found));
                }
                let prepared = self
                    .local_data
                    .read_ahead
                    .take_prepared(p.partition, &found.batches);
                match prepared {
                    Some(laid_out) => {
                        self.metrics.counters.fetch_read_ahead_hits.add(1);
                        prepared_for.push((results.len(), laid_out, found.batches));
                    }
                    None => to_read.push((results.len(), found.batches)),
                }
            }
            results.push(PartitionFetchResult {
                error: found.error,
                high_watermark: found.high_watermark,
                last_stable_offset: found.last_stable_offset,
                log_start_offset: found.log_start_offset,
                records: bytes::Bytes::new(),
                aborted: found.aborted,
            });
        }
        if !next.is_empty() {
            self.read_ahead(next, max_bytes);
        }
        for (slot, laid_out, batches) in prepared_for {
            match laid_out.await {
                Some(records) => results[slot].records = records,
                // The layout logged what failed; read again here for this fetch's own error.
                None => to_read.push((slot, batches)),
            }
        }
        // One read plan for every partition: from S3 each read is a round trip and a GET.
        let batches: Vec<&[_]> = to_read.iter().map(|(_, b)| b.as_slice()).collect();
        let local = &self.local_data;
        let read = read_partitions(
            &batches,
            &local.cache,
            Some(&local.read_ahead),
            &self.store,
            &self.metrics,
        )
        .await;
        for ((slot, _), read) in to_read.iter().zip(read) {
            match read {
                Ok(records) => results[*slot].records = records,
                // read_partitions logged the object that failed.
                Err(_) => results[*slot].error = Some(ErrorKind::StorageError),
            }
        }
        results
    }

    /// Starts reading ahead of a consumer catching up (`fetch::read_ahead_of`); returns at
    /// once.
    fn read_ahead(&self, partitions: Vec<PartitionFetch>, max_bytes: u32) {
        self.tasks.spawn_request(read_ahead_of(
            partitions,
            max_bytes,
            self.coordinator.clone(),
            self.local_data.clone(),
            self.store.clone(),
            self.metrics.clone(),
        ));
    }

    /// Waits until a commit on any owning shard moves one of the partitions past its fetch
    /// offset, or until `deadline`.
    async fn wait_for_data(&self, partitions: &[PartitionFetch], deadline: Instant) {
        let mut by_owner: BTreeMap<usize, Vec<(TopicPartition, i64)>> = BTreeMap::new();
        for p in partitions {
            by_owner
                .entry(self.owner_of(&p.partition))
                .or_default()
                .push((p.partition, p.offset));
        }
        let waits: Vec<LocalBoxFuture<()>> = by_owner
            .into_iter()
            .map(|(owner, group)| match &self.peers[owner] {
                None => {
                    let local = self.local_data.clone();
                    async move { local.wait_for_data(&group, deadline).await }.boxed_local()
                }
                Some(peer) => {
                    let peer = peer.clone();
                    async move {
                        let call = WaitForData {
                            partitions: group,
                            deadline,
                        };
                        if peer.ask(call).await.is_err() {
                            // The peer is gone (shutdown): do not spin, wait out the deadline.
                            glommio::timer::sleep(
                                deadline.saturating_duration_since(Instant::now()),
                            )
                            .await;
                        }
                    }
                    .boxed_local()
                }
            })
            .collect();
        if !waits.is_empty() {
            select_all(waits).await;
        }
    }

    /// Writes into this shard's WAL buffer.
    pub(crate) async fn produce_here(
        &self,
        writes: Vec<PartitionProduce>,
    ) -> Vec<PartitionProduceResult> {
        produce_here(&self.pipeline, writes).await
    }

    /// Whether the object store serves (S3: the bucket answers; local: the directory is
    /// there), and if not, why.
    pub async fn check_store(&self) -> Result<(), String> {
        self.store.check().await.map_err(|e| e.to_string())
    }

    /// This shard's metrics, its object store's requests included.
    pub fn metrics_snapshot(&self) -> MetricsSnapshot {
        let mut metrics = self.metrics.snapshot();
        metrics.store_requests = self.store.request_outcomes().into_iter().collect();
        metrics
    }

    /// Every shard's metrics summed, and every mirrored partition's lag, for a scrape.
    pub async fn scrape(&self) -> (MetricsSnapshot, Vec<MirrorLag>) {
        let mut metrics = self.metrics_snapshot();
        let mut lags = self.mirror_progress.lags();
        for peer in self.peers.iter().flatten() {
            if let Ok(answer) = peer.ask(Scrape).await {
                let (theirs, their_lags) = *answer;
                metrics.merge(&theirs);
                lags.extend(their_lags);
            }
        }
        (metrics, lags)
    }

    /// What the owning shards' fetchers last saw of these partitions' sources.
    pub async fn mirror_sources(
        &self,
        partitions: Vec<TopicPartition>,
    ) -> Vec<Option<SourceOffsets>> {
        let progress = &self.mirror_progress;
        self.scatter(
            partitions,
            |p| *p,
            |peer, group| match peer {
                None => {
                    let answers = group.iter().map(|p| progress.source(p)).collect();
                    async move { answers }.boxed_local()
                }
                Some(peer) => async move {
                    peer.ask(MirrorSourcesOwned(group))
                        .await
                        .unwrap_or_default()
                }
                .boxed_local(),
            },
            None,
        )
        .await
    }

    /// Runs `call` on the shard that owns the group; NOT_AVAILABLE when that shard cannot
    /// be reached (it is shutting down).
    pub async fn group_call<C: GroupCall>(
        &self,
        group_id: &str,
        call: C,
    ) -> Result<C::Reply, GroupError> {
        let owner = owner_of_group(group_id, self.shard_count());
        self.group_call_on(owner, call).await
    }

    /// `group_call` for a call whose reply is itself a verdict: the group's shard not
    /// answering and the group refusing are one error.
    pub async fn try_group_call<T, C: GroupCall<Reply = Result<T, GroupError>>>(
        &self,
        group_id: &str,
        call: C,
    ) -> Result<T, GroupError> {
        self.group_call(group_id, call)
            .await
            .and_then(|reply| reply)
    }

    /// Asks every shard (ListGroups, finding active groups).
    pub async fn group_call_all<C: GroupCall>(
        &self,
        call: impl Fn() -> C,
    ) -> Vec<Result<C::Reply, GroupError>> {
        let calls = (0..self.shard_count()).map(|owner| self.group_call_on(owner, call()));
        futures::future::join_all(calls).await
    }

    async fn group_call_on<C: GroupCall>(
        &self,
        owner: usize,
        call: C,
    ) -> Result<C::Reply, GroupError> {
        match &self.peers[owner] {
            None => Ok(call.run(self.groups.clone()).await),
            Some(peer) => peer
                .ask(OnGroups(call))
                .await
                .map_err(|_| GroupError::NotAvailable),
        }
    }

    /// Commits everything buffered; used when shutting down.
    pub async fn flush(&self) {
        self.pipeline.flush().await;
    }
}

async fn produce_here(
    pipeline: &Rc<ProducePipeline>,
    writes: Vec<PartitionProduce>,
) -> Vec<PartitionProduceResult> {
    futures::future::join_all(
        writes
            .into_iter()
            .map(|w| pipeline.append(w.partition, w.records, w.rules)),
    )
    .await
}

fn fetch_failed(error: ErrorKind) -> PartitionFetchResult {
    PartitionFetchResult {
        error: Some(error),
        high_watermark: -1,
        last_stable_offset: -1,
        log_start_offset: -1,
        records: bytes::Bytes::new(),
        aborted: Vec::new(),
    }
}

/// Spends `max_bytes` in request order; only the first non-empty partition may overshoot.
fn spend_budget(results: &mut [PartitionFetchResult], max_bytes: u32) {
    let mut spent = 0usize;
    for result in results {
        let len = result.records.len();
        if len == 0 {
            continue;
        }
        if spent > 0 && spent + len > max_bytes as usize {
            result.records = bytes::Bytes::new();
            result.aborted.clear();
        } else {
            spent += len;
        }
    }
}
