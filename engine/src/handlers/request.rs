//! Turning a frame into a typed request. Any error here is a malformed request and closes the
//! connection; an unsupported ApiVersions version decodes fine and is answered in v0.

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, CreatePartitionsRequest, CreateTopicsRequest, DeleteRecordsRequest,
    DeleteTopicsRequest, DescribeClusterRequest, FetchRequest, InitProducerIdRequest,
    ListOffsetsRequest, MetadataRequest, ProduceRequest,
};

use kafka_protocol::messages::{
    DeleteGroupsRequest, DescribeGroupsRequest, FindCoordinatorRequest, HeartbeatRequest,
    JoinGroupRequest, LeaveGroupRequest, ListGroupsRequest, OffsetCommitRequest,
    OffsetDeleteRequest, OffsetFetchRequest, SyncGroupRequest,
};

use crate::diskless::messages::*;
use crate::kafka::codec::{self, Api};
use crate::kafka::{unsupported, versions};
use crate::mirror::messages as mirror;
use crate::EngineError;
use kafka_protocol::messages::{
    AlterConfigsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest,
};
use kafka_protocol::messages::{DescribeProducersRequest, OffsetForLeaderEpochRequest};

/// A request whose header and body both decoded.
pub struct ParsedRequest {
    pub api: Api,
    pub version: i16,
    pub correlation_id: i32,
    pub client: ClientInfo,
    pub body: RequestBody,
}

/// Who sent a request, as DescribeGroups reports members.
#[derive(Debug, Clone, Default)]
pub struct ClientInfo {
    pub id: String,
    /// Kafka's form: "/127.0.0.1".
    pub host: String,
}

pub enum RequestBody {
    /// Not served: the framed error response to send back.
    Unsupported(Bytes),
    ApiVersions,
    Metadata(MetadataRequest),
    CreateTopics(CreateTopicsRequest),
    DeleteTopics(DeleteTopicsRequest),
    Produce(ProduceRequest),
    Fetch(FetchRequest),
    ListOffsets(ListOffsetsRequest),
    DeleteRecords(DeleteRecordsRequest),
    InitProducerId(InitProducerIdRequest),
    CreatePartitions(CreatePartitionsRequest),
    DescribeCluster(DescribeClusterRequest),
    OffsetForLeaderEpoch(OffsetForLeaderEpochRequest),
    DescribeProducers(DescribeProducersRequest),
    DescribeConfigs(DescribeConfigsRequest),
    AlterConfigs(AlterConfigsRequest),
    IncrementalAlterConfigs(IncrementalAlterConfigsRequest),
    FindCoordinator(FindCoordinatorRequest),
    JoinGroup(JoinGroupRequest),
    SyncGroup(SyncGroupRequest),
    Heartbeat(HeartbeatRequest),
    LeaveGroup(LeaveGroupRequest),
    OffsetCommit(OffsetCommitRequest),
    OffsetFetch(OffsetFetchRequest),
    ListGroups(ListGroupsRequest),
    DescribeGroups(DescribeGroupsRequest),
    DeleteGroups(DeleteGroupsRequest),
    OffsetDelete(OffsetDeleteRequest),
    DisklessCreatePartitions(DisklessCreatePartitionsRequest),
    DisklessDeleteTopics(DisklessDeleteTopicsRequest),
    DisklessCommitFile(DisklessCommitFileRequest),
    DisklessDeleteRecords(DisklessDeleteRecordsRequest),
    DisklessListOffsets(DisklessListOffsetsRequest),
    DisklessFindBatches(DisklessFindBatchesRequest),
    DisklessDescribeFiles(DisklessDescribeFilesRequest),
    Mirror(MirrorRequest),
}

