//! The topic catalogue as every shard sees it: an immutable snapshot the coordinator replaces
//! after each durable change of what it shows, read lock-free by the shards. It is made of
//! images (topics, ACLs, group configs, broker configs, features, delegation tokens, client
//! quotas), each shared with the view before it unless its records changed
//! (`state/view_changes.rs`).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use uuid::Uuid;

use crate::acl::AclBinding;
use crate::broker_configs::{BrokerConfigs, CLUSTER_DEFAULT};
use crate::client_quotas::{quota_for, ClientQuotas, QuotaKey};
use crate::features::FinalizedFeatures;
use crate::records::TopicConfig;
use crate::topic_configs::TopicOverrides;

/// A mirrored topic's mirror and its partitions' mirror states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorMeta {
    pub name: String,
    pub removed: bool,
    pub partitions: Vec<shoal_mirror::PartitionMirror>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMeta {
    pub name: String,
    pub id: Uuid,
    pub partitions: i32,
    /// In effect: its own settings and, for the rest, the cluster-wide defaults.
    pub config: TopicConfig,
    /// The configs it sets itself.
    pub overrides: TopicOverrides,
    pub mirror: Option<MirrorMeta>,
}

impl TopicMeta {
    /// Produces are refused while the partition belongs to a mirror (READ_ONLY_TOPIC).
    pub fn is_read_only(&self, partition: i32) -> bool {
        let Some(mirror) = &self.mirror else {
            return false;
        };
        usize::try_from(partition)
            .ok()
            .and_then(|i| mirror.partitions.get(i))
            .is_some_and(|m| m.is_read_only())
    }
}

/// The topics by name and by id.
#[derive(Debug, Default)]
struct TopicsImage {
    by_name: HashMap<String, Arc<TopicMeta>>,
    by_id: HashMap<Uuid, Arc<TopicMeta>>,
}

#[derive(Debug, Default)]
pub struct TopicsView {
    topics: Arc<TopicsImage>,
    /// The ACL bindings, published with the catalogue so shards authorize without asking.
    acls: Arc<Vec<AclBinding>>,
    /// Groups' dynamic configs, by group (published so shards and handlers need not ask).
    group_configs: Arc<BTreeMap<String, Vec<(String, String)>>>,
    /// Dynamic broker configs by broker (-1: the cluster-wide default).
    broker_configs: Arc<BrokerConfigs>,
    /// Client quotas by entity (published for the shards that measure clients against them).
    client_quotas: Arc<ClientQuotas>,
    /// The finalized feature levels, for ApiVersions and the paths a level changes.
    features: Arc<FinalizedFeatures>,
    /// Delegation tokens by id, for logins with them and the token APIs.
    delegation_tokens: Arc<crate::delegation_tokens::DelegationTokens>,
    /// Distinct for every catalogue built in this process (0: the empty default), so a reader
    /// can tell cheaply whether what it derived from an older one is still current.
    version: u64,
}

static VERSIONS: AtomicU64 = AtomicU64::new(1);

/// Views show the same when every image does, whatever their versions.
impl PartialEq for TopicsView {
    fn eq(&self, other: &TopicsView) -> bool {
        self.topics.by_id == other.topics.by_id
            && self.topics.by_name == other.topics.by_name
            && self.acls == other.acls
            && self.group_configs == other.group_configs
            && self.broker_configs == other.broker_configs
            && self.client_quotas == other.client_quotas
            && self.features == other.features
            && self.delegation_tokens == other.delegation_tokens
    }
}

impl TopicsView {
    pub fn new(topics: impl IntoIterator<Item = TopicMeta>) -> TopicsView {
        let mut view = TopicsView {
            version: VERSIONS.fetch_add(1, Ordering::Relaxed),
            ..TopicsView::default()
        };
        view.set_topics(topics);
        view
    }

    /// A view of a new version sharing every image with this one, for the changed ones to
    /// replace.
    pub fn next_version(&self) -> TopicsView {
        TopicsView {
            topics: self.topics.clone(),
            acls: self.acls.clone(),
            group_configs: self.group_configs.clone(),
            broker_configs: self.broker_configs.clone(),
            client_quotas: self.client_quotas.clone(),
            features: self.features.clone(),
            delegation_tokens: self.delegation_tokens.clone(),
            version: VERSIONS.fetch_add(1, Ordering::Relaxed),
        }
    }

    pub fn set_topics(&mut self, topics: impl IntoIterator<Item = TopicMeta>) {
        let topics = topics.into_iter();
        let mut image = TopicsImage {
            by_name: HashMap::with_capacity(topics.size_hint().0),
            by_id: HashMap::with_capacity(topics.size_hint().0),
        };
        for topic in topics {
            let topic = Arc::new(topic);
            image.by_id.insert(topic.id, topic.clone());
            image.by_name.insert(topic.name.clone(), topic);
        }
        self.topics = Arc::new(image);
    }

    pub fn set_acls(&mut self, acls: Vec<AclBinding>) {
        self.acls = Arc::new(acls);
    }

    pub fn set_group_configs(&mut self, group_configs: BTreeMap<String, Vec<(String, String)>>) {
        self.group_configs = Arc::new(group_configs);
    }

    pub fn set_broker_configs(&mut self, broker_configs: BrokerConfigs) {
        self.broker_configs = Arc::new(broker_configs);
    }

    pub fn set_features(&mut self, features: FinalizedFeatures) {
        self.features = Arc::new(features);
    }

    pub fn set_delegation_tokens(&mut self, tokens: crate::delegation_tokens::DelegationTokens) {
        self.delegation_tokens = Arc::new(tokens);
    }

    pub fn set_client_quotas(&mut self, client_quotas: ClientQuotas) {
        self.client_quotas = Arc::new(client_quotas);
    }

    pub fn version(&self) -> u64 {
        self.version
    }

    pub fn by_name(&self, name: &str) -> Option<&Arc<TopicMeta>> {
        self.topics.by_name.get(name)
    }

    pub fn by_id(&self, id: &Uuid) -> Option<&Arc<TopicMeta>> {
        self.topics.by_id.get(id)
    }

    pub fn all(&self) -> impl Iterator<Item = &Arc<TopicMeta>> {
        self.topics.by_name.values()
    }

    pub fn acls(&self) -> &[AclBinding] {
        &self.acls
    }

    /// The groups that set configs of their own, by name.
    pub fn configured_groups(&self) -> impl Iterator<Item = &str> {
        self.group_configs.keys().map(String::as_str)
    }

    /// Every config set for the group.
    pub fn group_configs(&self, group: &str) -> &[(String, String)] {
        self.group_configs.get(group).map_or(&[], Vec::as_slice)
    }

    /// The finalized feature levels.
    pub fn features(&self) -> &FinalizedFeatures {
        &self.features
    }

    /// Every delegation token by id, expired ones included until the sweep removes them.
    pub fn delegation_tokens(&self) -> &crate::delegation_tokens::DelegationTokens {
        &self.delegation_tokens
    }

    /// The dynamic configs set for one broker (`None`: the cluster-wide default).
    pub fn broker_configs(&self, broker: Option<i32>) -> &[(String, String)] {
        let key = broker.unwrap_or(CLUSTER_DEFAULT);
        self.broker_configs.get(&key).map_or(&[], Vec::as_slice)
    }

    /// The quota `key` a client of `user` and `client_id` is held to, and whose usage it
    /// bounds (Kafka's precedence); None: unlimited.
    pub fn quota_for(&self, user: &str, client_id: &str, key: &str) -> Option<(QuotaKey, f64)> {
        quota_for(&self.client_quotas, user, client_id, key)
    }
}
