//! CreateAcls (30), DescribeAcls (29) and DeleteAcls (31), as Kafka's admin clients use them:
//! changing ACLs needs ALTER on the cluster, reading them DESCRIBE. The bindings are kept by
//! the coordinator and reach every shard with the topic catalogue.

use std::collections::BTreeMap;

use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::acl::{AclBinding, AclFilter, Operation};
use shoal_coordinator::commands::{CreateAcls, DeleteAcls, DescribeAcls};
use shoal_protocol::messages::create_acls_response::AclCreationResult;
use shoal_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use shoal_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use shoal_protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse,
};
use shoal_protocol::ResponseError;

use crate::context::Call;

pub async fn create(call: &Call<'_>, request: CreateAclsRequest) -> CreateAclsResponse {
    let count = request.creations.len();
    if !call.authorized_on_cluster(Operation::Alter) {
        let denied = vec![failed(ResponseError::ClusterAuthorizationFailed, ""); count];
        return CreateAclsResponse::default().with_results(denied);
    }
    let bindings = request
        .creations
        .into_iter()
        .map(|c| AclBinding {
            resource_type: c.resource_type,
            resource_name: c.resource_name.to_string(),
            pattern_type: c.resource_pattern_type,
            principal: c.principal.to_string(),
            host: c.host.to_string(),
            operation: c.operation,
            permission: c.permission_type,
        })
        .collect();
    let results = match call
        .broker
        .shard
        .coordinator
        .run(CreateAcls { bindings })
        .await
    {
        Ok(outcomes) => outcomes
            .into_iter()
            .map(|outcome| match outcome {
                Ok(()) => AclCreationResult::default(),
                Err(why) => failed(ResponseError::InvalidRequest, why),
            })
            .collect(),
        Err(_) => vec![failed(ResponseError::CoordinatorNotAvailable, ""); count],
    };
    CreateAclsResponse::default().with_results(results)
}

pub async fn describe(call: &Call<'_>, request: DescribeAclsRequest) -> DescribeAclsResponse {
    if !call.authorized_on_cluster(Operation::Describe) {
        return DescribeAclsResponse::default()
            .with_error_code(ResponseError::ClusterAuthorizationFailed.code());
    }
    let filter = AclFilter {
        resource_type: request.resource_type_filter,
        resource_name: request.resource_name_filter.map(|n| n.to_string()),
        pattern_type: request.pattern_type_filter,
        principal: request.principal_filter.map(|p| p.to_string()),
        host: request.host_filter.map(|h| h.to_string()),
        operation: request.operation,
        permission: request.permission_type,
    };
    let Ok(found) = call
        .broker
        .shard
        .coordinator
        .run(DescribeAcls { filter })
        .await
    else {
        return DescribeAclsResponse::default()
            .with_error_code(ResponseError::CoordinatorNotAvailable.code());
    };
    let mut by_resource: BTreeMap<(i8, String, i8), Vec<AclDescription>> = BTreeMap::new();
    for b in found {
        by_resource
            .entry((b.resource_type, b.resource_name, b.pattern_type))
            .or_default()
            .push(
                AclDescription::default()
                    .with_principal(StrBytes::from_string(b.principal))
                    .with_host(StrBytes::from_string(b.host))
                    .with_operation(b.operation)
                    .with_permission_type(b.permission),
            );
    }
    let resources = by_resource
        .into_iter()
        .map(|((resource_type, name, pattern_type), acls)| {
            DescribeAclsResource::default()
                .with_resource_type(resource_type)
                .with_resource_name(StrBytes::from_string(name))
                .with_pattern_type(pattern_type)
                .with_acls(acls)
        })
        .collect();
    DescribeAclsResponse::default().with_resources(resources)
}

pub async fn delete(call: &Call<'_>, request: DeleteAclsRequest) -> DeleteAclsResponse {
    let count = request.filters.len();
    let result_with =
        |error: ResponseError| DeleteAclsFilterResult::default().with_error_code(error.code());
    if !call.authorized_on_cluster(Operation::Alter) {
        let denied = vec![result_with(ResponseError::ClusterAuthorizationFailed); count];
        return DeleteAclsResponse::default().with_filter_results(denied);
    }
    let filters = request
        .filters
        .into_iter()
        .map(|f| AclFilter {
            resource_type: f.resource_type_filter,
            resource_name: f.resource_name_filter.map(|n| n.to_string()),
            pattern_type: f.pattern_type_filter,
            principal: f.principal_filter.map(|p| p.to_string()),
            host: f.host_filter.map(|h| h.to_string()),
            operation: f.operation,
            permission: f.permission_type,
        })
        .collect();
    let results = match call
        .broker
        .shard
        .coordinator
        .run(DeleteAcls { filters })
        .await
    {
        Ok(deleted) => deleted
            .into_iter()
            .map(|matched| {
                DeleteAclsFilterResult::default().with_matching_acls(
                    matched
                        .into_iter()
                        .map(|b| {
                            DeleteAclsMatchingAcl::default()
                                .with_resource_type(b.resource_type)
                                .with_resource_name(StrBytes::from_string(b.resource_name))
                                .with_pattern_type(b.pattern_type)
                                .with_principal(StrBytes::from_string(b.principal))
                                .with_host(StrBytes::from_string(b.host))
                                .with_operation(b.operation)
                                .with_permission_type(b.permission)
                        })
                        .collect(),
                )
            })
            .collect(),
        Err(_) => vec![result_with(ResponseError::CoordinatorNotAvailable); count],
    };
    DeleteAclsResponse::default().with_filter_results(results)
}

fn failed(error: ResponseError, why: &'static str) -> AclCreationResult {
    AclCreationResult::default()
        .with_error_code(error.code())
        .with_error_message((!why.is_empty()).then(|| StrBytes::from_static_str(why)))
}
