//! One file per Kafka API, each declared once in `registry`, which decodes requests,
//! dispatches them and frames the answers. A handler never fails the connection: it answers
//! with Kafka error codes.

pub mod acls;
pub mod api_versions;
mod authorize;
pub mod client_quotas;
pub mod configs;
pub mod create_partitions;
pub mod create_topics;
pub mod delegation_tokens;
pub mod delete_records;
pub mod delete_topics;
pub mod describe_cluster;
pub mod describe_log_dirs;
pub mod describe_producers;
pub mod describe_topic_partitions;
pub mod diskless;
pub mod fetch;
pub mod groups;
pub mod init_producer_id;
pub mod list_offsets;
pub mod metadata;
pub mod offset_for_leader_epoch;
pub mod produce;
pub mod registry;
pub mod sasl;
pub mod scram_credentials;
mod throttling;
pub mod topics;
pub mod transactions;
pub mod update_features;
