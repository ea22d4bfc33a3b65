//! The streams groups' task assignor, sticky as Kafka's: a member keeps the active tasks it
//! had up to an even share, the rest go to the least loaded; each task's standbys go to
//! members of other processes than its active's (a process never runs a task twice),
//! preferring those that had it as a standby, so their state stays warm.

use std::collections::{BTreeMap, BTreeSet};

use super::tasks::{TaskId, Tasks};

/// A member as the assignor sees it.
#[derive(Debug, Clone, Default)]
pub struct AssignorMember {
    pub process_id: String,
    /// Its part of the previous target.
    pub previous: Tasks,
}

/// Every task of the subtopologies (`tasks`: each one's task count), active on one member
/// and on `standbys` members of other processes where there are such.
pub fn assign(
    members: &BTreeMap<String, AssignorMember>,
    tasks: &BTreeMap<String, i32>,
    standbys: usize,
) -> BTreeMap<String, Tasks> {
    let mut assigned: BTreeMap<String, Tasks> = members
        .keys()
        .map(|id| (id.clone(), Tasks::default()))
        .collect();
    if members.is_empty() {
        return assigned;
    }
    let all: BTreeSet<TaskId> = tasks
        .iter()
        .flat_map(|(s, &n)| (0..n.max(0)).map(move |p| TaskId::new(s, p)))
        .collect();
    let active_of = assign_actives(members, &all, &mut assigned);
    for task in &all {
        let active_process = members[&active_of[task]].process_id.as_str();
        assign_standbys(members, task, active_process, standbys, &mut assigned);
    }
    assigned
}

/// Each task active on one member: a member keeps what it had up to an even share, the rest
/// go to the least loaded. Which member runs each.
fn assign_actives(
    members: &BTreeMap<String, AssignorMember>,
    all: &BTreeSet<TaskId>,
    assigned: &mut BTreeMap<String, Tasks>,
) -> BTreeMap<TaskId, String> {
    // An even share: `floor` tasks each, one more for `larger_left` of them.
    let floor = all.len() / members.len();
    let mut larger_left = all.len() % members.len();
    let mut active_of: BTreeMap<TaskId, String> = BTreeMap::new();
    for (id, member) in members {
        let share = floor + usize::from(larger_left > 0);
        let kept = assigned.get_mut(id).expect("listed");
        for task in member.previous.active.iter().filter(|t| all.contains(t)) {
            if kept.active.len() < share && !active_of.contains_key(task) {
                kept.active.insert(task.clone());
                active_of.insert(task.clone(), id.clone());
            }
        }
        if kept.active.len() > floor {
            larger_left -= 1;
        }
    }
    let unkept: Vec<&TaskId> = all.iter().filter(|t| !active_of.contains_key(*t)).collect();
    for task in unkept {
        let id = least_loaded(assigned, members.keys(), |t| t.active.len());
        let tasks = assigned.get_mut(&id).expect("listed");
        tasks.active.insert(task.clone());
        active_of.insert(task.clone(), id);
    }
    active_of
}

/// Up to `standbys` standbys of `task`, each on a process that has the task in no role yet
/// (the active's is `active_process`): a member that had it as a standby first, else the
/// least loaded.
fn assign_standbys(
    members: &BTreeMap<String, AssignorMember>,
    task: &TaskId,
    active_process: &str,
    standbys: usize,
    assigned: &mut BTreeMap<String, Tasks>,
) {
    let mut processes: BTreeSet<&str> = BTreeSet::from([active_process]);
    for _ in 0..standbys {
        let candidates: Vec<&String> = members
            .iter()
            .filter(|(_, m)| !processes.contains(m.process_id.as_str()))
            .map(|(id, _)| id)
            .collect();
        if candidates.is_empty() {
            return;
        }
        let previous = candidates
            .iter()
            .find(|id| members[id.as_str()].previous.standby.contains(task))
            .map(|id| id.to_string());
        let id = previous
            .unwrap_or_else(|| least_loaded(assigned, candidates.into_iter(), |t| t.standby.len()));
        processes.insert(members[&id].process_id.as_str());
        let tasks = assigned.get_mut(&id).expect("listed");
        tasks.standby.insert(task.clone());
    }
}

/// The member among `ids` with the fewest tasks by `load` (the first by id on a tie).
fn least_loaded<'a>(
    assigned: &BTreeMap<String, Tasks>,
    ids: impl Iterator<Item = &'a String>,
    load: impl Fn(&Tasks) -> usize,
) -> String {
    ids.min_by_key(|id| (load(&assigned[id.as_str()]), id.as_str()))
        .expect("at least one member")
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(list: &[(&str, &str)]) -> BTreeMap<String, AssignorMember> {
        list.iter()
            .map(|(id, process)| {
                let member = AssignorMember {
                    process_id: process.to_string(),
                    previous: Tasks::default(),
                };
                (id.to_string(), member)
            })
            .collect()
    }

    #[test]
    fn tasks_are_spread_evenly_with_standbys_on_other_processes() {
        let members = members(&[("a", "p1"), ("b", "p2"), ("c", "p2")]);
        let tasks = BTreeMap::from([("0".to_string(), 3), ("1".to_string(), 3)]);
        let assigned = assign(&members, &tasks, 1);
        let counts: Vec<usize> = assigned.values().map(|t| t.active.len()).collect();
        assert_eq!(counts, [2, 2, 2]);
        for (id, t) in &assigned {
            for task in &t.standby {
                let active = assigned
                    .iter()
                    .find(|(_, o)| o.active.contains(task))
                    .unwrap()
                    .0;
                assert_ne!(
                    members[active].process_id, members[id].process_id,
                    "{task:?}"
                );
            }
        }
        let standbys: usize = assigned.values().map(|t| t.standby.len()).sum();
        assert_eq!(standbys, 6);
    }

    #[test]
    fn members_keep_their_tasks_and_a_new_one_takes_only_what_evens_the_load() {
        let two = members(&[("a", "p1"), ("b", "p2")]);
        let tasks = BTreeMap::from([("0".to_string(), 4)]);
        let first = assign(&two, &tasks, 0);
        let mut three = members(&[("a", "p1"), ("b", "p2"), ("c", "p3")]);
        for (id, t) in &first {
            three.get_mut(id).unwrap().previous = t.clone();
        }
        let second = assign(&three, &tasks, 0);
        for id in ["a", "b"] {
            assert!(
                second[id].active.is_subset(&first[id].active),
                "{id} keeps its own"
            );
        }
        assert_eq!(second["c"].active.len(), 1);
    }
}
