//! Ending a transaction: its markers are produced to each partition it wrote to, like any
//! other batch (one WAL object per owning shard's rotation), and only then is it complete.
//! Whoever ends it (EndTxn, a new InitProducerId, the timeout chore, a restart) does the
//! same; a marker the coordinator no longer expects is refused, so ending twice is harmless.

use bytes::Bytes;
use shoal_coordinator::commands::CompleteTransaction;
use shoal_coordinator::{ErrorKind, TransactionEnding};
use shoal_wal::control::marker_batch;

use crate::maintenance::now_ms;
use crate::{PartitionProduce, ProduceRules, Shard};

/// A marker batch is 80 bytes; the produce version only matters for zstd, which it lacks.
const MARKER_PRODUCE_VERSION: i16 = 9;

impl Shard {
    /// Writes the ending transaction's markers, then completes it. An error means some
    /// marker is not stored yet: the transaction stays ending, to be ended again.
    pub async fn end_transaction(&self, ending: TransactionEnding) -> Result<(), ErrorKind> {
        let view = self.topics.load();
        let marker = Bytes::from(marker_batch(
            ending.producer_id,
            ending.producer_epoch,
            ending.commit,
            now_ms(),
        ));
        // A deleted topic needs no marker.
        let writes: Vec<PartitionProduce> = ending
            .partitions
            .iter()
            .filter_map(|tp| {
                let meta = view.by_id(&tp.topic_id)?;
                Some(PartitionProduce {
                    partition: *tp,
                    records: marker.clone(),
                    rules: ProduceRules {
                        markers: true,
                        ..ProduceRules::new(&meta.config, MARKER_PRODUCE_VERSION)
                    },
                })
            })
            .collect();
        let count = writes.len();
        let results = self.produce(writes).await;
        if results.len() != count {
            return Err(ErrorKind::NotAvailable);
        }
        for result in results {
            match result.error {
                // Stored; or nothing to mark (gone, mirrored); or a marker no longer
                // expected because someone else ended the transaction already.
                None
                | Some(ErrorKind::UnknownTopicOrPartition)
                | Some(ErrorKind::ReadOnlyTopic)
                | Some(ErrorKind::InvalidTxnState) => {}
                Some(error) => {
                    tracing::warn!(
                        transactional_id = %ending.transactional_id,
                        ?error,
                        "a transaction marker was not stored; the transaction ends later"
                    );
                    return Err(error);
                }
            }
        }
        self.coordinator
            .run(CompleteTransaction { ending })
            .await
            .map_err(|_| ErrorKind::NotAvailable)
    }
}
