use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use shoal_coordinator::TopicPartition;
use uuid::Uuid;

use super::*;

const SESSION: Duration = Duration::from_secs(45);

type Topics = BTreeMap<String, (Uuid, i32)>;

fn topics(list: &[(&str, i32)]) -> Topics {
    list.iter()
        .enumerate()
        .map(|(i, &(name, count))| (name.to_string(), (Uuid::from_u128(i as u128 + 1), count)))
        .collect()
}

fn join(id: &str, names: &[&str]) -> Heartbeat {
    Heartbeat {
        member_id: id.into(),
        member_epoch: JOIN_EPOCH,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(names.iter().map(|n| n.to_string()).collect()),
        owned: Some(BTreeSet::new()),
        ..Heartbeat::default()
    }
}

fn beat(id: &str, epoch: i32, owned: &BTreeSet<TopicPartition>) -> Heartbeat {
    Heartbeat {
        member_id: id.into(),
        member_epoch: epoch,
        rebalance_timeout_ms: -1,
        owned: Some(owned.clone()),
        ..Heartbeat::default()
    }
}

/// A client: what it consumes is the last assignment it was sent.
struct Client {
    id: String,
    epoch: i32,
    owned: BTreeSet<TopicPartition>,
}

impl Client {
    fn heartbeat(&mut self, group: &mut ConsumerGroup, topics: &Topics, now: Instant) {
        let answer = group
            .heartbeat(beat(&self.id, self.epoch, &self.owned), topics, now)
            .unwrap();
        self.epoch = answer.member_epoch;
        if let Some(assignment) = answer.assignment {
            self.owned = assignment;
        }
    }
}

fn joined(group: &mut ConsumerGroup, id: &str, t: &Topics, now: Instant) -> Client {
    let answer = group.heartbeat(join(id, &["a"]), t, now).unwrap();
    Client {
        id: id.into(),
        epoch: answer.member_epoch,
        owned: answer.assignment.unwrap(),
    }
}

#[test]
fn a_second_member_gets_half_once_the_first_has_revoked() {
    let t = topics(&[("a", 4)]);
    let now = Instant::now();
    let mut group = ConsumerGroup::new(Assignor::Uniform, 10, SESSION);
    let mut first = joined(&mut group, "m1", &t, now);
    assert_eq!(first.owned.len(), 4);
    let mut second = joined(&mut group, "m2", &t, now);
    assert!(
        second.owned.is_empty(),
        "the first still holds every partition"
    );
    // The first learns it must give two up; the second gets them once it has.
    first.heartbeat(&mut group, &t, now);
    assert_eq!(first.owned.len(), 2);
    second.heartbeat(&mut group, &t, now);
    assert!(second.owned.is_empty(), "not yet confirmed");
    first.heartbeat(&mut group, &t, now);
    second.heartbeat(&mut group, &t, now);
    assert_eq!(second.owned.len(), 2);
    assert!(first.owned.is_disjoint(&second.owned));
    assert_eq!(first.epoch, group.group_epoch);
    assert_eq!(second.epoch, group.group_epoch);
}

#[test]
fn a_wrong_epoch_is_fenced_and_a_lost_answer_is_forgiven() {
    let t = topics(&[("a", 2)]);
    let now = Instant::now();
    let mut group = ConsumerGroup::new(Assignor::Uniform, 10, SESSION);
    let first = joined(&mut group, "m1", &t, now);
    let fenced = group.heartbeat(beat("m1", first.epoch + 1, &first.owned), &t, now);
    assert_eq!(fenced, Err(GroupError::FencedMemberEpoch));
    let unknown = group.heartbeat(beat("nobody", 3, &BTreeSet::new()), &t, now);
    assert_eq!(unknown, Err(GroupError::UnknownMemberId));
    // New partitions move m1 to a new epoch; the answer is lost and it asks again with the old.
    let t = topics(&[("a", 3)]);
    let moved = group
        .heartbeat(beat("m1", first.epoch, &first.owned), &t, now)
        .unwrap();
    assert!(moved.member_epoch > first.epoch);
    let again = group
        .heartbeat(beat("m1", first.epoch, &first.owned), &t, now)
        .unwrap();
    assert_eq!(again.member_epoch, moved.member_epoch);
    assert_eq!(
        again.assignment.map(|a| a.len()),
        Some(3),
        "a full heartbeat gets it all"
    );
}

#[test]
fn a_static_member_returns_to_its_partitions_and_a_duplicate_waits() {
    let t = topics(&[("a", 4)]);
    let now = Instant::now();
    let mut group = ConsumerGroup::new(Assignor::Uniform, 10, SESSION);
    let mut request = join("m1", &["a"]);
    request.instance_id = Some("i1".into());
    let first = group.heartbeat(request.clone(), &t, now).unwrap();
    let mut duplicate = request.clone();
    duplicate.member_id = "m1-again".into();
    assert_eq!(
        group.heartbeat(duplicate.clone(), &t, now),
        Err(GroupError::UnreleasedInstanceId)
    );
    let epoch_before = group.group_epoch;
    let mut leave = beat("m1", first.member_epoch, &first.assignment.clone().unwrap());
    leave.member_epoch = STATIC_LEAVE_EPOCH;
    group.heartbeat(leave, &t, now).unwrap();
    let back = group.heartbeat(duplicate, &t, now).unwrap();
    assert_eq!(back.assignment, first.assignment, "the same partitions");
    assert_eq!(group.group_epoch, epoch_before, "no rebalance");
}

