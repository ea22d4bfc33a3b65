//! How internal outcomes map onto the wire's error codes (the table itself is
//! `shoal_protocol::codes`), and the messages that go with them.

use shoal_coordinator::ErrorKind;
use shoal_mirror::MirrorError;
use shoal_protocol::{ErrorCode, MirrorCode, ResponseError};
use shoal_shards::groups::GroupError;

pub use shoal_protocol::codes::NONE;

/// An outcome an answer carries: the coordinator's, or the group coordinator's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Coordinator(ErrorKind),
    Group(GroupError),
}

impl From<ErrorKind> for Outcome {
    fn from(error: ErrorKind) -> Self {
        Outcome::Coordinator(error)
    }
}

impl From<GroupError> for Outcome {
    fn from(error: GroupError) -> Self {
        Outcome::Group(error)
    }
}

/// The code a client sees for an outcome.
pub fn outcome_code(outcome: Outcome) -> ErrorCode {
    match outcome {
        Outcome::Coordinator(error) => error_code(error),
        Outcome::Group(error) => group_code(error),
    }
}

/// The code a client sees for the group coordinator's refusal.
pub fn group_code(error: GroupError) -> ErrorCode {
    use ResponseError as K;
    ErrorCode::Kafka(match error {
        GroupError::UnknownMemberId => K::UnknownMemberId,
        GroupError::IllegalGeneration => K::IllegalGeneration,
        GroupError::RebalanceInProgress => K::RebalanceInProgress,
        GroupError::InconsistentGroupProtocol => K::InconsistentGroupProtocol,
        GroupError::MemberIdRequired => K::MemberIdRequired,
        GroupError::InvalidSessionTimeout => K::InvalidSessionTimeout,
        GroupError::FencedInstanceId => K::FencedInstanceId,
        GroupError::NonEmptyGroup => K::NonEmptyGroup,
        GroupError::GroupIdNotFound => K::GroupIdNotFound,
        GroupError::GroupMaxSizeReached => K::GroupMaxSizeReached,
        GroupError::GroupSubscribedToTopic => K::GroupSubscribedToTopic,
        GroupError::TooManyGroups => K::CoordinatorNotAvailable,
        GroupError::InvalidRequest => K::InvalidRequest,
        GroupError::NotCoordinator => K::NotCoordinator,
        GroupError::CoordinatorNotAvailable => K::CoordinatorNotAvailable,
        GroupError::InvalidGroupId => K::InvalidGroupId,
        GroupError::FencedMemberEpoch => K::FencedMemberEpoch,
        GroupError::UnreleasedInstanceId => K::UnreleasedInstanceId,
        GroupError::UnsupportedAssignor => K::UnsupportedAssignor,
        GroupError::StaleMemberEpoch => K::StaleMemberEpoch,
        GroupError::InvalidRegularExpression => K::InvalidRegularExpression,
        GroupError::ShareSessionNotFound => K::ShareSessionNotFound,
        GroupError::InvalidShareSessionEpoch => K::InvalidShareSessionEpoch,
        GroupError::ShareSessionLimitReached => K::ShareSessionLimitReached,
        GroupError::InvalidRecordState => K::InvalidRecordState,
        GroupError::NotLeaderOrFollower => K::NotLeaderOrFollower,
        GroupError::StreamsInvalidTopology => K::StreamsInvalidTopology,
        GroupError::StreamsInvalidTopologyEpoch => K::StreamsInvalidTopologyEpoch,
        // Retriable, as for the coordinator's NotAvailable.
        GroupError::NotAvailable => K::LeaderNotAvailable,
    })
}

