//! Group commit: one round takes every queued command, runs the writes in arrival order,
//! makes their records durable with a single append (one fdatasync, or one PostgreSQL row),
//! and only then answers them and runs the reads, so no reader ever sees state that a crash
//! could take back. `pipeline` lets PostgreSQL rounds overlap.

use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;

use crate::log_backend::{Durable, LogBackend};
use crate::pipeline::RoundPipeline;
use crate::postgres_log::{PostgresLog, WriterRole};
use crate::recovery::RecoveryStats;
use crate::{recovery, MetaLogError};
use shoal_coordinator::command::{AnyReply, Command, Envelope, Round};
use shoal_coordinator::metrics::CoordinatorMetrics;
use shoal_coordinator::state::CoordinatorState;
use shoal_coordinator::view::TopicsView;

/// A round's writes run and answered, its records, and its reads set aside.
pub(crate) struct Decided<T> {
    pub writes: Vec<(T, AnyReply)>,
    pub reads: Vec<(T, Envelope)>,
    pub frames: Vec<u8>,
    pub topics_changed: bool,
}

pub struct CoordinatorCore {
    pub(crate) state: CoordinatorState,
    log: LogBackend,
    view: Arc<ArcSwap<TopicsView>>,
    /// Roll the log and write a snapshot once the log holds this many bytes.
    snapshot_log_bytes: u64,
    metrics: Arc<CoordinatorMetrics>,
}

impl CoordinatorCore {
    /// Rebuilds the state from the log in `dir` and publishes the topic catalogue.
    pub async fn open(
        dir: &Path,
        view: Arc<ArcSwap<TopicsView>>,
        snapshot_log_bytes: u64,
    ) -> Result<CoordinatorCore, MetaLogError> {
        let (state, log, stats) = recovery::recover(dir).await?;
        let log = LogBackend::Local {
            log,
            dir: dir.to_path_buf(),
        };
        Ok(Self::recovered(state, log, stats, view, snapshot_log_bytes))
    }

    /// Rebuilds the state from PostgreSQL, taking the writer role from any broker that held
    /// it (`holder` names this one in the database), and publishes the topic catalogue.
    pub async fn open_postgres(
        config: &shoal_pg::PgConfig,
        holder: &str,
        role: WriterRole,
        view: Arc<ArcSwap<TopicsView>>,
        snapshot_log_bytes: u64,
    ) -> Result<CoordinatorCore, MetaLogError> {
        let (state, log, stats) = PostgresLog::open(config, holder, role).await?;
        match role {
            WriterRole::Sole => tracing::info!(
                epoch = log.epoch(),
                "coordinator writer role taken in PostgreSQL"
            ),
            WriterRole::Shared => tracing::info!("coordinator log in PostgreSQL shared"),
        }
        let log = LogBackend::Postgres(Box::new(log));
        Ok(Self::recovered(state, log, stats, view, snapshot_log_bytes))
    }

    fn recovered(
        state: CoordinatorState,
        log: LogBackend,
        stats: RecoveryStats,
        view: Arc<ArcSwap<TopicsView>>,
        snapshot_log_bytes: u64,
    ) -> CoordinatorCore {
        tracing::info!(
            snapshot = ?stats.snapshot_generation,
            records_replayed = stats.records_replayed,
            batches = state.batch_count(),
            elapsed_ms = stats.elapsed_ms as u64,
            "coordinator state recovered"
        );
        let mut state = state;
        if let Some(published) = state.view_after(&view.load()) {
            view.store(Arc::new(published));
        }
        CoordinatorCore {
            state,
            log,
            view,
            snapshot_log_bytes,
            metrics: Arc::new(CoordinatorMetrics::default()),
        }
    }

    /// Snapshots the state once the log holds `snapshot_log_bytes`, so recovery reads one
    /// image and a short log instead of all history. Called with no round in flight; the
    /// snapshot is written while the coordinator waits, which pauses commits for its time.
    pub(crate) async fn snapshot_if_due(&mut self) {
        if !self.snapshot_due() {
            return;
        }
        let started = std::time::Instant::now();
        match self.log.snapshot(&self.state).await {
            Ok(bytes) => {
                CoordinatorMetrics::add(&self.metrics.snapshots, 1);
                tracing::info!(
                    bytes,
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "coordinator snapshot written"
                );
            }
            // The log alone still recovers everything: a failed snapshot costs only time.
            Err(e) => tracing::warn!(error = %e, "coordinator snapshot failed"),
        }
    }

    pub(crate) fn snapshot_due(&self) -> bool {
        self.log.size_bytes() >= self.snapshot_log_bytes
    }

    /// Rounds that may wait for durability at once.
    pub fn appends_in_flight(&self) -> usize {
        self.log.appends_in_flight()
    }

