//! ACLs with Kafka's semantics: bindings of a resource pattern (literal, `*`, or prefixed) to
//! a principal, host, operation and permission; the filters Describe/DeleteAcls match them
//! with; and the decision for one request: deny beats allow, DESCRIBE is implied by READ,
//! WRITE, DELETE and ALTER, DESCRIBE_CONFIGS by ALTER_CONFIGS. I/O-free; the engine adds
//! super users and `allow.everyone.if.no.acl.found`.

use shoal_protocol::acl_codes as code;

/// What a request does to a resource, as a handler checks it (Kafka's AclOperation; the
/// bindings keep the wire's codes, `code()` gives them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    Read,
    Write,
    Create,
    Delete,
    Alter,
    Describe,
    ClusterAction,
    DescribeConfigs,
    AlterConfigs,
    IdempotentWrite,
    /// Creating delegation tokens owned by a user (on the USER resource).
    CreateTokens,
    /// Describing a user's delegation tokens (on the USER resource).
    DescribeTokens,
}

impl Operation {
    /// Kafka's name, as its documentation and tools print it.
    pub fn name(self) -> &'static str {
        match self {
            Operation::Read => "READ",
            Operation::Write => "WRITE",
            Operation::Create => "CREATE",
            Operation::Delete => "DELETE",
            Operation::Alter => "ALTER",
            Operation::Describe => "DESCRIBE",
            Operation::ClusterAction => "CLUSTER_ACTION",
            Operation::DescribeConfigs => "DESCRIBE_CONFIGS",
            Operation::AlterConfigs => "ALTER_CONFIGS",
            Operation::IdempotentWrite => "IDEMPOTENT_WRITE",
            Operation::CreateTokens => "CREATE_TOKENS",
            Operation::DescribeTokens => "DESCRIBE_TOKENS",
        }
    }

    pub fn code(self) -> i8 {
        match self {
            Operation::Read => code::READ,
            Operation::Write => code::WRITE,
            Operation::Create => code::CREATE,
            Operation::Delete => code::DELETE,
            Operation::Alter => code::ALTER,
            Operation::Describe => code::DESCRIBE,
            Operation::ClusterAction => code::CLUSTER_ACTION,
            Operation::DescribeConfigs => code::DESCRIBE_CONFIGS,
            Operation::AlterConfigs => code::ALTER_CONFIGS,
            Operation::IdempotentWrite => code::IDEMPOTENT_WRITE,
            Operation::CreateTokens => code::CREATE_TOKENS,
            Operation::DescribeTokens => code::DESCRIBE_TOKENS,
        }
    }
}

/// The kind of resource a check names (Kafka's ResourceType, those ACLs apply to).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResourceType {
    Topic,
    Group,
    Cluster,
    TransactionalId,
    /// A delegation token, by its id.
    DelegationToken,
    /// A user, by its principal (`User:alice`): the owner of delegation tokens.
    User,
}

impl ResourceType {
    pub fn code(self) -> i8 {
        match self {
            ResourceType::Topic => code::TOPIC,
            ResourceType::Group => code::GROUP,
            ResourceType::Cluster => code::CLUSTER,
            ResourceType::TransactionalId => code::TRANSACTIONAL_ID,
            ResourceType::DelegationToken => code::DELEGATION_TOKEN,
            ResourceType::User => code::USER,
        }
    }
}

/// The one cluster resource's name.
pub const CLUSTER_NAME: &str = "kafka-cluster";
/// A literal resource name that matches every resource of its type.
pub const WILDCARD: &str = "*";

/// One ACL: `principal` from `host` is allowed or denied `operation` on the resources
/// `pattern_type` and `resource_name` select.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AclBinding {
    pub resource_type: i8,
    pub resource_name: String,
    pub pattern_type: i8,
    /// "User:alice", or "User:*" for every user.
    pub principal: String,
    /// An IP address, or "*".
    pub host: String,
    pub operation: i8,
    pub permission: i8,
}

/// What Describe/DeleteAcls select: None and ANY match anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclFilter {
    pub resource_type: i8,
    pub resource_name: Option<String>,
    pub pattern_type: i8,
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: i8,
    pub permission: i8,
}

