//! A consumer-protocol group as ConsumerGroupDescribe reports it.

use std::collections::BTreeSet;

use shoal_coordinator::TopicPartition;

use super::group::ConsumerGroup;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupDescription {
    pub state: &'static str,
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    pub assignor: &'static str,
    pub members: Vec<ConsumerMemberDescription>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerMemberDescription {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub member_epoch: i32,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
    pub subscribed_topic_regex: Option<String>,
    /// What it consumes now, and what the group's target gives it.
    pub assigned: BTreeSet<TopicPartition>,
    pub target: BTreeSet<TopicPartition>,
    /// A member of the classic protocol (the group migrates between the protocols).
    pub classic: bool,
}

impl ConsumerGroup {
    pub fn describe(&self) -> ConsumerGroupDescription {
        let members = self
            .members
            .iter()
            .map(|(id, m)| ConsumerMemberDescription {
                member_id: id.clone(),
                instance_id: m.instance_id.clone(),
                rack_id: m.rack_id.clone(),
                member_epoch: m.assignment.epoch,
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                subscribed_topic_names: m.subscribed.iter().cloned().collect(),
                subscribed_topic_regex: m.regex.as_ref().map(|(e, _)| e.clone()),
                assigned: m.assignment.assigned.clone(),
                target: self.target.get(id).cloned().unwrap_or_default(),
                classic: m.classic.is_some(),
            })
            .collect();
        ConsumerGroupDescription {
            state: self.state(),
            group_epoch: self.group_epoch,
            assignment_epoch: self.assignment_epoch,
            assignor: self.assignor().name(),
            members,
        }
    }
}
