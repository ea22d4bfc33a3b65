//! The calls shards make on each other: produce into the serving shard's WAL buffer, tell it of
//! commits to partitions it owns, fetch from those partitions and wait for their data, read its
//! metrics and mirror progress, and any call on the consumer groups it owns.

use std::rc::Rc;
use std::time::Instant;

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use shoal_coordinator::TopicPartition;
use shoal_wal::ObjectBody;

use super::PeerCall;
use crate::groups::GroupCall;
use crate::metrics::MetricsSnapshot;
use crate::mirror::progress::{MirrorLag, SourceOffsets};
use crate::{
    PartitionFetch, PartitionFetchResult, PartitionProduce, PartitionProduceResult, Shard,
};

/// Writes, to any partitions, into the serving shard's WAL buffer (the broker's one uploader
/// on a store that bills each request).
#[derive(Debug)]
pub struct ProduceHere(pub Vec<PartitionProduce>);

impl PeerCall for ProduceHere {
    type Reply = Vec<PartitionProduceResult>;

    fn serve(self, shard: Rc<Shard>) -> LocalBoxFuture<'static, Self::Reply> {
        async move { shard.produce_here(self.0).await }.boxed_local()
    }
}

/// Another shard committed an object holding batches of partitions the serving shard owns:
/// keep it for tailing readers and wake the long polls. `ends` as `LocalData::on_committed`.
pub struct Committed {
    pub key: String,
    pub data: ObjectBody,
    pub ends: Vec<(TopicPartition, i64)>,
}

impl std::fmt::Debug for Committed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Committed")
            .field("key", &self.key)
            .field("bytes", &self.data.len())
            .field("ends", &self.ends)
            .finish()
    }
}

impl PeerCall for Committed {
    type Reply = ();

    fn serve(self, shard: Rc<Shard>) -> LocalBoxFuture<'static, Self::Reply> {
        shard
            .local_data
            .on_committed(&self.key, &self.data, self.ends);
        async {}.boxed_local()
    }
}

/// Reads partitions the serving shard owns, within `max_bytes`.
#[derive(Debug)]
pub struct FetchOwned {
    pub partitions: Vec<PartitionFetch>,
    pub max_bytes: u32,
}

impl PeerCall for FetchOwned {
    type Reply = Vec<PartitionFetchResult>;

    fn serve(self, shard: Rc<Shard>) -> LocalBoxFuture<'static, Self::Reply> {
        async move { shard.fetch_owned(self.partitions, self.max_bytes).await }.boxed_local()
    }
}

/// Resolves when any partition's high watermark passes its offset, or at the deadline.
#[derive(Debug)]
pub struct WaitForData {
    pub partitions: Vec<(TopicPartition, i64)>,
    pub deadline: Instant,
}

impl PeerCall for WaitForData {
    type Reply = ();

    fn serve(self, shard: Rc<Shard>) -> LocalBoxFuture<'static, Self::Reply> {
        async move {
            let local = shard.local_data.clone();
            local.wait_for_data(&self.partitions, self.deadline).await
        }
        .boxed_local()
    }
}

/// The serving shard's metrics and mirror lags, for a scrape.
#[derive(Debug)]
pub struct Scrape;

impl PeerCall for Scrape {
    type Reply = Box<(MetricsSnapshot, Vec<MirrorLag>)>;

    fn serve(self, shard: Rc<Shard>) -> LocalBoxFuture<'static, Self::Reply> {
        let answer = Box::new((shard.metrics_snapshot(), shard.mirror_progress.lags()));
        async move { answer }.boxed_local()
    }
}

/// What the serving shard's fetchers last saw of these mirrored partitions' sources.
#[derive(Debug)]
pub struct MirrorSourcesOwned(pub Vec<TopicPartition>);

impl PeerCall for MirrorSourcesOwned {
    type Reply = Vec<Option<SourceOffsets>>;

    fn serve(self, shard: Rc<Shard>) -> LocalBoxFuture<'static, Self::Reply> {
        let answers = self
            .0
            .iter()
            .map(|p| shard.mirror_progress.source(p))
            .collect();
        async move { answers }.boxed_local()
    }
}

/// A call on a consumer group the serving shard owns.
#[derive(Debug)]
pub struct OnGroups<C>(pub C);

impl<C: GroupCall> PeerCall for OnGroups<C> {
    type Reply = C::Reply;

    fn serve(self, shard: Rc<Shard>) -> LocalBoxFuture<'static, Self::Reply> {
        self.0.run(shard.groups.clone())
    }
}
