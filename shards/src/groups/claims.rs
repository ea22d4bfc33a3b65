//! This broker's claims on the groups its shards coordinate. A group is claimed in the log
//! before this shard holds members for it (or, with none, before its first offset write), so
//! the members' first OffsetFetch sees everything an earlier coordinator accepted and any
//! later write of that coordinator is refused. A claim refused by the log, or a lapse of
//! this broker's cluster lease (others may have taken its groups meanwhile), drops the claim
//! and the group's members: they rejoin, and the next claim reads the log first.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use futures::lock::Mutex;
use shoal_coordinator::commands::ClaimGroup;
use shoal_coordinator::{ErrorKind, GroupClaim};

use super::GroupError;
use crate::rpc::CoordinatorClient;

/// Who claims: this broker's process, through the coordinator.
pub struct Claimer {
    pub coordinator: Rc<CoordinatorClient>,
    pub node_id: i32,
    /// Drawn at the process's start: a restarted broker holds none of its old claims.
    pub incarnation: i64,
    /// Counts the cluster lease's lapses (the membership thread adds one when it renews a
    /// lease that had run out).
    pub lease_lapses: Arc<AtomicU64>,
}

pub(super) struct Claims {
    claimer: Claimer,
    held: RefCell<HashMap<String, GroupClaim>>,
    /// One claim at a time, so concurrent requests for an unclaimed group claim it once.
    claiming: Mutex<()>,
    /// The lease lapses counted when the held claims were taken.
    lapses_seen: Cell<u64>,
}

impl Claims {
    pub fn new(claimer: Claimer) -> Claims {
        let lapses = claimer.lease_lapses.load(Ordering::Acquire);
        Claims {
            claimer,
            held: RefCell::new(HashMap::new()),
            claiming: Mutex::new(()),
            lapses_seen: Cell::new(lapses),
        }
    }

    /// Whether the lease lapsed since the held claims were taken; if so they are dropped
    /// and the caller drops every group's members.
    pub fn lease_lapsed(&self) -> bool {
        let lapses = self.claimer.lease_lapses.load(Ordering::Acquire);
        if lapses == self.lapses_seen.get() {
            return false;
        }
        self.lapses_seen.set(lapses);
        self.held.borrow_mut().clear();
        true
    }

    pub fn held(&self, group_id: &str) -> Option<GroupClaim> {
        self.held.borrow().get(group_id).copied()
    }

    /// A new claim on the group in the log, not yet held: the caller reads what it needs of
    /// the group first, then holds it (`hold`), one group at a time (`taking`).
    pub async fn take(&self, group_id: &str) -> Result<GroupClaim, GroupError> {
        let command = ClaimGroup {
            group: group_id.to_string(),
            node_id: self.claimer.node_id,
            incarnation: self.claimer.incarnation,
        };
        match self.claimer.coordinator.run(command).await {
            Ok(Ok(claim)) => Ok(claim),
            Ok(Err(ErrorKind::InvalidGroupId)) => Err(GroupError::InvalidGroupId),
            Ok(Err(_)) | Err(_) => Err(GroupError::CoordinatorNotAvailable),
        }
    }

    pub fn hold(&self, group_id: &str, claim: GroupClaim) {
        self.held.borrow_mut().insert(group_id.to_string(), claim);
    }

    /// Taken while a claim is taken and the group read back, so concurrent requests for an
    /// unclaimed group claim it once and none sees it half loaded.
    pub fn taking(&self) -> &Mutex<()> {
        &self.claiming
    }

    pub fn coordinator(&self) -> &CoordinatorClient {
        &self.claimer.coordinator
    }

    /// Drops `claim` if it is still the one held (the log refused a write under it); true
    /// if it was.
    pub fn lose(&self, group_id: &str, claim: &GroupClaim) -> bool {
        let mut held = self.held.borrow_mut();
        if held.get(group_id) != Some(claim) {
            return false;
        }
        held.remove(group_id);
        true
    }
}
