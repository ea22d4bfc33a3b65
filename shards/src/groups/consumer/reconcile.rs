//! One member's way from the partitions it has to its target assignment (KIP-848's
//! reconciliation, Kafka's `CurrentAssignmentBuilder`). A partition is never given to a
//! member while another still has it or has not confirmed revoking it: a member first
//! revokes what it must give up (its epoch stays), then moves to the target epoch and gets
//! what is free; what another member still holds follows once it is released.

use std::collections::BTreeSet;

use shoal_coordinator::TopicPartition;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberState {
    /// It has its target (or all of it that is free) at the target's epoch.
    Stable,
    /// It must revoke `revoking` before it gets anything new.
    UnrevokedPartitions,
    /// It is at the target's epoch, but part of its target is still held by others.
    UnreleasedPartitions,
}

/// What the group knows of a member's partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberAssignment {
    pub state: MemberState,
    pub epoch: i32,
    /// The partitions it may consume now.
    pub assigned: BTreeSet<TopicPartition>,
    /// Partitions it must stop consuming and confirm (by no longer reporting them).
    pub revoking: BTreeSet<TopicPartition>,
}

impl MemberAssignment {
    /// A member that has just joined: nothing yet, at epoch 0.
    pub fn joined() -> MemberAssignment {
        MemberAssignment {
            state: MemberState::Stable,
            epoch: 0,
            assigned: BTreeSet::new(),
            revoking: BTreeSet::new(),
        }
    }

    /// Whether it holds `p` (consuming it, or not yet having confirmed its revocation).
    pub fn holds(&self, p: &TopicPartition) -> bool {
        self.assigned.contains(p) || self.revoking.contains(p)
    }

    /// The next step towards `target` at `target_epoch`. `reported` is what the member's
    /// heartbeat says it owns (None when the heartbeat did not say); `held_by_others` tells
    /// whether another member of the group holds a partition.
    pub fn advance(
        &self,
        target_epoch: i32,
        target: &BTreeSet<TopicPartition>,
        reported: Option<&BTreeSet<TopicPartition>>,
        held_by_others: impl Fn(&TopicPartition) -> bool,
    ) -> MemberAssignment {
        let step = match self.state {
            MemberState::Stable if self.epoch == target_epoch => self.clone(),
            MemberState::UnrevokedPartitions => {
                let confirmed = reported.is_some_and(|owned| owned.is_disjoint(&self.revoking));
                match confirmed {
                    true => self.next(target_epoch, target, held_by_others),
                    false => self.clone(),
                }
            }
            _ => self.next(target_epoch, target, held_by_others),
        };
        // KIP-848: a member's epoch never goes back (the group's model tests prove it of
        // every schedule they try; this keeps it checked wherever a shard reconciles).
        debug_assert!(
            step.epoch >= self.epoch,
            "member epoch {} went back to {}",
            self.epoch,
            step.epoch
        );
        step
    }

