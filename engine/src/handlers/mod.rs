//! One file per Kafka API. `handle` dispatches a parsed request to its handler and frames
//! the answer; a handler never fails the connection, it answers with Kafka error codes.

mod api_versions;
pub mod configs;
mod create_partitions;
mod create_topics;
mod delete_records;
mod delete_topics;
mod describe_cluster;
mod describe_producers;
mod diskless;
mod fetch;
mod groups;
mod init_producer_id;
mod list_offsets;
mod metadata;
mod offset_for_leader_epoch;
mod produce;
mod request;
mod topics;

use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::ApiKey;
use shoal_shards::Shard;

use crate::config::BrokerConfig;
use crate::diskless::wire::WireEncode;
use crate::kafka::codec;
use crate::kafka::versions;

pub use request::{parse_request, ClientInfo, MirrorRequest, ParsedRequest, RequestBody};

/// What every handler on a shard works with.
pub struct Broker {
    pub shard: Rc<Shard>,
    pub config: Arc<BrokerConfig>,
    pub advertised_host: String,
    pub advertised_port: i32,
    /// Bytes of requests being read or handled on this shard (`max_in_flight_request_bytes`).
    pub request_memory: Rc<glommio::sync::Semaphore>,
    /// Source offsets the mirror fetchers last saw, shared by all shards.
    pub mirror_status: Arc<crate::mirror::status::MirrorStatus>,
}

impl Broker {
    pub fn new(
        shard: Rc<Shard>,
        config: Arc<BrokerConfig>,
        mirror_status: Arc<crate::mirror::status::MirrorStatus>,
    ) -> Broker {
        let (advertised_host, advertised_port) = config.advertised();
        let request_memory = Rc::new(glommio::sync::Semaphore::new(
            config.max_in_flight_request_bytes as u64,
        ));
        Broker {
            shard,
            config,
            advertised_host,
            advertised_port,
            request_memory,
            mirror_status,
        }
    }
}