/// The KIP-1279 mirror requests.
pub enum MirrorRequest {
    Create(mirror::CreateMirrorRequest),
    AddTopics(mirror::AddTopicsToMirrorRequest),
    RemoveTopics(mirror::RemoveTopicsFromMirrorRequest),
    LastMirroredOffsets(mirror::LastMirroredOffsetsRequest),
    List(mirror::ListMirrorsRequest),
    Describe(mirror::DescribeMirrorsRequest),
    ReadStates(mirror::ReadMirrorStatesRequest),
    WriteStates(mirror::WriteMirrorStatesRequest),
    Pause(mirror::PauseMirrorTopicsRequest),
    Resume(mirror::ResumeMirrorTopicsRequest),
}

pub fn parse_request(mut frame: Bytes) -> Result<ParsedRequest, EngineError> {
    let (api, header) = codec::decode_header(&mut frame)?;
    let version = header.request_api_version;
    if !versions::is_supported(api, version) && api != Api::Kafka(ApiKey::ApiVersions) {
        let answer = match api {
            Api::Kafka(key) => unsupported::error_response(key, version, header.correlation_id),
            Api::Diskless(_) | Api::Mirror(_) => None,
        };
        return match answer {
            Some(frame) => Ok(ParsedRequest {
                api,
                version,
                correlation_id: header.correlation_id,
                client: ClientInfo::default(),
                body: RequestBody::Unsupported(frame),
            }),
            None => Err(EngineError::MalformedRequest(format!(
                "{api:?} v{version} is not supported (see ApiVersions)"
            ))),
        };
    }
    let f = &mut frame;
    let body = match api {
        Api::Kafka(key) => match key {
            // Its body may be of a version we do not know; only the header matters.
            ApiKey::ApiVersions => RequestBody::ApiVersions,
            ApiKey::Metadata => RequestBody::Metadata(codec::decode_body(f, version)?),
            ApiKey::CreateTopics => RequestBody::CreateTopics(codec::decode_body(f, version)?),
            ApiKey::DeleteTopics => RequestBody::DeleteTopics(codec::decode_body(f, version)?),
            ApiKey::Produce => RequestBody::Produce(codec::decode_body(f, version)?),
            ApiKey::Fetch => RequestBody::Fetch(codec::decode_body(f, version)?),
            ApiKey::ListOffsets => RequestBody::ListOffsets(codec::decode_body(f, version)?),
            ApiKey::DeleteRecords => RequestBody::DeleteRecords(codec::decode_body(f, version)?),
            ApiKey::InitProducerId => RequestBody::InitProducerId(codec::decode_body(f, version)?),
            ApiKey::CreatePartitions => {
                RequestBody::CreatePartitions(codec::decode_body(f, version)?)
            }
            ApiKey::DescribeCluster => {
                RequestBody::DescribeCluster(codec::decode_body(f, version)?)
            }
            ApiKey::DescribeConfigs => {
                RequestBody::DescribeConfigs(codec::decode_body(f, version)?)
            }
            ApiKey::AlterConfigs => RequestBody::AlterConfigs(codec::decode_body(f, version)?),
            ApiKey::IncrementalAlterConfigs => {
                RequestBody::IncrementalAlterConfigs(codec::decode_body(f, version)?)
            }
            ApiKey::OffsetForLeaderEpoch => {
                RequestBody::OffsetForLeaderEpoch(codec::decode_body(f, version)?)
            }
            ApiKey::DescribeProducers => {
                RequestBody::DescribeProducers(codec::decode_body(f, version)?)
            }
            ApiKey::FindCoordinator => {
                RequestBody::FindCoordinator(codec::decode_body(f, version)?)
            }
            ApiKey::JoinGroup => RequestBody::JoinGroup(codec::decode_body(f, version)?),
            ApiKey::SyncGroup => RequestBody::SyncGroup(codec::decode_body(f, version)?),
            ApiKey::Heartbeat => RequestBody::Heartbeat(codec::decode_body(f, version)?),
            ApiKey::LeaveGroup => RequestBody::LeaveGroup(codec::decode_body(f, version)?),
            ApiKey::OffsetCommit => RequestBody::OffsetCommit(codec::decode_body(f, version)?),
            ApiKey::OffsetFetch => RequestBody::OffsetFetch(codec::decode_body(f, version)?),
            ApiKey::ListGroups => RequestBody::ListGroups(codec::decode_body(f, version)?),
            ApiKey::DescribeGroups => RequestBody::DescribeGroups(codec::decode_body(f, version)?),
            ApiKey::DeleteGroups => RequestBody::DeleteGroups(codec::decode_body(f, version)?),
            ApiKey::OffsetDelete => RequestBody::OffsetDelete(codec::decode_body(f, version)?),
            other => {
                return Err(EngineError::MalformedRequest(format!(
                    "{other:?} is not supported (see ApiVersions)"
                )))
            }
        },
        Api::Diskless(key) => match key {
            DisklessCreatePartitionsRequest::API_KEY => {
                RequestBody::DisklessCreatePartitions(codec::decode_wire_body(f)?)
            }
            DisklessDeleteTopicsRequest::API_KEY => {
                RequestBody::DisklessDeleteTopics(codec::decode_wire_body(f)?)
            }
            DisklessCommitFileRequest::API_KEY => {
                RequestBody::DisklessCommitFile(codec::decode_wire_body(f)?)
            }
            DisklessDeleteRecordsRequest::API_KEY => {
                RequestBody::DisklessDeleteRecords(codec::decode_wire_body(f)?)
            }
            DisklessListOffsetsRequest::API_KEY => {
                RequestBody::DisklessListOffsets(codec::decode_wire_body(f)?)
            }
            DisklessFindBatchesRequest::API_KEY => {
                RequestBody::DisklessFindBatches(codec::decode_wire_body(f)?)
            }
            DisklessDescribeFilesRequest::API_KEY => {
                RequestBody::DisklessDescribeFiles(codec::decode_wire_body(f)?)
            }
            other => {
                return Err(EngineError::MalformedRequest(format!(
                    "Diskless API {other} is not supported"
                )))
            }
        },
        Api::Mirror(key) => RequestBody::Mirror(match key {
            mirror::CreateMirrorRequest::API_KEY => {
                MirrorRequest::Create(codec::decode_wire_body(f)?)
            }
            mirror::AddTopicsToMirrorRequest::API_KEY => {
                MirrorRequest::AddTopics(codec::decode_wire_body(f)?)
            }
            mirror::RemoveTopicsFromMirrorRequest::API_KEY => {
                MirrorRequest::RemoveTopics(codec::decode_wire_body(f)?)
            }
            mirror::LastMirroredOffsetsRequest::API_KEY => {
                MirrorRequest::LastMirroredOffsets(codec::decode_wire_body(f)?)
            }
            mirror::ListMirrorsRequest::API_KEY => MirrorRequest::List(codec::decode_wire_body(f)?),
            mirror::DescribeMirrorsRequest::API_KEY => {
                MirrorRequest::Describe(codec::decode_wire_body(f)?)
            }
            mirror::ReadMirrorStatesRequest::API_KEY => {
                MirrorRequest::ReadStates(codec::decode_wire_body(f)?)
            }
            mirror::WriteMirrorStatesRequest::API_KEY => {
                MirrorRequest::WriteStates(codec::decode_wire_body(f)?)
            }
            mirror::PauseMirrorTopicsRequest::API_KEY => {
                MirrorRequest::Pause(codec::decode_wire_body(f)?)
            }
            mirror::ResumeMirrorTopicsRequest::API_KEY => {
                MirrorRequest::Resume(codec::decode_wire_body(f)?)
            }
            other => {
                return Err(EngineError::MalformedRequest(format!(
                    "mirror API {other} is not supported"
                )))
            }
        }),
    };
    Ok(ParsedRequest {
        api,
        version,
        correlation_id: header.correlation_id,
        client: ClientInfo {
            id: header
                .client_id
                .map(|c| c.as_str().to_string())
                .unwrap_or_default(),
            host: String::new(),
        },
        body,
    })
}