#[test]
fn members_that_stop_heartbeating_or_revoking_are_removed() {
    let t = topics(&[("a", 4)]);
    let now = Instant::now();
    let mut group = ConsumerGroup::new(Assignor::Uniform, 10, SESSION);
    let mut first = joined(&mut group, "m1", &t, now);
    let _second = joined(&mut group, "m2", &t, now);
    // A look before any revocation: the revocation deadline set next must still be honoured.
    assert_eq!(group.expire(now), Vec::<String>::new());
    first.heartbeat(&mut group, &t, now); // must revoke two, within 30 s
    assert_eq!(
        group.expire(now + Duration::from_secs(29)),
        Vec::<String>::new()
    );
    assert_eq!(
        group.expire(now + Duration::from_secs(31)),
        vec!["m1".to_string()]
    );
    assert_eq!(
        group.expire(now + SESSION + Duration::from_secs(1)),
        vec!["m2".to_string()]
    );
    assert!(group.members.is_empty());
}

#[test]
fn the_group_is_bounded_and_an_unknown_assignor_is_refused() {
    let t = topics(&[("a", 1)]);
    let now = Instant::now();
    let mut group = ConsumerGroup::new(Assignor::Uniform, 1, SESSION);
    joined(&mut group, "m1", &t, now);
    assert_eq!(
        group.heartbeat(join("m2", &["a"]), &t, now),
        Err(GroupError::GroupMaxSizeReached)
    );
    let mut request = join("m1", &["a"]);
    request.server_assignor = Some("sticky-ish".into());
    assert_eq!(
        group.heartbeat(request, &t, now),
        Err(GroupError::UnsupportedAssignor)
    );
}

#[test]
fn scaling_one_to_four_to_two_never_gives_a_partition_to_two_clients() {
    let t = topics(&[("a", 8)]);
    let now = Instant::now();
    let mut group = ConsumerGroup::new(Assignor::Uniform, 10, SESSION);
    let mut clients = vec![joined(&mut group, "m0", &t, now)];
    let check = |clients: &[Client]| {
        let mut seen = BTreeSet::new();
        for c in clients {
            for p in &c.owned {
                assert!(seen.insert(*p), "{p:?} owned twice");
            }
        }
        seen.len()
    };
    for i in 1..4 {
        clients.push(joined(&mut group, &format!("m{i}"), &t, now));
        check(&clients);
    }
    let settle = |clients: &mut Vec<Client>, group: &mut ConsumerGroup| {
        for _ in 0..4 {
            for i in 0..clients.len() {
                clients[i].heartbeat(group, &t, now);
                check(clients);
            }
        }
    };
    settle(&mut clients, &mut group);
    assert_eq!(check(&clients), 8);
    assert!(clients.iter().all(|c| c.owned.len() == 2));
    for gone in clients.drain(2..) {
        group
            .heartbeat(
                Heartbeat {
                    member_epoch: LEAVE_EPOCH,
                    ..beat(&gone.id, gone.epoch, &gone.owned)
                },
                &t,
                now,
            )
            .unwrap();
    }
    settle(&mut clients, &mut group);
    assert_eq!(check(&clients), 8);
    let counts: BTreeMap<&str, usize> = clients
        .iter()
        .map(|c| (c.id.as_str(), c.owned.len()))
        .collect();
    assert_eq!(counts, BTreeMap::from([("m0", 4), ("m1", 4)]));
}

#[test]
fn a_regex_subscription_picks_up_a_new_matching_topic_and_a_bad_one_is_refused() {
    let now = Instant::now();
    let mut group = ConsumerGroup::new(Assignor::Uniform, 10, SESSION);
    let mut bad = join("m1", &[]);
    bad.subscribed_topic_names = None;
    bad.subscribed_topic_regex = Some("orders-(".into());
    let t = topics(&[("orders-eu", 2), ("payments", 2)]);
    assert_eq!(
        group.heartbeat(bad, &t, now),
        Err(GroupError::InvalidRegularExpression)
    );
    assert!(
        group.members.is_empty(),
        "a refused join leaves nothing behind"
    );

    let mut request = join("m1", &[]);
    request.subscribed_topic_names = None;
    request.subscribed_topic_regex = Some("orders-.*".into());
    let first = group.heartbeat(request, &t, now).unwrap();
    let eu = t["orders-eu"].0;
    assert!(first
        .assignment
        .as_ref()
        .unwrap()
        .iter()
        .all(|p| p.topic_id == eu));
    assert_eq!(first.assignment.as_ref().unwrap().len(), 2);
    // A topic created later that matches is assigned at the next heartbeat.
    let mut t = t;
    t.insert("orders-us".into(), (Uuid::from_u128(99), 3));
    let owned = first.assignment.unwrap();
    let next = group
        .heartbeat(beat("m1", first.member_epoch, &owned), &t, now)
        .unwrap();
    assert!(next.member_epoch > first.member_epoch);
    assert_eq!(next.assignment.map(|a| a.len()), Some(5));
}