impl AclBinding {
    /// Why this binding cannot be created, if it cannot.
    pub fn invalid(&self) -> Option<&'static str> {
        if ![
            code::TOPIC,
            code::GROUP,
            code::CLUSTER,
            code::TRANSACTIONAL_ID,
            code::DELEGATION_TOKEN,
            code::USER,
        ]
        .contains(&self.resource_type)
        {
            return Some("unsupported resource type");
        }
        if self.pattern_type != code::LITERAL && self.pattern_type != code::PREFIXED {
            return Some("the pattern type must be LITERAL or PREFIXED");
        }
        if self.resource_name.is_empty() {
            return Some("empty resource name");
        }
        if self.resource_type == code::CLUSTER
            && (self.resource_name != CLUSTER_NAME || self.pattern_type != code::LITERAL)
        {
            return Some("the cluster resource is named kafka-cluster");
        }
        if !(code::ALL..=code::DESCRIBE_TOKENS).contains(&self.operation) {
            return Some("unsupported operation");
        }
        if self.permission != code::ALLOW && self.permission != code::DENY {
            return Some("the permission must be ALLOW or DENY");
        }
        match self.principal.split_once(':') {
            Some((kind, name)) if !kind.is_empty() && !name.is_empty() => {}
            _ => return Some("a principal is Type:name, e.g. User:alice"),
        }
        if self.host.is_empty() {
            return Some("empty host (use * for any)");
        }
        None
    }

    /// Whether this binding's pattern selects the resource.
    fn covers(&self, resource_type: i8, name: &str) -> bool {
        self.resource_type == resource_type
            && match self.pattern_type {
                code::LITERAL => self.resource_name == name || self.resource_name == WILDCARD,
                code::PREFIXED => name.starts_with(&self.resource_name),
                _ => false,
            }
    }

    /// Whether this binding's operation grants (or denies) `operation`.
    fn applies_to(&self, operation: i8) -> bool {
        if self.operation == code::ALL || self.operation == operation {
            return true;
        }
        // Kafka's implied operations: only for ALLOW.
        self.permission == code::ALLOW
            && match operation {
                code::DESCRIBE => {
                    [code::READ, code::WRITE, code::DELETE, code::ALTER].contains(&self.operation)
                }
                code::DESCRIBE_CONFIGS => self.operation == code::ALTER_CONFIGS,
                _ => false,
            }
    }
}

impl AclFilter {
    pub fn matches(&self, b: &AclBinding) -> bool {
        let type_ok = self.resource_type == code::ANY || self.resource_type == b.resource_type;
        let pattern_ok = match (&self.resource_name, self.pattern_type) {
            (None, code::ANY | code::MATCH) => true,
            (None, pattern) => pattern == b.pattern_type,
            (Some(name), code::ANY) => &b.resource_name == name,
            (Some(name), code::MATCH) => b.covers(b.resource_type, name),
            (Some(name), pattern) => pattern == b.pattern_type && &b.resource_name == name,
        };
        let principal_ok = self.principal.as_ref().is_none_or(|p| p == &b.principal);
        let host_ok = self.host.as_ref().is_none_or(|h| h == &b.host);
        let operation_ok = self.operation == code::ANY || self.operation == b.operation;
        let permission_ok = self.permission == code::ANY || self.permission == b.permission;
        type_ok && pattern_ok && principal_ok && host_ok && operation_ok && permission_ok
    }
}

/// The outcome of checking one operation against the ACLs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allowed,
    Denied,
    /// No ACL names this resource at all: `allow.everyone.if.no.acl.found` decides.
    NoAclForResource,
}

impl Decision {
    /// Whether it allows, `allow_if_no_acl` being the authorizer's
    /// `allow.everyone.if.no.acl.found`.
    pub fn allows(self, allow_if_no_acl: bool) -> bool {
        match self {
            Decision::Allowed => true,
            Decision::Denied => false,
            Decision::NoAclForResource => allow_if_no_acl,
        }
    }
}

