//! The groups one shard owns, and the ticker that expires sessions and ends rebalance
//! phases on time.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures::channel::oneshot;
use shoal_coordinator::ErrorKind;

use super::messages::*;
use super::subscription::subscribed_topics;
use super::{Group, GroupConfig};

const TICK: Duration = Duration::from_millis(100);

pub struct Groups {
    groups: RefCell<HashMap<String, Group>>,
    config: GroupConfig,
}

impl Groups {
    pub fn new(config: GroupConfig) -> Rc<Groups> {
        let groups = Rc::new(Groups {
            groups: RefCell::new(HashMap::new()),
            config,
        });
        let weak = Rc::downgrade(&groups);
        glommio::spawn_local(async move {
            loop {
                glommio::timer::sleep(TICK).await;
                let Some(groups) = weak.upgrade() else { break };
                groups.tick(Instant::now());
            }
        })
        .detach();
        groups
    }

    fn tick(&self, now: Instant) {
        let mut groups = self.groups.borrow_mut();
        for group in groups.values_mut() {
            group.tick(now);
        }
        groups.retain(|_, g| !g.is_idle());
    }

    pub async fn handle(&self, request: GroupRequest) -> GroupResponse {
        let now = Instant::now();
        match request {
            GroupRequest::Join(req) => {
                let member_id = req.member_id.clone();
                let (tx, rx) = oneshot::channel();
                {
                    let mut groups = self.groups.borrow_mut();
                    if !groups.contains_key(&req.group_id)
                        && groups.len() >= self.config.max_groups_per_shard
                    {
                        return GroupResponse::Join(JoinResponse::failed(
                            ErrorKind::TooManyGroups,
                            &member_id,
                        ));
                    }
                    let group = groups
                        .entry(req.group_id.clone())
                        .or_insert_with(|| Group::new(&req.group_id, self.config));
                    group.join(req, now, tx);
                }
                GroupResponse::Join(rx.await.unwrap_or_else(|_| {
                    JoinResponse::failed(ErrorKind::RebalanceInProgress, &member_id)
                }))
            }
            GroupRequest::Sync(req) => {
                let (tx, rx) = oneshot::channel();
                match self.groups.borrow_mut().get_mut(&req.member.group_id) {
                    Some(group) => group.sync(req, now, tx),
                    None => {
                        let _ = tx.send(SyncResponse::failed(ErrorKind::UnknownMemberId));
                    }
                }
                GroupResponse::Sync(
                    rx.await
                        .unwrap_or_else(|_| SyncResponse::failed(ErrorKind::RebalanceInProgress)),
                )
            }
            GroupRequest::Heartbeat(m) => {
                GroupResponse::Outcome(match self.groups.borrow_mut().get_mut(&m.group_id) {
                    Some(group) => group.heartbeat(&m, now),
                    None => Some(ErrorKind::UnknownMemberId),
                })
            }
            GroupRequest::Leave { group_id, members } => {
                GroupResponse::Leave(match self.groups.borrow_mut().get_mut(&group_id) {
                    Some(group) => group.leave(&members, now),
                    None => vec![Some(ErrorKind::UnknownMemberId); members.len()],
                })
            }
            GroupRequest::ValidateCommit(m) => {
                GroupResponse::Outcome(match self.groups.borrow_mut().get_mut(&m.group_id) {
                    Some(group) => group.validate_commit(&m, now),
                    // No members: only a "simple" commit (generation -1) is allowed.
                    None if m.generation_id < 0 => None,
                    None => Some(ErrorKind::UnknownMemberId),
                })
            }
            GroupRequest::Describe(group_id) => {
                GroupResponse::Describe(self.groups.borrow().get(&group_id).map(Group::describe))
            }
            GroupRequest::List => {
                GroupResponse::List(self.groups.borrow().values().map(Group::listing).collect())
            }
            GroupRequest::Delete(group_id) => {
                let mut groups = self.groups.borrow_mut();
                GroupResponse::Outcome(match groups.get(&group_id) {
                    Some(group) if !group.is_empty() => Some(ErrorKind::NonEmptyGroup),
                    Some(_) => {
                        groups.remove(&group_id);
                        None
                    }
                    // The group may still have committed offsets: the caller asks the
                    // coordinator.
                    None => Some(ErrorKind::GroupIdNotFound),
                })
            }
            GroupRequest::SubscribedTopics(group_id) => {
                let groups = self.groups.borrow();
                let mut topics: Vec<String> = groups
                    .get(&group_id)
                    .map(|g| {
                        g.member_metadata()
                            .iter()
                            .filter_map(|m| subscribed_topics(m))
                            .flatten()
                            .collect()
                    })
                    .unwrap_or_default();
                topics.sort();
                topics.dedup();
                GroupResponse::SubscribedTopics(topics)
            }
        }
    }
}
