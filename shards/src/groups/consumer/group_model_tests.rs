//! A model test of whole groups: random joins (by topic names), leaves, static leaves and
//! returns, crashes (a member that stops heartbeating until its session ends), lost answers,
//! subscription changes, topics growing, and the broker restarting (the group read back from
//! the records it stored after every change). After every step no partition is held by two
//! members nor consumed by two clients; at the end, once every live client has heartbeated
//! enough, each partition of a subscribed topic is consumed by exactly one client subscribed
//! to it.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use shoal_coordinator::{CoordinatorState, TopicPartition};
use uuid::Uuid;

use crate::groups::consumer::assignor::Assignor;
use crate::groups::consumer::group::{
    ConsumerGroup, Heartbeat, JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH,
};
use crate::groups::consumer::model_checks::{check_held_and_consumed_once, restart, store};
use crate::groups::GroupError;

const SESSION: Duration = Duration::from_secs(10);
const TOPICS: [&str; 2] = ["a", "b"];

#[derive(Debug, Clone)]
enum Step {
    /// Member n joins subscribed to the topics in the mask (1: a, 2: b, 3: both).
    Join(u8, u8),
    Heartbeat(u8),
    /// The group decides, but the answer never reaches the client.
    LostAnswer(u8),
    Leave(u8),
    /// A static member leaves with -2, keeping its place for its return.
    StaticLeave(u8),
    Subscribe(u8, u8),
    /// The client dies: it stops consuming and heartbeating.
    Crash(u8),
    /// Time passes (live clients heartbeat midway): crashed members' sessions end.
    Expire,
    Grow(u8, i32),
    /// The broker restarts: the group is what it stored.
    Restart,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0u8..4, 1u8..4).prop_map(|(n, mask)| Step::Join(n, mask)),
        6 => (0u8..4).prop_map(Step::Heartbeat),
        1 => (0u8..4).prop_map(Step::LostAnswer),
        1 => (0u8..4).prop_map(Step::Leave),
        1 => (0u8..4).prop_map(Step::StaticLeave),
        1 => (0u8..4, 1u8..4).prop_map(|(n, mask)| Step::Subscribe(n, mask)),
        1 => (0u8..4).prop_map(Step::Crash),
        1 => Just(Step::Expire),
        1 => (0u8..2, 1i32..7).prop_map(|(t, count)| Step::Grow(t, count)),
        1 => Just(Step::Restart),
    ]
}

fn names(mask: u8) -> BTreeSet<String> {
    TOPICS
        .iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(_, t)| t.to_string())
        .collect()
}

/// A client: alive or not, its member id and epoch, what it consumes, what it subscribes to.
struct Client {
    member_id: String,
    instance_id: String,
    epoch: i32,
    owned: BTreeSet<TopicPartition>,
    subscribed: BTreeSet<String>,
    /// A subscription to send with the next heartbeat.
    changed: bool,
    /// Its last request got no answer: the next is a full one, as clients send after an
    /// error or a timeout, and gets the whole assignment back.
    full_next: bool,
    alive: bool,
    /// Left statically: it comes back with Join (a new member id, the same instance).
    away: bool,
}

struct Model {
    group: ConsumerGroup,
    log: CoordinatorState,
    topics: BTreeMap<String, (Uuid, i32)>,
    clients: BTreeMap<u8, Client>,
    now: Instant,
    joins: u32,
}

impl Model {
    fn store(&mut self) {
        store(&mut self.group, &mut self.log);
    }

    fn heartbeat(&mut self, n: u8, answered: bool) {
        let Some(client) = self.clients.get(&n) else {
            return;
        };
        if !client.alive || client.away {
            return;
        }
        let full = client.epoch == JOIN_EPOCH || client.full_next;
        let request = Heartbeat {
            member_id: client.member_id.clone(),
            member_epoch: client.epoch,
            instance_id: Some(client.instance_id.clone()),
            rebalance_timeout_ms: if full { 30_000 } else { -1 },
            subscribed_topic_names: (full || client.changed).then(|| client.subscribed.clone()),
            owned: Some(client.owned.clone()),
            ..Heartbeat::default()
        };
        self.group.expire(self.now);
        let answer = self.group.heartbeat(request, &self.topics, self.now);
        self.store();
        let client = self.clients.get_mut(&n).expect("present");
        match answer {
            Ok(answer) if answered => {
                client.changed = false;
                client.full_next = false;
                client.epoch = answer.member_epoch;
                if let Some(assignment) = answer.assignment {
                    client.owned = assignment;
                }
            }
            Ok(_) => client.full_next = true,
            // Fenced or forgotten: it gives up what it consumed and joins again.
            Err(GroupError::FencedMemberEpoch | GroupError::UnknownMemberId) => {
                client.owned.clear();
                client.epoch = JOIN_EPOCH;
            }
            // Its instance is still held by its old member (ended at its session): it waits.
            Err(GroupError::UnreleasedInstanceId) => {}
            Err(other) => panic!("heartbeat of {n} refused: {other:?}"),
        }
    }

