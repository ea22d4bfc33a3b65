//! EndTxn: the transaction is prepared to commit or abort (durably: a crash from here on
//! ends it the same way), its markers are written, and then it is complete.

use shoal_coordinator::commands::EndTransaction;
use shoal_coordinator::ErrorKind;
use shoal_protocol::messages::{EndTxnRequest, EndTxnResponse};

use crate::context::Call;
use crate::kafka::error_codes;

pub async fn handle(call: &Call<'_>, request: EndTxnRequest) -> EndTxnResponse {
    let id = request.transactional_id.0.as_str();
    let outcome = match super::check_transactional_id(call, id) {
        Err(e) => Err(e),
        Ok(()) => end(call, &request).await,
    };
    EndTxnResponse::default().with_error_code(error_codes::code_of(outcome.err()))
}

async fn end(call: &Call<'_>, request: &EndTxnRequest) -> Result<(), ErrorKind> {
    let shard = &call.broker.shard;
    let command = EndTransaction {
        transactional_id: request.transactional_id.0.to_string(),
        producer_id: request.producer_id.0,
        producer_epoch: request.producer_epoch,
        commit: request.committed,
    };
    let ending = match shard.coordinator.run(command).await {
        Ok(ending) => ending?,
        Err(_) => return Err(ErrorKind::NotAvailable),
    };
    match ending {
        // Prepared, so it will end even if this fails: the client may retry or carry on.
        Some(ending) => shard
            .end_transaction(ending)
            .await
            .map_err(|_| ErrorKind::ConcurrentTransactions),
        None => Ok(()),
    }
}
