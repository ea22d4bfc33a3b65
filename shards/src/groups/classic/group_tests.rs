//! The classic protocol's rules, driven through `Group` with a hand-held clock.

use std::time::{Duration, Instant};

use super::messages::*;
use super::{Group, Phase};
use crate::groups::{GroupConfig, GroupError};
use bytes::Bytes;
use futures::channel::oneshot;

fn config() -> GroupConfig {
    GroupConfig {
        initial_rebalance_delay_ms: 0,
        ..GroupConfig::default()
    }
}

fn join_request(member_id: &str, instance: Option<&str>, protocols: &[&str]) -> JoinRequest {
    JoinRequest {
        group_id: "g".into(),
        member_id: member_id.into(),
        group_instance_id: instance.map(String::from),
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 6000,
        rebalance_timeout_ms: 10_000,
        protocol_type: "consumer".into(),
        protocols: protocols
            .iter()
            .map(|p| (p.to_string(), Bytes::from(format!("meta-{member_id}"))))
            .collect(),
        require_known_member_id: true,
        topics: Default::default(),
    }
}

fn join(group: &mut Group, req: JoinRequest, now: Instant) -> oneshot::Receiver<JoinResponse> {
    let (tx, rx) = oneshot::channel();
    group.join(req, now, tx);
    rx
}

fn answered<T>(rx: &mut oneshot::Receiver<T>) -> Option<T> {
    rx.try_recv().ok().flatten()
}

/// A new dynamic member's first join hands out its id; the second one joins with it.
fn member_id(group: &mut Group, now: Instant) -> String {
    let mut rx = join(group, join_request("", None, &["range"]), now);
    let answer = answered(&mut rx).expect("answered at once");
    assert_eq!(answer.error, Some(GroupError::MemberIdRequired));
    answer.member_id
}

fn member(id: &str, generation: i32) -> MemberRef {
    MemberRef {
        group_id: "g".into(),
        member_id: id.into(),
        generation_id: generation,
        group_instance_id: None,
    }
}

fn sync(
    group: &mut Group,
    id: &str,
    generation: i32,
    assignments: Vec<(String, Bytes)>,
    now: Instant,
) -> oneshot::Receiver<SyncResponse> {
    let (tx, rx) = oneshot::channel();
    let req = SyncRequest {
        member: member(id, generation),
        protocol_type: Some("consumer".into()),
        protocol_name: None,
        assignments,
        topics: Default::default(),
    };
    group.sync(req, now, tx);
    rx
}

#[test]
fn two_members_join_one_generation_and_the_leaders_assignment_reaches_both() {
    let now = Instant::now();
    let mut group = Group::new("g", config());
    let a = member_id(&mut group, now);
    let b = member_id(&mut group, now);
    let mut join_a = join(
        &mut group,
        join_request(&a, None, &["range", "roundrobin"]),
        now,
    );
    // b is still expected (its id was handed out): the join phase waits for it.
    assert!(answered(&mut join_a).is_none());
    let mut join_b = join(
        &mut group,
        join_request(&b, None, &["roundrobin", "range"]),
        now,
    );
    let (ja, jb) = (
        answered(&mut join_a).unwrap(),
        answered(&mut join_b).unwrap(),
    );
    assert_eq!((ja.error, jb.error), (None, None));
    assert_eq!(ja.generation_id, jb.generation_id);
    assert_eq!(
        ja.protocol_name.as_deref(),
        Some("range"),
        "a tie goes to the first choice"
    );
    let (leader, follower) = if ja.leader == a { (ja, jb) } else { (jb, ja) };
    assert_eq!(leader.members.len(), 2);
    assert!(follower.members.is_empty());
    let generation = leader.generation_id;
    let mut follower_sync = sync(&mut group, &follower.member_id, generation, vec![], now);
    assert!(
        answered(&mut follower_sync).is_none(),
        "waits for the leader"
    );
    let assignments = vec![
        (leader.member_id.clone(), Bytes::from_static(b"L")),
        (follower.member_id.clone(), Bytes::from_static(b"F")),
    ];
    let mut leader_sync = sync(&mut group, &leader.member_id, generation, assignments, now);
    assert_eq!(
        answered(&mut leader_sync).unwrap().assignment,
        Bytes::from_static(b"L")
    );
    assert_eq!(
        answered(&mut follower_sync).unwrap().assignment,
        Bytes::from_static(b"F")
    );
    assert_eq!(group.phase(), Phase::Stable);
    // The follower rejoins with the same metadata: same generation, no rebalance.
    let follower_id = follower.member_id.clone();
    let mut rejoin = join(
        &mut group,
        join_request(&follower_id, None, &["roundrobin", "range"]),
        now,
    );
    let same = answered(&mut rejoin).expect("answered at once");
    assert_eq!((same.error, same.generation_id), (None, generation));
    assert_eq!(group.phase(), Phase::Stable);
    assert_eq!(group.heartbeat(&member(&a, generation), now), None);
    assert_eq!(
        group.heartbeat(&member(&a, generation - 1), now),
        Some(GroupError::IllegalGeneration)
    );
}

