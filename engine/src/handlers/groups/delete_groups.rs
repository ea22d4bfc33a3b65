use shoal_coordinator::commands::DeleteGroup;
use shoal_coordinator::ErrorKind;
use shoal_protocol::messages::delete_groups_response::DeletableGroupResult;
use shoal_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse};
use shoal_shards::groups::calls::ForgetGroup;
use shoal_shards::groups::GroupError;

use super::commit_request::{group_claim, run_under_claim};
use super::owned;
use crate::context::Broker;
use crate::context::Call;
use crate::kafka::error_codes::{self, Outcome};
use shoal_coordinator::acl::Operation;

pub async fn handle(call: &Call<'_>, request: DeleteGroupsRequest) -> DeleteGroupsResponse {
    let broker = call.broker;
    let mut results = Vec::with_capacity(request.groups_names.len());
    for group_id in request.groups_names {
        let name = owned(&group_id.0);
        let error = match call.check_group(Operation::Delete, &name) {
            Ok(()) => delete_group(broker, &name).await,
            Err(denied) => Some(denied.into()),
        };
        results.push(
            DeletableGroupResult::default()
                .with_group_id(group_id)
                .with_error_code(error_codes::code_of(error)),
        );
    }
    DeleteGroupsResponse::default().with_results(results)
}

/// Refused while the group has members; otherwise its offsets go too.
async fn delete_group(broker: &Broker, name: &str) -> Option<Outcome> {
    let membership = broker
        .shard
        .group_call(name, ForgetGroup(name.to_string()))
        .await
        .unwrap_or_else(Some);
    let had_members = match membership {
        None => true,
        Some(GroupError::GroupIdNotFound) => false,
        Some(error) => return Some(error.into()),
    };
    let claim = match group_claim(broker, name).await {
        Ok(claim) => claim,
        Err(refused) => return Some(refused),
    };
    let request = DeleteGroup {
        group: name.to_string(),
        claim,
    };
    // Deleted, the group's claim is gone from the log; refused, it was another broker's.
    let claim_gone =
        |reply: &Result<bool, ErrorKind>| matches!(reply, Ok(_) | Err(ErrorKind::NotCoordinator));
    match run_under_claim(broker, name, claim, request, claim_gone).await {
        Ok(Ok(had_offsets)) => {
            (!had_offsets && !had_members).then_some(GroupError::GroupIdNotFound.into())
        }
        Ok(Err(refused)) => Some(refused.into()),
        Err(_) => Some(ErrorKind::NotAvailable.into()),
    }
}
