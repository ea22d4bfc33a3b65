//! One connection's side of the quotas: which rate each of its requests counts toward (found
//! once and kept until the quotas, the principal or the client id change), and until when the
//! connection is muted. A muted connection is not read from (KIP-219), so a client that ignores
//! the throttle time it was sent cannot push past its quota.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use shoal_coordinator::TopicsView;

use super::board::{QuotaBoard, QuotaKind};
use super::rate::WindowedRate;
use crate::security::Session;

pub struct ConnectionQuotas {
    board: Arc<QuotaBoard>,
    shard: usize,
    topics: Arc<ArcSwap<TopicsView>>,
    session: Rc<Session>,
    /// Per kind: the quota found for the identity it was found for.
    found: RefCell<[Option<Found>; QuotaKind::COUNT]>,
    muted_until: Cell<Option<Instant>>,
}

struct Found {
    view_version: u64,
    user: String,
    client_id: String,
    /// The quota in recorded units per second, and the rate held to it; None: unlimited.
    limit: Option<(f64, Arc<WindowedRate>)>,
}

impl ConnectionQuotas {
    pub fn new(
        board: Arc<QuotaBoard>,
        shard: usize,
        topics: Arc<ArcSwap<TopicsView>>,
        session: Rc<Session>,
    ) -> ConnectionQuotas {
        ConnectionQuotas {
            board,
            shard,
            topics,
            session,
            found: RefCell::new(Default::default()),
            muted_until: Cell::new(None),
        }
    }

    /// Calls `f` with the quota of `kind` and its rate, if the client has one.
    fn with_limit<T>(
        &self,
        kind: QuotaKind,
        client_id: &str,
        f: impl FnOnce(f64, &WindowedRate) -> T,
    ) -> Option<T> {
        let view = self.topics.load();
        let user = self.session.principal_name();
        let mut found = self.found.borrow_mut();
        let slot = &mut found[kind.index()];
        let current = slot.as_ref().is_some_and(|f| {
            f.view_version == view.version() && f.client_id == client_id && f.user == *user
        });
        if !current {
            let limit = view
                .quota_for(&user, client_id, kind.key())
                .map(|(key, quota)| (kind.quota_units(quota), self.board.rate(kind, &key)));
            *slot = Some(Found {
                view_version: view.version(),
                user: user.to_string(),
                client_id: client_id.to_string(),
                limit,
            });
        }
        let (quota, rate) = slot.as_ref()?.limit.as_ref()?;
        Some(f(*quota, rate))
    }

    /// Whether the client is held to a quota of `kind` (so its usage is worth measuring).
    pub fn limited(&self, kind: QuotaKind, client_id: &str) -> bool {
        self.with_limit(kind, client_id, |_, _| ()).is_some()
    }

    /// Counts `value` toward the client's quota of `kind`; how long it is to be throttled
    /// for (ms; 0: within its quota, or unlimited).
    pub fn record(&self, kind: QuotaKind, client_id: &str, value: u64) -> u64 {
        let now_ms = self.board.now_ms();
        self.with_limit(kind, client_id, |quota, rate| {
            rate.record(self.shard, now_ms, value);
            rate.throttle_ms(now_ms, quota)
        })
        .unwrap_or(0)
    }

    /// How long the client is over its quota of `kind` now, counting nothing (ms; 0: within
    /// it, or unlimited).
    pub fn throttle_ms(&self, kind: QuotaKind, client_id: &str) -> u64 {
        let now_ms = self.board.now_ms();
        self.with_limit(kind, client_id, |quota, rate| {
            rate.throttle_ms(now_ms, quota)
        })
        .unwrap_or(0)
    }

    /// Waits while the client is over its quota of `kind` (through any of its connections),
    /// so what this connection sends next is taken only once the client is back within it.
    pub async fn within(&self, kind: QuotaKind, client_id: &str) {
        loop {
            let wait_ms = self.throttle_ms(kind, client_id);
            if wait_ms == 0 {
                return;
            }
            glommio::timer::sleep(Duration::from_millis(wait_ms)).await;
        }
    }

    /// Takes back what `record` counted (an answer that will not carry it).
    pub fn unrecord(&self, kind: QuotaKind, client_id: &str, value: u64) {
        let now_ms = self.board.now_ms();
        self.with_limit(kind, client_id, |_, rate| {
            rate.unrecord(self.shard, now_ms, value)
        });
    }

    /// The most one answer may carry for `kind` (Kafka caps a fetch at what the quota allows
    /// over all but one window, so one fetch never outweighs the quota); None: unlimited.
    pub fn most_per_answer(&self, kind: QuotaKind, client_id: &str) -> Option<u64> {
        let windows = self.board.windows();
        let seconds = (windows.count.saturating_sub(1).max(1) as u64 * windows.size_ms) / 1000;
        self.with_limit(kind, client_id, |quota, _| {
            (quota * seconds.max(1) as f64) as u64
        })
    }

    /// Stops reading from the connection for `ms` (longer if it already is); until when this
    /// throttle lasts (None for 0 ms).
    pub fn mute(&self, ms: u64) -> Option<Instant> {
        let until = (ms > 0).then(|| Instant::now() + Duration::from_millis(ms))?;
        extend(&self.muted_until, until);
        Some(until)
    }

    /// Returns once the connection is no longer muted.
    pub async fn unmuted(&self) {
        while let Some(until) = self.muted_until.get() {
            let now = Instant::now();
            if until <= now {
                self.muted_until.set(None);
                break;
            }
            glommio::timer::sleep(until - now).await;
        }
    }
}

/// Sets `deadline` to `until` unless it already holds a later one.
pub fn extend(deadline: &Cell<Option<Instant>>, until: Instant) {
    if deadline.get().is_none_or(|current| current < until) {
        deadline.set(Some(until));
    }
}
