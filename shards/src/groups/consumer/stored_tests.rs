//! A group written as records after every change and read back continues exactly as the
//! group that wrote them.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use shoal_coordinator::{CoordinatorState, Entry, TopicPartition};
use uuid::Uuid;

use crate::groups::consumer::assignor::Assignor;
use crate::groups::consumer::group::{ConsumerGroup, Heartbeat, JOIN_EPOCH, LEAVE_EPOCH};

const SESSION: Duration = Duration::from_secs(45);

type Topics = BTreeMap<String, (Uuid, i32)>;

fn join(id: &str) -> Heartbeat {
    Heartbeat {
        member_id: id.into(),
        member_epoch: JOIN_EPOCH,
        client_id: format!("client-{id}"),
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(["a".to_string()].into()),
        subscribed_topic_regex: Some("b.*".into()),
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

/// The group, and the coordinator's state with every change it wrote.
struct Stored {
    group: ConsumerGroup,
    log: CoordinatorState,
}

impl Stored {
    fn heartbeat(
        &mut self,
        request: Heartbeat,
        topics: &Topics,
    ) -> (i32, Option<BTreeSet<TopicPartition>>) {
        let answer = self
            .group
            .heartbeat(request, topics, Instant::now())
            .unwrap();
        self.store();
        (answer.member_epoch, answer.assignment)
    }

    fn store(&mut self) {
        if let Some((group, members)) = self.group.take_change("g") {
            let mut records = vec![group.into()];
            records.extend(members.into_iter().map(Into::into));
            let entry = Entry::new(1, records);
            let mut bytes = Vec::new();
            entry.encode(&mut bytes);
            self.log.apply(&Entry::decode(&bytes).unwrap());
        }
    }

    fn read_back(&self) -> ConsumerGroup {
        let stored = self.log.consumer_group("g").expect("stored");
        ConsumerGroup::restore(&stored, Assignor::Uniform, 10, SESSION, Instant::now())
    }
}

#[test]
fn a_group_read_back_mid_rebalance_continues_as_the_one_that_wrote_it() {
    let topics: Topics = [
        ("a".to_string(), (Uuid::from_u128(1), 4)),
        ("b1".to_string(), (Uuid::from_u128(2), 2)),
    ]
    .into();
    let mut s = Stored {
        group: ConsumerGroup::new(Assignor::Uniform, 10, SESSION),
        log: CoordinatorState::default(),
    };
    let (e1, owned1) = s.heartbeat(join("m1"), &topics);
    let owned1 = owned1.unwrap();
    assert_eq!(owned1.len(), 6, "a and b1 by expression");
    let (e2, _) = s.heartbeat(join("m2"), &topics);
    // m1 learns it must give up half: it is revoking when the broker restarts.
    let (e1, revoked_to) = s.heartbeat(beat("m1", e1, &owned1), &topics);
    let kept = revoked_to.unwrap();
    assert_eq!(kept.len(), 3);
    let mut restored = s.read_back();
    assert_eq!(restored.describe(), s.group.describe());
    assert_eq!(restored.state(), "Reconciling");
    // The same heartbeats get the same answers from both from here on.
    let mut both = |request: Heartbeat| {
        let now = Instant::now();
        let original = s.group.heartbeat(request.clone(), &topics, now).unwrap();
        let again = restored.heartbeat(request, &topics, now).unwrap();
        assert_eq!(again, original);
        s.store();
        original
    };
    both(beat("m2", e2, &BTreeSet::new()));
    let m1 = both(beat("m1", e1, &kept));
    let m2 = both(beat("m2", e2, &BTreeSet::new()));
    assert_eq!(
        m2.assignment.map(|a| a.len()),
        Some(3),
        "m2 gets what m1 released"
    );
    both(beat("m1", m1.member_epoch, &kept));
    assert_eq!(restored.describe(), s.group.describe());
    assert_eq!(s.read_back().describe(), s.group.describe());
    assert_eq!(s.group.state(), "Stable");
}

#[test]
fn members_that_leave_are_removed_and_the_last_deletes_the_group() {
    let topics: Topics = [("a".to_string(), (Uuid::from_u128(1), 2))].into();
    let mut s = Stored {
        group: ConsumerGroup::new(Assignor::Uniform, 10, SESSION),
        log: CoordinatorState::default(),
    };
    s.heartbeat(join("m1"), &topics);
    s.heartbeat(join("m2"), &topics);
    s.heartbeat(beat("m2", LEAVE_EPOCH, &BTreeSet::new()), &topics);
    let members: Vec<String> = s.read_back().members.keys().cloned().collect();
    assert_eq!(members, ["m1"]);
    assert!(s.group.memory_bytes() > 0);
    s.heartbeat(beat("m1", LEAVE_EPOCH, &BTreeSet::new()), &topics);
    assert_eq!(s.log.consumer_group("g"), None);
    assert_eq!(s.group.memory_bytes(), 0);
}
