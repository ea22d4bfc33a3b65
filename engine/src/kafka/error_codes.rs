//! The Kafka error codes Shoal answers with, and how internal outcomes map onto them.

use shoal_coordinator::ErrorKind;
use shoal_mirror::MirrorError;

pub const NONE: i16 = 0;
pub const OFFSET_OUT_OF_RANGE: i16 = 1;
pub const CORRUPT_MESSAGE: i16 = 2;
pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
pub const LEADER_NOT_AVAILABLE: i16 = 5;
pub const MESSAGE_TOO_LARGE: i16 = 10;
pub const OFFSET_METADATA_TOO_LARGE: i16 = 12;
pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
pub const ILLEGAL_GENERATION: i16 = 22;
pub const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
pub const INVALID_GROUP_ID: i16 = 24;
pub const UNKNOWN_MEMBER_ID: i16 = 25;
pub const INVALID_SESSION_TIMEOUT: i16 = 26;
pub const REBALANCE_IN_PROGRESS: i16 = 27;
pub const INVALID_TOPIC_EXCEPTION: i16 = 17;
pub const INVALID_REQUIRED_ACKS: i16 = 21;
pub const UNSUPPORTED_VERSION: i16 = 35;
pub const TOPIC_ALREADY_EXISTS: i16 = 36;
pub const INVALID_PARTITIONS: i16 = 37;
pub const INVALID_REPLICATION_FACTOR: i16 = 38;
pub const INVALID_CONFIG: i16 = 40;
pub const INVALID_REQUEST: i16 = 42;
pub const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
pub const INVALID_PRODUCER_EPOCH: i16 = 47;
/// Transactions are not supported yet: a transactional InitProducerId gets INVALID_REQUEST.
pub const TRANSACTIONAL_ID_NOT_SUPPORTED: i16 = INVALID_REQUEST;
pub const KAFKA_STORAGE_ERROR: i16 = 56;
pub const NON_EMPTY_GROUP: i16 = 68;
pub const GROUP_ID_NOT_FOUND: i16 = 69;
pub const MEMBER_ID_REQUIRED: i16 = 79;
pub const GROUP_MAX_SIZE_REACHED: i16 = 81;
pub const FENCED_INSTANCE_ID: i16 = 82;
pub const GROUP_SUBSCRIBED_TO_TOPIC: i16 = 86;

/// KIP-1279's codes (the prototype's numbers; not final upstream). One table, here.
pub const READ_ONLY_TOPIC: i16 = 134;
pub const INVALID_MIRROR_NAME: i16 = 135;
pub const UNKNOWN_MIRROR: i16 = 136;
pub const TOPIC_ALREADY_IN_MIRROR: i16 = 137;
pub const TOPIC_NOT_IN_MIRROR: i16 = 138;
pub const MIRROR_TOPIC_ALREADY_PAUSED: i16 = 139;
pub const MIRROR_TOPIC_NOT_PAUSED: i16 = 140;
/// Not in the prototype's list: CreateMirror with a name in use.
pub const MIRROR_ALREADY_EXISTS: i16 = 141;
pub const UNKNOWN_TOPIC_ID: i16 = 100;

pub fn code_of(error: Option<ErrorKind>) -> i16 {
    match error {
        None => NONE,
        Some(ErrorKind::UnknownTopicOrPartition) => UNKNOWN_TOPIC_OR_PARTITION,
        Some(ErrorKind::TopicAlreadyExists) => TOPIC_ALREADY_EXISTS,
        Some(ErrorKind::InvalidPartitions) => INVALID_PARTITIONS,
        Some(ErrorKind::InvalidTopic) => INVALID_TOPIC_EXCEPTION,
        Some(ErrorKind::OffsetOutOfRange) => OFFSET_OUT_OF_RANGE,
        Some(ErrorKind::InvalidRequest) => INVALID_REQUEST,
        Some(ErrorKind::StorageError) => KAFKA_STORAGE_ERROR,
        Some(ErrorKind::CorruptMessage) => CORRUPT_MESSAGE,
        Some(ErrorKind::OutOfOrderSequence) => OUT_OF_ORDER_SEQUENCE_NUMBER,
        Some(ErrorKind::InvalidProducerEpoch) => INVALID_PRODUCER_EPOCH,
        Some(ErrorKind::MessageTooLarge) => MESSAGE_TOO_LARGE,
        Some(ErrorKind::InvalidGroupId) => INVALID_GROUP_ID,
        Some(ErrorKind::OffsetMetadataTooLarge) => OFFSET_METADATA_TOO_LARGE,
        Some(ErrorKind::InvalidConfig) => INVALID_CONFIG,
        Some(ErrorKind::UnknownMemberId) => UNKNOWN_MEMBER_ID,
        Some(ErrorKind::IllegalGeneration) => ILLEGAL_GENERATION,
        Some(ErrorKind::RebalanceInProgress) => REBALANCE_IN_PROGRESS,
        Some(ErrorKind::InconsistentGroupProtocol) => INCONSISTENT_GROUP_PROTOCOL,
        Some(ErrorKind::MemberIdRequired) => MEMBER_ID_REQUIRED,
        Some(ErrorKind::InvalidSessionTimeout) => INVALID_SESSION_TIMEOUT,
        Some(ErrorKind::FencedInstanceId) => FENCED_INSTANCE_ID,
        Some(ErrorKind::NonEmptyGroup) => NON_EMPTY_GROUP,
        Some(ErrorKind::GroupIdNotFound) => GROUP_ID_NOT_FOUND,
        Some(ErrorKind::GroupMaxSizeReached) => GROUP_MAX_SIZE_REACHED,
        Some(ErrorKind::GroupSubscribedToTopic) => GROUP_SUBSCRIBED_TO_TOPIC,
        Some(ErrorKind::TooManyGroups) => COORDINATOR_NOT_AVAILABLE,
        Some(ErrorKind::ReadOnlyTopic) => READ_ONLY_TOPIC,
        Some(ErrorKind::Mirror(e)) => mirror_code(e),
        // Retriable for clients: they refresh metadata and try again.
        Some(ErrorKind::NotAvailable) => LEADER_NOT_AVAILABLE,
    }
}