#[test]
fn a_silent_member_expires_and_the_rest_rebalance() {
    let now = Instant::now();
    let mut group = Group::new("g", config());
    let a = member_id(&mut group, now);
    let mut ja = join(&mut group, join_request(&a, None, &["range"]), now);
    let generation = answered(&mut ja).unwrap().generation_id;
    let mut sa = sync(
        &mut group,
        &a,
        generation,
        vec![(a.clone(), Bytes::new())],
        now,
    );
    assert!(answered(&mut sa).unwrap().error.is_none());
    let b = member_id(&mut group, now);
    let mut jb = join(&mut group, join_request(&b, None, &["range"]), now);
    assert_eq!(group.phase(), Phase::PreparingRebalance);
    assert_eq!(
        group.heartbeat(&member(&a, generation), now),
        Some(GroupError::RebalanceInProgress)
    );
    // a never rejoins: after the rebalance timeout b's join completes alone.
    group.tick(now + Duration::from_secs(11));
    let answer = answered(&mut jb).unwrap();
    assert_eq!((answer.error, answer.leader.as_str()), (None, b.as_str()));
    assert_eq!(
        group.validate_commit(&member(&a, generation), now),
        Some(GroupError::UnknownMemberId)
    );
    // b goes silent past its session timeout: the group empties.
    let later = now + Duration::from_secs(11);
    let mut sb = sync(&mut group, &b, answer.generation_id, vec![], later);
    assert!(answered(&mut sb).unwrap().error.is_none());
    group.tick(later + Duration::from_secs(7));
    assert_eq!(group.phase(), Phase::Empty);
    assert_eq!(
        group.validate_commit(&member("", -1), later),
        None,
        "simple commits allowed"
    );
}

#[test]
fn a_restarted_static_member_takes_its_place_without_a_rebalance() {
    let now = Instant::now();
    let mut group = Group::new("g", config());
    let mut j = join(
        &mut group,
        join_request("", Some("host-1"), &["range"]),
        now,
    );
    let first = answered(&mut j).unwrap();
    assert_eq!(
        first.error, None,
        "static members need no member id round trip"
    );
    let mut s = sync(
        &mut group,
        &first.member_id,
        first.generation_id,
        vec![(first.member_id.clone(), Bytes::from_static(b"A"))],
        now,
    );
    assert!(answered(&mut s).unwrap().error.is_none());
    let mut rejoin = join(
        &mut group,
        join_request("", Some("host-1"), &["range"]),
        now,
    );
    let again = answered(&mut rejoin).unwrap();
    assert_eq!(again.error, None);
    assert_eq!(
        again.generation_id, first.generation_id,
        "no new generation"
    );
    assert_ne!(again.member_id, first.member_id);
    assert_eq!(group.phase(), Phase::Stable);
    let mut s = sync(
        &mut group,
        &again.member_id,
        again.generation_id,
        vec![],
        now,
    );
    assert_eq!(
        answered(&mut s).unwrap().assignment,
        Bytes::from_static(b"A")
    );
    // The old incarnation is fenced.
    let mut old = member(&first.member_id, first.generation_id);
    old.group_instance_id = Some("host-1".into());
    assert_eq!(
        group.heartbeat(&old, now),
        Some(GroupError::FencedInstanceId)
    );
}

