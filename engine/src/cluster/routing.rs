//! What handlers tell clients about the cluster: the live brokers with the addresses of the
//! listener the client came in on, each partition's leader for that client, and each group's
//! coordinator. A single node names itself for all of them.

use shoal_coordinator::{ErrorKind, TopicPartition};
use uuid::Uuid;

use crate::context::{Broker, Call};
use shoal_cluster::placement::client_zone;
use shoal_cluster::{ClusterView, Member};

/// A broker as a client should reach it.
pub struct BrokerAddress {
    pub node_id: i32,
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
}

impl Call<'_> {
    /// Every live broker (this one always among them), by node id.
    pub fn cluster_brokers(&self) -> Vec<BrokerAddress> {
        let me = self.this_broker();
        let Some(cluster) = &self.broker.cluster else {
            return vec![me];
        };
        let view = cluster.view.load();
        let mut brokers: Vec<BrokerAddress> = view
            .members
            .iter()
            .filter(|m| m.node_id != me.node_id)
            .filter_map(|m| self.address_of(m))
            .collect();
        brokers.push(me);
        brokers.sort_by_key(|b| b.node_id);
        brokers
    }

    /// The broker named as leader of `partition` for this client: in its zone when it says
    /// one (`shoal_az=` in its client.id) and a broker is there.
    pub fn partition_leader(&self, topic_id: Uuid, partition: i32) -> i32 {
        let Some(cluster) = &self.broker.cluster else {
            return self.broker.config.node_id;
        };
        let view = cluster.view.load();
        let zone = client_zone(&self.client.id);
        match view.leader(topic_id, partition, zone) {
            Some(member) if self.address_of(member).is_some() => member.node_id,
            _ => self.broker.config.node_id,
        }
    }

    /// KIP-392's preferred read replica for a consumer that says its rack (Fetch v11+): a
    /// broker of that rack, chosen as Metadata would choose for a client there, when this
    /// broker is elsewhere. Any broker serves any partition, so it is a broker, not a replica.
    pub fn preferred_read_replica(
        &self,
        topic_id: Uuid,
        partition: i32,
        rack: &str,
    ) -> Option<i32> {
        let cluster = self.broker.cluster.as_ref()?;
        if rack.is_empty() || self.broker.config.cluster.rack.as_deref() == Some(rack) {
            return None;
        }
        let view = cluster.view.load();
        let chosen = view.leader(topic_id, partition, Some(rack))?;
        let reachable = self.address_of(chosen).is_some();
        (chosen.rack.as_deref() == Some(rack) && reachable).then_some(chosen.node_id)
    }

    /// The broker that coordinates group `key`.
    pub fn group_coordinator(&self, key: &str) -> BrokerAddress {
        let chosen = self.broker.cluster.as_ref().and_then(|cluster| {
            let view = cluster.view.load();
            self.coordinating_member(&view, key)
                .and_then(|m| self.address_of(m))
        });
        chosen.unwrap_or_else(|| self.this_broker())
    }

    /// Refuses a group request this broker does not coordinate now; clients look the
    /// coordinator up again and follow it. Runs on every group request, so it compares node
    /// ids without building addresses.
    pub fn check_coordinator(&self, group_id: &str) -> Result<(), ErrorKind> {
        let me = self.broker.config.node_id;
        let Some(cluster) = &self.broker.cluster else {
            return Ok(());
        };
        let view = cluster.view.load();
        let chosen = self.coordinating_member(&view, group_id);
        match chosen.is_none_or(|m| m.node_id == me) {
            true => Ok(()),
            false => Err(ErrorKind::NotCoordinator),
        }
    }

    /// The live broker chosen for group `key`, if the client can reach it on its listener
    /// (else this broker coordinates).
    fn coordinating_member<'v>(&self, view: &'v ClusterView, key: &str) -> Option<&'v Member> {
        let listener = &self.client.session.listener.name;
        view.coordinator(key)
            .filter(|m| m.address_for(listener).is_some())
    }

    fn this_broker(&self) -> BrokerAddress {
        let (host, port) = self.advertised();
        BrokerAddress {
            node_id: self.broker.config.node_id,
            host,
            port,
            rack: self.broker.config.cluster.rack.clone(),
        }
    }

    fn address_of(&self, member: &Member) -> Option<BrokerAddress> {
        let listener = &self.client.session.listener.name;
        let (host, port) = member.address_for(listener)?;
        Some(BrokerAddress {
            node_id: member.node_id,
            host: host.to_string(),
            port,
            rack: member.rack.clone(),
        })
    }
}

impl Broker {
    /// Whether this broker fetches `partition` of a mirror: in a cluster, the one broker
    /// rendezvous hashing picks among the live ones, so each is fetched once.
    pub fn mirrors_partition(&self, partition: &TopicPartition) -> bool {
        let Some(cluster) = &self.cluster else {
            return true;
        };
        let view = cluster.view.load();
        view.leader(partition.topic_id, partition.partition, None)
            .is_none_or(|m| m.node_id == self.config.node_id)
    }

    /// Whether this broker runs the chores one broker does for all (the mirrors' metadata
    /// sync, ending timed-out transactions): the live broker with the lowest node id.
    pub fn runs_cluster_chores(&self) -> bool {
        let Some(cluster) = &self.cluster else {
            return true;
        };
        let view = cluster.view.load();
        view.members
            .first()
            .is_none_or(|m| m.node_id == self.config.node_id)
    }
}