/// Decides whether `principal` ("User:alice") from `host` may do `operation` on a resource.
pub fn decide<'a>(
    bindings: impl IntoIterator<Item = &'a AclBinding>,
    principal: &str,
    host: &str,
    operation: Operation,
    resource_type: ResourceType,
    resource_name: &str,
) -> Decision {
    let (operation, resource_type) = (operation.code(), resource_type.code());
    let wildcard_principal = principal
        .split_once(':')
        .map(|(kind, _)| format!("{kind}:*"))
        .unwrap_or_default();
    let mut any_for_resource = false;
    let mut allowed = false;
    for b in bindings {
        if !b.covers(resource_type, resource_name) {
            continue;
        }
        any_for_resource = true;
        let who = b.principal == principal || b.principal == wildcard_principal;
        let from = b.host == WILDCARD || b.host == host;
        if !(who && from && b.applies_to(operation)) {
            continue;
        }
        if b.permission == code::DENY {
            return Decision::Denied;
        }
        allowed = true;
    }
    match (allowed, any_for_resource) {
        (true, _) => Decision::Allowed,
        (false, true) => Decision::Denied,
        (false, false) => Decision::NoAclForResource,
    }
}

/// Whether `principal` from `host` is allowed `operation` on at least one resource of
/// `resource_type` (Kafka's `authorizeByResourceType`, which lets a principal that may WRITE
/// to some topic get an idempotent producer id): some ALLOW applies and no DENY covers every
/// resource of the type (a `*` literal or an empty prefix).
pub fn allowed_on_some<'a>(
    bindings: impl IntoIterator<Item = &'a AclBinding> + Clone,
    principal: &str,
    host: &str,
    operation: Operation,
    resource_type: ResourceType,
) -> bool {
    let (operation, resource_type) = (operation.code(), resource_type.code());
    let wildcard_principal = principal
        .split_once(':')
        .map(|(kind, _)| format!("{kind}:*"))
        .unwrap_or_default();
    let applies = |b: &AclBinding| {
        b.resource_type == resource_type
            && (b.principal == principal || b.principal == wildcard_principal)
            && (b.host == WILDCARD || b.host == host)
            && b.applies_to(operation)
    };
    let denied_everywhere = bindings.clone().into_iter().any(|b| {
        applies(b)
            && b.permission == code::DENY
            && (b.resource_name == WILDCARD && b.pattern_type == code::LITERAL
                || b.resource_name.is_empty() && b.pattern_type == code::PREFIXED)
    });
    !denied_everywhere
        && bindings
            .into_iter()
            .any(|b| applies(b) && b.permission == code::ALLOW)
}

#[cfg(test)]
mod tests {
    use super::code::*;
    use super::*;

    fn binding(
        name: &str,
        pattern: i8,
        principal: &str,
        operation: i8,
        permission: i8,
    ) -> AclBinding {
        AclBinding {
            resource_type: TOPIC,
            resource_name: name.into(),
            pattern_type: pattern,
            principal: principal.into(),
            host: "*".into(),
            operation,
            permission,
        }
    }

    #[test]
    fn allowed_on_some_needs_an_allow_not_covered_by_a_deny_everywhere() {
        let one_topic = [binding("orders", LITERAL, "User:alice", WRITE, ALLOW)];
        let on_some = |acls: &[AclBinding], p| {
            allowed_on_some(acls, p, "h", Operation::Write, ResourceType::Topic)
        };
        assert!(on_some(&one_topic, "User:alice"));
        assert!(!on_some(&one_topic, "User:bob"));
        let mut denied = one_topic.to_vec();
        denied.push(binding("*", LITERAL, "User:alice", WRITE, DENY));
        assert!(!on_some(&denied, "User:alice"));
    }

