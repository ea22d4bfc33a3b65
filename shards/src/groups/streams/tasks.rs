//! Tasks: a subtopology's partition, run by one member as active and by others as standbys
//! (or warm-ups) that keep its state ready.

use std::collections::BTreeSet;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId {
    pub subtopology: String,
    pub partition: i32,
}

impl TaskId {
    pub fn new(subtopology: &str, partition: i32) -> TaskId {
        TaskId {
            subtopology: subtopology.to_string(),
            partition,
        }
    }
}

/// A member's tasks of each kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tasks {
    pub active: BTreeSet<TaskId>,
    pub standby: BTreeSet<TaskId>,
    pub warmup: BTreeSet<TaskId>,
}

impl Tasks {
    pub fn is_empty(&self) -> bool {
        self.active.is_empty() && self.standby.is_empty() && self.warmup.is_empty()
    }

    pub fn len(&self) -> usize {
        self.active.len() + self.standby.len() + self.warmup.len()
    }

    /// Whether it has `task` in any role.
    pub fn has(&self, task: &TaskId) -> bool {
        self.active.contains(task) || self.standby.contains(task) || self.warmup.contains(task)
    }

    /// Every task it has, with whether it is active.
    pub fn each(&self) -> impl Iterator<Item = (&TaskId, bool)> {
        let others = self.standby.iter().chain(&self.warmup).map(|t| (t, false));
        self.active.iter().map(|t| (t, true)).chain(others)
    }

    /// Those of its tasks `keep` keeps, by kind.
    pub fn filtered(&self, keep: impl Fn(&TaskId, Role) -> bool) -> Tasks {
        let pick =
            |set: &BTreeSet<TaskId>, role| set.iter().filter(|t| keep(t, role)).cloned().collect();
        Tasks {
            active: pick(&self.active, Role::Active),
            standby: pick(&self.standby, Role::Standby),
            warmup: pick(&self.warmup, Role::Warmup),
        }
    }

    /// These and `other`'s, by kind.
    pub fn union(&self, other: &Tasks) -> Tasks {
        Tasks {
            active: self.active.union(&other.active).cloned().collect(),
            standby: self.standby.union(&other.standby).cloned().collect(),
            warmup: self.warmup.union(&other.warmup).cloned().collect(),
        }
    }

    pub fn of(&self, role: Role) -> &BTreeSet<TaskId> {
        match role {
            Role::Active => &self.active,
            Role::Standby => &self.standby,
            Role::Warmup => &self.warmup,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Active,
    Standby,
    Warmup,
}
