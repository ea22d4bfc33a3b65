//! What a request's principal may do, by the ACLs: the checks every handler makes, with the
//! operation Kafka's documentation lists for its API. A handler may make only the checks the
//! registry declares for its API (asserted in debug builds, which the tests run). Off
//! (everything allowed) unless `[authorizer] enabled`.

use shoal_coordinator::acl::{self, Operation, ResourceType};
use shoal_coordinator::ErrorKind;

use shoal_shards::groups::consumer::group::TopicAccess;

use crate::context::AclCheck;
use crate::context::Call;

/// The operations Kafka reports for each resource type when a client asks which it may do.
pub const TOPIC_OPERATIONS: [Operation; 8] = [
    Operation::Read,
    Operation::Write,
    Operation::Create,
    Operation::Delete,
    Operation::Alter,
    Operation::Describe,
    Operation::DescribeConfigs,
    Operation::AlterConfigs,
];
pub const CLUSTER_OPERATIONS: [Operation; 7] = [
    Operation::Create,
    Operation::Alter,
    Operation::Describe,
    Operation::ClusterAction,
    Operation::DescribeConfigs,
    Operation::AlterConfigs,
    Operation::IdempotentWrite,
];
pub const GROUP_OPERATIONS: [Operation; 3] =
    [Operation::Read, Operation::Describe, Operation::Delete];

impl Call<'_> {
    /// Kafka's authorized-operations bit field: bit n set for each operation code n among
    /// `operations` the client may do on the resource.
    pub fn authorized_operations(
        &self,
        operations: &[Operation],
        resource_type: ResourceType,
        name: &str,
    ) -> i32 {
        operations
            .iter()
            .filter(|&&operation| self.allowed(operation, resource_type, name))
            .fold(0, |bits, &operation| bits | 1 << operation.code())
    }

    /// Whether the client may do `operation` on the resource: always when the authorizer is
    /// off, for super users, by the ACLs otherwise. A denial is logged at debug level.
    pub fn authorized(
        &self,
        operation: Operation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        self.expect_declared(operation, resource_type);
        self.allowed(operation, resource_type, name)
    }

    /// The decision itself, for reports of what a client may do as well as for checks.
    fn allowed(&self, operation: Operation, resource_type: ResourceType, name: &str) -> bool {
        let Some(principal) = self.principal_to_check() else {
            return true;
        };
        let config = &self.broker.config.authorizer;
        let view = self.broker.shard.topics.load();
        let decision = acl::decide(
            view.acls(),
            &principal,
            self.host(),
            operation,
            resource_type,
            name,
        );
        let allowed = decision.allows(config.allow_everyone_if_no_acl_found);
        if !allowed {
            tracing::debug!(%principal, host = self.host(), ?operation, ?resource_type, name, "denied by the ACLs");
        }
        allowed
    }

    /// `authorized` on the cluster resource.
    pub fn authorized_on_cluster(&self, operation: Operation) -> bool {
        self.authorized(operation, ResourceType::Cluster, acl::CLUSTER_NAME)
    }

    /// `operation` on the topic, or TOPIC_AUTHORIZATION_FAILED.
    pub fn check_topic(&self, operation: Operation, topic: &str) -> Result<(), ErrorKind> {
        self.authorized(operation, ResourceType::Topic, topic)
            .then_some(())
            .ok_or(ErrorKind::TopicAuthorizationFailed)
    }

    /// `operation` on the group, or GROUP_AUTHORIZATION_FAILED.
    pub fn check_group(&self, operation: Operation, group: &str) -> Result<(), ErrorKind> {
        self.authorized(operation, ResourceType::Group, group)
            .then_some(())
            .ok_or(ErrorKind::GroupAuthorizationFailed)
    }

    /// Whether a missing topic may be created by this client, as Kafka decides for
    /// CreateTopics and auto-creation: CREATE on the cluster or on the topic.
    pub fn may_create_topic(&self, topic: &str) -> bool {
        self.authorized_on_cluster(Operation::Create)
            || self.authorized(Operation::Create, ResourceType::Topic, topic)
    }

    /// Whether the client may do `operation` on some resource of the type (Kafka lets a
    /// principal that may WRITE to some topic have an idempotent producer id).
    pub fn authorized_on_some(&self, operation: Operation, resource_type: ResourceType) -> bool {
        self.expect_declared(operation, resource_type);
        let Some(principal) = self.principal_to_check() else {
            return true;
        };
        let view = self.broker.shard.topics.load();
        acl::allowed_on_some(
            view.acls(),
            &principal,
            self.host(),
            operation,
            resource_type,
        )
    }

    /// A check the registry does not declare for this API is a bug: the declaration is what
    /// `shoal apis` tells operators to grant.
    fn expect_declared(&self, operation: Operation, resource: ResourceType) {
        debug_assert!(
            self.checks.contains(&AclCheck {
                operation,
                resource
            }),
            "{operation:?} on {resource:?} is checked but not declared in the registry \
             ({:?})",
            self.checks
        );
    }

    /// The client's principal ("User:alice") when the ACLs decide for it: None when the
    /// authorizer is off or the principal is a super user.
    fn principal_to_check(&self) -> Option<String> {
        let config = &self.broker.config.authorizer;
        let principal = self.client.session.principal().to_string();
        (config.enabled && !config.super_users.contains(&principal)).then_some(principal)
    }

    /// Whose DESCRIBE ACLs decide which topics a consumer-protocol member's expression may
    /// match, on the group's shard (None: the authorizer is off, or a super user).
    pub fn topic_access(&self) -> Option<TopicAccess> {
        self.expect_declared(Operation::Describe, ResourceType::Topic);
        Some(TopicAccess {
            principal: self.principal_to_check()?,
            host: self.host().to_string(),
            allow_if_no_acl: self.broker.config.authorizer.allow_everyone_if_no_acl_found,
        })
    }

    /// The client's address without Kafka's leading "/".
    fn host(&self) -> &str {
        self.client.host.trim_start_matches('/')
    }
}