    fn next(
        &self,
        target_epoch: i32,
        target: &BTreeSet<TopicPartition>,
        held_by_others: impl Fn(&TopicPartition) -> bool,
    ) -> MemberAssignment {
        let kept: BTreeSet<TopicPartition> = self.assigned.intersection(target).copied().collect();
        let revoking: BTreeSet<TopicPartition> =
            self.assigned.difference(target).copied().collect();
        if !revoking.is_empty() {
            return MemberAssignment {
                state: MemberState::UnrevokedPartitions,
                epoch: self.epoch,
                assigned: kept,
                revoking,
            };
        }
        let (free, unreleased): (Vec<TopicPartition>, Vec<TopicPartition>) = target
            .difference(&self.assigned)
            .partition(|p| !held_by_others(p));
        let mut assigned = kept;
        assigned.extend(free);
        MemberAssignment {
            state: match unreleased.is_empty() {
                true => MemberState::Stable,
                false => MemberState::UnreleasedPartitions,
            },
            epoch: target_epoch,
            assigned,
            revoking: BTreeSet::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::btree_map::Entry;
    use std::collections::BTreeMap;

    use proptest::prelude::*;
    use uuid::Uuid;

    use super::*;
    use crate::groups::consumer::assignor::{Assignor, AssignorMember};

    fn p(partition: i32) -> TopicPartition {
        TopicPartition {
            topic_id: Uuid::from_bytes([1; 16]),
            partition,
        }
    }

    fn set(ps: &[i32]) -> BTreeSet<TopicPartition> {
        ps.iter().map(|&n| p(n)).collect()
    }

    #[test]
    fn revokes_first_then_takes_what_is_free_then_what_is_released() {
        let member = MemberAssignment {
            state: MemberState::Stable,
            epoch: 1,
            assigned: set(&[0, 1]),
            revoking: BTreeSet::new(),
        };
        // Target 2: give up 1, take 2 (still held by another member).
        let step = member.advance(2, &set(&[0, 2]), Some(&set(&[0, 1])), |_| true);
        assert_eq!(step.state, MemberState::UnrevokedPartitions);
        assert_eq!(
            (step.epoch, step.assigned.clone(), step.revoking.clone()),
            (1, set(&[0]), set(&[1]))
        );
        // Not confirmed yet: nothing changes.
        assert_eq!(
            step.advance(2, &set(&[0, 2]), Some(&set(&[0, 1])), |_| true),
            step
        );
        // Confirmed, but 2 is still held: the target epoch, without 2.
        let step = step.advance(2, &set(&[0, 2]), Some(&set(&[0])), |_| true);
        assert_eq!(step.state, MemberState::UnreleasedPartitions);
        assert_eq!((step.epoch, step.assigned.clone()), (2, set(&[0])));
        // Released.
        let step = step.advance(2, &set(&[0, 2]), Some(&set(&[0])), |_| false);
        assert_eq!(step.state, MemberState::Stable);
        assert_eq!(step.assigned, set(&[0, 2]));
    }

    #[derive(Debug, Clone)]
    enum Step {
        Join(u8),
        Leave(u8),
        Heartbeat(u8),
        /// A heartbeat whose answer the member never gets (it keeps what it had).
        LostAnswer(u8),
        Partitions(i32),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (0u8..5).prop_map(Step::Join),
            (0u8..5).prop_map(Step::Leave),
            (0u8..5).prop_map(Step::Heartbeat),
            (0u8..5).prop_map(Step::Heartbeat),
            (0u8..5).prop_map(Step::Heartbeat),
            (0u8..5).prop_map(Step::LostAnswer),
            (1i32..12).prop_map(Step::Partitions),
        ]
    }

    /// The group's side and each client's: what the client consumes is what the last answer
    /// it got assigned it.
    struct Model {
        group_epoch: i32,
        partitions: i32,
        target: BTreeMap<String, BTreeSet<TopicPartition>>,
        members: BTreeMap<String, MemberAssignment>,
        consuming: BTreeMap<String, BTreeSet<TopicPartition>>,
    }

    impl Model {
        fn retarget(&mut self) {
            self.group_epoch += 1;
            let topic = Uuid::from_bytes([1; 16]);
            let members = self
                .members
                .keys()
                .map(|id| {
                    let previous = self.target.get(id).cloned().unwrap_or_default();
                    let subscribed = BTreeSet::from([topic]);
                    (
                        id.clone(),
                        AssignorMember {
                            subscribed,
                            previous,
                        },
                    )
                })
                .collect();
            let topics = BTreeMap::from([(topic, self.partitions)]);
            self.target = Assignor::Uniform.assign(&members, &topics);
        }

        fn heartbeat(&mut self, id: &str, answered: bool) {
            let Some(member) = self.members.get(id) else {
                return;
            };
            let reported = self.consuming.get(id).cloned().unwrap_or_default();
            let others: Vec<&MemberAssignment> = self
                .members
                .iter()
                .filter(|(other, _)| other.as_str() != id)
                .map(|(_, m)| m)
                .collect();
            let next = member.advance(self.group_epoch, &self.target[id], Some(&reported), |p| {
                others.iter().any(|m| m.holds(p))
            });
            self.members.insert(id.to_string(), next.clone());
            if answered {
                self.consuming.insert(id.to_string(), next.assigned);
            }
        }

        fn check(&self) -> Result<(), TestCaseError> {
            let mut held = BTreeSet::new();
            for m in self.members.values() {
                for p in m.assigned.iter().chain(&m.revoking) {
                    prop_assert!(held.insert(*p), "{:?} held by two members", p);
                }
            }
            let mut consumed = BTreeSet::new();
            for owned in self.consuming.values() {
                for p in owned {
                    prop_assert!(consumed.insert(*p), "{:?} consumed by two members", p);
                }
            }
            Ok(())
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        #[test]
        fn no_partition_is_ever_consumed_twice_and_every_one_ends_up_assigned(
            steps in proptest::collection::vec(step(), 1..60)
        ) {
            let mut model = Model {
                group_epoch: 0,
                partitions: 6,
                target: BTreeMap::new(),
                members: BTreeMap::new(),
                consuming: BTreeMap::new(),
            };
            for step in steps {
                match step {
                    Step::Join(n) => {
                        let id = format!("m{n}");
                        if let Entry::Vacant(entry) = model.members.entry(id) {
                            entry.insert(MemberAssignment::joined());
                            model.retarget();
                        }
                    }
                    Step::Leave(n) => {
                        let id = format!("m{n}");
                        // A member that leaves (or is fenced) stops consuming first.
                        if model.members.remove(&id).is_some() {
                            model.consuming.remove(&id);
                            model.retarget();
                        }
                    }
                    Step::Heartbeat(n) => model.heartbeat(&format!("m{n}"), true),
                    Step::LostAnswer(n) => model.heartbeat(&format!("m{n}"), false),
                    Step::Partitions(count) => {
                        if count > model.partitions {
                            model.partitions = count;
                            model.retarget();
                        }
                    }
                }
                model.check()?;
            }
            // Every member heartbeats until nothing changes: each is stable at the group's
            // epoch and together they consume every partition.
            if !model.members.is_empty() {
                let ids: Vec<String> = model.members.keys().cloned().collect();
                for _ in 0..4 {
                    for id in &ids {
                        model.heartbeat(id, true);
                        model.check()?;
                    }
                }
                let mut consumed = BTreeSet::new();
                for (id, m) in &model.members {
                    prop_assert_eq!(m.state, MemberState::Stable, "{}", id);
                    prop_assert_eq!(m.epoch, model.group_epoch);
                    consumed.extend(model.consuming[id].iter().copied());
                }
                prop_assert_eq!(consumed.len(), model.partitions as usize);
            }
        }
    }
}
