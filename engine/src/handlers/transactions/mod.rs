//! Transactions (KIP-1164: their state is the diskless coordinator's): the transactional
//! producer's requests, the admin's questions, and ending transactions whose markers are
//! still to be written. This broker is the transaction coordinator of the transactional ids
//! FindCoordinator gives it (all of them on a single node).

pub mod add_offsets;
pub mod add_partitions;
pub mod describe;
pub mod end_txn;
pub mod init;
pub mod txn_offset_commit;
pub mod write_markers;

use std::rc::Rc;
use std::time::Duration;

use shoal_coordinator::acl::{Operation, ResourceType};
use shoal_coordinator::commands::TransactionsToEnd;
use shoal_coordinator::ErrorKind;

use crate::context::{Broker, Call};

/// How often timed-out transactions are looked for, and ending ones retried.
const CHORE_INTERVAL: Duration = Duration::from_secs(1);
/// Transactions ended (and idle ids forgotten) per round of the chore, so no round grows
/// without bound.
const ENDINGS_PER_ROUND: usize = 100;
/// Kafka's `transactional.id.expiration.ms` default: an id idle this long is forgotten.
const TRANSACTIONAL_ID_EXPIRATION_MS: i64 = 7 * 24 * 3600 * 1000;

/// WRITE on the transactional id, and this broker its coordinator.
pub(crate) fn check_transactional_id(call: &Call<'_>, id: &str) -> Result<(), ErrorKind> {
    if !call.authorized(Operation::Write, ResourceType::TransactionalId, id) {
        return Err(ErrorKind::TransactionalIdAuthorizationFailed);
    }
    call.check_coordinator(id)
}

/// Aborts transactions open past their timeout and ends those left ending (by a restart, or
/// a marker that could not be stored), on one broker of a cluster.
pub async fn end_transactions_chore(broker: Rc<Broker>) {
    loop {
        glommio::timer::sleep(CHORE_INTERVAL).await;
        if !broker.runs_cluster_chores() {
            continue;
        }
        let request = TransactionsToEnd {
            max: ENDINGS_PER_ROUND,
            id_expiration_ms: TRANSACTIONAL_ID_EXPIRATION_MS,
        };
        let Ok(endings) = broker.shard.coordinator.run(request).await else {
            continue;
        };
        for ending in endings {
            let id = ending.transactional_id.clone();
            let commit = ending.commit;
            if broker.shard.end_transaction(ending).await.is_ok() {
                tracing::info!(transactional_id = %id, commit, "ended a transaction");
            }
        }
    }
}
