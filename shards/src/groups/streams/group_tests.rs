//! The streams group's heartbeat rules, and a model test of its task assignment and
//! reconciliation under random joins, leaves, crashes, lost answers and topology changes.

use std::collections::BTreeMap;

use proptest::prelude::*;
use uuid::Uuid;

use super::*;
use crate::groups::streams::topology::Subtopology;
use shoal_coordinator::state::streams_groups::StoredStreamsGroup;

type Cluster = BTreeMap<String, (Uuid, i32)>;

fn cluster(partitions: i32) -> Cluster {
    let id = Uuid::from_bytes([1; 16]);
    let other = Uuid::from_bytes([2; 16]);
    BTreeMap::from([("in".into(), (id, partitions)), ("more".into(), (other, 2))])
}

fn topology(epoch: i32) -> Topology {
    let mut subtopologies = vec![Subtopology {
        id: "0".into(),
        source_topics: vec!["in".into()],
        ..Default::default()
    }];
    if epoch > 0 {
        subtopologies.push(Subtopology {
            id: "1".into(),
            source_topics: vec!["more".into()],
            ..Default::default()
        });
    }
    Topology {
        epoch,
        subtopologies,
    }
}

fn join(member: &str, process: &str, topology_epoch: i32) -> StreamsHeartbeat {
    StreamsHeartbeat {
        member_id: member.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        topology: Some(topology(topology_epoch)),
        owned: Some(Tasks::default()),
        process_id: Some(process.into()),
        ..Default::default()
    }
}

fn beat(member: &str, epoch: i32, owned: Option<Tasks>) -> StreamsHeartbeat {
    StreamsHeartbeat {
        member_id: member.into(),
        member_epoch: epoch,
        rebalance_timeout_ms: -1,
        owned,
        ..Default::default()
    }
}

fn group() -> StreamsGroup {
    StreamsGroup::new(100, Duration::from_secs(45), 1)
}

#[test]
fn the_first_member_sets_the_topology_and_gets_every_task() {
    let mut g = group();
    let now = Instant::now();
    let answer = g.heartbeat(join("a", "p1", 0), &cluster(3), now).unwrap();
    assert_eq!(answer.member_epoch, 2);
    assert_eq!(answer.tasks.unwrap().active.len(), 3);
    assert_eq!(g.state(), "Stable");
    // A joining member without a topology, or one sending it later, is refused.
    let mut bad = join("b", "p2", 0);
    bad.topology = None;
    assert_eq!(
        g.heartbeat(bad, &cluster(3), now),
        Err(GroupError::InvalidRequest)
    );
    let mut bad = beat("a", 2, None);
    bad.topology = Some(topology(0));
    assert_eq!(
        g.heartbeat(bad, &cluster(3), now),
        Err(GroupError::InvalidRequest)
    );
    // Another topology under the same epoch is refused; an older epoch is told it is stale.
    let mut changed = join("b", "p2", 0);
    changed.topology.as_mut().unwrap().subtopologies[0].id = "x".into();
    assert_eq!(
        g.heartbeat(changed, &cluster(3), now),
        Err(GroupError::StreamsInvalidTopologyEpoch)
    );
    g.heartbeat(join("c", "p3", 1), &cluster(3), now).unwrap();
    let stale = g.heartbeat(join("d", "p4", 0), &cluster(3), now).unwrap();
    assert_eq!(stale.statuses[0].0, StatusCode::StaleTopology);
}

#[test]
fn a_missing_source_topic_is_a_status_and_no_tasks() {
    let mut g = group();
    let answer = g
        .heartbeat(join("a", "p1", 0), &BTreeMap::new(), Instant::now())
        .unwrap();
    assert_eq!(answer.statuses[0].0, StatusCode::MissingSourceTopics);
    assert!(answer.tasks.unwrap().is_empty());
    assert_eq!(g.state(), "NotReady");
}

#[test]
fn a_task_moves_only_once_its_owner_revoked_it() {
    let mut g = group();
    let now = Instant::now();
    let c = cluster(2);
    let a = g.heartbeat(join("a", "p1", 0), &c, now).unwrap();
    let a_tasks = a.tasks.unwrap();
    let b = g.heartbeat(join("b", "p2", 0), &c, now).unwrap();
    // The active task b is to get is still a's: none yet.
    assert!(b.tasks.unwrap().active.is_empty());
    let a2 = g
        .heartbeat(beat("a", a.member_epoch, Some(a_tasks)), &c, now)
        .unwrap();
    let kept = a2.tasks.unwrap();
    assert_eq!(kept.active.len(), 1, "a revokes one");
    let a3 = g
        .heartbeat(beat("a", a2.member_epoch, Some(kept.clone())), &c, now)
        .unwrap();
    assert!(a3.member_epoch > a.member_epoch);
    let b2 = g
        .heartbeat(beat("b", b.member_epoch, Some(Tasks::default())), &c, now)
        .unwrap();
    let b_tasks = b2.tasks.unwrap();
    assert_eq!(b_tasks.active.len(), 1);
    assert!(b_tasks.active.is_disjoint(&kept.active));
}

