//! A classic group moving to the consumer protocol with its members (their subscriptions and
//! last assignments go with them), and one coming back: its members rejoin in a rebalance,
//! as Kafka's online migration does.

use std::time::Instant;

use super::{Group, Member, Phase};
use crate::groups::consumer::classic::{ClassicSeed, CONSUMER_PROTOCOL_TYPE};
use crate::groups::GroupConfig;

impl Group {
    /// The members as a consumer-protocol group takes them, and the generation as their
    /// epoch; None unless the group runs the consumer protocol's embedded assignment (only
    /// those migrate). Members waiting in JoinGroup or SyncGroup are answered
    /// REBALANCE_IN_PROGRESS when the group is dropped.
    pub fn upgrade_seeds(&self) -> Option<(i32, Vec<ClassicSeed>)> {
        if self.protocol_type.as_deref() != Some(CONSUMER_PROTOCOL_TYPE) {
            return None;
        }
        let seeds = self
            .members
            .iter()
            .map(|(id, m)| {
                let protocol = self
                    .protocol
                    .clone()
                    .or_else(|| m.protocols.first().map(|(name, _)| name.clone()))
                    .unwrap_or_default();
                ClassicSeed {
                    member_id: id.clone(),
                    instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    session_timeout: m.session_timeout,
                    rebalance_timeout: m.rebalance_timeout,
                    protocols: m.protocols.clone(),
                    metadata: m.metadata_for(&protocol),
                    assignment: m.assignment.clone(),
                }
            })
            .collect();
        Some((self.generation, seeds))
    }

    /// A consumer-protocol group's classic members as a classic group, which rebalances at
    /// once: each member learns of it at its next heartbeat and rejoins.
    pub fn downgraded(
        id: &str,
        config: GroupConfig,
        generation: i32,
        seeds: Vec<ClassicSeed>,
        now: Instant,
    ) -> Group {
        let mut group = Group::new(id, config);
        group.generation = generation;
        group.protocol_type = Some(CONSUMER_PROTOCOL_TYPE.to_string());
        group.phase = Phase::Stable;
        for seed in seeds {
            group.next_member_seq += 1;
            if let Some(instance) = &seed.instance_id {
                group
                    .static_members
                    .insert(instance.clone(), seed.member_id.clone());
            }
            let member = Member {
                instance_id: seed.instance_id,
                client_id: seed.client_id,
                client_host: seed.client_host,
                session_timeout: seed.session_timeout,
                rebalance_timeout: seed.rebalance_timeout,
                protocols: seed.protocols,
                assignment: seed.assignment,
                last_heard: now,
                joined_at: group.next_member_seq,
                pending_join: None,
                pending_sync: None,
            };
            group.members.insert(seed.member_id, member);
        }
        group.protocol = group.choose_protocol();
        group.prepare_rebalance(now);
        group
    }
}
