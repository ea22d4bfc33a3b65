//! Classic members in a consumer-protocol group (online migration), driven through
//! `ConsumerGroup` with a hand-held clock: the upgrade, the classic members' rejoin-driven
//! reconciliation beside consumer-protocol members, the way back, and a model test of mixed
//! groups (random joins, leaves, crashes, lost syncs, restarts from the stored records): no
//! partition is ever consumed by two clients, and every one ends up consumed.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use bytes::Bytes;
use proptest::prelude::*;
use shoal_coordinator::{CoordinatorState, TopicPartition};
use uuid::Uuid;

use super::*;
use crate::groups::classic::messages::{JoinRequest, LeavingMember, MemberRef};
use crate::groups::consumer::assignor::Assignor;
use crate::groups::consumer::group::{ConsumerGroup, Heartbeat, Topics, JOIN_EPOCH, LEAVE_EPOCH};
use crate::groups::consumer::model_checks::{check_held_and_consumed_once, restart, store};
use crate::groups::GroupError;
use shoal_protocol::consumer_protocol::{read_assignment, write_assignment};

const SESSION: Duration = Duration::from_secs(10);
const PARTITIONS: i32 = 6;

fn topics() -> BTreeMap<String, (Uuid, i32)> {
    BTreeMap::from([("t".to_string(), (Uuid::from_u128(1), PARTITIONS))])
}

fn tp(partition: i32) -> TopicPartition {
    TopicPartition {
        topic_id: Uuid::from_u128(1),
        partition,
    }
}

/// A v1 subscription to topic t, owning `owned`.
fn subscription(owned: &BTreeSet<TopicPartition>) -> Bytes {
    let mut m = vec![0, 1, 0, 0, 0, 1, 0, 1, b't', 0xff, 0xff, 0xff, 0xff];
    m.extend_from_slice(&1i32.to_be_bytes());
    m.extend_from_slice(&[0, 1, b't']);
    m.extend_from_slice(&(owned.len() as i32).to_be_bytes());
    for p in owned {
        m.extend_from_slice(&p.partition.to_be_bytes());
    }
    Bytes::from(m)
}

fn assignment_of(partitions: &[i32]) -> Bytes {
    Bytes::from(write_assignment(
        1,
        &[("t".to_string(), partitions.to_vec())],
    ))
}

fn decoded(bytes: &[u8]) -> BTreeSet<TopicPartition> {
    let topics = read_assignment(bytes).expect("an assignment");
    topics
        .into_iter()
        .flat_map(|(_, ps)| ps.into_iter().map(tp))
        .collect()
}

fn seed(id: &str, partitions: &[i32]) -> ClassicSeed {
    ClassicSeed {
        member_id: id.into(),
        instance_id: None,
        client_id: "classic".into(),
        client_host: "/10.0.0.1".into(),
        session_timeout: SESSION,
        rebalance_timeout: Duration::from_secs(30),
        protocols: vec![("cooperative-sticky".into(), subscription(&BTreeSet::new()))],
        metadata: subscription(&BTreeSet::new()),
        assignment: assignment_of(partitions),
    }
}

fn classic_join(member_id: &str, owned: &BTreeSet<TopicPartition>) -> JoinRequest {
    JoinRequest {
        group_id: "g".into(),
        member_id: member_id.into(),
        group_instance_id: None,
        client_id: "classic".into(),
        client_host: "/10.0.0.1".into(),
        session_timeout_ms: SESSION.as_millis() as i32,
        rebalance_timeout_ms: 30_000,
        protocol_type: CONSUMER_PROTOCOL_TYPE.into(),
        protocols: vec![("cooperative-sticky".into(), subscription(owned))],
        require_known_member_id: true,
        topics: Default::default(),
    }
}

fn member(id: &str, generation: i32) -> MemberRef {
    MemberRef {
        group_id: "g".into(),
        member_id: id.into(),
        generation_id: generation,
        group_instance_id: None,
    }
}

fn consumer_beat(id: &str, epoch: i32, owned: &BTreeSet<TopicPartition>) -> Heartbeat {
    Heartbeat {
        member_id: id.into(),
        member_epoch: epoch,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(BTreeSet::from(["t".to_string()])),
        owned: Some(owned.clone()),
        ..Heartbeat::default()
    }
}