#[test]
fn a_restarted_static_member_with_new_metadata_rebalances_only_when_the_protocol_changes() {
    let now = Instant::now();
    let mut group = Group::new("g", config());
    let mut j = join(
        &mut group,
        join_request("", Some("host-1"), &["range", "sticky"]),
        now,
    );
    let first = answered(&mut j).unwrap();
    let assignment = vec![(first.member_id.clone(), Bytes::from_static(b"A"))];
    let mut s = sync(
        &mut group,
        &first.member_id,
        first.generation_id,
        assignment,
        now,
    );
    assert!(answered(&mut s).unwrap().error.is_none());
    // A new process's subscription differs (no generation, nothing owned): same protocols,
    // new bytes. Kafka keeps the group as it is.
    let mut restarted = join_request("", Some("host-1"), &["range", "sticky"]);
    restarted.protocols = vec![
        ("range".into(), Bytes::from_static(b"fresh")),
        ("sticky".into(), Bytes::from_static(b"fresh")),
    ];
    let mut rejoin = join(&mut group, restarted, now);
    let again = answered(&mut rejoin).unwrap();
    assert_eq!(again.error, None);
    assert_eq!(
        again.generation_id, first.generation_id,
        "no new generation"
    );
    assert_eq!(group.phase(), Phase::Stable);
    // Dropping the protocol the group uses changes the selection: a rebalance.
    let mut changed = join(
        &mut group,
        join_request("", Some("host-1"), &["sticky"]),
        now,
    );
    let rebalanced = answered(&mut changed).unwrap();
    assert_eq!(rebalanced.error, None);
    assert!(
        rebalanced.generation_id > first.generation_id,
        "a new generation"
    );
    assert_eq!(rebalanced.protocol_name.as_deref(), Some("sticky"));
}

#[test]
fn joins_outside_the_session_limits_or_without_a_common_protocol_are_refused() {
    let now = Instant::now();
    let mut group = Group::new("g", config());
    let mut req = join_request("", None, &["range"]);
    req.session_timeout_ms = 100;
    let mut rx = join(&mut group, req, now);
    assert_eq!(
        answered(&mut rx).unwrap().error,
        Some(GroupError::InvalidSessionTimeout)
    );
    let a = member_id(&mut group, now);
    let mut ja = join(&mut group, join_request(&a, None, &["range"]), now);
    assert!(answered(&mut ja).unwrap().error.is_none());
    let mut other = join(&mut group, join_request("", None, &["sticky"]), now);
    assert_eq!(
        answered(&mut other).unwrap().error,
        Some(GroupError::InconsistentGroupProtocol)
    );
}

#[test]
fn a_member_id_never_used_ends_the_join_phase_when_it_expires_not_at_the_rebalance_timeout() {
    let now = Instant::now();
    let mut group = Group::new("g", config());
    let a = member_id(&mut group, now);
    let mut ja = join(&mut group, join_request(&a, None, &["range"]), now);
    let generation = answered(&mut ja).unwrap().generation_id;
    let mut sa = sync(&mut group, &a, generation, vec![], now);
    assert!(answered(&mut sa).unwrap().error.is_none());
    // A client gets an id (MEMBER_ID_REQUIRED) and never comes back with it.
    let ghost = member_id(&mut group, now);
    let b = member_id(&mut group, now);
    let mut jb = join(&mut group, join_request(&b, None, &["range"]), now);
    let mut ja = join(&mut group, join_request(&a, None, &["range"]), now);
    assert!(answered(&mut jb).is_none(), "waits for the ghost's id");
    assert_eq!(
        group.next_deadline(),
        Some(now + Duration::from_millis(6000)),
        "the ghost's id expires after the session timeout, before the 10 s rebalance timeout"
    );
    group.tick(now + Duration::from_millis(5999));
    assert!(answered(&mut jb).is_none());
    group.tick(now + Duration::from_millis(6000));
    let (ja, jb) = (answered(&mut ja).unwrap(), answered(&mut jb).unwrap());
    assert_eq!((ja.error, jb.error), (None, None));
    assert_eq!(ja.generation_id, generation + 1);
    assert_ne!(ja.member_id, ghost);
    assert_eq!(group.describe().members.len(), 2);
}

#[test]
fn a_silent_member_expires_exactly_at_its_session_deadline() {
    let now = Instant::now();
    let mut group = Group::new("g", config());
    let a = member_id(&mut group, now);
    let mut ja = join(&mut group, join_request(&a, None, &["range"]), now);
    let generation = answered(&mut ja).unwrap().generation_id;
    let mut sa = sync(&mut group, &a, generation, vec![], now);
    assert!(answered(&mut sa).unwrap().error.is_none());
    let heard = now + Duration::from_secs(2);
    assert_eq!(group.heartbeat(&member(&a, generation), heard), None);
    let deadline = heard + Duration::from_millis(6000);
    assert_eq!(group.next_deadline(), Some(deadline));
    group.tick(deadline - Duration::from_millis(1));
    assert_eq!(group.describe().members.len(), 1);
    group.tick(deadline);
    assert_eq!(group.phase(), Phase::Empty);
    assert_eq!(group.next_deadline(), None);
}
