//! One file per Kafka API, each declared once in `registry`, which decodes requests,
//! dispatches them and frames the answers. A handler never fails the connection: it answers
//! with Kafka error codes.

pub mod api_versions;
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
pub mod registry;
mod topics;

use std::rc::Rc;
use std::sync::Arc;

use shoal_shards::Shard;

use crate::config::BrokerConfig;

pub use registry::{Call, ClientInfo};

/// What every handler on a shard works with.
pub struct Broker {
    pub shard: Rc<Shard>,
    pub config: Arc<BrokerConfig>,
    pub advertised_host: String,
    pub advertised_port: i32,
    /// Bytes of requests being read or handled on this shard (`max_in_flight_request_bytes`).
    pub request_memory: Rc<glommio::sync::Semaphore>,
}

impl Broker {
    pub fn new(shard: Rc<Shard>, config: Arc<BrokerConfig>) -> Broker {
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
        }
    }
}
