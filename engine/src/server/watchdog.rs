//! Closes a connection whose client stalls: no request within `connections_max_idle_ms` while
//! it waits for nothing, a request not read whole within `request_read_timeout_ms` of its
//! first bytes, an answer it does not read for `connections_max_idle_ms`, or (on a SASL
//! listener) no successful login within `sasl.authentication_timeout_ms`. One timer per
//! connection that looks at plain cells (no timer per read or write); it acts within half
//! of the shorter timeout past a deadline.

use std::cell::Cell;
use std::os::fd::RawFd;
use std::rc::Rc;
use std::time::{Duration, Instant};

pub struct Watchdog {
    idle: Duration,
    read: Duration,
    /// Waiting for a request while no answer is owed.
    idle_since: Cell<Option<Instant>>,
    /// Between a request's first bytes and its last.
    reading_since: Cell<Option<Instant>>,
    /// Writing an answer the client has not taken yet.
    writing_since: Cell<Option<Instant>>,
    /// A SASL listener's connection must have authenticated by then.
    authenticate_by: Cell<Option<Instant>>,
}

impl Watchdog {
    pub fn new(idle: Duration, read: Duration) -> Rc<Watchdog> {
        Rc::new(Watchdog {
            idle,
            read,
            idle_since: Cell::new(Some(Instant::now())),
            reading_since: Cell::new(None),
            writing_since: Cell::new(None),
            authenticate_by: Cell::new(None),
        })
    }

    pub fn authenticate_within(&self, timeout: Duration) {
        self.authenticate_by.set(Some(Instant::now() + timeout));
    }

    pub fn authenticated(&self) {
        self.authenticate_by.set(None);
    }

    pub fn idle(&self, waiting_for_nothing: bool) {
        self.idle_since.set(waiting_for_nothing.then(Instant::now));
        self.reading_since.set(None);
    }

    pub fn reading(&self) {
        self.idle_since.set(None);
        self.reading_since.set(Some(Instant::now()));
    }

    pub fn writing(&self, writing: bool) {
        self.writing_since.set(writing.then(Instant::now));
    }

    fn deadline(&self) -> Option<(Instant, &'static str)> {
        [
            self.idle_since.get().map(|t| (t + self.idle, "idle")),
            self.reading_since
                .get()
                .map(|t| (t + self.read, "request read")),
            self.writing_since
                .get()
                .map(|t| (t + self.idle, "answer write")),
            self.authenticate_by.get().map(|t| (t, "authentication")),
        ]
        .into_iter()
        .flatten()
        .min_by_key(|(at, _)| *at)
    }

    /// Runs until a deadline passes, then shuts the socket down, which ends the connection's
    /// pending read and write. Dropped with the connection otherwise.
    pub async fn guard(self: Rc<Self>, socket: RawFd, peer: String) {
        let check = self.idle.min(self.read) / 2;
        let check = match self.authenticate_by.get() {
            Some(by) => check.min(by.saturating_duration_since(Instant::now()) / 2),
            None => check,
        };
        loop {
            let now = Instant::now();
            let next = match self.deadline() {
                Some((at, what)) if at <= now => {
                    tracing::info!(%peer, deadline = what, "client stalled; closing");
                    let _ = nix::sys::socket::shutdown(socket, nix::sys::socket::Shutdown::Both);
                    return;
                }
                Some((at, _)) => (at - now).min(check),
                None => check,
            };
            glommio::timer::sleep(next.max(Duration::from_millis(1))).await;
        }
    }
}