#[test]
fn a_member_whose_session_ends_leaves_its_tasks_to_the_others() {
    let mut g = group();
    let now = Instant::now();
    let c = cluster(2);
    g.heartbeat(join("a", "p1", 0), &c, now).unwrap();
    g.heartbeat(join("b", "p2", 0), &c, now).unwrap();
    let later = now + Duration::from_secs(30);
    let a = g
        .heartbeat(beat("a", g.members["a"].tasks.epoch, None), &c, later)
        .unwrap();
    assert_eq!(
        g.expire(now + Duration::from_secs(46)),
        vec!["b".to_string()]
    );
    let a = g
        .heartbeat(beat("a", a.member_epoch, a.tasks), &c, later)
        .unwrap();
    let a = g
        .heartbeat(beat("a", a.member_epoch, a.tasks), &c, later)
        .unwrap();
    assert_eq!(g.members["a"].tasks.assigned.active.len(), 2, "{a:?}");
}

#[derive(Debug, Clone)]
enum Step {
    Join(u8),
    Leave(u8),
    /// Killed: it stops running at once and its session ends.
    Crash(u8),
    Heartbeat(u8),
    /// A heartbeat whose answer the member never gets.
    LostAnswer(u8),
    Partitions(i32),
    /// A member joins with the next topology epoch (a second subtopology).
    NewTopology(u8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0u8..6).prop_map(Step::Join),
        (0u8..6).prop_map(Step::Leave),
        (0u8..6).prop_map(Step::Crash),
        (0u8..6).prop_map(Step::Heartbeat),
        (0u8..6).prop_map(Step::Heartbeat),
        (0u8..6).prop_map(Step::Heartbeat),
        (0u8..6).prop_map(Step::LostAnswer),
        (1i32..8).prop_map(Step::Partitions),
        (0u8..6).prop_map(Step::NewTopology),
    ]
}

/// The group, and each client: what it runs is what its last answer gave it.
struct Model {
    group: StreamsGroup,
    partitions: i32,
    topology_epoch: i32,
    running: BTreeMap<String, Tasks>,
    epochs: BTreeMap<String, i32>,
    now: Instant,
    /// The group as the coordinator's log has it, from every change taken.
    log: StoredStreamsGroup,
}

impl Model {
    fn process(n: &str) -> String {
        // Members m0, m3 share a process, as do m1, m4 and m2, m5 (two stream threads).
        let index: u8 = n[1..].parse().unwrap();
        format!("p{}", index % 3)
    }

    fn send(&mut self, id: &str, request: StreamsHeartbeat, answered: bool) {
        let request_epoch = request.member_epoch;
        match self
            .group
            .heartbeat(request, &cluster(self.partitions), self.now)
        {
            Ok(answer) if answered => {
                self.epochs.insert(id.into(), answer.member_epoch);
                if let Some(tasks) = answer.tasks {
                    self.running.insert(id.into(), tasks);
                }
            }
            Ok(_) => {}
            // Fenced or unknown: the client gives everything up and rejoins.
            Err(_) if request_epoch != 0 => {
                self.running.remove(id);
                self.epochs.remove(id);
                let rejoin = join(id, &Self::process(id), self.topology_epoch);
                self.send(id, rejoin, true);
            }
            Err(error) => panic!("{id} could not join: {error:?}"),
        }
    }

    fn heartbeat(&mut self, id: &str, answered: bool) {
        let Some(&epoch) = self.epochs.get(id) else {
            return;
        };
        let owned = self.running.get(id).cloned().unwrap_or_default();
        self.send(id, beat(id, epoch, Some(owned)), answered);
    }

    fn check(&self) -> Result<(), TestCaseError> {
        // The group's view: one active holder per task, and no process holding a task twice.
        let mut active = BTreeMap::new();
        let mut on_process = BTreeMap::new();
        for (id, m) in &self.group.members {
            for (task, is_active) in m.tasks.held().each() {
                if is_active {
                    prop_assert!(
                        active.insert(task.clone(), id).is_none(),
                        "{:?} active twice",
                        task
                    );
                }
                let key = (m.process_id.clone(), task.clone());
                prop_assert!(
                    on_process.insert(key, id).is_none(),
                    "{:?} twice on {}",
                    task,
                    m.process_id
                );
            }
        }
        // The clients' view: no task runs active on two members, nor twice in one process.
        let mut running = BTreeMap::new();
        let mut running_on = BTreeMap::new();
        for (id, tasks) in &self.running {
            for (task, is_active) in tasks.each() {
                if is_active {
                    prop_assert!(
                        running.insert(task.clone(), id).is_none(),
                        "{:?} run twice",
                        task
                    );
                }
                let key = (Self::process(id), task.clone());
                prop_assert!(
                    running_on.insert(key, id).is_none(),
                    "{:?} run twice in a process",
                    task
                );
            }
        }
        Ok(())
    }
}

