//! EndTxn: the transaction is prepared to commit or abort (durably: a crash from here on
//! ends it the same way), its markers are written, and then it is complete. From v5
//! (transactions V2, KIP-890) the producer's epoch moves on at every end, and the answer
//! names the producer id and epoch it goes on with.

use shoal_coordinator::commands::EndTransaction;
use shoal_coordinator::{ErrorKind, TransactionEnd};
use shoal_protocol::messages::{EndTxnRequest, EndTxnResponse};

use crate::context::Call;
use crate::kafka::error_codes;

/// The EndTxn version of transactions V2: the Java client sends it only then.
const TRANSACTIONS_V2_FROM: i16 = 5;

pub async fn handle(call: &Call<'_>, request: EndTxnRequest) -> EndTxnResponse {
    let id = request.transactional_id.0.as_str();
    let outcome = match super::check_transactional_id(call, id) {
        Err(e) => Err(e),
        Ok(()) => end(call, &request).await,
    };
    let response = EndTxnResponse::default();
    match outcome {
        Ok(end) if call.version >= TRANSACTIONS_V2_FROM => response
            .with_producer_id(end.producer_id.into())
            .with_producer_epoch(end.producer_epoch),
        Ok(_) => response,
        Err(e) => response.with_error_code(error_codes::code_of(Some(e))),
    }
}

async fn end(call: &Call<'_>, request: &EndTxnRequest) -> Result<TransactionEnd, ErrorKind> {
    let shard = &call.broker.shard;
    let command = EndTransaction {
        transactional_id: request.transactional_id.0.to_string(),
        producer_id: request.producer_id.0,
        producer_epoch: request.producer_epoch,
        commit: request.committed,
        bumps_epoch: call.version >= TRANSACTIONS_V2_FROM,
    };
    let mut end = match shard.coordinator.run(command).await {
        Ok(end) => end?,
        Err(_) => return Err(ErrorKind::NotAvailable),
    };
    if let Some(ending) = end.ending.take() {
        // Prepared, so it will end even if this fails: the client may retry or carry on.
        shard
            .end_transaction(ending)
            .await
            .map_err(|_| ErrorKind::ConcurrentTransactions)?;
    }
    Ok(end)
}
