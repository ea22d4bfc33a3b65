use thiserror::Error;

/// What the state machine refuses to load: a snapshot image that does not decode.
#[derive(Debug, Error)]
pub enum CoordinatorError {
    #[error("snapshot malformed: {0}")]
    MalformedSnapshot(String),
}

/// Per-item outcome of a coordinator operation. The engine maps these to Kafka error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    UnknownTopicOrPartition,
    TopicAlreadyExists,
    InvalidPartitions,
    InvalidTopic,
    OffsetOutOfRange,
    InvalidRequest,
    StorageError,
    CorruptMessage,
    /// Records that do not parse or disagree with their batch header (Kafka's INVALID_RECORD).
    InvalidRecord,
    /// A record without a key for a compacted topic (INVALID_RECORD too, with its reason).
    KeylessRecord,
    /// A record without the id of a schema registered under its subject, on a topic with
    /// schema validation (INVALID_RECORD too, with its reason).
    UnregisteredSchema,
    /// A record whose data does not decode with the schema its id names, on a topic with
    /// `shoal.schema.validation.decode` (INVALID_RECORD too, with its reason).
    UndecodableRecord,
    InvalidTimestamp,
    UnsupportedCompressionType,
    OutOfOrderSequence,
    InvalidProducerEpoch,
    MessageTooLarge,
    InvalidGroupId,
    OffsetMetadataTooLarge,
    /// A topic setting Shoal does not honour, or a value out of range.
    InvalidConfig,
    /// A produce to a partition that belongs to a mirror.
    ReadOnlyTopic,
    /// A named resource (a SCRAM credential) does not exist.
    ResourceNotFound,
    /// A mirror operation refused (KIP-1279 codes).
    Mirror(shoal_mirror::MirrorError),
    /// The client's principal may not do this (decided by the broker's ACLs, never by the
    /// coordinator; here so per-partition answers carry it like any other outcome).
    TopicAuthorizationFailed,
    GroupAuthorizationFailed,
    ClusterAuthorizationFailed,
    /// Over the client's `controller_mutation_rate` (decided by the broker, like ACLs).
    ThrottlingQuotaExceeded,
    /// The broker is shutting down or an internal queue closed.
    NotAvailable,
    /// In a cluster: another broker coordinates this group now.
    NotCoordinator,
    /// Not committed yet, and no longer waited for: the outcome is unknown (Kafka's
    /// REQUEST_TIMED_OUT, which producers retry).
    RequestTimedOut,
    // Transactions (Kafka's codes of the same names).
    InvalidTxnState,
    InvalidTransactionTimeout,
    ConcurrentTransactions,
    ProducerFenced,
    InvalidProducerIdMapping,
    TransactionalIdNotFound,
    TransactionalIdAuthorizationFailed,
    // Delegation tokens (Kafka's codes of the same names).
    DelegationTokenNotFound,
    DelegationTokenExpired,
    DelegationTokenOwnerMismatch,
    /// The coordinator keeps DELEGATION_TOKENS_MAX tokens already (Kafka's POLICY_VIOLATION).
    TooManyDelegationTokens,
    /// OffsetFetch with require_stable: offsets are pending in an open transaction.
    UnstableOffsetCommit,
}
