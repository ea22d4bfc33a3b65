//! The one declaration of every API Shoal serves: its request type (which names the key and
//! the response type), the versions served, the handler, and its properties. ApiVersions,
//! request decoding, dispatch, error answers for versions outside the range and metric names
//! all come from this table, so what is advertised is exactly what is handled.
//!
//! Adding an API: write its handler file (`async fn(&Call, Request) -> Response`), declare
//! the module in `handlers/mod.rs`, and add one line here, with the ACL operation it checks.

use bytes::Bytes;
use kafka_protocol::protocol::Request;
use shoal_coordinator::acl::{Operation, ResourceType};
use shoal_protocol::diskless::*;
use shoal_protocol::messages::*;
use shoal_protocol::mirror::*;
use shoal_protocol::ProtocolError;
use shoal_protocol::{frame, shapes};

use super::{
    acls, api_versions, client_quotas, configs, create_partitions, create_topics,
    delegation_tokens, delete_records, delete_topics, describe_cluster, describe_log_dirs,
    describe_producers, describe_topic_partitions, diskless, fetch, groups, init_producer_id,
    list_offsets, metadata, offset_for_leader_epoch, produce, sasl, scram_credentials,
    transactions, update_features,
};
use crate::context::{AclCheck, ApiSpec, Call};
use crate::mirror::handlers as mirror;
use crate::quotas::{Busy, ThrottleTime};

