//! Turns batch coordinates into the bytes a Fetch response carries: neighbouring ranges of
//! one object are read together, each batch is checked and its base offset patched.
//!
//! A batch that cannot be served (its object missing or short, its CRC wrong) ends the read
//! there: the batches before it are served, and it is logged with its object's key. Only
//! when the very first batch fails does the fetch get an error.

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
        let end = run_end(batches, i);
        let run = &batches[i..end];
        if let Err((failed, e)) = read_run(run, cache, store, metrics, &mut out).await {
            tracing::error!(
                object = %failed.object_key,
                byte_offset = failed.byte_offset,
                base_offset = failed.base_offset,
                error = %e,
                "a stored batch cannot be served; the fetch stops before it"
            );
            if out.is_empty() {
                return Err(e);
            }
            break;
        }
        i = end;
    }
    Ok(out.freeze())
}

/// The end of the run starting at `start`: consecutive batches stored back to back in the
/// same object, read with one request.
fn run_end(batches: &[BatchCoordinate], start: usize) -> usize {
    let first = &batches[start];
    let mut end = start + 1;
    let mut run_bytes = first.size_bytes as usize;
    while end < batches.len()
        && batches[end].object_key == first.object_key
        && batches[end].byte_offset as usize == first.byte_offset as usize + run_bytes
    {
        run_bytes += batches[end].size_bytes as usize;
        end += 1;
    }
    end
}

/// Appends the run's batches to `out`, each checked, up to the first that fails.
async fn read_run<'a>(
    run: &'a [BatchCoordinate],
    cache: &RefCell<ObjectCache>,
    store: &ObjectStore,
    metrics: &ShardMetrics,
    out: &mut BytesMut,
) -> Result<(), (&'a BatchCoordinate, WalError)> {
    let first = &run[0];
    let run_bytes: usize = run.iter().map(|c| c.size_bytes as usize).sum();
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
                .await
                .map_err(|e| (first, e))?;
            (bytes, true)
        }
    };
    let mut pos = 0;
    for coordinate in run {
        let size = coordinate.size_bytes as usize;
        let Some(batch) = bytes.get(pos..pos + size) else {
            let available = bytes.len().saturating_sub(pos);
            let short = WalError::BatchLengthMismatch {
                declared: size,
                available,
            };
            return Err((coordinate, short));
        };
        read_batches(batch, [size], from_store).map_err(|e| (coordinate, e))?;
        let start = out.len();
        out.extend_from_slice(batch);
        patch_base_offset(&mut out[start..start + size], coordinate.base_offset);
        pos += size;
    }
    Ok(())
}
