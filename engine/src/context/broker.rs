//! The broker as each handler on a shard sees it: its shard, config, cluster and budgets.

use std::rc::Rc;
use std::sync::Arc;

use shoal_shards::Shard;

use crate::cluster::Membership;
use crate::config::BrokerConfig;
use crate::dynamic_configs::LiveConfigs;
use crate::quotas::QuotaBoard;
use crate::security::OAuthValidator;
use crate::server::memory::RequestBudget;

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
    /// What checks OAUTHBEARER tokens; None when the mechanism is not enabled.
    pub oauth: Option<Arc<OAuthValidator>>,
}

impl Broker {
    pub fn new(
        shard: Rc<Shard>,
        config: Arc<BrokerConfig>,
        cluster: Option<Arc<Membership>>,
        quotas: Arc<QuotaBoard>,
        live: Arc<LiveConfigs>,
        oauth: Option<Arc<OAuthValidator>>,
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
            oauth,
        }
    }
}
