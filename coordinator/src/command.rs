//! Typed coordinator commands. Each command is a type that names its reply and whether it
//! writes, so a caller gets exactly the answer its command produces (`Shard::coordinator`),
//! and the core runs writes and reads in their places without one enum matched everywhere.

use std::any::Any;
use std::fmt::Debug;

use crate::entry::Entry;
use crate::metrics::CoordinatorMetrics;
use crate::state::CoordinatorState;

/// One operation of the coordinator.
pub trait Command: Send + Debug + 'static {
    type Reply: Send + 'static;
    /// Writes change state and their records go to the log: they run in arrival order before
    /// the round's fsync. Reads run after it, so no reader sees what a crash could take back.
    const WRITE: bool;
    /// A read that must see every write acknowledged before it arrived, on whichever broker
    /// acknowledged it: on a shared log the coordinator reads the log's newest rows first.
    /// Others may answer from rows applied a notification's delay ago.
    const FRESH: bool = false;

    fn run(self, round: &mut Round<'_>) -> Self::Reply;
}

/// What a command runs against: the state, the round's records and its clock.
pub struct Round<'a> {
    state: &'a mut CoordinatorState,
    frames: &'a mut Vec<u8>,
    now_ms: i64,
    writing: bool,
    topics_changed: bool,
    pub(crate) metrics: &'a CoordinatorMetrics,
}

impl<'a> Round<'a> {
    /// A round over `state` whose records are framed into `frames` (the log's core runs
    /// rounds; commands only see them).
    pub fn new(
        state: &'a mut CoordinatorState,
        frames: &'a mut Vec<u8>,
        now_ms: i64,
        metrics: &'a CoordinatorMetrics,
    ) -> Round<'a> {
        Round {
            state,
            frames,
            now_ms,
            writing: true,
            topics_changed: false,
            metrics,
        }
    }

    pub fn state(&self) -> &CoordinatorState {
        self.state
    }

    /// The round's clock, in ms since the epoch: every record of the round carries it.
    pub fn now_ms(&self) -> i64 {
        self.now_ms
    }

    /// Applies `entry` and queues it for the round's fsync.
    pub fn append(&mut self, entry: &Entry) {
        assert!(self.writing, "a read appended an entry: {entry:?}");
        crate::frames::encode_frame(entry, self.frames);
        self.state.apply(entry);
    }

    pub fn append_all(&mut self, entries: &[Entry]) {
        for entry in entries {
            self.append(entry);
        }
    }

    /// The topic catalogue the shards read must be published again after this round.
    pub fn topics_changed(&mut self) {
        self.topics_changed = true;
    }

    pub fn did_change_topics(&self) -> bool {
        self.topics_changed
    }

    /// From here on, commands only read.
    pub fn start_reads(&mut self) {
        self.writing = false;
    }
}

/// A command of any type, as it crosses the queue to the coordinator.
pub struct Envelope(Box<dyn ErasedCommand>);

/// A reply of any type, as it comes back; `into_reply` takes it as its command's type.
pub struct AnyReply(Box<dyn Any + Send>);

/// What a caller gets instead of its command's reply when the coordinator could not decide
/// it after all (its shared log's round was lost to another broker's): retry.
struct Unavailable;

trait ErasedCommand: Send + Debug {
    fn is_write(&self) -> bool;
    fn is_fresh(&self) -> bool;
    fn run(self: Box<Self>, round: &mut Round<'_>) -> AnyReply;
}

impl<C: Command> ErasedCommand for C {
    fn is_write(&self) -> bool {
        C::WRITE
    }

    fn is_fresh(&self) -> bool {
        C::FRESH
    }

    fn run(self: Box<Self>, round: &mut Round<'_>) -> AnyReply {
        AnyReply(Box::new(C::run(*self, round)))
    }
}

impl Envelope {
    pub fn new<C: Command>(command: C) -> Envelope {
        Envelope(Box::new(command))
    }

    pub fn is_write(&self) -> bool {
        self.0.is_write()
    }

    pub fn is_fresh(&self) -> bool {
        self.0.is_fresh()
    }

    pub fn run(self, round: &mut Round<'_>) -> AnyReply {
        self.0.run(round)
    }
}

impl Debug for Envelope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl AnyReply {
    /// The answer for a command the coordinator could not decide after all.
    pub fn unavailable() -> AnyReply {
        AnyReply(Box::new(Unavailable))
    }

    /// The reply of the command `C` this came from, or None when it is `unavailable`. Only
    /// `Envelope::new::<C>` makes the envelope whose run produces it, so the type matches.
    pub fn into_reply<C: Command>(self) -> Option<C::Reply> {
        if self.0.is::<Unavailable>() {
            return None;
        }
        match self.0.downcast::<C::Reply>() {
            Ok(reply) => Some(*reply),
            Err(_) => unreachable!("a command's reply is of its Reply type"),
        }
    }
}
