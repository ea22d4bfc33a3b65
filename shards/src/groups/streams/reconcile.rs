//! One streams member's way from the tasks it has to its target (KIP-1071's reconciliation,
//! as KIP-848's for partitions): it first revokes what it must give up (its epoch stays),
//! then moves to the target's epoch and gets what is free. A task is not free while another
//! member runs it as active, nor while another member of the same process has it in any
//! role: one process never runs a task twice.

use super::tasks::{Role, TaskId, Tasks};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberState {
    Stable,
    /// It must revoke `revoking` before it gets anything new.
    UnrevokedTasks,
    /// At the target's epoch, but part of its target is still held by others.
    UnreleasedTasks,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberTasks {
    pub state: MemberState,
    pub epoch: i32,
    /// What it may run now.
    pub assigned: Tasks,
    /// What it must stop running and confirm (by no longer reporting it).
    pub revoking: Tasks,
}

impl MemberTasks {
    pub fn joined() -> MemberTasks {
        MemberTasks {
            state: MemberState::Stable,
            epoch: 0,
            assigned: Tasks::default(),
            revoking: Tasks::default(),
        }
    }

    /// What it holds: assigned, or not yet confirmed revoked.
    pub fn held(&self) -> Tasks {
        self.assigned.union(&self.revoking)
    }

    /// The next step towards `target` at `target_epoch`. `reported` is what its heartbeat
    /// says it runs (None: not said); `unreleased` tells whether another member still holds
    /// a task in a way that keeps it from this one in that role.
    pub fn advance(
        &self,
        target_epoch: i32,
        target: &Tasks,
        reported: Option<&Tasks>,
        unreleased: impl Fn(&TaskId, Role) -> bool,
    ) -> MemberTasks {
        let step = match self.state {
            MemberState::Stable if self.epoch == target_epoch => self.clone(),
            MemberState::UnrevokedTasks => {
                let confirmed =
                    reported.is_some_and(|owned| self.revoking.each().all(|(t, _)| !owned.has(t)));
                match confirmed {
                    true => self.next(target_epoch, target, unreleased),
                    false => self.clone(),
                }
            }
            _ => self.next(target_epoch, target, unreleased),
        };
        debug_assert!(step.epoch >= self.epoch, "a member's epoch went back");
        step
    }

    fn next(
        &self,
        target_epoch: i32,
        target: &Tasks,
        unreleased: impl Fn(&TaskId, Role) -> bool,
    ) -> MemberTasks {
        let kept = self
            .assigned
            .filtered(|t, role| target.of(role).contains(t));
        let revoking = self
            .assigned
            .filtered(|t, role| !target.of(role).contains(t));
        if !revoking.is_empty() {
            return MemberTasks {
                state: MemberState::UnrevokedTasks,
                epoch: self.epoch,
                assigned: kept,
                revoking,
            };
        }
        let new = target.filtered(|t, role| !self.assigned.of(role).contains(t));
        let free = new.filtered(|t, role| !unreleased(t, role));
        MemberTasks {
            state: match free.len() == new.len() {
                true => MemberState::Stable,
                false => MemberState::UnreleasedTasks,
            },
            epoch: target_epoch,
            assigned: kept.union(&free),
            revoking: Tasks::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn active(partitions: &[i32]) -> Tasks {
        Tasks {
            active: partitions.iter().map(|&p| TaskId::new("0", p)).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn revokes_first_then_takes_what_is_free_then_what_is_released() {
        let member = MemberTasks {
            state: MemberState::Stable,
            epoch: 1,
            assigned: active(&[0, 1]),
            revoking: Tasks::default(),
        };
        let target = active(&[0, 2]);
        let step = member.advance(2, &target, Some(&active(&[0, 1])), |_, _| true);
        assert_eq!(step.state, MemberState::UnrevokedTasks);
        assert_eq!(
            (step.epoch, &step.assigned, &step.revoking),
            (1, &active(&[0]), &active(&[1]))
        );
        assert_eq!(
            step.advance(2, &target, Some(&active(&[0, 1])), |_, _| true),
            step
        );
        let step = step.advance(2, &target, Some(&active(&[0])), |_, _| true);
        assert_eq!((step.state, step.epoch), (MemberState::UnreleasedTasks, 2));
        let step = step.advance(2, &target, None, |_, _| false);
        assert_eq!((step.state, &step.assigned), (MemberState::Stable, &target));
    }

    #[test]
    fn an_active_task_becoming_a_standby_is_revoked_before_it_comes_back() {
        let member = MemberTasks {
            state: MemberState::Stable,
            epoch: 1,
            assigned: active(&[0]),
            revoking: Tasks::default(),
        };
        let target = Tasks {
            standby: active(&[0]).active,
            ..Default::default()
        };
        let step = member.advance(2, &target, Some(&active(&[0])), |_, _| false);
        assert_eq!(step.state, MemberState::UnrevokedTasks);
        let step = step.advance(2, &target, Some(&Tasks::default()), |_, _| false);
        assert_eq!((step.state, &step.assigned), (MemberState::Stable, &target));
    }
}