/// The code a client sees for the coordinator's outcome.
pub fn error_code(error: ErrorKind) -> ErrorCode {
    use ResponseError as K;
    ErrorCode::Kafka(match error {
        ErrorKind::UnknownTopicOrPartition => K::UnknownTopicOrPartition,
        ErrorKind::TopicAlreadyExists => K::TopicAlreadyExists,
        ErrorKind::InvalidPartitions => K::InvalidPartitions,
        ErrorKind::InvalidTopic => K::InvalidTopicException,
        ErrorKind::OffsetOutOfRange => K::OffsetOutOfRange,
        ErrorKind::InvalidRequest => K::InvalidRequest,
        ErrorKind::StorageError => K::KafkaStorageError,
        ErrorKind::CorruptMessage => K::CorruptMessage,
        ErrorKind::InvalidRecord
        | ErrorKind::KeylessRecord
        | ErrorKind::UnregisteredSchema
        | ErrorKind::UndecodableRecord => K::InvalidRecord,
        ErrorKind::InvalidTimestamp => K::InvalidTimestamp,
        ErrorKind::UnsupportedCompressionType => K::UnsupportedCompressionType,
        ErrorKind::OutOfOrderSequence => K::OutOfOrderSequenceNumber,
        ErrorKind::InvalidProducerEpoch => K::InvalidProducerEpoch,
        ErrorKind::MessageTooLarge => K::MessageTooLarge,
        ErrorKind::InvalidGroupId => K::InvalidGroupId,
        ErrorKind::OffsetMetadataTooLarge => K::OffsetMetadataTooLarge,
        ErrorKind::InvalidConfig => K::InvalidConfig,
        ErrorKind::ResourceNotFound => K::ResourceNotFound,
        ErrorKind::TopicAuthorizationFailed => K::TopicAuthorizationFailed,
        ErrorKind::GroupAuthorizationFailed => K::GroupAuthorizationFailed,
        ErrorKind::ClusterAuthorizationFailed => K::ClusterAuthorizationFailed,
        ErrorKind::ReadOnlyTopic => return ErrorCode::Mirror(MirrorCode::ReadOnlyTopic),
        ErrorKind::Mirror(e) => return mirror_code(e),
        // Retriable for clients: they refresh metadata and try again.
        ErrorKind::NotAvailable => K::LeaderNotAvailable,
        ErrorKind::ThrottlingQuotaExceeded => K::ThrottlingQuotaExceeded,
        ErrorKind::NotCoordinator => K::NotCoordinator,
        ErrorKind::RequestTimedOut => K::RequestTimedOut,
        ErrorKind::InvalidTxnState => K::InvalidTxnState,
        ErrorKind::InvalidTransactionTimeout => K::InvalidTransactionTimeout,
        ErrorKind::ConcurrentTransactions => K::ConcurrentTransactions,
        ErrorKind::ProducerFenced => K::ProducerFenced,
        ErrorKind::InvalidProducerIdMapping => K::InvalidProducerIdMapping,
        ErrorKind::TransactionalIdNotFound => K::TransactionalIdNotFound,
        ErrorKind::TransactionalIdAuthorizationFailed => K::TransactionalIdAuthorizationFailed,
        ErrorKind::UnstableOffsetCommit => K::UnstableOffsetCommit,
        ErrorKind::DelegationTokenNotFound => K::DelegationTokenNotFound,
        ErrorKind::DelegationTokenExpired => K::DelegationTokenExpired,
        ErrorKind::DelegationTokenOwnerMismatch => K::DelegationTokenOwnerMismatch,
        ErrorKind::TooManyDelegationTokens => K::PolicyViolation,
    })
}

/// The wire value of an outcome: 0 when there is no error.
pub fn code_of(error: Option<impl Into<Outcome>>) -> i16 {
    shoal_protocol::codes::code_of(error.map(|e| outcome_code(e.into())))
}