fn upgraded(seeds: Vec<ClassicSeed>, now: Instant) -> ConsumerGroup {
    let group = ConsumerGroup::new(Assignor::Uniform, 10, SESSION);
    ConsumerGroup::from_classic(group, 3, seeds, &topics(), now).expect("parses")
}

/// A cooperative classic client's rebalance: rejoin reporting what it consumes, then sync;
/// returns the generation and what it consumes after.
fn rebalance(
    group: &mut ConsumerGroup,
    id: &str,
    owned: &BTreeSet<TopicPartition>,
    now: Instant,
) -> (i32, BTreeSet<TopicPartition>) {
    let joined = group
        .classic_join(&classic_join(id, owned), &topics(), now)
        .expect("joined");
    assert_eq!(joined.leader, "", "the broker assigns: no leader");
    let synced = group
        .classic_sync(
            &member(id, joined.generation_id),
            None,
            None,
            &topics(),
            now,
        )
        .expect("synced");
    (joined.generation_id, decoded(&synced.assignment))
}

#[test]
fn a_consumer_member_joining_moves_partitions_from_classic_members_only_after_they_revoke() {
    let now = Instant::now();
    let t = topics();
    let mut group = upgraded(vec![seed("a", &[0, 1, 2]), seed("b", &[3, 4, 5])], now);
    assert_eq!(group.members["a"].assignment.epoch, 3);
    // Classic members keep their partitions: nothing moves until one rejoins.
    assert_eq!(group.classic_heartbeat(&member("a", 3), now), Ok(()));

    let answer = group
        .heartbeat(consumer_beat("c", JOIN_EPOCH, &BTreeSet::new()), &t, now)
        .unwrap();
    assert_eq!(
        answer.assignment,
        Some(BTreeSet::new()),
        "everything is still held by the classic members"
    );
    let epoch = answer.member_epoch;
    assert!(epoch > 3);
    // The classic members are told to rejoin.
    assert_eq!(
        group.classic_heartbeat(&member("a", 3), now),
        Err(GroupError::RebalanceInProgress)
    );
    // A rejoins owning 0..2; it must give one up: its sync keeps two, at its old epoch.
    let a_owned: BTreeSet<_> = [0, 1, 2].map(tp).into();
    let (generation, a_owned) = rebalance(&mut group, "a", &a_owned, now);
    assert_eq!((generation, a_owned.len()), (3, 2));
    assert_eq!(
        group.classic_heartbeat(&member("a", 3), now),
        Err(GroupError::RebalanceInProgress),
        "it revokes, then rejoins"
    );
    let (generation, a_owned) = rebalance(&mut group, "a", &a_owned, now);
    assert_eq!((generation, a_owned.len()), (epoch, 2));
    assert_eq!(group.classic_heartbeat(&member("a", epoch), now), Ok(()));
    // B the same way; then C gets the two released partitions.
    let b_owned: BTreeSet<_> = [3, 4, 5].map(tp).into();
    let (_, b_owned) = rebalance(&mut group, "b", &b_owned, now);
    let (_, b_owned) = rebalance(&mut group, "b", &b_owned, now);
    let c = group
        .heartbeat(consumer_beat("c", epoch, &BTreeSet::new()), &t, now)
        .unwrap();
    let c_owned = c.assignment.expect("its partitions");
    assert_eq!(c_owned.len(), 2);
    let all: BTreeSet<_> = a_owned.iter().chain(&b_owned).chain(&c_owned).collect();
    assert_eq!(all.len(), PARTITIONS as usize, "each partition once");
}

