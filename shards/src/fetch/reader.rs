//! Turns batch coordinates into the bytes a Fetch response carries: neighbouring ranges of
//! one object are read together (across the fetch's partitions), reads of different objects
//! run concurrently, each batch is checked and its base offset patched.
//!
//! A batch that cannot be served (its object missing or short, its CRC wrong) ends the read
//! there: the batches before it are served, and it is logged with its object's key. Only
//! when the very first batch fails does the fetch get an error.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use futures::{FutureExt, StreamExt};
use shoal_coordinator::BatchCoordinate;
use shoal_wal::batch::patch_base_offset;
use shoal_wal::object::read_batches;
use shoal_wal::{ObjectBody, ObjectStore, ReadBytes, WalError};

use super::plan::{self, Wanted};
use super::read_ahead::{Ahead, PendingRead, ReadAhead};
use super::ObjectCache;
use crate::ShardMetrics;

/// One partition's batches; see `read_partitions`.
pub async fn read_partition(
    batches: &[BatchCoordinate],
    cache: &RefCell<ObjectCache>,
    store: &ObjectStore,
    metrics: &ShardMetrics,
) -> Result<Bytes, WalError> {
    let mut read = read_partitions(&[batches], cache, None, store, metrics).await;
    read.pop().expect("one answer per partition")
}

/// The batches of every partition of one fetch, each partition's in order. What is not in the
/// cache, nor read ahead (`ahead`), is read with as few store requests as the plan allows
/// (`plan::spans`: the ranges of one object that several partitions need are one read), at
/// most `READS_IN_FLIGHT` at once: on S3 each is a round trip and a billed GET.
pub async fn read_partitions(
    partitions: &[&[BatchCoordinate]],
    cache: &RefCell<ObjectCache>,
    ahead: Option<&ReadAhead>,
    store: &ObjectStore,
    metrics: &ShardMetrics,
) -> Vec<Result<Bytes, WalError>> {
    let runs: Vec<Vec<std::ops::Range<usize>>> =
        partitions.iter().map(|batches| runs_of(batches)).collect();
    let mut found: HashMap<(usize, usize), Found> = HashMap::new();
    let mut wanted = Vec::new();
    let mut wanted_by = Vec::new();
    // Runs being read ahead: the read, and where the run lies in what it reads.
    let mut reading: Vec<((usize, usize), PendingRead, std::ops::Range<usize>)> = Vec::new();
    for (p, batches) in partitions.iter().enumerate() {
        for (r, run) in runs[p].iter().enumerate() {
            let first = &batches[run.start];
            let len = bytes_of(&batches[run.clone()]);
            let cached =
                cache
                    .borrow_mut()
                    .get_range(&first.object_key, first.byte_offset as usize, len);
            match cached {
                Some(bytes) => {
                    metrics.counters.fetch_cache_hits.add(1);
                    found.insert((p, r), Found::Cached(bytes));
                }
                None => {
                    let offset = first.byte_offset as usize;
                    match ahead.and_then(|a| a.find(&first.object_key, offset, len)) {
                        Some((Ahead::Read(bytes), _)) => {
                            found.insert((p, r), Found::Stored(bytes));
                            continue;
                        }
                        Some((Ahead::Reading(read), start)) => {
                            let within = offset - start..offset - start + len;
                            reading.push(((p, r), read, within));
                            continue;
                        }
                        None => {}
                    }
                    wanted.push(Wanted {
                        key: first.object_key.clone(),
                        offset: first.byte_offset as usize,
                        len,
                    });
                    wanted_by.push((p, r));
                }
            }
        }
    }
    let reads = plan::spans(&wanted).into_iter().map(|span| async move {
        let read = store
            .read_range(&span.key, span.offset as u64, span.len)
            .await;
        (span, read)
    });
    let mut reads = futures::stream::iter(reads).buffer_unordered(READS_IN_FLIGHT);
    while let Some((span, read)) = reads.next().await {
        metrics.counters.fetch_cache_misses.add(1);
        for i in span.serves {
            let slot = match &read {
                Ok(bytes) => {
                    let start = wanted[i].offset - span.offset;
                    match bytes.slice(start, wanted[i].len) {
                        Some(run) => Found::Stored(run),
                        None => Found::Failed,
                    }
                }
                // Told apart later, with a read of its own (errors are not Clone, and rare).
                Err(_) => Found::Failed,
            };
            found.insert(wanted_by[i], slot);
        }
    }
    drop(reads);
    for (slot, read, within) in reading {
        let run = read
            .await
            .and_then(|bytes| bytes.slice(within.start, within.len()));
        found.insert(slot, run.map_or(Found::Failed, Found::Stored));
    }
    let mut results = Vec::with_capacity(partitions.len());
    for (p, batches) in partitions.iter().enumerate() {
        let mut out = BytesMut::with_capacity(bytes_of(batches));
        let mut outcome = Ok(());
        for (r, run) in runs[p].iter().enumerate() {
            let run = &batches[run.clone()];
            let read = match found.remove(&(p, r)) {
                Some(Found::Cached(body)) => Ok(RunBytes::Cached(body)),
                Some(Found::Stored(bytes)) => Ok(RunBytes::Stored(bytes)),
                _ => read_alone(run, store).await.map(RunBytes::Stored),
            };
            let appended = read.and_then(|bytes| append_run(run, &bytes, &mut out));
            if let Err((failed, e)) = appended {
                tracing::error!(
                    object = %failed.object_key,
                    byte_offset = failed.byte_offset,
                    base_offset = failed.base_offset,
                    error = %e,
                    "a stored batch cannot be served; the fetch stops before it"
                );
                if out.is_empty() {
                    outcome = Err(e);
                }
                break;
            }
        }
        results.push(outcome.map(|()| out.freeze()));
    }
    results
}