/// "ProduceRequest" → "Produce", at compile time.
const fn api_name(type_name: &'static str) -> &'static str {
    let suffix = b"Request".len();
    let (name, _) = type_name.as_bytes().split_at(type_name.len() - suffix);
    match std::str::from_utf8(name) {
        Ok(name) => name,
        Err(_) => panic!("API type names are ASCII"),
    }
}

macro_rules! has_flag {
    ($want:ident;) => { false };
    (internal; internal $($rest:ident)*) => { true };
    (before_authentication; before_authentication $($rest:ident)*) => { true };
    (error_answer; error_answer $($rest:ident)*) => { true };
    (decided_by_owner; decided_by_owner $($rest:ident)*) => { true };
    ($want:ident; $other:ident $($rest:ident)*) => { has_flag!($want; $($rest)*) };
}

macro_rules! error_answer {
    ($req:ident;) => { None };
    ($req:ident; error_answer $($rest:ident)*) => {
        Some(|version, correlation_id, code| {
            let response = <$req as Request>::Response::default().with_error_code(code);
            frame::encode_response(version, correlation_id, &response)
        })
    };
    ($req:ident; $other:ident $($rest:ident)*) => { error_answer!($req; $($rest)*) };
}

macro_rules! registry {
    ($( $req:ident : $min:literal ..= $max:literal => $handler:path,
        [$($operation:ident $resource:ident),*] $acl:literal $([ $($flag:ident)* ])? ; )*) => {
        /// Every served API, in the order ApiVersions lists them.
        pub const APIS: &[ApiSpec] = &[$(
            ApiSpec {
                key: <$req as Request>::KEY,
                name: api_name(stringify!($req)),
                min_version: $min,
                max_version: $max,
                checks: &[$(AclCheck {
                    operation: Operation::$operation,
                    resource: ResourceType::$resource,
                }),*],
                authorization: $acl,
                internal: has_flag!(internal; $($($flag)*)?),
                before_authentication: has_flag!(before_authentication; $($($flag)*)?),
                decided_by_owner: has_flag!(decided_by_owner; $($($flag)*)?),
                error_answer: error_answer!($req; $($($flag)*)?),
            },
        )*];

        /// A request whose header and body both decoded, named by its request type.
        #[allow(clippy::large_enum_variant, clippy::enum_variant_names)]
        pub enum DecodedRequest {
            $( $req($req), )*
        }

        /// Decodes the body of a served API's request at `version`, with what the decoded
        /// request occupies beyond its frame. A Kafka request is first walked against its
        /// shape, so no claimed count reaches kafka-protocol's decoder unchecked.
        pub fn decode_body(
            api_key: i16,
            version: i16,
            body: &mut Bytes,
        ) -> Result<(DecodedRequest, usize), ProtocolError> {
            let checked = match shapes::request_shape(api_key) {
                Some(shape) => shapes::check(shape, version, body).map(|c| c.decoded_bytes),
                // Shoal's own messages decode with every length checked (shoal_protocol::wire).
                None => Ok(body.len()),
            };
            if api_key == ApiVersionsRequest::KEY {
                // A newer client's body may not decode; only the header matters.
                let request = match checked {
                    Ok(_) => frame::decode_body(body, version).unwrap_or_default(),
                    Err(_) => ApiVersionsRequest::default(),
                };
                return Ok((DecodedRequest::ApiVersionsRequest(request), 0));
            }
            let decoded_bytes =
                checked.map_err(|e| ProtocolError::Malformed { what: "request body", detail: e.to_string() })?;
            $(
                if api_key == <$req as Request>::KEY {
                    let request = frame::decode_body::<$req>(body, version)?;
                    return Ok((DecodedRequest::$req(request), decoded_bytes));
                }
            )*
            Err(ProtocolError::UnknownApi(api_key))
        }

        /// Round-trips a default request and response at every advertised version of every
        /// API; the failures.
        #[cfg(test)]
        fn round_trip_every_version() -> Vec<String> {
            let mut failures = Vec::new();
            $(
                for version in $min..=$max {
                    if let Err(e) = tests::round_trip::<$req>(version) {
                        failures.push(format!("{} v{version}: {e}", stringify!($req)));
                    }
                }
            )*
            failures
        }

        /// Runs the request's handler and frames its answer.
        pub async fn handle(
            call: &Call<'_>,
            correlation_id: i32,
            request: DecodedRequest,
        ) -> Result<Bytes, ProtocolError> {
            match request {
                $(
                    DecodedRequest::$req(request) => {
                        let measured = Busy::new($handler(call, request), call.measures_request_time());
                        let (mut response, busy) = measured.await;
                        if let Some(busy) = busy {
                            call.charge_request_time(busy);
                        }
                        encode_throttled(call, correlation_id, &mut response)
                    }
                )*
            }
        }
    };
}

registry! {
    ProduceRequest: 3..=13 => produce::handle, [Write Topic, Create Cluster, Create Topic, Write TransactionalId] "WRITE on each topic (CREATE on the cluster or the topic to auto-create it); WRITE on the transactional id of a transactional batch";
    FetchRequest: 4..=18 => fetch::handle, [Read Topic] "READ on each topic" [error_answer];
    ListOffsetsRequest: 1..=11 => list_offsets::handle, [Describe Topic] "DESCRIBE on each topic";
    DescribeLogDirsRequest: 1..=5 => describe_log_dirs::handle, [Describe Cluster] "DESCRIBE on the cluster" [error_answer];
    DescribeTopicPartitionsRequest: 0..=0 => describe_topic_partitions::handle, [Describe Topic] "DESCRIBE on each topic (others are left out of a listing of all)";
    MetadataRequest: 0..=13 => metadata::handle, [Describe Topic, Create Cluster, Create Topic] "DESCRIBE on each topic (others are left out); CREATE on the cluster or the topic to auto-create";
    ApiVersionsRequest: 0..=5 => api_versions::handle, [] "" [before_authentication];
    CreateTopicsRequest: 2..=7 => create_topics::handle, [Create Cluster, Create Topic] "CREATE on the cluster or on the topic";
    DeleteTopicsRequest: 1..=6 => delete_topics::handle, [Delete Topic] "DELETE on each topic";
    DeleteRecordsRequest: 0..=2 => delete_records::handle, [Delete Topic] "DELETE on each topic";
    InitProducerIdRequest: 0..=5 => init_producer_id::handle, [IdempotentWrite Cluster, Write Topic, Write TransactionalId] "IDEMPOTENT_WRITE on the cluster, or WRITE on some topic; WRITE on the transactional id when one is named" [error_answer];
    CreatePartitionsRequest: 0..=3 => create_partitions::handle, [Alter Topic] "ALTER on each topic";
    DescribeClusterRequest: 0..=2 => describe_cluster::handle, [Describe Cluster] "DESCRIBE on the cluster" [error_answer];
    FindCoordinatorRequest: 0..=6 => groups::find_coordinator::handle, [Describe Group, Describe TransactionalId] "DESCRIBE on the group, or on the transactional id" [error_answer];
    OffsetForLeaderEpochRequest: 2..=4 => offset_for_leader_epoch::handle, [Describe Topic] "DESCRIBE on each topic";
    DescribeProducersRequest: 0..=0 => describe_producers::handle, [Read Topic] "READ on each topic";
    AddPartitionsToTxnRequest: 0..=3 => transactions::add_partitions::handle, [Write TransactionalId, Write Topic] "WRITE on the transactional id and on each topic";
    AddOffsetsToTxnRequest: 0..=4 => transactions::add_offsets::handle, [Write TransactionalId, Read Group] "WRITE on the transactional id, READ on the group" [error_answer];
    EndTxnRequest: 0..=5 => transactions::end_txn::handle, [Write TransactionalId] "WRITE on the transactional id" [error_answer];
    TxnOffsetCommitRequest: 0..=6 => transactions::txn_offset_commit::handle, [Write TransactionalId, Read Group, Read Topic] "WRITE on the transactional id, READ on the group and on each topic";
    WriteTxnMarkersRequest: 1..=2 => transactions::write_markers::handle, [ClusterAction Cluster] "CLUSTER_ACTION on the cluster";
    DescribeTransactionsRequest: 0..=0 => transactions::describe::describe, [Describe TransactionalId] "DESCRIBE on each transactional id";
    ListTransactionsRequest: 0..=2 => transactions::describe::list, [Describe TransactionalId] "DESCRIBE on each transactional id listed" [error_answer];
    DescribeConfigsRequest: 1..=4 => configs::describe_configs::handle, [DescribeConfigs Topic, DescribeConfigs Cluster, DescribeConfigs Group] "DESCRIBE_CONFIGS on each topic or group, on the cluster for broker configs";
    AlterConfigsRequest: 0..=2 => configs::alter_configs::handle, [AlterConfigs Topic, AlterConfigs Cluster] "ALTER_CONFIGS on each topic, on the cluster for broker configs";
    UpdateFeaturesRequest: 0..=2 => update_features::handle, [Alter Cluster] "ALTER on the cluster" [error_answer];
    ListConfigResourcesRequest: 0..=1 => configs::list_config_resources::handle, [DescribeConfigs Cluster] "DESCRIBE_CONFIGS on the cluster" [error_answer];
    IncrementalAlterConfigsRequest: 0..=1 => configs::incremental_alter_configs::handle, [AlterConfigs Topic, AlterConfigs Cluster, AlterConfigs Group] "ALTER_CONFIGS on each topic or group, on the cluster for broker configs";
    JoinGroupRequest: 0..=9 => groups::join_group::handle, [Read Group] "READ on the group" [error_answer];
    SyncGroupRequest: 0..=5 => groups::sync_group::handle, [Read Group] "READ on the group" [error_answer];
    HeartbeatRequest: 0..=4 => groups::heartbeat::handle, [Read Group] "READ on the group" [error_answer];
    LeaveGroupRequest: 0..=5 => groups::leave_group::handle, [Read Group] "READ on the group" [error_answer];
    ConsumerGroupHeartbeatRequest: 0..=1 => groups::consumer_heartbeat::handle, [Read Group, Describe Topic] "READ on the group, DESCRIBE on each topic subscribed to by name" [error_answer];
    OffsetCommitRequest: 2..=10 => groups::offset_commit::handle, [Read Group, Read Topic] "READ on the group and on each topic";
    OffsetFetchRequest: 1..=10 => groups::offset_fetch::handle, [Describe Group, Describe Topic] "DESCRIBE on the group and on each topic (others are left out)" [error_answer];
    ListGroupsRequest: 0..=5 => groups::list_groups::handle, [Describe Cluster, Describe Group] "DESCRIBE on each group listed (every group with DESCRIBE on the cluster)" [error_answer];
    ConsumerGroupDescribeRequest: 0..=1 => groups::consumer_group_describe::handle, [Describe Group] "DESCRIBE on each group";
    DescribeGroupsRequest: 0..=6 => groups::describe_groups::handle, [Describe Group] "DESCRIBE on each group";
    DeleteGroupsRequest: 0..=3 => groups::delete_groups::handle, [Delete Group] "DELETE on each group";
    StreamsGroupHeartbeatRequest: 0..=1 => groups::streams_heartbeat::handle, [Read Group, Describe Topic] "READ on the group, DESCRIBE on each source topic" [error_answer];
    StreamsGroupDescribeRequest: 0..=1 => groups::streams_group_describe::handle, [Describe Group] "DESCRIBE on each group";
    ShareGroupHeartbeatRequest: 1..=1 => groups::share_heartbeat::handle, [Read Group, Describe Topic] "READ on the group, DESCRIBE on each topic subscribed to" [error_answer];
    ShareGroupDescribeRequest: 1..=1 => groups::share_group_describe::handle, [Describe Group] "DESCRIBE on each group";
    ShareFetchRequest: 1..=2 => groups::share_fetch::handle, [Read Group, Read Topic] "READ on the group and on each topic" [error_answer];
    ShareAcknowledgeRequest: 1..=2 => groups::share_acknowledge::handle, [Read Group, Read Topic] "READ on the group and on each topic" [error_answer];
    DescribeShareGroupOffsetsRequest: 0..=1 => groups::share_group_offsets::describe, [Describe Group, Describe Topic] "DESCRIBE on each group and on each topic";
    AlterShareGroupOffsetsRequest: 0..=0 => groups::share_group_offsets::alter, [Read Group, Read Topic] "READ on the group and on each topic" [error_answer];
    DeleteShareGroupOffsetsRequest: 0..=0 => groups::share_group_offsets::delete, [Delete Group, Read Topic] "DELETE on the group, READ on each topic" [error_answer];
    OffsetDeleteRequest: 0..=0 => groups::offset_delete::handle, [Delete Group, Read Topic] "DELETE on the group, READ on each topic" [error_answer];
    SaslHandshakeRequest: 0..=1 => sasl::handshake, [] "" [before_authentication];
    SaslAuthenticateRequest: 0..=2 => sasl::authenticate, [] "" [before_authentication];
    DescribeAclsRequest: 1..=3 => acls::describe, [Describe Cluster] "DESCRIBE on the cluster" [error_answer];
    CreateAclsRequest: 1..=3 => acls::create, [Alter Cluster] "ALTER on the cluster";
    DeleteAclsRequest: 1..=3 => acls::delete, [Alter Cluster] "ALTER on the cluster";
    DescribeUserScramCredentialsRequest: 0..=0 => scram_credentials::describe, [Describe Cluster] "DESCRIBE on the cluster";
    AlterUserScramCredentialsRequest: 0..=0 => scram_credentials::alter, [Alter Cluster] "ALTER on the cluster";
    CreateDelegationTokenRequest: 1..=3 => delegation_tokens::create::handle, [CreateTokens User] "CREATE_TOKENS on the owner's user when the owner is not the requester; a SASL or certificate login, not with a token" [error_answer];
    RenewDelegationTokenRequest: 1..=2 => delegation_tokens::change_expiry::renew, [] "none: the token's owner or a renewer; a SASL or certificate login, not with a token" [error_answer decided_by_owner];
    ExpireDelegationTokenRequest: 1..=2 => delegation_tokens::change_expiry::expire, [] "none: the token's owner or a renewer; a SASL or certificate login, not with a token" [error_answer decided_by_owner];
    DescribeDelegationTokenRequest: 1..=3 => delegation_tokens::describe::handle, [Describe DelegationToken, DescribeTokens User] "a token's owner and renewers see it; others need DESCRIBE on the token or DESCRIBE_TOKENS on its owner's user" [error_answer];
    DescribeClientQuotasRequest: 0..=1 => client_quotas::describe, [DescribeConfigs Cluster] "DESCRIBE_CONFIGS on the cluster";
    AlterClientQuotasRequest: 0..=1 => client_quotas::alter, [AlterConfigs Cluster] "ALTER_CONFIGS on the cluster";
    DisklessCreatePartitionsRequest: 0..=0 => diskless::create_partitions, [ClusterAction Cluster] "CLUSTER_ACTION on the cluster (and an internal listener when named)" [internal];
    DisklessDeleteTopicsRequest: 0..=0 => diskless::delete_topics, [ClusterAction Cluster] "CLUSTER_ACTION on the cluster (and an internal listener when named)" [internal];
    DisklessCommitFileRequest: 0..=0 => diskless::commit_file, [ClusterAction Cluster] "CLUSTER_ACTION on the cluster (and an internal listener when named)" [internal];
    DisklessDeleteRecordsRequest: 0..=0 => diskless::delete_records, [ClusterAction Cluster] "CLUSTER_ACTION on the cluster (and an internal listener when named)" [internal];
    DisklessListOffsetsRequest: 0..=0 => diskless::list_offsets, [ClusterAction Cluster] "CLUSTER_ACTION on the cluster (and an internal listener when named)" [internal];
    DisklessFindBatchesRequest: 0..=0 => diskless::find_batches, [ClusterAction Cluster] "CLUSTER_ACTION on the cluster (and an internal listener when named)" [internal];
    DisklessDescribeFilesRequest: 0..=0 => diskless::describe_files, [ClusterAction Cluster] "CLUSTER_ACTION on the cluster (and an internal listener when named)" [internal];
    CreateMirrorRequest: 0..=0 => mirror::admin::create, [Alter Cluster] "ALTER on the cluster";
    AddTopicsToMirrorRequest: 0..=0 => mirror::admin::add_topics, [Alter Cluster] "ALTER on the cluster";
    RemoveTopicsFromMirrorRequest: 0..=0 => mirror::admin::remove_topics, [Alter Cluster] "ALTER on the cluster";
    LastMirroredOffsetsRequest: 0..=0 => mirror::states::last_mirrored_offsets, [Describe Cluster] "DESCRIBE on the cluster";
    ListMirrorsRequest: 0..=0 => mirror::describe::list, [Describe Cluster] "DESCRIBE on the cluster";
    DescribeMirrorsRequest: 0..=0 => mirror::describe::describe, [Describe Cluster] "DESCRIBE on the cluster";
    ReadMirrorStatesRequest: 0..=0 => mirror::states::read, [Describe Cluster] "DESCRIBE on the cluster";
    WriteMirrorStatesRequest: 0..=0 => mirror::states::write, [ClusterAction Cluster] "CLUSTER_ACTION on the cluster (and an internal listener when named)" [internal];
    PauseMirrorTopicsRequest: 0..=0 => mirror::admin::pause, [Alter Cluster] "ALTER on the cluster";
    ResumeMirrorTopicsRequest: 0..=0 => mirror::admin::resume, [Alter Cluster] "ALTER on the cluster";
}

/// Frames an answer with the throttle time the call came to, where its version has the field
/// (older versions are still held back: `client_waits_by_itself`).
fn encode_throttled<R>(
    call: &Call<'_>,
    correlation_id: i32,
    response: &mut R,
) -> Result<Bytes, ProtocolError>
where
    R: ThrottleTime + kafka_protocol::protocol::Encodable + kafka_protocol::protocol::HeaderVersion,
{
    let throttle_ms = i32::try_from(call.throttle_left_ms()).unwrap_or(i32::MAX);
    if let Some(field) = response.throttle_time_ms().filter(|_| throttle_ms > 0) {
        *field = (*field).max(throttle_ms);
        if let Ok(frame) = frame::encode_response(call.version, correlation_id, &*response) {
            return Ok(frame);
        }
        // A version without the field: the answer goes without it.
        if let Some(field) = response.throttle_time_ms() {
            *field = 0;
        }
    }
    frame::encode_response(call.version, correlation_id, &*response)
}

impl DecodedRequest {
    /// What this request's answer may hold in memory until it is written: a Fetch's records,
    /// up to its max bytes (capped by `fetch.max_bytes`); other answers are small.
    pub fn answer_bytes(&self, fetch_max_bytes: usize) -> usize {
        match self {
            DecodedRequest::FetchRequest(r) => (r.max_bytes.max(0) as usize).min(fetch_max_bytes),
            _ => 0,
        }
    }
}

/// One line per served API, as `shoal apis` prints them: key, name, versions, and the ACL
/// operation it checks (for auditing an authorizer's setup).
pub fn describe_apis() -> String {
    let mut out = String::new();
    for spec in APIS {
        let authorization = match (spec.before_authentication, spec.authorization) {
            (true, _) => "none (served before a login)",
            (false, acl) => acl,
        };
        out.push_str(&format!(
            "{:>5} {:<36} v{}-{:<3} {authorization}\n",
            spec.key, spec.name, spec.min_version, spec.max_version
        ));
    }
    out
}

/// The served API with this key.
pub fn spec(api_key: i16) -> Option<&'static ApiSpec> {
    APIS.iter().find(|spec| spec.key == api_key)
}

