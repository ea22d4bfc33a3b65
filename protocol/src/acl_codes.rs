//! Kafka's ACL wire codes (CreateAcls, DescribeAcls, DeleteAcls): resource types, pattern
//! types, operations and permissions, each declared once, with the names Kafka's tools use.

pub const ANY: i8 = 1;
// Resource types.
pub const TOPIC: i8 = 2;
pub const GROUP: i8 = 3;
pub const CLUSTER: i8 = 4;
pub const TRANSACTIONAL_ID: i8 = 5;
pub const DELEGATION_TOKEN: i8 = 6;
pub const USER: i8 = 7;
// Pattern types.
pub const MATCH: i8 = 2;
pub const LITERAL: i8 = 3;
pub const PREFIXED: i8 = 4;
// Operations.
pub const ALL: i8 = 2;
pub const READ: i8 = 3;
pub const WRITE: i8 = 4;
pub const CREATE: i8 = 5;
pub const DELETE: i8 = 6;
pub const ALTER: i8 = 7;
pub const DESCRIBE: i8 = 8;
pub const CLUSTER_ACTION: i8 = 9;
pub const DESCRIBE_CONFIGS: i8 = 10;
pub const ALTER_CONFIGS: i8 = 11;
pub const IDEMPOTENT_WRITE: i8 = 12;
pub const CREATE_TOKENS: i8 = 13;
pub const DESCRIBE_TOKENS: i8 = 14;
// Permission types.
pub const DENY: i8 = 2;
pub const ALLOW: i8 = 3;

/// Resource types by the names `kafka-acls.sh` takes (`--topic`, `--group`, ...).
pub const RESOURCE_NAMES: [(&str, i8); 6] = [
    ("topic", TOPIC),
    ("group", GROUP),
    ("cluster", CLUSTER),
    ("transactional-id", TRANSACTIONAL_ID),
    ("delegation-token", DELEGATION_TOKEN),
    ("user", USER),
];

/// Operations by the names `kafka-acls.sh --operation` takes.
pub const OPERATION_NAMES: [(&str, i8); 14] = [
    ("any", ANY),
    ("all", ALL),
    ("read", READ),
    ("write", WRITE),
    ("create", CREATE),
    ("delete", DELETE),
    ("alter", ALTER),
    ("describe", DESCRIBE),
    ("cluster-action", CLUSTER_ACTION),
    ("describe-configs", DESCRIBE_CONFIGS),
    ("alter-configs", ALTER_CONFIGS),
    ("idempotent-write", IDEMPOTENT_WRITE),
    ("create-tokens", CREATE_TOKENS),
    ("describe-tokens", DESCRIBE_TOKENS),
];