#[test]
fn classic_requests_are_checked_as_in_a_classic_group() {
    let now = Instant::now();
    let t = topics();
    let mut group = upgraded(vec![seed("a", &[0, 1, 2])], now);
    group
        .heartbeat(consumer_beat("c", JOIN_EPOCH, &BTreeSet::new()), &t, now)
        .unwrap();
    // A new classic member gets its id first (JoinGroup v4+).
    let first = group
        .classic_join(&classic_join("", &BTreeSet::new()), &t, now)
        .unwrap();
    assert_eq!(first.error, Some(GroupError::MemberIdRequired));
    assert!(!group.members.contains_key(&first.member_id));
    // Wrong generation, unknown member, a consumer-protocol member using classic requests.
    assert_eq!(
        group.classic_heartbeat(&member("a", 99), now),
        Err(GroupError::RebalanceInProgress)
    );
    assert_eq!(
        group.classic_sync(&member("a", 99), None, None, &t, now),
        Err(GroupError::RebalanceInProgress)
    );
    assert_eq!(
        group.classic_heartbeat(&member("nobody", 3), now),
        Err(GroupError::UnknownMemberId)
    );
    assert_eq!(
        group.classic_heartbeat(&member("c", 1), now),
        Err(GroupError::UnknownMemberId)
    );
    // A protocol the other classic members lack.
    let mut other = classic_join("", &BTreeSet::new());
    other.protocols[0].0 = "range".into();
    other.require_known_member_id = false;
    assert_eq!(
        group.classic_join(&other, &t, now),
        Err(GroupError::InconsistentGroupProtocol)
    );
    // LeaveGroup removes a classic member, not a consumer-protocol one.
    let leaving = |id: &str| LeavingMember {
        member_id: id.into(),
        group_instance_id: None,
    };
    assert_eq!(
        group.classic_leave(&[leaving("c"), leaving("a")]),
        vec![Some(GroupError::UnknownMemberId), None]
    );
    assert!(!group.only_classic_members());
}

#[test]
fn the_last_consumer_member_leaving_hands_the_classic_members_their_targets() {
    let now = Instant::now();
    let t = topics();
    let mut group = upgraded(vec![seed("a", &[0, 1, 2]), seed("b", &[3, 4, 5])], now);
    let c = group
        .heartbeat(consumer_beat("c", JOIN_EPOCH, &BTreeSet::new()), &t, now)
        .unwrap();
    assert!(!group.only_classic_members());
    group
        .heartbeat(consumer_beat("c", LEAVE_EPOCH, &BTreeSet::new()), &t, now)
        .unwrap();
    let _ = c;
    assert!(group.only_classic_members());
    // The target is recomputed for the two when they next rejoin; handed back now, each
    // gets what the group's target last gave it, and the group is left empty (deleted).
    let seeds = group.into_classic(&t);
    assert_eq!(seeds.len(), 2);
    let handed: usize = seeds.iter().map(|s| decoded(&s.assignment).len()).sum();
    assert!(handed <= PARTITIONS as usize);
    assert!(group.members.is_empty());
    let (record, _) = group.take_change("g").expect("a change");
    assert!(record.deleted);
}

#[test]
fn classic_members_are_stored_and_read_back_as_classic() {
    let now = Instant::now();
    let mut group = upgraded(vec![seed("a", &[0, 1])], now);
    let mut log = CoordinatorState::default();
    store(&mut group, &mut log);
    let stored = log.consumer_group("g").expect("the upgrade is stored");
    let a = &stored.members["a"];
    assert_eq!(a.classic_protocols[0].name, "cooperative-sticky");
    assert_eq!(a.classic_session_timeout_ms, 10_000);
    let mut back = restart(&log, Duration::from_secs(45), now);
    assert!(back.only_classic_members());
    // Its classic session (10 s), not the group's (45 s), applies.
    back.expire(now + SESSION + Duration::from_millis(1));
    assert!(back.members.is_empty());
}

#[test]
fn a_static_classic_member_restarting_takes_its_place() {
    let now = Instant::now();
    let t = topics();
    let mut a = seed("a", &[0, 1, 2]);
    a.instance_id = Some("i-a".into());
    let mut group = upgraded(vec![a], now);
    let mut join = classic_join("", &BTreeSet::new());
    join.group_instance_id = Some("i-a".into());
    let joined = group.classic_join(&join, &t, now).unwrap();
    assert_ne!(joined.member_id, "a");
    assert_eq!(group.members.len(), 1);
    let held = &group.members[&joined.member_id].assignment.assigned;
    let kept: BTreeSet<_> = [0, 1, 2].map(tp).into();
    assert!(
        held.is_superset(&kept),
        "its partitions come with its place"
    );
    // The old id is fenced.
    let mut old = member("a", 3);
    old.group_instance_id = Some("i-a".into());
    assert_eq!(
        group.classic_heartbeat(&old, now),
        Err(GroupError::FencedInstanceId)
    );
}