/// The API's name for logs and metrics.
pub fn name_of(api_key: i16) -> String {
    match spec(api_key) {
        Some(spec) => spec.name.to_string(),
        None => match ApiKey::try_from(api_key) {
            Ok(key) => format!("{key:?}"),
            Err(()) => format!("Api{api_key}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion};

    use super::*;

    /// Encodes a default request and response at `version` and decodes them back.
    pub(super) fn round_trip<R>(version: i16) -> Result<(), String>
    where
        R: Request + Default + PartialEq + std::fmt::Debug,
        R::Response: Default + PartialEq + std::fmt::Debug,
    {
        fn check<T: Encodable + Decodable + Default + PartialEq + std::fmt::Debug>(
            version: i16,
        ) -> Result<(), String> {
            let message = T::default();
            let mut buf = BytesMut::new();
            message
                .encode(&mut buf, version)
                .map_err(|e| e.to_string())?;
            let size = message.compute_size(version).map_err(|e| e.to_string())?;
            if size != buf.len() {
                return Err(format!("size {size} but encoded {}", buf.len()));
            }
            let mut bytes = buf.freeze();
            let decoded = T::decode(&mut bytes, version).map_err(|e| e.to_string())?;
            if decoded != message || !bytes.is_empty() {
                return Err("decoded differs".into());
            }
            Ok(())
        }
        check::<R>(version).map_err(|e| format!("request: {e}"))?;
        check::<R::Response>(version).map_err(|e| format!("response: {e}"))?;
        let _ = (
            R::header_version(version),
            R::Response::header_version(version),
        );
        Ok(())
    }

    #[test]
    fn every_advertised_version_of_every_api_round_trips() {
        assert_eq!(round_trip_every_version(), Vec::<String>::new());
    }

    /// docs/compatibility.md's "Behind Kafka 4.4" table: (API, Kafka's version, Shoal's).
    fn behind_kafka_table() -> Vec<(String, i16, Option<i16>)> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/compatibility.md");
        let text = std::fs::read_to_string(path).expect("docs/compatibility.md");
        let section = text
            .split("### Behind Kafka 4.4")
            .nth(1)
            .expect("the section")
            .split("\n\n")
            .find(|block| block.starts_with("| API |"))
            .expect("its table");
        let mut rows = Vec::new();
        for line in section.lines().skip(2) {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let names: Vec<&str> = cells[1].split(", ").collect();
            let kafka: Vec<&str> = cells[2].split(", ").collect();
            let shoal: Vec<&str> = cells[3].split(", ").collect();
            for (i, name) in names.iter().enumerate() {
                let kafka = kafka.get(i).or(kafka.last()).unwrap().parse().unwrap();
                let shoal = shoal.get(i).or(shoal.last()).unwrap();
                rows.push((name.to_string(), kafka, shoal.parse().ok()));
            }
        }
        rows
    }

    /// Every API a Kafka 4.4 broker serves is served at Kafka's newest stable version or
    /// newer, or listed in the docs' table with the versions as they are.
    #[test]
    fn every_api_is_at_kafkas_version_or_listed_behind() {
        use shoal_protocol::messages::ApiKey;
        let listed = behind_kafka_table();
        let mut wrong = Vec::new();
        for key in ApiKey::iter() {
            let name = format!("{key:?}");
            let kafka = key.stable_versions().max;
            let ours = spec(key as i16).map(|s| s.max_version);
            let row = listed.iter().find(|(n, _, _)| *n == name);
            match (ours.is_some_and(|v| v >= kafka), row) {
                (true, None) => {}
                (true, Some(_)) => wrong.push(format!(
                    "{name} is listed behind but served at v{}",
                    ours.unwrap()
                )),
                (false, None) => {
                    wrong.push(format!("{name}: Kafka {kafka}, Shoal {ours:?}, not listed"))
                }
                (false, Some((_, k, s))) if (*k, *s) != (kafka, ours) => wrong.push(format!(
                    "{name}: listed as Kafka {k} / Shoal {s:?}, is Kafka {kafka} / Shoal {ours:?}"
                )),
                (false, Some(_)) => {}
            }
        }
        for (name, _, _) in &listed {
            if !ApiKey::iter().any(|k| format!("{k:?}") == *name) {
                wrong.push(format!("{name} is listed but is no Kafka API"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn every_served_kafka_request_is_walked_before_it_is_decoded() {
        for spec in APIS {
            if shoal_protocol::frame::is_shoal_api(spec.key) {
                continue;
            }
            let shape = shapes::request_shape(spec.key)
                .unwrap_or_else(|| panic!("{} has no shape", spec.name));
            assert!(
                shape.versions.0 <= spec.min_version && spec.max_version <= shape.versions.1,
                "{}",
                spec.name
            );
        }
    }

    #[test]
    fn every_api_served_after_a_login_declares_the_acl_it_checks() {
        let cluster_action = AclCheck {
            operation: Operation::ClusterAction,
            resource: ResourceType::Cluster,
        };
        for spec in APIS {
            assert_eq!(
                spec.checks.is_empty(),
                spec.before_authentication || spec.decided_by_owner,
                "{}: ACL checks, unless served before a login or decided by the owner",
                spec.name
            );
            assert_eq!(spec.authorization.is_empty(), spec.before_authentication);
            for check in spec.checks {
                assert!(
                    spec.authorization.contains(check.operation.name()),
                    "{}: its explanation names {}",
                    spec.name,
                    check.operation.name()
                );
            }
            if spec.internal {
                assert_eq!(spec.checks, [cluster_action], "{}", spec.name);
            }
        }
    }

    #[test]
    fn keys_are_unique_and_names_readable() {
        for (i, a) in APIS.iter().enumerate() {
            assert!(APIS[i + 1..].iter().all(|b| b.key != a.key), "{}", a.name);
        }
        assert_eq!(name_of(ProduceRequest::KEY), "Produce");
        assert_eq!(
            name_of(DisklessCommitFileRequest::KEY),
            "DisklessCommitFile"
        );
        assert_eq!(name_of(CreateMirrorRequest::KEY), "CreateMirror");
        assert!(spec(DisklessCommitFileRequest::KEY).unwrap().internal);
        assert!(!spec(ProduceRequest::KEY).unwrap().internal);
    }

    #[test]
    fn out_of_range_versions_get_an_error_answer_where_the_response_has_a_code() {
        use kafka_protocol::protocol::Message;
        // InitProducerId v6 (KIP-939's two-phase commit, not stable in Kafka 4.4) is not
        // served; its codec knows it.
        let init = spec(InitProducerIdRequest::KEY).unwrap();
        let newer = InitProducerIdResponse::VERSIONS.max;
        assert!(
            !init.serves(newer),
            "the codec knows a newer InitProducerId than Shoal serves"
        );
        let frame = init.error_answer(newer, 7, 35).expect("answerable");
        assert_eq!(&frame[4..8], &7i32.to_be_bytes());
        let fetch = spec(FetchRequest::KEY).unwrap();
        // Fetch v3's response has no top-level error code: the connection is closed.
        assert!(fetch.error_answer(3, 7, 35).is_none());
        assert!(spec(ProduceRequest::KEY)
            .unwrap()
            .error_answer(2, 1, 35)
            .is_none());
    }
}
