//! What a connection's shard sends to the shard owning a consumer group, and the answers.
//! Plain data, `Send`: they cross executors over the peer queues (`calls` says which
//! request gets which answer).

use std::sync::Arc;

use bytes::Bytes;
use shoal_coordinator::TopicsView;

use crate::groups::GroupError;

#[derive(Debug, Clone)]
pub struct JoinRequest {
    pub group_id: String,
    /// Empty for a member joining for the first time.
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    /// (protocol name, member metadata), in the member's order of preference.
    pub protocols: Vec<(String, Bytes)>,
    /// JoinGroup v4+: a new dynamic member first gets MEMBER_ID_REQUIRED and its id.
    pub require_known_member_id: bool,
    /// The topics as the receiving shard saw them (a consumer-protocol group assigns its
    /// classic members by them).
    pub topics: Arc<TopicsView>,
}

impl JoinRequest {
    /// Its protocols' names and metadata, in bytes.
    pub fn metadata_bytes(&self) -> usize {
        self.protocols.iter().map(|(n, m)| n.len() + m.len()).sum()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinedMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub metadata: Bytes,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JoinResponse {
    pub error: Option<GroupError>,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: String,
    pub member_id: String,
    /// Filled for the leader only.
    pub members: Vec<JoinedMember>,
}

impl JoinResponse {
    pub fn failed(error: GroupError, member_id: &str) -> JoinResponse {
        JoinResponse {
            error: Some(error),
            generation_id: -1,
            member_id: member_id.to_string(),
            ..JoinResponse::default()
        }
    }
}

/// Who is asking, for SyncGroup, Heartbeat and OffsetCommit.
#[derive(Debug, Clone)]
pub struct MemberRef {
    pub group_id: String,
    pub member_id: String,
    pub generation_id: i32,
    pub group_instance_id: Option<String>,
}

#[derive(Debug, Clone)]
pub struct SyncRequest {
    pub member: MemberRef,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    /// Sent by the leader: (member id, assignment).
    pub assignments: Vec<(String, Bytes)>,
    /// As in `JoinRequest`.
    pub topics: Arc<TopicsView>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncResponse {
    pub error: Option<GroupError>,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Bytes,
}

impl SyncResponse {
    pub fn failed(error: GroupError) -> SyncResponse {
        SyncResponse {
            error: Some(error),
            ..SyncResponse::default()
        }
    }
}

#[derive(Debug, Clone)]
pub struct LeavingMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberDescription {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub metadata: Bytes,
    pub assignment: Bytes,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    pub group_id: String,
    /// Kafka's state names: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead.
    pub state: &'static str,
    pub protocol_type: String,
    pub protocol: String,
    pub members: Vec<MemberDescription>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupListing {
    pub group_id: String,
    pub protocol_type: String,
    pub state: &'static str,
    /// "classic" or "consumer" (KIP-848's group types).
    pub group_type: &'static str,
}