pub fn mirror_code(error: MirrorError) -> i16 {
    match error {
        MirrorError::InvalidRequest => INVALID_REQUEST,
        MirrorError::InvalidMirrorName => INVALID_MIRROR_NAME,
        MirrorError::UnknownMirror => UNKNOWN_MIRROR,
        MirrorError::MirrorAlreadyExists => MIRROR_ALREADY_EXISTS,
        MirrorError::TopicAlreadyInMirror => TOPIC_ALREADY_IN_MIRROR,
        MirrorError::TopicNotInMirror => TOPIC_NOT_IN_MIRROR,
        MirrorError::AlreadyPaused => MIRROR_TOPIC_ALREADY_PAUSED,
        MirrorError::NotPaused => MIRROR_TOPIC_NOT_PAUSED,
        MirrorError::InvalidConfig(_) => INVALID_CONFIG,
    }
}

/// A short human message for APIs whose responses carry one.
pub fn message_of(error: ErrorKind) -> &'static str {
    match error {
        ErrorKind::UnknownTopicOrPartition => "This server does not host this topic-partition.",
        ErrorKind::TopicAlreadyExists => "Topic already exists.",
        ErrorKind::InvalidPartitions => "Number of partitions must be between 1 and 10000.",
        ErrorKind::InvalidTopic => {
            "Topic names are 1-249 characters of ASCII letters, digits, '.', '_' and '-'."
        }
        ErrorKind::OffsetOutOfRange => "Offset out of range.",
        ErrorKind::InvalidRequest => "Transactional and control batches are not supported yet.",
        ErrorKind::StorageError => "The object store or coordinator log failed.",
        ErrorKind::CorruptMessage => "Record batch failed validation (magic 2, size, CRC-32C).",
        ErrorKind::OutOfOrderSequence => "Out of order sequence number for this producer.",
        ErrorKind::InvalidProducerEpoch => "Producer epoch is older than the current one.",
        ErrorKind::MessageTooLarge => {
            "Record batch is larger than max.message.bytes or produce.buffer_max_bytes."
        }
        ErrorKind::InvalidGroupId => "Group ids are 1-1024 bytes.",
        ErrorKind::OffsetMetadataTooLarge => "Offset metadata is larger than 4096 bytes.",
        ErrorKind::InvalidConfig => "Invalid or unsupported configuration.",
        ErrorKind::UnknownMemberId => "Unknown member id; rejoin the group.",
        ErrorKind::IllegalGeneration => "Stale generation; rejoin the group.",
        ErrorKind::RebalanceInProgress => "The group is rebalancing; rejoin it.",
        ErrorKind::InconsistentGroupProtocol => "No protocol in common with the group's members.",
        ErrorKind::MemberIdRequired => "Rejoin with the member id given.",
        ErrorKind::InvalidSessionTimeout => "Session timeout outside the broker's limits.",
        ErrorKind::FencedInstanceId => "Another member uses this group.instance.id.",
        ErrorKind::NonEmptyGroup => "The group has members.",
        ErrorKind::GroupIdNotFound => "No such group.",
        ErrorKind::GroupMaxSizeReached => "The group has reached its maximum size.",
        ErrorKind::GroupSubscribedToTopic => "The group is subscribed to this topic.",
        ErrorKind::TooManyGroups => "The broker holds as many active groups as it may.",
        ErrorKind::ReadOnlyTopic => "The topic is mirrored from another cluster: read-only.",
        ErrorKind::Mirror(_) => "The mirror operation was refused.",
        ErrorKind::NotAvailable => "The broker is shutting down or overloaded; retry.",
    }
}