/// Answers one request. `None` means no response is sent: Produce with acks=0.
pub async fn handle(broker: &Broker, request: ParsedRequest) -> Option<Bytes> {
    let ParsedRequest {
        api,
        version,
        correlation_id,
        client,
        body,
    } = request;
    let wire =
        |response: &dyn WireEncode| Ok(codec::encode_wire_response(correlation_id, response));
    let encoded = match body {
        RequestBody::Unsupported(frame) => {
            tracing::debug!(?api, version, "unsupported request answered with an error");
            Ok(frame)
        }
        RequestBody::ApiVersions => {
            let response = api_versions::handle(version);
            // An unsupported ApiVersions version is answered in v0, as Kafka does.
            let reply_version = if versions::is_supported(api, version) {
                version
            } else {
                0
            };
            codec::encode_response(
                ApiKey::ApiVersions,
                reply_version,
                correlation_id,
                &response,
            )
        }
        RequestBody::Metadata(r) => {
            let response = metadata::handle(broker, r, version).await;
            codec::encode_response(ApiKey::Metadata, version, correlation_id, &response)
        }
        RequestBody::CreateTopics(r) => {
            let response = create_topics::handle(broker, r, version).await;
            codec::encode_response(ApiKey::CreateTopics, version, correlation_id, &response)
        }
        RequestBody::DeleteTopics(r) => {
            let response = delete_topics::handle(broker, r, version).await;
            codec::encode_response(ApiKey::DeleteTopics, version, correlation_id, &response)
        }
        RequestBody::Produce(r) => {
            let response = produce::handle(broker, r, version).await?;
            codec::encode_response(ApiKey::Produce, version, correlation_id, &response)
        }
        RequestBody::Fetch(r) => {
            let response = fetch::handle(broker, r, version).await;
            codec::encode_response(ApiKey::Fetch, version, correlation_id, &response)
        }
        RequestBody::ListOffsets(r) => {
            let response = list_offsets::handle(broker, r, version).await;
            codec::encode_response(ApiKey::ListOffsets, version, correlation_id, &response)
        }
        RequestBody::DeleteRecords(r) => {
            let response = delete_records::handle(broker, r, version).await;
            codec::encode_response(ApiKey::DeleteRecords, version, correlation_id, &response)
        }
        RequestBody::CreatePartitions(r) => {
            let response = create_partitions::handle(broker, r, version).await;
            codec::encode_response(ApiKey::CreatePartitions, version, correlation_id, &response)
        }
        RequestBody::DescribeCluster(r) => {
            let response = describe_cluster::handle(broker, r, version).await;
            codec::encode_response(ApiKey::DescribeCluster, version, correlation_id, &response)
        }
        RequestBody::InitProducerId(r) => {
            let response = init_producer_id::handle(broker, r, version).await;
            codec::encode_response(ApiKey::InitProducerId, version, correlation_id, &response)
        }
        RequestBody::DescribeConfigs(r) => {
            let response = configs::describe_configs::handle(broker, r, version);
            codec::encode_response(ApiKey::DescribeConfigs, version, correlation_id, &response)
        }
        RequestBody::AlterConfigs(r) => {
            let response = configs::alter_configs::handle(broker, r, version).await;
            codec::encode_response(ApiKey::AlterConfigs, version, correlation_id, &response)
        }
        RequestBody::IncrementalAlterConfigs(r) => {
            let response = configs::incremental_alter_configs::handle(broker, r, version).await;
            let key = ApiKey::IncrementalAlterConfigs;
            codec::encode_response(key, version, correlation_id, &response)
        }
        RequestBody::OffsetForLeaderEpoch(r) => {
            let response = offset_for_leader_epoch::handle(broker, r, version).await;
            let key = ApiKey::OffsetForLeaderEpoch;
            codec::encode_response(key, version, correlation_id, &response)
        }
        RequestBody::DescribeProducers(r) => {
            let response = describe_producers::handle(broker, r, version).await;
            let key = ApiKey::DescribeProducers;
            codec::encode_response(key, version, correlation_id, &response)
        }
        RequestBody::FindCoordinator(r) => {
            let response = groups::find_coordinator::handle(broker, r, version);
            codec::encode_response(ApiKey::FindCoordinator, version, correlation_id, &response)
        }
        RequestBody::JoinGroup(r) => {
            let response = groups::join_group::handle(broker, r, version, &client).await;
            codec::encode_response(ApiKey::JoinGroup, version, correlation_id, &response)
        }
        RequestBody::SyncGroup(r) => {
            let response = groups::sync_group::handle(broker, r, version).await;
            codec::encode_response(ApiKey::SyncGroup, version, correlation_id, &response)
        }
        RequestBody::Heartbeat(r) => {
            let response = groups::heartbeat::handle(broker, r, version).await;
            codec::encode_response(ApiKey::Heartbeat, version, correlation_id, &response)
        }
        RequestBody::LeaveGroup(r) => {
            let response = groups::leave_group::handle(broker, r, version).await;
            codec::encode_response(ApiKey::LeaveGroup, version, correlation_id, &response)
        }
        RequestBody::OffsetCommit(r) => {
            let response = groups::offset_commit::handle(broker, r, version).await;
            codec::encode_response(ApiKey::OffsetCommit, version, correlation_id, &response)
        }
        RequestBody::OffsetFetch(r) => {
            let response = groups::offset_fetch::handle(broker, r, version).await;
            codec::encode_response(ApiKey::OffsetFetch, version, correlation_id, &response)
        }
        RequestBody::ListGroups(r) => {
            let response = groups::list_groups::handle(broker, r, version).await;
            codec::encode_response(ApiKey::ListGroups, version, correlation_id, &response)
        }
        RequestBody::DescribeGroups(r) => {
            let response = groups::describe_groups::handle(broker, r, version).await;
            codec::encode_response(ApiKey::DescribeGroups, version, correlation_id, &response)
        }
        RequestBody::DeleteGroups(r) => {
            let response = groups::delete_groups::handle(broker, r, version).await;
            codec::encode_response(ApiKey::DeleteGroups, version, correlation_id, &response)
        }
        RequestBody::OffsetDelete(r) => {
            let response = groups::offset_delete::handle(broker, r, version).await;
            codec::encode_response(ApiKey::OffsetDelete, version, correlation_id, &response)
        }
        RequestBody::DisklessCreatePartitions(r) => {
            wire(&diskless::create_partitions(broker, r).await)
        }
        RequestBody::DisklessDeleteTopics(r) => wire(&diskless::delete_topics(broker, r).await),
        RequestBody::DisklessCommitFile(r) => wire(&diskless::commit_file(broker, r).await),
        RequestBody::DisklessDeleteRecords(r) => wire(&diskless::delete_records(broker, r).await),
        RequestBody::DisklessListOffsets(r) => wire(&diskless::list_offsets(broker, r).await),
        RequestBody::DisklessFindBatches(r) => wire(&diskless::find_batches(broker, r).await),
        RequestBody::DisklessDescribeFiles(r) => wire(&diskless::describe_files(broker, r).await),
        RequestBody::Mirror(r) => wire(crate::mirror::handlers::handle(broker, r).await.as_ref()),
    };
    match encoded {
        Ok(frame) => Some(frame),
        Err(e) => {
            tracing::error!(?api, version, error = %e, "cannot encode response");
            None
        }
    }
}
