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
pub mod delete_records;
pub mod delete_topics;
pub mod describe_cluster;
pub mod describe_producers;
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

use crate::cluster::Membership;
use std::rc::Rc;
use std::sync::Arc;

use shoal_shards::Shard;

use crate::config::BrokerConfig;
use crate::dynamic_configs::LiveConfigs;
use crate::quotas::QuotaBoard;
use crate::server::memory::RequestBudget;

pub use registry::{Call, ClientInfo};

/// What every handler on a shard works with.
pub struct Broker {
    pub shard: Rc<Shard>,
    pub config: Arc<BrokerConfig>,
    /// The cluster this broker is one of; None for a single node.
    pub cluster: Option<Arc<Membership>>,
    pub advertised_host: String,
    pub advertised_port: i32,
    /// Bytes of requests being read or handled on this shard (`max_in_flight_request_bytes`).
    pub request_memory: Rc<RequestBudget>,
    /// Every shard's client rates, measured against their quotas.
    pub quotas: Arc<QuotaBoard>,
    /// The dynamic broker configs in effect, and what puts changes into effect.
    pub live: Arc<LiveConfigs>,
}

impl Broker {
    pub fn new(
        shard: Rc<Shard>,
        config: Arc<BrokerConfig>,
        cluster: Option<Arc<Membership>>,
        quotas: Arc<QuotaBoard>,
        live: Arc<LiveConfigs>,
    ) -> Broker {
        let (advertised_host, advertised_port) = config.advertised();
        let request_memory =
            RequestBudget::new(config.max_in_flight_request_bytes, shard.metrics.clone());
        Broker {
            shard,
            config,
            cluster,
            advertised_host,
            advertised_port,
            request_memory,
            quotas,
            live,
        }
    }
}
