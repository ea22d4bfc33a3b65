//! The calls on a share group, run on the shard that owns the group (a connection on another
//! shard sends them as a peer call). A group id held by a classic or consumer-protocol group
//! is not a share group: Kafka answers GROUP_ID_NOT_FOUND. What a call changed of the
//! share-partitions' states is in the coordinator's log before it is answered; where the log
//! refuses a state (another broker of the cluster took the share-partition over), this
//! broker forgets it and the member is told NOT_LEADER_OR_FOLLOWER for it.

use std::rc::Rc;
use std::sync::Arc;

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use shoal_coordinator::{TopicPartition, TopicsView};

use super::group::{ReadRecords, ShareHeartbeat, ShareHeartbeatAnswer, SESSION_CLOSE_EPOCH};
use super::partition::{Acquired, DeadLetterRun};
use super::registry::{SessionAnswer, SessionStep, ShareGroupDescription, ShareSettings};
use crate::groups::{GroupCall, GroupError, Groups};

/// `reply` once what the call changed of the group's share-partition states is in the log
/// (its memory charged first), `refuse` telling it the share-partitions the log refused.
fn after_writes<T: 'static>(
    groups: Rc<Groups>,
    group_id: &str,
    reply: Result<T, GroupError>,
    refuse: fn(&mut T, &[TopicPartition]),
) -> LocalBoxFuture<'static, Result<T, GroupError>> {
    groups.account_share(group_id);
    let writes = groups.share().take_writes(group_id);
    let group_id = group_id.to_string();
    async move {
        let refused = groups.write_share_states(writes).await?;
        if !refused.is_empty() {
            groups.share().drop_partitions(&group_id, &refused);
            groups.account_share(&group_id);
        }
        let mut reply = reply?;
        refuse(&mut reply, &refused);
        Ok(reply)
    }
    .boxed_local()
}

/// ShareGroupHeartbeat, with the topics as the receiving shard saw them.
#[derive(Debug)]
pub struct ShareGroupHeartbeatCall {
    pub group_id: String,
    pub heartbeat: ShareHeartbeat,
    pub topics: Arc<TopicsView>,
    pub settings: ShareSettings,
}

impl GroupCall for ShareGroupHeartbeatCall {
    type Reply = Result<ShareHeartbeatAnswer, GroupError>;

    fn run(self, groups: Rc<Groups>) -> LocalBoxFuture<'static, Self::Reply> {
        let reply = (|| {
            if groups.holds_other_than_share(&self.group_id) {
                return Err(GroupError::GroupIdNotFound);
            }
            let may_grow = groups.share_may_grow(&self.group_id);
            let answer = groups.share().heartbeat(
                &self.group_id,
                self.heartbeat,
                &self.topics,
                self.settings,
                may_grow,
            );
            groups.account_share(&self.group_id);
            answer
        })();
        async move { reply }.boxed_local()
    }
}

/// The session step of a ShareFetch or ShareAcknowledge: the session checked and moved on,
/// the acknowledgements applied, and where the session's partitions read from. `visiting`:
/// another broker of the cluster coordinates the group. A ShareFetch that goes on to read
/// (its epoch is not -1) is answered only after its `ShareAcquireCall`, which writes what this
/// step changed with what it changes itself: one write per fetch.
#[derive(Debug)]
pub struct ShareSessionCall {
    pub group_id: String,
    pub step: SessionStep,
    pub settings: ShareSettings,
    pub visiting: bool,
}

impl GroupCall for ShareSessionCall {
    type Reply = Result<SessionAnswer, GroupError>;

    fn run(self, groups: Rc<Groups>) -> LocalBoxFuture<'static, Self::Reply> {
        let reads_next = self.step.is_fetch && self.step.epoch != SESSION_CLOSE_EPOCH;
        let reply = match groups.holds_other_than_share(&self.group_id) {
            true => Err(GroupError::GroupIdNotFound),
            false => groups.share().session_step(
                &self.group_id,
                self.step,
                self.settings,
                self.visiting,
                groups.share_may_grow(&self.group_id),
            ),
        };
        if reads_next {
            groups.account_share(&self.group_id);
            return async move { reply }.boxed_local();
        }
        after_writes(groups, &self.group_id, reply, SessionAnswer::refuse)
    }
}

