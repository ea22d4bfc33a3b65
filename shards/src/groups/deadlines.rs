//! When the members of a KIP-848-style group (consumer protocol, streams) must next be looked
//! at: each member's session deadline, and its revocation deadline while it must revoke. The
//! group keeps a bound on the earliest (`EarliestDeadline`) so a heartbeat need not look at
//! every member: each deadline set lowers the bound, and the bound is recomputed when members
//! are looked at.

use std::collections::BTreeMap;
use std::time::Instant;

/// A member with a session, and perhaps a revocation under way.
pub trait MemberDeadlines {
    fn session_deadline(&self) -> Instant;
    fn revocation_deadline(&self) -> Option<Instant>;

    /// Whether its session ended or its revocation ran out by `now`.
    fn lapsed(&self, now: Instant) -> bool {
        now >= self.session_deadline() || self.revocation_deadline().is_some_and(|d| now >= d)
    }
}

/// No member's deadline comes before this (None: unknown, so the next check looks at all).
#[derive(Debug, Clone, Copy, Default)]
pub struct EarliestDeadline(Option<Instant>);

impl EarliestDeadline {
    /// A member's deadline was set to `at`, perhaps earlier than any known: the bound
    /// follows it down.
    pub fn lower_to(&mut self, at: Instant) {
        self.0 = self.0.map(|e| e.min(at));
    }

    /// When the members must next be checked: the bound if known, else now.
    pub fn next_check(&self, now: Instant) -> Instant {
        self.0.unwrap_or(now)
    }

    /// The members that lapsed by `now`, or None when the bound says none can have (nothing
    /// to remove, nothing to recompute).
    pub fn lapsed<M: MemberDeadlines>(
        &self,
        members: &BTreeMap<String, M>,
        now: Instant,
    ) -> Option<Vec<String>> {
        if self.0.is_some_and(|earliest| now < earliest) {
            return None;
        }
        let lapsed = members.iter().filter(|(_, m)| m.lapsed(now));
        Some(lapsed.map(|(id, _)| id.clone()).collect())
    }

    /// The bound again, from the members as they are now.
    pub fn recompute<M: MemberDeadlines>(&mut self, members: &BTreeMap<String, M>) {
        self.0 = members
            .values()
            .flat_map(|m| std::iter::once(m.session_deadline()).chain(m.revocation_deadline()))
            .min();
    }
}
