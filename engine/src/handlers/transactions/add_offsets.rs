//! AddOffsetsToTxn: the transaction will commit offsets of this group (TxnOffsetCommit).

use shoal_coordinator::acl::Operation;
use shoal_coordinator::commands::AddToTransaction;
use shoal_coordinator::ErrorKind;
use shoal_protocol::messages::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse};

use crate::context::Call;
use crate::kafka::error_codes;

pub async fn handle(call: &Call<'_>, request: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse {
    let id = request.transactional_id.0.as_str();
    let outcome = match super::check_transactional_id(call, id)
        .and_then(|()| call.check_group(Operation::Read, request.group_id.0.as_str()))
    {
        Err(e) => Err(e),
        Ok(()) => {
            let command = AddToTransaction {
                transactional_id: id.to_string(),
                producer_id: request.producer_id.0,
                producer_epoch: request.producer_epoch,
                partitions: Vec::new(),
            };
            match call.broker.shard.coordinator.run(command).await {
                Ok(result) => result,
                Err(_) => Err(ErrorKind::NotAvailable),
            }
        }
    };
    AddOffsetsToTxnResponse::default().with_error_code(error_codes::code_of(outcome.err()))
}