    /// Runs a round's writes in arrival order, answering each, and sets its reads aside
    /// until the records those writes made are durable.
    pub(crate) fn decide<T>(&mut self, commands: Vec<(T, Envelope)>) -> Decided<T> {
        let now_ms = now_ms();
        let mut decided = Decided {
            writes: Vec::new(),
            reads: Vec::new(),
            frames: Vec::new(),
            topics_changed: false,
        };
        let mut round = Round::new(&mut self.state, &mut decided.frames, now_ms, &self.metrics);
        for (to, command) in commands {
            if command.is_write() {
                decided.writes.push((to, command.run(&mut round)));
            } else {
                decided.reads.push((to, command));
            }
        }
        decided.topics_changed = round.did_change_topics();
        CoordinatorMetrics::add(&self.metrics.write_requests, decided.writes.len() as u64);
        CoordinatorMetrics::add(&self.metrics.read_requests, decided.reads.len() as u64);
        decided
    }

    /// Before a round with writes: on a shared log, locks it and applies what other brokers
    /// wrote, so the round is decided on every earlier decision.
    pub(crate) async fn prepare_writes(&mut self) -> Result<(), MetaLogError> {
        if self.log.prepare_round(&mut self.state).await? {
            self.others_applied();
        }
        Ok(())
    }

    fn others_applied(&mut self) {
        self.publish_view();
        CoordinatorMetrics::add(&self.metrics.rows_from_others, 1);
    }

    /// Publishes the view with the images changed since the last one rebuilt, if any.
    fn publish_view(&mut self) {
        if let Some(view) = self.state.view_after(&self.view.load()) {
            self.view.store(Arc::new(view));
        }
    }

    pub(crate) async fn end_round_without_records(&mut self) {
        self.log.end_round_without_records().await;
    }

    /// Applies what other brokers appended to a shared log since this one last looked (their
    /// commits, topics, groups), between rounds; true if anything was new.
    pub async fn catch_up(&mut self) -> Result<bool, MetaLogError> {
        let applied = self.log.catch_up(&mut self.state).await?;
        if applied {
            self.others_applied();
        }
        Ok(applied)
    }

    /// Replaces the state with the log's, after a round that was lost to another broker's
    /// left this one's state ahead of the log.
    pub(crate) async fn reload(&mut self) -> Result<(), MetaLogError> {
        self.state = self.log.reload().await?;
        self.publish_view();
        CoordinatorMetrics::add(&self.metrics.lost_rounds, 1);
        Ok(())
    }

    pub(crate) async fn begin_append(&mut self, frames: Vec<u8>) -> Durable {
        CoordinatorMetrics::add(&self.metrics.log_syncs, 1);
        self.log.begin_append(frames).await
    }

    /// Publishes a changed topic catalogue and runs reads; only while every applied record
    /// is durable. Fresh reads on a shared log first apply the rows other brokers appended
    /// (one query), so they see every write acknowledged anywhere before they arrived; when
    /// the log cannot be read they are answered `unavailable`.
    pub(crate) async fn answer_reads<T>(
        &mut self,
        reads: Vec<(T, Envelope)>,
        topics_changed: bool,
    ) -> Vec<(T, AnyReply)> {
        if topics_changed {
            self.publish_view();
        }
        if self.log.is_shared() && reads.iter().any(|(_, command)| command.is_fresh()) {
            CoordinatorMetrics::add(&self.metrics.read_barriers, 1);
            if let Err(e) = self.catch_up().await {
                tracing::warn!(error = %e, "cannot read the shared log before a fresh read");
                return reads
                    .into_iter()
                    .map(|(to, _)| (to, AnyReply::unavailable()))
                    .collect();
            }
        }
        let now_ms = now_ms();
        let mut no_frames = Vec::new();
        let mut round = Round::new(&mut self.state, &mut no_frames, now_ms, &self.metrics);
        round.start_reads();
        reads
            .into_iter()
            .map(|(to, command)| (to, command.run(&mut round)))
            .collect()
    }

    /// Answers one round of commands, in order: the writes in arrival order, then one
    /// durable append for all their records, then the reads. An Err means the log could not
    /// be made durable: the in-memory state is then ahead of the log and must not serve again.
    pub async fn process(
        &mut self,
        commands: Vec<Envelope>,
    ) -> Result<Vec<AnyReply>, MetaLogError> {
        let mut pipeline = RoundPipeline::default();
        let mut answers = pipeline
            .submit(self, commands.into_iter().enumerate().collect())
            .await?;
        answers.extend(pipeline.drain(self).await?);
        answers.sort_by_key(|(slot, _)| *slot);
        Ok(answers.into_iter().map(|(_, reply)| reply).collect())
    }

    /// Runs one command as a round of its own.
    pub async fn run<C: Command>(&mut self, command: C) -> Result<C::Reply, MetaLogError> {
        let mut replies = self.process(vec![Envelope::new(command)]).await?;
        replies
            .pop()
            .expect("one reply per command")
            .into_reply::<C>()
            .ok_or(MetaLogError::Unavailable)
    }

    /// Counts into `metrics`, shared with whoever reports them.
    pub fn with_metrics(mut self, metrics: Arc<CoordinatorMetrics>) -> Self {
        self.metrics = metrics;
        self
    }

    pub fn state(&self) -> &CoordinatorState {
        &self.state
    }
}

/// The wall clock in ms since the epoch (0 if it reads before 1970): the time every
/// coordinator round and the brokers' chores go by.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
