//! The Kafka error codes Shoal answers with, and how internal outcomes map onto them.

use shoal_coordinator::ErrorKind;

pub const NONE: i16 = 0;
pub const OFFSET_OUT_OF_RANGE: i16 = 1;
pub const CORRUPT_MESSAGE: i16 = 2;
pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
pub const LEADER_NOT_AVAILABLE: i16 = 5;
pub const MESSAGE_TOO_LARGE: i16 = 10;
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
        // Retriable for clients: they refresh metadata and try again.
        Some(ErrorKind::NotAvailable) => LEADER_NOT_AVAILABLE,
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
        ErrorKind::MessageTooLarge => "Record batch is larger than produce.buffer_max_bytes.",
        ErrorKind::NotAvailable => "The broker is shutting down or overloaded; retry.",
    }
}
