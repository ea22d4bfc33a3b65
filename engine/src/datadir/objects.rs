//! Reads back every live batch from the object store and checks its CRC, as a fetch from
//! the store would: what `shoal check` reports about the data the metadata points at.

use shoal_coordinator::CoordinatorState;
use shoal_wal::object::read_batches;
use shoal_wal::{ObjectStore, StoreConfig};

use crate::EngineError;

/// Damaged batches named one by one before the rest are only counted.
const DAMAGE_LINES_MAX: usize = 20;

/// Returns the number of live batches that cannot be served.
pub async fn verify(store: &StoreConfig, state: &CoordinatorState) -> Result<usize, EngineError> {
    let store = ObjectStore::open(store).map_err(|e| EngineError::Config(e.to_string()))?;
    let by_object = state.stored_batches();
    let batches: usize = by_object.values().map(Vec::len).sum();
    println!(
        "objects: {} holding {batches} live batches",
        by_object.len()
    );
    let mut damaged = 0;
    for (key, stored) in &by_object {
        let start = stored.first().map_or(0, |b| b.byte_offset as u64);
        let end = stored
            .iter()
            .map(|b| b.byte_offset as u64 + b.size_bytes as u64)
            .max()
            .unwrap_or(start);
        let bytes = match store.get_range(key, start, (end - start) as usize).await {
            Ok(bytes) => bytes,
            Err(e) => {
                damaged += stored.len();
                if damaged <= DAMAGE_LINES_MAX {
                    println!(
                        "  object {key} ({}): {e} ({} batches)",
                        store.location(key),
                        stored.len()
                    );
                }
                continue;
            }
        };
        for batch in stored {
            let at = (batch.byte_offset as u64 - start) as usize;
            let size = batch.size_bytes as usize;
            let checked = match bytes.get(at..at + size) {
                Some(slice) => read_batches(slice, [size], true).map(|_| ()),
                None => Err(shoal_wal::WalError::BatchLengthMismatch {
                    declared: size,
                    available: bytes.len().saturating_sub(at),
                }),
            };
            if let Err(e) = checked {
                damaged += 1;
                if damaged <= DAMAGE_LINES_MAX {
                    println!(
                        "  object {key} ({}) byte {}: {}-{} offset {}: {e}",
                        store.location(key),
                        batch.byte_offset,
                        batch.topic,
                        batch.partition,
                        batch.base_offset
                    );
                }
            }
        }
    }
    if damaged > DAMAGE_LINES_MAX {
        println!("  ... and {} more", damaged - DAMAGE_LINES_MAX);
    }
    Ok(damaged)
}
