//! One share group's membership, sessions and acknowledgements, as ShareGroupHeartbeat,
//! ShareFetch and ShareAcknowledge drive them.

use std::collections::BTreeSet;

use shoal_coordinator::TopicPartition;
use uuid::Uuid;

use super::group::*;
use super::partition::{Acquired, RecordState, ShareLimits};
use crate::groups::GroupError;

const TOPIC: Uuid = Uuid::from_u128(7);
const P0: TopicPartition = TopicPartition {
    topic_id: TOPIC,
    partition: 0,
};
const SESSION_MS: i64 = 45_000;

fn topics(name: &str) -> Option<(Uuid, i32)> {
    (name == "jobs").then_some((TOPIC, 1))
}

fn heartbeat(
    group: &mut ShareGroup,
    member: &str,
    epoch: i32,
    now_ms: i64,
) -> ShareHeartbeatAnswer {
    let hb = ShareHeartbeat {
        member_id: member.to_string(),
        member_epoch: epoch,
        rack_id: None,
        client_id: "test".to_string(),
        client_host: "/127.0.0.1".to_string(),
        subscribed_topic_names: (epoch == JOIN_EPOCH).then(|| vec!["jobs".to_string()]),
    };
    group
        .heartbeat(hb, &topics, 1, now_ms, SESSION_MS, 10)
        .expect("heartbeat accepted")
}

fn open_session(group: &mut ShareGroup, member: &str) {
    let opened = group.on_session(
        member,
        0,
        true,
        &[P0],
        &[],
        &[],
        ShareLimits::default(),
        0,
        None,
    );
    assert_eq!(opened, Ok(vec![]));
}

fn fetch(group: &mut ShareGroup, member: &str, log_end: i64, now_ms: i64) -> Vec<Acquired> {
    let from = match group.read_positions(member, now_ms).as_slice() {
        [(_, ReadFrom::Offset(from))] => *from,
        [(_, ReadFrom::Unknown)] => 0,
        other => panic!("reads {other:?}"),
    };
    let read = ReadRecords {
        partition: P0,
        start_if_new: 0,
        stored: None,
        window: from..log_end,
        never: Vec::new(),
        bytes_read: 0,
    };
    let limits = ShareLimits::default();
    let mut got = group.acquire(member, &[read], 500, limits, now_ms).unwrap();
    got.pop().unwrap()
}

fn ack(batch: (i64, i64, i8)) -> Vec<(TopicPartition, Vec<AckBatch>)> {
    let (first_offset, last_offset, kind) = batch;
    vec![(
        P0,
        vec![AckBatch {
            first_offset,
            last_offset,
            types: vec![kind],
        }],
    )]
}

#[test]
fn two_members_of_one_partition_both_read_it_and_get_different_records() {
    let mut group = ShareGroup::default();
    let a = heartbeat(&mut group, "a", JOIN_EPOCH, 0);
    assert_eq!(a.assignment, Some(BTreeSet::from([P0])));
    let b = heartbeat(&mut group, "b", JOIN_EPOCH, 0);
    assert_eq!(b.assignment, Some(BTreeSet::from([P0])));
    open_session(&mut group, "a");
    open_session(&mut group, "b");
    let to_a = fetch(&mut group, "a", 10, 0);
    assert_eq!(to_a.len(), 10);
    // Everything below the log end is held by a: b gets nothing until more is written.
    assert!(fetch(&mut group, "b", 10, 0).is_empty());
    assert_eq!(fetch(&mut group, "b", 15, 0).len(), 5);
}

