//! Reading ahead of a consumer catching up (`read_ahead` says why): after a fetch that read
//! the store, the batches of the next `READ_AHEAD_FETCHES` fetches are looked up, read and laid
//! out, each fetch's partitions promised to the fetch that will find the same batches.

use std::cell::RefCell;
use std::rc::Rc;

use futures::FutureExt;
use shoal_coordinator::commands::FindBatches;
use shoal_coordinator::{BatchCoordinate, FindBatchesRequest, FindBatchesResult, TopicPartition};
use shoal_wal::ObjectStore;

use super::read_ahead::Layout;
use super::reader::{read_ahead, read_partitions};
use super::LocalData;
use crate::rpc::CoordinatorClient;
use crate::{PartitionFetch, ShardMetrics};

/// Fetches a consumer catching up is read ahead of: the next, and the one after it, so that the
/// store is reading while each answer travels and the next request arrives.
const READ_AHEAD_FETCHES: usize = 2;

/// The coordinator's batches for `partitions` (None: it could not answer); at most
/// `max_bytes` in all.
pub async fn find_batches(
    coordinator: &CoordinatorClient,
    partitions: &[PartitionFetch],
    max_bytes: u32,
) -> Option<Vec<FindBatchesResult>> {
    let request = FindBatches {
        partitions: partitions
            .iter()
            .map(|p| FindBatchesRequest {
                read_committed: p.read_committed,
                partition: p.partition,
                offset: p.offset,
                max_partition_bytes: p.max_bytes,
                max_batches: if p.offsets_only { 0 } else { u32::MAX },
            })
            .collect(),
        max_bytes,
    };
    match coordinator.run(request).await {
        Ok(found) if found.len() == partitions.len() => Some(found),
        _ => None,
    }
}

/// Where a fetch of `p` that found `found` goes on, when the partition has more to read.
pub fn goes_on(p: &PartitionFetch, found: &FindBatchesResult) -> Option<PartitionFetch> {
    let last = found.batches.last().filter(|_| found.error.is_none())?;
    let readable_end = if p.read_committed {
        found.last_stable_offset
    } else {
        found.high_watermark
    };
    (last.last_offset + 1 < readable_end).then(|| PartitionFetch {
        offset: last.last_offset + 1,
        ..*p
    })
}

/// Reads and lays out the next fetches of `partitions` (a fetch's own `max_bytes`), if the
/// shard has a read-ahead turn and room free; returns when all of it is done.
pub async fn read_ahead_of(
    mut partitions: Vec<PartitionFetch>,
    max_bytes: u32,
    coordinator: Rc<CoordinatorClient>,
    local: Rc<LocalData>,
    store: Rc<ObjectStore>,
    metrics: Rc<ShardMetrics>,
) {
    let Some(_turn) = local.read_ahead.start() else {
        return;
    };
    let mut steps = Vec::new();
    for _ in 0..READ_AHEAD_FETCHES {
        let Some(found) = find_batches(&coordinator, &partitions, max_bytes).await else {
            break;
        };
        let wanted: Vec<(TopicPartition, Vec<BatchCoordinate>)> = partitions
            .iter()
            .zip(&found)
            .filter(|(_, f)| f.error.is_none() && !f.batches.is_empty())
            .filter(|(p, f)| !local.read_ahead.promised(p.partition, &f.batches))
            .map(|(p, f)| (p.partition, f.batches.clone()))
            .collect();
        let bytes = wanted
            .iter()
            .flat_map(|(_, b)| b)
            .map(|b| b.size_bytes as usize)
            .sum();
        let Some(reservation) = local.read_ahead.reserve(bytes) else {
            break;
        };
        if !wanted.is_empty() {
            let layout = lay_out(&wanted, &local, &store, &metrics, reservation);
            for (index, (partition, batches)) in wanted.into_iter().enumerate() {
                let layout = layout.clone();
                local.read_ahead.promise(partition, batches, layout, index);
            }
            steps.push(layout);
        }
        partitions = partitions
            .iter()
            .zip(&found)
            .filter_map(|(p, found)| goes_on(p, found))
            .collect();
        if partitions.is_empty() {
            break;
        }
    }
    futures::future::join_all(steps).await;
}

/// The reads of `wanted`'s batches, then their records checked and laid out as the fetch would
/// lay them out, without waiting for that fetch to come.
fn lay_out(
    wanted: &[(TopicPartition, Vec<BatchCoordinate>)],
    local: &Rc<LocalData>,
    store: &Rc<ObjectStore>,
    metrics: &Rc<ShardMetrics>,
    reservation: super::read_ahead::Reservation,
) -> Layout {
    let (local, store, metrics) = (local.clone(), store.clone(), metrics.clone());
    let batches: Vec<Vec<BatchCoordinate>> = wanted.iter().map(|(_, b)| b.clone()).collect();
    async move {
        let batches: Vec<&[_]> = batches.iter().map(Vec::as_slice).collect();
        let (cache, ahead) = (&local.cache, &*local.read_ahead);
        read_ahead(&batches, cache, ahead, store.clone(), &metrics).await;
        let laid_out = read_partitions(&batches, cache, Some(ahead), &store, &metrics).await;
        drop(reservation);
        Rc::new(RefCell::new(laid_out.into_iter().map(Result::ok).collect()))
    }
    .boxed_local()
    .shared()
}