impl Model {
    /// Takes the group's change, as the registry does after each request, into the log.
    fn store(&mut self) {
        let Some((record, members)) = self.group.take_change("g") else {
            return;
        };
        if record.deleted {
            // The registry drops a group left without members, and the coordinator forgets it.
            self.group = group();
            self.log = StoredStreamsGroup {
                group: Default::default(),
                members: BTreeMap::new(),
            };
            return;
        }
        if record.topology_changed || self.log.group.group_id.is_empty() {
            self.log.group = record;
        } else {
            let subtopologies = std::mem::take(&mut self.log.group.subtopologies);
            let topology_epoch = self.log.group.topology_epoch;
            self.log.group = record;
            self.log.group.subtopologies = subtopologies;
            self.log.group.topology_epoch = topology_epoch;
        }
        for m in members {
            match m.removed {
                true => self.log.members.remove(&m.member_id),
                false => self.log.members.insert(m.member_id.clone(), m),
            };
        }
    }

    /// What the log holds is the group: read back, every member has its epoch, tasks and
    /// target (a change left out of what was stored would show here).
    fn check_log(&self) -> Result<(), TestCaseError> {
        if self.log.group.group_id.is_empty() {
            // Nothing stored (or deleted): the group has no members.
            prop_assert!(self.group.members.is_empty());
            return Ok(());
        }
        let back = StreamsGroup::restore(&self.log, 100, Duration::from_secs(45), 1, self.now);
        let g = &self.group;
        prop_assert_eq!(
            back.members.keys().collect::<Vec<_>>(),
            g.members.keys().collect::<Vec<_>>()
        );
        for (id, m) in &g.members {
            prop_assert_eq!(&back.members[id].tasks, &m.tasks, "{}", id);
            prop_assert_eq!(back.members[id].previous_epoch, m.previous_epoch, "{}", id);
        }
        prop_assert_eq!(&back.target, &g.target);
        prop_assert_eq!(
            (back.group_epoch, back.assignment_epoch),
            (g.group_epoch, g.assignment_epoch)
        );
        prop_assert_eq!(&back.topology, &g.topology);
        Ok(())
    }

    /// Settled: each member stable at the group's epoch, every task active on one, and
    /// standbys away from their active's process.
    fn check_settled(&self) -> Result<(), TestCaseError> {
        let g = &self.group;
        prop_assert_eq!(g.state(), "Stable");
        let mut actives = 0;
        for (id, m) in &g.members {
            prop_assert_eq!(m.tasks.epoch, g.assignment_epoch, "{}", id);
            actives += self.running[id].active.len();
        }
        let tasks: i32 = g.configured.tasks.values().sum();
        prop_assert_eq!(actives as i32, tasks);
        for (id, tasks) in &self.running {
            for task in &tasks.standby {
                let active = self
                    .running
                    .iter()
                    .find(|(_, t)| t.active.contains(task))
                    .unwrap()
                    .0;
                prop_assert_ne!(Model::process(active), Model::process(id));
            }
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn no_task_ever_runs_twice_and_all_run_once_the_group_settles(
        steps in proptest::collection::vec(step(), 1..80)
    ) {
        let mut model = Model {
            group: group(),
            partitions: 4,
            topology_epoch: 0,
            running: BTreeMap::new(),
            epochs: BTreeMap::new(),
            now: Instant::now(),
            log: StoredStreamsGroup {
                group: Default::default(),
                members: BTreeMap::new(),
            },
        };
        for step in steps {
            match step {
                Step::Join(n) | Step::NewTopology(n) => {
                    let id = format!("m{n}");
                    if model.epochs.contains_key(&id) {
                        continue;
                    }
                    if matches!(step, Step::NewTopology(_)) {
                        model.topology_epoch += 1;
                    }
                    let request = join(&id, &Model::process(&id), model.topology_epoch);
                    model.send(&id, request, true);
                }
                Step::Leave(n) => {
                    let id = format!("m{n}");
                    if let Some(epoch) = model.epochs.remove(&id) {
                        model.running.remove(&id);
                        let _ = model.group.heartbeat(beat(&id, -1, None), &cluster(model.partitions), model.now);
                        let _ = epoch;
                    }
                }
                Step::Crash(n) => {
                    let id = format!("m{n}");
                    if model.epochs.remove(&id).is_some() {
                        model.running.remove(&id);
                        // Its session ends: the others heartbeat on in the meantime.
                        model.group.remove(&id);
                    }
                }
                Step::Heartbeat(n) => model.heartbeat(&format!("m{n}"), true),
                Step::LostAnswer(n) => model.heartbeat(&format!("m{n}"), false),
                Step::Partitions(count) => {
                    if count > model.partitions {
                        model.partitions = count;
                    }
                }
            }
            model.check()?;
            model.store();
            model.check_log()?;
        }
        if model.epochs.is_empty() {
            return Ok(());
        }
        let ids: Vec<String> = model.epochs.keys().cloned().collect();
        for _ in 0..6 {
            for id in &ids {
                model.heartbeat(id, true);
                model.check()?;
            }
        }
        model.check_settled()?;
        model.store();
        model.check_log()?;
        // Sticky: with nothing changed, a new assignment gives each member what it has.
        let before = model.group.target.clone();
        let mut again = model.group;
        again.group_epoch += 1;
        again.refresh_target();
        prop_assert_eq!(before, again.target);
    }
}