    fn leave(&mut self, n: u8, epoch: i32) {
        let Some(client) = self.clients.get_mut(&n) else {
            return;
        };
        if !client.alive || client.away {
            return;
        }
        // A client stops consuming before it says it leaves.
        client.owned.clear();
        let request = Heartbeat {
            member_id: client.member_id.clone(),
            member_epoch: epoch,
            instance_id: Some(client.instance_id.clone()),
            rebalance_timeout_ms: -1,
            ..Heartbeat::default()
        };
        let _ = self.group.heartbeat(request, &self.topics, self.now);
        match epoch {
            STATIC_LEAVE_EPOCH => client.away = true,
            _ => {
                self.clients.remove(&n);
            }
        }
        self.store();
    }

    fn run(&mut self, step: Step) {
        match step {
            Step::Join(n, mask) => match self.clients.get_mut(&n) {
                Some(client) if client.away => {
                    // A static member returns as a new process: new member id, same instance.
                    self.joins += 1;
                    client.member_id = format!("m{n}-{}", self.joins);
                    client.epoch = JOIN_EPOCH;
                    client.away = false;
                    self.heartbeat(n, true);
                }
                Some(_) => {}
                None => {
                    self.joins += 1;
                    let client = Client {
                        member_id: format!("m{n}-{}", self.joins),
                        instance_id: format!("i{n}"),
                        epoch: JOIN_EPOCH,
                        owned: BTreeSet::new(),
                        subscribed: names(mask),
                        changed: false,
                        full_next: false,
                        alive: true,
                        away: false,
                    };
                    self.clients.insert(n, client);
                    self.heartbeat(n, true);
                }
            },
            Step::Heartbeat(n) => self.heartbeat(n, true),
            Step::LostAnswer(n) => self.heartbeat(n, false),
            Step::Leave(n) => self.leave(n, LEAVE_EPOCH),
            Step::StaticLeave(n) => self.leave(n, STATIC_LEAVE_EPOCH),
            Step::Subscribe(n, mask) => {
                if let Some(client) = self.clients.get_mut(&n) {
                    client.subscribed = names(mask);
                    client.changed = true;
                }
                self.heartbeat(n, true);
            }
            Step::Crash(n) => {
                if let Some(client) = self.clients.get_mut(&n) {
                    client.alive = false;
                    client.owned.clear();
                }
            }
            Step::Expire => {
                self.now += SESSION / 2;
                let live: Vec<u8> = self.clients.keys().copied().collect();
                for n in live {
                    self.heartbeat(n, true);
                }
                self.now += SESSION / 2 + Duration::from_millis(1);
                self.group.expire(self.now);
                self.store();
                // The dead are gone for good; static members away past their session too.
                self.clients.retain(|_, c| c.alive && !c.away);
            }
            Step::Grow(t, count) => {
                let (_, partitions) = self.topics.get_mut(TOPICS[t as usize]).expect("topic");
                *partitions = (*partitions).max(count);
            }
            Step::Restart => self.group = restart(&self.log, SESSION, self.now),
        }
    }

    fn check(&self) -> Result<(), TestCaseError> {
        let live = self.clients.values().filter(|c| c.alive);
        check_held_and_consumed_once(&self.group, live.map(|c| &c.owned))
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn no_partition_is_consumed_twice_and_every_subscribed_one_ends_up_consumed(
        steps in proptest::collection::vec(step(), 1..50)
    ) {
        let topics = TOPICS
            .iter()
            .enumerate()
            .map(|(i, t)| (t.to_string(), (Uuid::from_u128(i as u128 + 1), 2)))
            .collect();
        let mut model = Model {
            group: ConsumerGroup::new(Assignor::Uniform, 10, SESSION),
            log: CoordinatorState::default(),
            topics,
            clients: BTreeMap::new(),
            now: Instant::now(),
            joins: 0,
        };
        for step in steps {
            model.run(step);
            model.check()?;
        }
        // The crashed and the away end their sessions; the live settle.
        model.run(Step::Expire);
        let live: Vec<u8> = model.clients.keys().copied().collect();
        for _ in 0..6 {
            for n in &live {
                model.heartbeat(*n, true);
                model.check()?;
            }
        }
        let mut consumed: BTreeMap<TopicPartition, u8> = BTreeMap::new();
        for (n, client) in &model.clients {
            for p in &client.owned {
                let topic = model.topics.iter().find(|(_, (id, _))| *id == p.topic_id);
                let (name, _) = topic.expect("an existing topic");
                prop_assert!(client.subscribed.contains(name), "{} consumes {}", n, name);
                consumed.insert(*p, *n);
            }
        }
        let subscribed: BTreeSet<&String> =
            model.clients.values().flat_map(|c| &c.subscribed).collect();
        let expected: usize = subscribed
            .iter()
            .map(|name| model.topics[*name].1 as usize)
            .sum();
        prop_assert_eq!(consumed.len(), expected, "every subscribed partition consumed");
    }
}