#[test]
fn session_epochs_must_follow_on_and_only_the_holder_acknowledges() {
    let mut group = ShareGroup::default();
    heartbeat(&mut group, "a", JOIN_EPOCH, 0);
    heartbeat(&mut group, "b", JOIN_EPOCH, 0);
    let limits = ShareLimits::default();
    // ShareAcknowledge cannot open a session; a session never opened is not found.
    assert_eq!(
        group.on_session("a", 0, false, &[], &[], &[], limits, 0, None),
        Err(GroupError::InvalidShareSessionEpoch)
    );
    assert_eq!(
        group.on_session("a", 1, true, &[], &[], &[], limits, 0, None),
        Err(GroupError::ShareSessionNotFound)
    );
    open_session(&mut group, "a");
    open_session(&mut group, "b");
    fetch(&mut group, "a", 3, 0);
    assert_eq!(
        group.on_session("a", 2, true, &[], &[], &[], limits, 0, None),
        Err(GroupError::InvalidShareSessionEpoch)
    );
    let by_b = group.on_session("b", 1, true, &[], &[], &ack((0, 2, 1)), limits, 0, None);
    assert_eq!(by_b, Ok(vec![(P0, Some(GroupError::InvalidRecordState))]));
    let by_a = group.on_session("a", 1, true, &[], &[], &ack((0, 1, 1)), limits, 0, None);
    assert_eq!(by_a, Ok(vec![(P0, None)]));
    let released = group.on_session("a", 2, false, &[], &[], &ack((2, 2, 2)), limits, 0, None);
    assert_eq!(released, Ok(vec![(P0, None)]));
    let p = group.share_partition(&P0).unwrap();
    assert_eq!(p.start_offset(), 2);
    assert_eq!(p.state(2), Some(RecordState::Available));
    // The released record goes to whoever fetches next, on its second delivery.
    let again = fetch(&mut group, "b", 3, 0);
    assert_eq!(
        again,
        vec![Acquired {
            offset: 2,
            deliveries: 2
        }]
    );
    // Closing the session ends it: its next epoch finds nothing.
    assert_eq!(
        group.on_session("a", -1, false, &[], &[], &[], limits, 0, None),
        Ok(vec![])
    );
    assert_eq!(
        group.on_session("a", 3, true, &[], &[], &[], limits, 0, None),
        Err(GroupError::ShareSessionNotFound)
    );
}

#[test]
fn a_member_that_leaves_or_times_out_gives_back_what_it_holds() {
    let mut group = ShareGroup::default();
    heartbeat(&mut group, "a", JOIN_EPOCH, 0);
    let b = heartbeat(&mut group, "b", JOIN_EPOCH, 0);
    open_session(&mut group, "a");
    open_session(&mut group, "b");
    assert_eq!(fetch(&mut group, "a", 4, 0).len(), 4);
    // a stops heartbeating; b goes on, and after a's session runs out gets a's records.
    heartbeat(&mut group, "b", b.member_epoch, SESSION_MS / 2);
    let later = SESSION_MS + 1;
    let epoch = group.members["b"].epoch;
    let answer = heartbeat(&mut group, "b", epoch, later);
    assert!(!group.members.contains_key("a"));
    assert!(answer.member_epoch > b.member_epoch);
    let got = fetch(&mut group, "b", 4, later);
    assert_eq!(got.len(), 4);
    assert!(got.iter().all(|a| a.deliveries == 2));
    // b leaves with its session open: its last acknowledgements still count (they come
    // after the heartbeat that left), then closing the session gives back the rest.
    let left = heartbeat(&mut group, "b", LEAVE_EPOCH, later);
    assert_eq!(left.member_epoch, LEAVE_EPOCH);
    let limits = ShareLimits::default();
    let last = group.on_session(
        "b",
        -1,
        false,
        &[],
        &[],
        &ack((0, 0, 1)),
        limits,
        later,
        None,
    );
    assert_eq!(last, Ok(vec![(P0, None)]));
    let p = group.share_partition(&P0).unwrap();
    assert_eq!(p.start_offset(), 1);
    assert!((1..4).all(|o| p.state(o) == Some(RecordState::Available)));
    assert_eq!(group.session_count(), 0);
    assert_eq!(
        group.on_session("b", 0, true, &[], &[], &[], limits, later, None),
        Err(GroupError::UnknownMemberId)
    );
}

