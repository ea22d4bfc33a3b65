//! InitProducerId with a transactional id: the id's producer at a new epoch (fencing older
//! ones), after ending whatever transaction it left open.

use shoal_coordinator::commands::InitTransactionalProducer;
use shoal_coordinator::{ErrorKind, TransactionalInit};
use shoal_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};

use crate::context::Call;
use crate::kafka::error_codes;

/// An earlier transaction is ended at most this many times before the client is told to
/// retry (CONCURRENT_TRANSACTIONS): another client may be racing for the same id.
const ENDINGS_MAX: usize = 3;

pub async fn init(
    call: &Call<'_>,
    request: &InitProducerIdRequest,
    transactional_id: &str,
) -> InitProducerIdResponse {
    let answer = |outcome: Result<(i64, i16), ErrorKind>| match outcome {
        Ok((producer_id, epoch)) => InitProducerIdResponse::default()
            .with_producer_id(ProducerId(producer_id))
            .with_producer_epoch(epoch),
        Err(e) => InitProducerIdResponse::default()
            .with_error_code(error_codes::code_of(Some(e)))
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1),
    };
    if let Err(e) = super::check_transactional_id(call, transactional_id) {
        return answer(Err(e));
    }
    // KIP-360 (v3+): a producer bumping its epoch names the one it holds.
    let mut expected =
        (request.producer_id.0 >= 0).then_some((request.producer_id.0, request.producer_epoch));
    let shard = &call.broker.shard;
    for _ in 0..ENDINGS_MAX {
        let command = InitTransactionalProducer {
            transactional_id: transactional_id.to_string(),
            timeout_ms: request.transaction_timeout_ms,
            expected,
        };
        match shard.coordinator.run(command).await {
            Ok(Ok(TransactionalInit::Ready {
                producer_id,
                producer_epoch,
            })) => return answer(Ok((producer_id, producer_epoch))),
            Ok(Ok(TransactionalInit::MustEnd(ending))) => {
                // Ending it fenced the epoch the client named: that was this request's doing.
                if expected.is_some() {
                    expected = Some((ending.producer_id, ending.producer_epoch));
                }
                if shard.end_transaction(ending).await.is_err() {
                    break;
                }
            }
            Ok(Err(e)) => return answer(Err(e)),
            Err(_) => return answer(Err(ErrorKind::NotAvailable)),
        }
    }
    answer(Err(ErrorKind::ConcurrentTransactions))
}