/// Hands the member records of what was read for it.
#[derive(Debug)]
pub struct ShareAcquireCall {
    pub group_id: String,
    pub member_id: String,
    pub reads: Vec<ReadRecords>,
    pub max_records: usize,
    pub settings: ShareSettings,
}

/// What a ShareFetch's reads handed the member, by partition, and every share-partition whose
/// state the log refused: nothing of those is handed out, and the fetch's acknowledgements on
/// them failed too.
#[derive(Debug, Default)]
pub struct AcquireAnswer {
    pub handed: Vec<(TopicPartition, Vec<Acquired>)>,
    pub refused: Vec<TopicPartition>,
}

impl AcquireAnswer {
    fn refuse(&mut self, refused: &[TopicPartition]) {
        self.handed.retain(|(tp, _)| !refused.contains(tp));
        self.refused = refused.to_vec();
    }
}

impl GroupCall for ShareAcquireCall {
    type Reply = Result<AcquireAnswer, GroupError>;

    fn run(self, groups: Rc<Groups>) -> LocalBoxFuture<'static, Self::Reply> {
        let reply = groups
            .share()
            .acquire(
                &self.group_id,
                &self.member_id,
                &self.reads,
                self.max_records,
                self.settings,
            )
            .map(|handed| {
                let partitions = self.reads.iter().map(|read| read.partition);
                AcquireAnswer {
                    handed: partitions.zip(handed).collect(),
                    refused: Vec::new(),
                }
            });
        after_writes(groups, &self.group_id, reply, AcquireAnswer::refuse)
    }
}

/// The group's records given up on since last taken (KIP-1191), for the broker to write to
/// the group's dead-letter topic; each run then ends with `DeadLettered`.
#[derive(Debug)]
pub struct TakeDeadLetters(pub String);

impl GroupCall for TakeDeadLetters {
    type Reply = Vec<(TopicPartition, DeadLetterRun)>;

    fn run(self, groups: Rc<Groups>) -> LocalBoxFuture<'static, Self::Reply> {
        let reply = groups.share().take_dead_letters(&self.0);
        async move { reply }.boxed_local()
    }
}

/// A run of records the dead-letter writer is done with: archived, and the share-partition's
/// state written.
#[derive(Debug)]
pub struct DeadLettered {
    pub group_id: String,
    pub partition: TopicPartition,
    pub run: DeadLetterRun,
}

impl GroupCall for DeadLettered {
    type Reply = Result<(), GroupError>;

    fn run(self, groups: Rc<Groups>) -> LocalBoxFuture<'static, Self::Reply> {
        let (first, last) = (self.run.first_offset, self.run.last_offset);
        groups
            .share()
            .dead_lettered(&self.group_id, self.partition, first, last);
        // A share-partition another broker took over meanwhile writes it there again.
        after_writes(groups, &self.group_id, Ok(()), |_, _| {})
    }
}

/// ShareGroupDescribe: None when no share group has that id.
#[derive(Debug)]
pub struct DescribeShareGroup(pub String);

impl GroupCall for DescribeShareGroup {
    type Reply = Option<ShareGroupDescription>;

    fn run(self, groups: Rc<Groups>) -> LocalBoxFuture<'static, Self::Reply> {
        let reply = groups.share().describe(&self.0);
        async move { reply }.boxed_local()
    }
}

/// AlterShareGroupOffsets and DeleteShareGroupOffsets: each share-partition's new start
/// (`None`: its state deleted), with the version the log holds of it; NON_EMPTY_GROUP while
/// the group has members.
#[derive(Debug)]
pub struct ResetShareOffsets {
    pub group_id: String,
    pub changes: Vec<(TopicPartition, Option<i64>, i64)>,
}

impl GroupCall for ResetShareOffsets {
    type Reply = Result<(), GroupError>;

    fn run(self, groups: Rc<Groups>) -> LocalBoxFuture<'static, Self::Reply> {
        let reply = match groups.holds_other_than_share(&self.group_id) {
            true => Err(GroupError::GroupIdNotFound),
            false => groups.share().reset(&self.group_id, &self.changes),
        };
        async move {
            // A refusal: a member still fetching through another broker wrote since the
            // versions were read. The caller may try again.
            match groups.write_share_states(reply?).await?.is_empty() {
                true => Ok(()),
                false => Err(GroupError::CoordinatorNotAvailable),
            }
        }
        .boxed_local()
    }
}
