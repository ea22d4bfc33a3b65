//! Rounds in flight: while one round's records travel to PostgreSQL, the next round is
//! decided and sent on another connection. Answers keep the log's order: a round's writes are
//! answered once its records and every earlier round's are durable. Reads and topic changes
//! must not see or publish state a crash could take back, so a round holding them is the last
//! one sent until it is answered; then nothing else is in flight and the state is durable.

use std::collections::VecDeque;
use std::future::ready;

use futures::stream::{FuturesOrdered, StreamExt};

use crate::core::CoordinatorCore;
use crate::MetaLogError;
use shoal_coordinator::command::{AnyReply, Envelope};

/// Rounds sent and not yet answered, oldest first; `T` says where each answer goes.
pub struct RoundPipeline<T> {
    rounds: VecDeque<InFlight<T>>,
    /// One durability future per round, polled together, resolved in order.
    durable: FuturesOrdered<crate::log_backend::Durable>,
}

struct InFlight<T> {
    writes: Vec<(T, AnyReply)>,
    reads: Vec<(T, Envelope)>,
    topics_changed: bool,
}

impl<T> InFlight<T> {
    /// Whether rounds after this one would run ahead of what it must answer or publish.
    fn must_be_last(&self) -> bool {
        !self.reads.is_empty() || self.topics_changed
    }
}

impl<T> Default for RoundPipeline<T> {
    fn default() -> Self {
        RoundPipeline {
            rounds: VecDeque::new(),
            durable: FuturesOrdered::new(),
        }
    }
}

impl<T> RoundPipeline<T> {
    pub fn is_empty(&self) -> bool {
        self.rounds.is_empty()
    }

    /// Rounds sent and not yet answered.
    pub fn in_flight(&self) -> usize {
        self.rounds.len()
    }

    /// Whether another round may be sent now; if not, wait for `next_answers`. A snapshot
    /// that is due waits for the pipeline to empty, so it covers exactly the durable rows.
    pub fn accepts(&self, core: &CoordinatorCore) -> bool {
        match self.rounds.back() {
            None => true,
            Some(newest) => {
                self.rounds.len() < core.appends_in_flight()
                    && !newest.must_be_last()
                    && !core.snapshot_due()
            }
        }
    }

    /// Runs a round's writes and starts making their records durable. Returns the answers
    /// that are due now: a round of reads alone, with nothing in flight, is answered at once.
    /// An Err means a shared log could not be locked: nothing of the round was decided.
    pub async fn submit(
        &mut self,
        core: &mut CoordinatorCore,
        commands: Vec<(T, Envelope)>,
    ) -> Result<Vec<(T, AnyReply)>, MetaLogError> {
        if self.rounds.is_empty() {
            core.snapshot_if_due().await;
        }
        let writes = commands.iter().any(|(_, command)| command.is_write());
        if writes {
            core.prepare_writes().await?;
        }
        let decided = core.decide(commands);
        if !writes {
            match self.rounds.back_mut() {
                Some(newest) => {
                    newest.reads.extend(decided.reads);
                    return Ok(Vec::new());
                }
                None => {
                    let reads = core.answer_reads(decided.reads, decided.topics_changed);
                    return Ok(reads.await);
                }
            }
        }
        let durable = if decided.frames.is_empty() {
            core.end_round_without_records().await;
            Box::pin(ready(Ok(())))
        } else {
            core.begin_append(decided.frames).await
        };
        self.durable.push_back(durable);
        self.rounds.push_back(InFlight {
            writes: decided.writes,
            reads: decided.reads,
            topics_changed: decided.topics_changed,
        });
        Ok(Vec::new())
    }

    /// Waits until the oldest round's records are durable and returns its answers. Safe to
    /// drop while waiting: nothing is taken from the pipeline until the records are durable.
    /// An Err means they could not be made durable: the state is ahead of the log and the
    /// coordinator must stop.
    pub async fn next_answers(
        &mut self,
        core: &mut CoordinatorCore,
    ) -> Result<Vec<(T, AnyReply)>, MetaLogError> {
        let Some(durable) = self.durable.next().await else {
            return Ok(Vec::new());
        };
        match durable {
            Ok(()) => {}
            Err(MetaLogError::LostRace(why)) => return self.lost(core, &why).await,
            Err(e) => return Err(e),
        }
        let oldest = self
            .rounds
            .pop_front()
            .expect("one round per durability future");
        let mut answers = oldest.writes;
        match self.rounds.front_mut() {
            // Only when a round was sent while this one held nothing that must wait.
            Some(next) => {
                next.reads.extend(oldest.reads);
                next.topics_changed |= oldest.topics_changed;
            }
            None => answers.extend(core.answer_reads(oldest.reads, oldest.topics_changed).await),
        }
        Ok(answers)
    }

    /// The oldest round lost its row to another broker's: nothing of it (nor of any round
    /// decided after it) was made durable. The state is reloaded from the log and every
    /// command in flight is answered `unavailable`, for its caller to retry; the broker serves
    /// on. An Err: the log itself could not be read back.
    async fn lost(
        &mut self,
        core: &mut CoordinatorCore,
        why: &str,
    ) -> Result<Vec<(T, AnyReply)>, MetaLogError> {
        tracing::warn!(
            reason = why,
            rounds = self.rounds.len(),
            "a coordinator round was lost to another broker's; reloading the state from the log \
             and answering its commands with a retriable error"
        );
        self.durable = FuturesOrdered::new();
        core.reload().await?;
        let mut answers = Vec::new();
        for round in self.rounds.drain(..) {
            let commands = round.writes.into_iter().map(|(to, _)| to);
            let reads = round.reads.into_iter().map(|(to, _)| to);
            answers.extend(
                commands
                    .chain(reads)
                    .map(|to| (to, AnyReply::unavailable())),
            );
        }
        Ok(answers)
    }

    /// Answers everything in flight.
    pub async fn drain(
        &mut self,
        core: &mut CoordinatorCore,
    ) -> Result<Vec<(T, AnyReply)>, MetaLogError> {
        let mut answers = Vec::new();
        while !self.is_empty() {
            answers.extend(self.next_answers(core).await?);
        }
        Ok(answers)
    }
}