#[test]
fn a_classic_member_that_does_not_rejoin_or_sync_in_its_rebalance_timeout_is_removed() {
    let now = Instant::now();
    let t = topics();
    let mut group = upgraded(vec![seed("a", &[0, 1, 2]), seed("b", &[3, 4, 5])], now);
    group
        .heartbeat(consumer_beat("c", JOIN_EPOCH, &BTreeSet::new()), &t, now)
        .unwrap();
    // A is told to rejoin and never does; B rejoins but never syncs. Both keep heartbeating.
    assert_eq!(
        group.classic_heartbeat(&member("a", 3), now),
        Err(GroupError::RebalanceInProgress)
    );
    let b_owned: BTreeSet<_> = [3, 4, 5].map(tp).into();
    let joined = group
        .classic_join(&classic_join("b", &b_owned), &t, now)
        .unwrap();
    let mut c_epoch = group.members["c"].assignment.epoch;
    let mut at = now;
    for _ in 0..7 {
        at += Duration::from_secs(5);
        let c_owned = group.members["c"].assignment.assigned.clone();
        let c = group.heartbeat(consumer_beat("c", c_epoch, &c_owned), &t, at);
        c_epoch = c.expect("c heartbeats").member_epoch;
        let _ = group.classic_heartbeat(&member("a", 3), at);
        let _ = group.classic_heartbeat(&member("b", joined.generation_id), at);
        group.expire(at);
    }
    assert_eq!(
        group.members.len(),
        1,
        "only the consumer-protocol member is left"
    );
    assert_eq!(
        group.members["c"].assignment.assigned.len(),
        PARTITIONS as usize
    );
}

// The model.

#[derive(Debug, Clone)]
enum Step {
    /// Client n joins: classic (true) or consumer protocol.
    Join(u8, bool),
    /// One request of client n: a heartbeat, and for a classic client told to rebalance, its
    /// rejoin and sync.
    Poll(u8),
    /// Client n's rejoin is answered but its SyncGroup is lost (classic), or its heartbeat's
    /// answer is lost (consumer protocol).
    Lost(u8),
    Leave(u8),
    Crash(u8),
    Expire,
    Restart,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => (0u8..4, any::<bool>()).prop_map(|(n, classic)| Step::Join(n, classic)),
        8 => (0u8..4).prop_map(Step::Poll),
        1 => (0u8..4).prop_map(Step::Lost),
        1 => (0u8..4).prop_map(Step::Leave),
        1 => (0u8..4).prop_map(Step::Crash),
        1 => Just(Step::Expire),
        1 => Just(Step::Restart),
    ]
}

struct Client {
    member_id: String,
    classic: bool,
    epoch: i32,
    /// A classic client whose SyncGroup got no answer rejoins (as clients do after a
    /// timeout) instead of heartbeating.
    rejoin: bool,
    owned: BTreeSet<TopicPartition>,
    alive: bool,
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

    fn poll(&mut self, n: u8, lost: bool) {
        let Some(client) = self.clients.get(&n) else {
            return;
        };
        if !client.alive {
            return;
        }
        self.group.expire(self.now);
        match client.classic {
            true => self.poll_classic(n, lost),
            false => self.poll_consumer(n, lost),
        }
        self.store();
    }

    fn poll_consumer(&mut self, n: u8, lost: bool) {
        let client = &self.clients[&n];
        let beat = consumer_beat(&client.member_id, client.epoch, &client.owned);
        let answer = self.group.heartbeat(beat, &self.topics, self.now);
        let client = self.clients.get_mut(&n).expect("present");
        match answer {
            Ok(_) if lost => {}
            Ok(answer) => {
                client.epoch = answer.member_epoch;
                if let Some(assignment) = answer.assignment {
                    client.owned = assignment;
                }
            }
            Err(GroupError::FencedMemberEpoch | GroupError::UnknownMemberId) => {
                client.owned.clear();
                client.epoch = JOIN_EPOCH;
            }
            Err(other) => panic!("heartbeat of {n} refused: {other:?}"),
        }
    }