/// Reads ahead the batches of a fetch to come (`read_ahead`): the runs neither cached nor
/// already read ahead, planned as `read_partitions` plans them, each span a range of `ahead`
/// that a fetch can wait for while it is read. The ranges are recorded at once; the returned
/// future drives their reads, at most `READS_IN_FLIGHT` at a time.
pub fn read_ahead<'a>(
    partitions: &[&[BatchCoordinate]],
    cache: &RefCell<ObjectCache>,
    ahead: &'a ReadAhead,
    store: Rc<ObjectStore>,
    metrics: &ShardMetrics,
) -> impl std::future::Future<Output = ()> + 'a {
    let mut wanted = Vec::new();
    for batches in partitions {
        for run in runs_of(batches) {
            let first = &batches[run.start];
            let (offset, len) = (first.byte_offset as usize, bytes_of(&batches[run]));
            let key = &first.object_key;
            if !cache.borrow().contains(key) && ahead.find(key, offset, len).is_none() {
                wanted.push(Wanted {
                    key: key.clone(),
                    offset,
                    len,
                });
            }
        }
    }
    let mut reads = Vec::new();
    for span in plan::spans(&wanted) {
        let store = store.clone();
        let (key, offset, len) = (span.key.clone(), span.offset, span.len);
        let read = async move { store.read_range(&key, offset as u64, len).await.ok() }
            .boxed_local()
            .shared();
        if ahead.insert(&span.key, span.offset, span.len, read.clone()) {
            metrics.counters.fetch_cache_misses.add(1);
            reads.push(async move { (span, read.await) });
        }
    }
    async move {
        let mut reads = futures::stream::iter(reads).buffer_unordered(READS_IN_FLIGHT);
        while let Some((span, read)) = reads.next().await {
            ahead.finished(&span.key, span.offset, read);
        }
    }
}

/// Stored batches may be read this many requests at a time for one fetch.
const READS_IN_FLIGHT: usize = 8;

/// A run's bytes: from the cache (produced here, checked then), or read from the store.
enum RunBytes {
    Cached(ObjectBody),
    Stored(ReadBytes),
}

impl RunBytes {
    fn len(&self) -> usize {
        match self {
            RunBytes::Cached(body) => body.len(),
            RunBytes::Stored(read) => read.len(),
        }
    }

    /// `len` bytes from `start`, borrowed where they lie in one buffer.
    fn get(&self, start: usize, len: usize) -> Option<Cow<'_, [u8]>> {
        match self {
            RunBytes::Cached(body) => body.get(start, len),
            RunBytes::Stored(read) => read.get(start..start.checked_add(len)?).map(Cow::Borrowed),
        }
    }
}

/// What the read plan got for one run.
enum Found {
    Cached(ObjectBody),
    Stored(ReadBytes),
    Failed,
}

fn runs_of(batches: &[BatchCoordinate]) -> Vec<std::ops::Range<usize>> {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < batches.len() {
        let end = run_end(batches, i);
        runs.push(i..end);
        i = end;
    }
    runs
}

/// The stored bytes of these batches.
fn bytes_of(batches: &[BatchCoordinate]) -> usize {
    batches.iter().map(|c| c.size_bytes as usize).sum()
}

/// A run whose planned read failed, read again alone for its own error.
async fn read_alone<'a>(
    run: &'a [BatchCoordinate],
    store: &ObjectStore,
) -> Result<ReadBytes, (&'a BatchCoordinate, WalError)> {
    let first = &run[0];
    store
        .read_range(&first.object_key, first.byte_offset as u64, bytes_of(run))
        .await
        .map_err(|e| (first, e))
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

/// Appends the run's batches to `out`, each checked, up to the first that fails. Bytes from
/// the cache were checked on their way in; the store's are checked now.
fn append_run<'a>(
    run: &'a [BatchCoordinate],
    bytes: &RunBytes,
    out: &mut BytesMut,
) -> Result<(), (&'a BatchCoordinate, WalError)> {
    let from_store = matches!(bytes, RunBytes::Stored(_));
    let mut pos = 0;
    for coordinate in run {
        let size = coordinate.size_bytes as usize;
        let Some(batch) = bytes.get(pos, size) else {
            let available = bytes.len().saturating_sub(pos);
            let short = WalError::BatchLengthMismatch {
                declared: size,
                available,
            };
            return Err((coordinate, short));
        };
        read_batches(&batch, [size], from_store).map_err(|e| (coordinate, e))?;
        let start = out.len();
        out.extend_from_slice(&batch);
        patch_base_offset(&mut out[start..start + size], coordinate.base_offset);
        pos += size;
    }
    Ok(())
}