    #[test]
    fn literal_prefixed_and_wildcard_patterns_select_topics() {
        let acls = [
            binding("orders", LITERAL, "User:alice", READ, ALLOW),
            binding("logs-", PREFIXED, "User:bob", WRITE, ALLOW),
            binding("*", LITERAL, "User:carol", DESCRIBE, ALLOW),
        ];
        let d = |p, op, name| decide(&acls, p, "10.0.0.1", op, ResourceType::Topic, name);
        assert_eq!(
            d("User:alice", Operation::Read, "orders"),
            Decision::Allowed
        );
        assert_eq!(
            d("User:alice", Operation::Write, "orders"),
            Decision::Denied
        );
        assert_eq!(
            d("User:alice", Operation::Describe, "orders"),
            Decision::Allowed,
            "READ implies DESCRIBE"
        );
        assert_eq!(
            d("User:bob", Operation::Write, "logs-app"),
            Decision::Allowed
        );
        assert_eq!(
            d("User:bob", Operation::Write, "log"),
            Decision::Denied,
            "carol's * names every topic"
        );
        assert_eq!(
            d("User:carol", Operation::Describe, "anything"),
            Decision::Allowed
        );
        assert_eq!(
            d("User:carol", Operation::Read, "anything"),
            Decision::Denied
        );
        assert_eq!(
            decide(
                &acls[..2],
                "User:x",
                "h",
                Operation::Read,
                ResourceType::Topic,
                "nothing-names-this"
            ),
            Decision::NoAclForResource
        );
    }

    #[test]
    fn a_deny_beats_an_allow_and_is_not_implied() {
        let acls = [
            binding("t", LITERAL, "User:*", ALL, ALLOW),
            binding("t", LITERAL, "User:mallory", WRITE, DENY),
        ];
        let d = |p, op| decide(&acls, p, "h", op, ResourceType::Topic, "t");
        assert_eq!(d("User:alice", Operation::Write), Decision::Allowed);
        assert_eq!(d("User:mallory", Operation::Write), Decision::Denied);
        assert_eq!(
            d("User:mallory", Operation::Describe),
            Decision::Allowed,
            "a WRITE deny does not deny DESCRIBE"
        );
    }

    #[test]
    fn hosts_must_match() {
        let mut acl = binding("t", LITERAL, "User:alice", READ, ALLOW);
        acl.host = "10.0.0.1".into();
        assert_eq!(
            decide(
                [&acl],
                "User:alice",
                "10.0.0.1",
                Operation::Read,
                ResourceType::Topic,
                "t"
            ),
            Decision::Allowed
        );
        assert_eq!(
            decide(
                [&acl],
                "User:alice",
                "10.0.0.2",
                Operation::Read,
                ResourceType::Topic,
                "t"
            ),
            Decision::Denied
        );
    }

    #[test]
    fn filters_select_as_kafka_describes() {
        let literal = binding("orders", LITERAL, "User:alice", READ, ALLOW);
        let prefixed = binding("ord", PREFIXED, "User:alice", READ, ALLOW);
        let filter = |name: Option<&str>, pattern| AclFilter {
            resource_type: ANY,
            resource_name: name.map(str::to_string),
            pattern_type: pattern,
            principal: None,
            host: None,
            operation: ANY,
            permission: ANY,
        };
        assert!(filter(None, ANY).matches(&prefixed));
        assert!(filter(Some("orders"), LITERAL).matches(&literal));
        assert!(!filter(Some("orders"), LITERAL).matches(&prefixed));
        assert!(
            filter(Some("orders"), MATCH).matches(&prefixed),
            "MATCH: what applies to orders"
        );
        assert!(!filter(Some("ord"), ANY).matches(&literal));
        assert!(filter(Some("ord"), ANY).matches(&prefixed));
    }

    #[test]
    fn malformed_bindings_are_refused() {
        let ok = binding("t", LITERAL, "User:alice", READ, ALLOW);
        assert_eq!(ok.invalid(), None);
        let mut bad = ok.clone();
        bad.pattern_type = MATCH;
        assert!(bad.invalid().is_some());
        let mut bad = ok.clone();
        bad.principal = "alice".into();
        assert!(bad.invalid().is_some());
        let mut bad = ok;
        bad.resource_type = CLUSTER;
        assert!(
            bad.invalid().is_some(),
            "the cluster is named kafka-cluster"
        );
    }
}
