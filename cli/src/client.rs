//! The admin CLI's connections: the bootstrap broker, then each broker the cluster's metadata
//! names, opened when first needed (partition leaders for offsets, a group's coordinator).
//! Works against any Kafka broker: versions every Kafka from 3.0 and Shoal serve.

use std::collections::{BTreeMap, HashMap};

use kafka_protocol::protocol::{Request, StrBytes};
use shoal_auth::ClientSecurity;
use shoal_protocol::client::BlockingClient;
use shoal_protocol::messages::metadata_request::MetadataRequestTopic;
use shoal_protocol::messages::metadata_response::MetadataResponseTopic;
use shoal_protocol::messages::{
    ApiKey, ApiVersionsRequest, FindCoordinatorRequest, MetadataRequest, MetadataResponse,
    TopicName,
};

use crate::connection::{self, Connection};
use crate::error::{check, only_item, AdminError};

pub const METADATA_VERSION: i16 = 12;
const FIND_COORDINATOR_VERSION: i16 = 4;
const API_VERSIONS_VERSION: i16 = 3;
const COORDINATOR_GROUP: i8 = 0;

pub struct Admin {
    bootstrap: BlockingClient<Connection>,
    security: ClientSecurity,
    /// The bootstrap broker's API keys, once asked.
    api_keys: Option<Vec<i16>>,
    brokers: HashMap<i32, String>,
    connections: HashMap<i32, BlockingClient<Connection>>,
}

impl Admin {
    /// Connects to the first address of `bootstrap` (host:port, comma-separated).
    pub fn connect(bootstrap: &str, security: ClientSecurity) -> Result<Admin, AdminError> {
        let address = bootstrap.split(',').next().unwrap_or(bootstrap).trim();
        let client = connection::open(address, &security)?;
        let mut admin = Admin {
            bootstrap: client,
            security,
            api_keys: None,
            brokers: HashMap::new(),
            connections: HashMap::new(),
        };
        admin.metadata(Some(&[]))?;
        Ok(admin)
    }

    /// A request to the bootstrap broker.
    pub fn call<R: Request>(
        &mut self,
        version: i16,
        request: &R,
    ) -> Result<R::Response, AdminError> {
        self.bootstrap
            .call(version, request)
            .map_err(|e| AdminError::Protocol(e.to_string()))
    }

    /// Whether the bootstrap broker serves `api` at all.
    pub fn serves(&mut self, api: ApiKey) -> Result<bool, AdminError> {
        if self.api_keys.is_none() {
            // Kafka refuses a v3 request whose software name or version is not [a-zA-Z0-9.-].
            let request = ApiVersionsRequest::default()
                .with_client_software_name(StrBytes::from_static_str("shoal-admin"))
                .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")));
            let answer = self.call(API_VERSIONS_VERSION, &request)?;
            check(answer.error_code, Some("ApiVersions"))?;
            self.api_keys = Some(answer.api_keys.iter().map(|k| k.api_key).collect());
        }
        Ok(self
            .api_keys
            .as_ref()
            .is_some_and(|keys| keys.contains(&(api as i16))))
    }

    /// A request to broker `node`.
    pub fn call_node<R: Request>(
        &mut self,
        node: i32,
        version: i16,
        request: &R,
    ) -> Result<R::Response, AdminError> {
        if !self.connections.contains_key(&node) {
            let address = self.brokers.get(&node).ok_or_else(|| {
                AdminError::Protocol(format!("broker {node} is not in the metadata"))
            })?;
            let client = connection::open(address, &self.security).map_err(|e| match e {
                AdminError::Connect(why) => AdminError::Connect(format!("broker {node} at {why}")),
                other => other,
            })?;
            self.connections.insert(node, client);
        }
        let client = self.connections.get_mut(&node).expect("just opened");
        client
            .call(version, request)
            .map_err(|e| AdminError::Protocol(e.to_string()))
    }

    /// The cluster's metadata for `topics` (None: every topic; empty: brokers only); the
    /// brokers it names are remembered.
    pub fn metadata(&mut self, topics: Option<&[String]>) -> Result<MetadataResponse, AdminError> {
        let request = MetadataRequest::default()
            .with_topics(topics.map(|names| {
                names
                    .iter()
                    .map(|n| {
                        MetadataRequestTopic::default()
                            .with_name(Some(TopicName(StrBytes::from_string(n.clone()))))
                    })
                    .collect()
            }))
            .with_allow_auto_topic_creation(false);
        let answer = self.call(METADATA_VERSION, &request)?;
        for b in &answer.brokers {
            self.brokers
                .insert(b.node_id.0, format!("{}:{}", b.host.as_str(), b.port));
        }
        Ok(answer)
    }

    /// The named topics' metadata, each by name; a topic the broker refuses (unknown, not
    /// authorized) is the command's error.
    pub fn existing_topics(
        &mut self,
        names: &[String],
    ) -> Result<Vec<(String, MetadataResponseTopic)>, AdminError> {
        let metadata = self.metadata(Some(names))?;
        metadata
            .topics
            .into_iter()
            .map(|topic| {
                let name = topic
                    .name
                    .as_ref()
                    .map(|n| n.0.to_string())
                    .unwrap_or_default();
                check(topic.error_code, Some(&format!("topic {name}")))?;
                Ok((name, topic))
            })
            .collect()
    }

    /// Each partition of `topic` with its leader, by partition.
    pub fn leaders(&mut self, topic: &str) -> Result<BTreeMap<i32, i32>, AdminError> {
        let (_, metadata) = self
            .existing_topics(&[topic.to_string()])?
            .pop()
            .ok_or_else(|| AdminError::Protocol(format!("no metadata for {topic}")))?;
        Ok(metadata
            .partitions
            .iter()
            .map(|p| (p.partition_index, p.leader_id.0))
            .collect())
    }

    /// The broker coordinating `group`.
    pub fn group_coordinator(&mut self, group: &str) -> Result<i32, AdminError> {
        let request = FindCoordinatorRequest::default()
            .with_key_type(COORDINATOR_GROUP)
            .with_coordinator_keys(vec![StrBytes::from_string(group.to_string())]);
        let answer = self.call(FIND_COORDINATOR_VERSION, &request)?;
        let found = only_item(&answer.coordinators, "FindCoordinator")?;
        check(
            found.error_code,
            found.error_message.as_ref().map(|m| m.as_str()),
        )?;
        self.brokers.insert(
            found.node_id.0,
            format!("{}:{}", found.host.as_str(), found.port),
        );
        Ok(found.node_id.0)
    }
}
