//! Turns batch coordinates into the bytes a Fetch response carries: neighbouring ranges of
//! one object are read together, each batch is checked and its base offset patched.

use std::cell::RefCell;

use bytes::{Bytes, BytesMut};
use shoal_coordinator::BatchCoordinate;
use shoal_wal::batch::patch_base_offset;
use shoal_wal::object::read_batches;
use shoal_wal::{ObjectStore, WalError};

use super::ObjectCache;
use crate::ShardMetrics;

pub async fn read_partition(
    batches: &[BatchCoordinate],
    cache: &RefCell<ObjectCache>,
    store: &ObjectStore,
    metrics: &ShardMetrics,
) -> Result<Bytes, WalError> {
    let total: usize = batches.iter().map(|b| b.size_bytes as usize).sum();
    let mut out = BytesMut::with_capacity(total);
    let mut i = 0;
    while i < batches.len() {
        // A run: consecutive batches stored back to back in the same object.
        let first = &batches[i];
        let mut end = i + 1;
        let mut run_bytes = first.size_bytes as usize;
        while end < batches.len()
            && batches[end].object_key == first.object_key
            && batches[end].byte_offset as usize == first.byte_offset as usize + run_bytes
        {
            run_bytes += batches[end].size_bytes as usize;
            end += 1;
        }
        let cached =
            cache
                .borrow_mut()
                .get_range(&first.object_key, first.byte_offset as usize, run_bytes);
        // Bytes from the cache were checked on their way in; the store's are checked now.
        let (bytes, from_store) = match cached {
            Some(bytes) => {
                metrics.fetch_cache_hits.add(1);
                (bytes, false)
            }
            None => {
                metrics.fetch_cache_misses.add(1);
                let bytes = store
                    .get_range(&first.object_key, first.byte_offset as u64, run_bytes)
                    .await?;
                (bytes, true)
            }
        };
        let run = &batches[i..end];
        read_batches(
            &bytes,
            run.iter().map(|c| c.size_bytes as usize),
            from_store,
        )?;
        let mut pos = 0;
        for coordinate in run {
            let size = coordinate.size_bytes as usize;
            let start = out.len();
            out.extend_from_slice(&bytes[pos..pos + size]);
            patch_base_offset(&mut out[start..start + size], coordinate.base_offset);
            pos += size;
        }
        i = end;
    }
    Ok(out.freeze())
}