pub fn mirror_code(error: MirrorError) -> ErrorCode {
    match error {
        MirrorError::InvalidRequest => ResponseError::InvalidRequest.into(),
        MirrorError::InvalidMirrorName => MirrorCode::InvalidMirrorName.into(),
        MirrorError::UnknownMirror => MirrorCode::UnknownMirror.into(),
        MirrorError::MirrorAlreadyExists => MirrorCode::MirrorAlreadyExists.into(),
        MirrorError::TopicAlreadyInMirror => MirrorCode::TopicAlreadyInMirror.into(),
        MirrorError::TopicNotInMirror => MirrorCode::TopicNotInMirror.into(),
        MirrorError::AlreadyPaused => MirrorCode::MirrorTopicAlreadyPaused.into(),
        MirrorError::NotPaused => MirrorCode::MirrorTopicNotPaused.into(),
        MirrorError::InvalidConfig(_) => ResponseError::InvalidConfig.into(),
    }
}
pub fn message_of(error: ErrorKind) -> &'static str {
    match error {
        ErrorKind::UnknownTopicOrPartition => "This server does not host this topic-partition.",
        ErrorKind::TopicAlreadyExists => "Topic already exists.",
        ErrorKind::InvalidPartitions => "Number of partitions must be between 1 and 10000.",
        ErrorKind::InvalidTopic => {
            "Topic names are 1-249 characters of ASCII letters, digits, '.', '_' and '-'."
        }
        ErrorKind::OffsetOutOfRange => "Offset out of range.",
        ErrorKind::InvalidRequest => {
            "The request is malformed or exceeds a bound (control batches come from brokers only)."
        }
        ErrorKind::StorageError => "The object store or coordinator log failed.",
        ErrorKind::CorruptMessage => {
            "Record batch failed validation (magic 2, size, CRC-32C, compression)."
        }
        ErrorKind::InvalidRecord => {
            "Records do not parse or disagree with their batch header (count, offset deltas)."
        }
        ErrorKind::KeylessRecord => "Compacted topic cannot accept message without key.",
        ErrorKind::UnregisteredSchema => {
            "The record does not start with a schema id (magic byte 0 and 4 bytes) registered \
             under its subject in the schema registry (confluent.key/value.schema.validation)."
        }
        ErrorKind::UndecodableRecord => {
            "The record's data does not decode with the schema its id names \
             (shoal.schema.validation.decode)."
        }
        ErrorKind::InvalidTimestamp => {
            "A record's timestamp is negative, or out of the topic's bounds of the broker's clock \
             (message.timestamp.before.max.ms, message.timestamp.after.max.ms)."
        }
        ErrorKind::UnsupportedCompressionType => {
            "zstd needs Produce v7 or later; the codec is not one Kafka defines."
        }
        ErrorKind::OutOfOrderSequence => "Out of order sequence number for this producer.",
        ErrorKind::InvalidProducerEpoch => "Producer epoch is older than the current one.",
        ErrorKind::MessageTooLarge => {
            "Record batch is larger than max.message.bytes or produce.buffer_max_bytes."
        }
        ErrorKind::InvalidGroupId => "Group ids are 1-1024 bytes.",
        ErrorKind::OffsetMetadataTooLarge => "Offset metadata is larger than 4096 bytes.",
        ErrorKind::InvalidConfig => "Invalid or unsupported configuration.",
        ErrorKind::ResourceNotFound => "No such resource.",
        ErrorKind::TopicAuthorizationFailed => "Not authorized to access this topic.",
        ErrorKind::GroupAuthorizationFailed => "Not authorized to access this group.",
        ErrorKind::ClusterAuthorizationFailed => "Not authorized on the cluster.",
        ErrorKind::ReadOnlyTopic => "The topic is mirrored from another cluster: read-only.",
        ErrorKind::Mirror(_) => "The mirror operation was refused.",
        ErrorKind::NotAvailable => "The broker is shutting down or overloaded; retry.",
        ErrorKind::ThrottlingQuotaExceeded => "The throttling quota has been exceeded.",
        ErrorKind::NotCoordinator => "Another broker coordinates this group now; look it up again.",
        ErrorKind::RequestTimedOut => {
            "The commit did not finish in time (is the coordinator's database reachable?); retry."
        }
        ErrorKind::InvalidTxnState => {
            "Not allowed in the transaction's state (is the partition added to it?)."
        }
        ErrorKind::InvalidTransactionTimeout => {
            "transaction.timeout.ms must be between 1 and 900000 (transaction.max.timeout.ms)."
        }
        ErrorKind::ConcurrentTransactions => "The previous transaction is still ending; retry.",
        ErrorKind::ProducerFenced => "A newer producer with this transactional.id fenced this one.",
        ErrorKind::InvalidProducerIdMapping => "This producer id is not the transactional id's.",
        ErrorKind::TransactionalIdNotFound => "No such transactional id.",
        ErrorKind::TransactionalIdAuthorizationFailed => {
            "Not authorized to use this transactional id."
        }
        ErrorKind::UnstableOffsetCommit => "Offsets are pending in an open transaction; retry.",
        ErrorKind::DelegationTokenNotFound => "No delegation token has this HMAC.",
        ErrorKind::DelegationTokenExpired => "The delegation token has expired.",
        ErrorKind::DelegationTokenOwnerMismatch => {
            "Only the token's owner and renewers may renew or expire it."
        }
        ErrorKind::TooManyDelegationTokens => {
            "The cluster keeps 100000 delegation tokens already; expire some first."
        }
    }
}