    /// A cooperative classic client: heartbeat; told to rebalance (or new), rejoin reporting
    /// what it consumes, then sync and consume what it is given.
    fn poll_classic(&mut self, n: u8, lost: bool) {
        let client = &self.clients[&n];
        let known = client.epoch != JOIN_EPOCH;
        if known && !client.rejoin {
            match self
                .group
                .classic_heartbeat(&member(&client.member_id, client.epoch), self.now)
            {
                Ok(()) => return,
                Err(GroupError::RebalanceInProgress) => {}
                Err(GroupError::UnknownMemberId | GroupError::IllegalGeneration) => {
                    return self.forget(n)
                }
                Err(other) => panic!("classic heartbeat of {n} refused: {other:?}"),
            }
        }
        let client = &self.clients[&n];
        let mut join = classic_join(&client.member_id, &client.owned);
        join.require_known_member_id = false;
        let joined = match self.group.classic_join(&join, &self.topics, self.now) {
            Ok(joined) => joined,
            Err(GroupError::UnknownMemberId) => return self.forget(n),
            Err(other) => panic!("classic join of {n} refused: {other:?}"),
        };
        let client = self.clients.get_mut(&n).expect("present");
        client.epoch = joined.generation_id;
        client.rejoin = lost;
        if lost {
            return;
        }
        let synced = self.group.classic_sync(
            &member(&joined.member_id, joined.generation_id),
            None,
            None,
            &self.topics,
            self.now,
        );
        match synced {
            Ok(given) => {
                self.clients.get_mut(&n).expect("present").owned = decoded(&given.assignment)
            }
            // Behind again: it keeps what it has and rejoins at its next poll.
            Err(GroupError::RebalanceInProgress) => {}
            Err(other) => panic!("classic sync of {n} refused: {other:?}"),
        }
    }

    /// The member was removed: the client stops consuming and joins anew.
    fn forget(&mut self, n: u8) {
        let client = self.clients.get_mut(&n).expect("present");
        client.owned.clear();
        client.epoch = JOIN_EPOCH;
    }

    fn run(&mut self, step: Step) {
        match step {
            Step::Join(n, classic) => {
                if self.clients.contains_key(&n) {
                    return;
                }
                self.joins += 1;
                let client = Client {
                    member_id: format!("m{n}-{}", self.joins),
                    classic,
                    epoch: JOIN_EPOCH,
                    rejoin: false,
                    owned: BTreeSet::new(),
                    alive: true,
                };
                self.clients.insert(n, client);
                self.poll(n, false);
            }
            Step::Poll(n) => self.poll(n, false),
            Step::Lost(n) => self.poll(n, true),
            Step::Leave(n) => {
                let Some(client) = self.clients.remove(&n) else {
                    return;
                };
                if !client.alive {
                    return;
                }
                match client.classic {
                    true => {
                        let leaving = LeavingMember {
                            member_id: client.member_id.clone(),
                            group_instance_id: None,
                        };
                        self.group.classic_leave(&[leaving]);
                    }
                    false => {
                        let beat = consumer_beat(&client.member_id, LEAVE_EPOCH, &BTreeSet::new());
                        let _ = self.group.heartbeat(beat, &self.topics, self.now);
                    }
                }
                self.store();
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
                    self.poll(n, false);
                }
                self.now += SESSION / 2 + Duration::from_millis(1);
                self.group.expire(self.now);
                self.store();
                self.clients.retain(|_, c| c.alive);
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
    fn in_a_mixed_group_no_partition_is_consumed_twice_and_every_one_ends_up_consumed(
        steps in proptest::collection::vec(step(), 1..50)
    ) {
        let now = Instant::now();
        // Two classic clients upgraded with the partitions they had.
        let mut model = Model {
            group: upgraded(vec![seed("m0-0", &[0, 1, 2]), seed("m1-0", &[3, 4, 5])], now),
            log: CoordinatorState::default(),
            topics: topics(),
            clients: BTreeMap::new(),
            now,
            joins: 0,
        };
        for (n, owned) in [(0u8, [0, 1, 2]), (1, [3, 4, 5])] {
            model.clients.insert(n, Client {
                member_id: format!("m{n}-0"),
                classic: true,
                epoch: 3,
                rejoin: false,
                owned: owned.map(tp).into(),
                alive: true,
            });
        }
        model.store();
        for step in steps {
            model.run(step);
            model.check()?;
        }
        model.run(Step::Expire);
        let live: Vec<u8> = model.clients.keys().copied().collect();
        for _ in 0..8 {
            for n in &live {
                model.poll(*n, false);
                model.check()?;
            }
        }
        let consumed: usize = model.clients.values().map(|c| c.owned.len()).sum();
        let expected = if model.clients.is_empty() { 0 } else { PARTITIONS as usize };
        prop_assert_eq!(consumed, expected, "every partition consumed once");
    }
}

/// The names `Topics` gives ids, as classic members are told their partitions.
#[test]
fn assignments_name_existing_topics_only() {
    let t = topics();
    assert_eq!(t.name_of(Uuid::from_u128(1)).as_deref(), Some("t"));
    assert_eq!(t.name_of(Uuid::from_u128(9)), None);
}