#[test]
fn a_departed_members_session_not_closed_in_time_gives_its_records_back() {
    let mut group = ShareGroup::default();
    heartbeat(&mut group, "a", JOIN_EPOCH, 0);
    open_session(&mut group, "a");
    assert_eq!(fetch(&mut group, "a", 3, 0).len(), 3);
    heartbeat(&mut group, "a", LEAVE_EPOCH, 0);
    heartbeat(&mut group, "b", JOIN_EPOCH, 1);
    open_session(&mut group, "b");
    // Held by the departed member until its session timeout.
    assert!(fetch(&mut group, "b", 3, 1).is_empty());
    let epoch = group.members["b"].epoch;
    let answer = heartbeat(&mut group, "b", epoch, SESSION_MS / 2);
    let after = SESSION_MS + 1;
    heartbeat(&mut group, "b", answer.member_epoch, after);
    assert_eq!(fetch(&mut group, "b", 3, after).len(), 3);
}

#[test]
fn malformed_acknowledgements_are_refused_without_walking_them() {
    let mut group = ShareGroup::default();
    heartbeat(&mut group, "a", JOIN_EPOCH, 0);
    open_session(&mut group, "a");
    fetch(&mut group, "a", 2, 0);
    let limits = ShareLimits::default();
    let huge = ack((0, 1 << 40, 1));
    let refused = group.on_session("a", 1, true, &[], &[], &huge, limits, 0, None);
    assert_eq!(
        refused,
        Ok(vec![(P0, Some(GroupError::InvalidRecordState))])
    );
    let backwards = ack((1, 0, 1));
    let refused = group.on_session("a", 2, true, &[], &[], &backwards, limits, 0, None);
    assert_eq!(refused, Ok(vec![(P0, Some(GroupError::InvalidRequest))]));
    let unknown_type = ack((0, 1, 9));
    let refused = group.on_session("a", 3, true, &[], &[], &unknown_type, limits, 0, None);
    assert_eq!(refused, Ok(vec![(P0, Some(GroupError::InvalidRequest))]));
    // Nothing of those was applied.
    let p = group.share_partition(&P0).unwrap();
    assert_eq!(p.start_offset(), 0);
}

#[test]
fn records_never_to_be_delivered_are_archived_as_they_are_acquired() {
    let mut group = ShareGroup::default();
    heartbeat(&mut group, "a", JOIN_EPOCH, 0);
    open_session(&mut group, "a");
    let read = ReadRecords {
        partition: P0,
        start_if_new: 0,
        stored: None,
        window: 0..6,
        // An aborted transaction's batch (2..4) and its marker (4).
        never: vec![2..4, 4..5],
        bytes_read: 600,
    };
    let limits = ShareLimits::default();
    let got = group.acquire("a", &[read], 500, limits, 0).unwrap();
    let offsets: Vec<i64> = got[0].iter().map(|a| a.offset).collect();
    assert_eq!(offsets, vec![0, 1, 5]);
    let p = group.share_partition(&P0).unwrap();
    assert!((2..5).all(|o| p.state(o) == Some(RecordState::Archived)));
    assert_eq!(group.record_bytes(&P0), Some(100));
    // The archived records are written with the new share-partition's start.
    let writes = group.take_writes();
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0].version, 1);
}

fn visit(group: &mut ShareGroup, member: &str, epoch: i32, now_ms: i64) -> Result<(), GroupError> {
    let limits = ShareLimits::default();
    let until = Some(now_ms + SESSION_MS);
    let outcome = group.on_session(member, epoch, true, &[P0], &[], &[], limits, now_ms, until);
    outcome.map(|acks| assert!(acks.is_empty()))
}

#[test]
fn a_visitor_fetches_without_joining_and_gives_back_when_its_session_times_out_or_closes() {
    // Another broker coordinates the group: members are known here by their sessions.
    let mut group = ShareGroup::default();
    let limits = ShareLimits::default();
    let unknown = group.on_session("v", 0, true, &[P0], &[], &[], limits, 0, None);
    assert_eq!(unknown, Err(GroupError::UnknownMemberId));
    visit(&mut group, "v", 0, 0).unwrap();
    assert_eq!(fetch(&mut group, "v", 10, 0).len(), 10);
    // The acquisition is written before the records are handed out.
    let writes = group.take_writes();
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0].version, 1);
    visit(&mut group, "w", 0, 1_000).unwrap();
    assert!(fetch(&mut group, "w", 10, 1_000).is_empty());
    // v sends nothing for a session timeout: what it held goes to w.
    visit(&mut group, "w", 1, SESSION_MS + 1).unwrap();
    let again = fetch(&mut group, "w", 10, SESSION_MS + 1);
    assert_eq!(again.len(), 10);
    assert!(again.iter().all(|a| a.deliveries == 2));
    assert_eq!(
        visit(&mut group, "v", 1, SESSION_MS + 1),
        Err(GroupError::ShareSessionNotFound)
    );
    // Only opening a session makes a visitor.
    let not_opening = visit(&mut group, "x", 3, SESSION_MS + 1);
    assert_eq!(not_opening, Err(GroupError::ShareSessionNotFound));
    // A closed session gives back at once.
    let until = Some(2 * SESSION_MS);
    let closed = group.on_session("w", -1, true, &[], &[], &[], limits, SESSION_MS + 2, until);
    assert_eq!(closed, Ok(vec![]));
    assert_eq!(
        group.share_partition(&P0).unwrap().state(0),
        Some(RecordState::Available)
    );
    // Held for visitors only, the group is not listed here.
    assert!(!group.coordinated() && group.members.is_empty());
}

#[test]
fn a_visitor_that_joins_when_the_group_moves_here_keeps_its_records() {
    let mut group = ShareGroup::default();
    visit(&mut group, "v", 0, 0).unwrap();
    assert_eq!(fetch(&mut group, "v", 4, 0).len(), 4);
    heartbeat(&mut group, "v", JOIN_EPOCH, 10);
    assert!(group.coordinated());
    let limits = ShareLimits::default();
    let accepted = group.on_session("v", 1, true, &[], &[], &ack((0, 3, 1)), limits, 20, None);
    assert_eq!(accepted, Ok(vec![(P0, None)]));
}

#[test]
fn a_share_partition_whose_write_was_refused_is_read_again_from_the_log() {
    let mut group = ShareGroup::default();
    heartbeat(&mut group, "a", JOIN_EPOCH, 0);
    open_session(&mut group, "a");
    fetch(&mut group, "a", 5, 0);
    assert_eq!(group.take_writes()[0].version, 1);
    let limits = ShareLimits::default();
    let acked = group.on_session("a", 1, true, &[], &[], &ack((0, 4, 1)), limits, 0, None);
    assert_eq!(acked, Ok(vec![(P0, None)]));
    assert_eq!(group.take_writes()[0].version, 2);
    // The log refused version 2: another broker wrote the share-partition since.
    group.drop_partitions(&[P0]);
    assert!(group.share_partition(&P0).is_none());
    assert_eq!(group.read_positions("a", 0), vec![(P0, ReadFrom::Unknown)]);
    assert!(group.take_writes().is_empty());
}

#[test]
fn a_join_past_the_share_group_size_is_refused() {
    let mut group = ShareGroup::default();
    let join = |member: &str| ShareHeartbeat {
        member_id: member.to_string(),
        member_epoch: JOIN_EPOCH,
        rack_id: None,
        client_id: "test".to_string(),
        client_host: "/127.0.0.1".to_string(),
        subscribed_topic_names: Some(vec!["jobs".to_string()]),
    };
    assert!(group
        .heartbeat(join("a"), &topics, 1, 0, SESSION_MS, 1)
        .is_ok());
    let refused = group.heartbeat(join("b"), &topics, 1, 0, SESSION_MS, 1);
    assert_eq!(refused, Err(GroupError::GroupMaxSizeReached));
    // A member already in the group joins again within the limit.
    assert!(group
        .heartbeat(join("a"), &topics, 1, 0, SESSION_MS, 1)
        .is_ok());
}
