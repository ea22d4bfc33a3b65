//! Group commit: one round takes every queued command, runs the writes in arrival order,
//! makes their records durable with a single fdatasync, and only then answers them and runs
//! the reads, so no reader ever sees state that a crash could take back.

use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;

use crate::command::{AnyReply, Command, Envelope, Round};
use crate::log_backend::LogBackend;
use crate::metrics::CoordinatorMetrics;
use crate::postgres_log::PostgresLog;
use crate::recovery::RecoveryStats;
use crate::state::CoordinatorState;
use crate::view::TopicsView;
use crate::{recovery, CoordinatorError};

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
    ) -> Result<CoordinatorCore, CoordinatorError> {
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
        view: Arc<ArcSwap<TopicsView>>,
        snapshot_log_bytes: u64,
    ) -> Result<CoordinatorCore, CoordinatorError> {
        let (state, log, stats) = PostgresLog::open(config, holder).await?;
        tracing::info!(
            epoch = log.epoch(),
            "coordinator writer role taken in PostgreSQL"
        );
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
        view.store(Arc::new(state.topics_view()));
        CoordinatorCore {
            state,
            log,
            view,
            snapshot_log_bytes,
            metrics: Arc::new(CoordinatorMetrics::default()),
        }
    }

    /// Snapshots the state, so recovery reads one image and a short log instead of all
    /// history. The snapshot is written while the coordinator waits, which pauses commits for
    /// the time it takes.
    async fn snapshot(&mut self) -> Result<(), CoordinatorError> {
        let started = std::time::Instant::now();
        let bytes = self.log.snapshot(&self.state).await?;
        CoordinatorMetrics::add(&self.metrics.snapshots, 1);
        tracing::info!(
            bytes,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "coordinator snapshot written"
        );
        Ok(())
    }

    /// Answers one round of commands, in order: the writes in arrival order, then one
    /// fdatasync for all their records, then the reads. An Err means the log could not be
    /// made durable: the in-memory state is then ahead of the disk and must not serve again.
    pub async fn process(
        &mut self,
        commands: Vec<Envelope>,
    ) -> Result<Vec<AnyReply>, CoordinatorError> {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        let count = commands.len();
        let mut replies: Vec<Option<AnyReply>> = (0..count).map(|_| None).collect();
        let mut reads = Vec::new();
        let mut frames = Vec::new();
        let mut round = Round::new(&mut self.state, &mut frames, now_ms, &self.metrics);
        for (slot, command) in commands.into_iter().enumerate() {
            if command.is_write() {
                replies[slot] = Some(command.run(&mut round));
            } else {
                reads.push((slot, command));
            }
        }
        let topics_changed = round.did_change_topics();
        let writes = (count - reads.len()) as u64;
        CoordinatorMetrics::add(&self.metrics.write_requests, writes);
        CoordinatorMetrics::add(&self.metrics.read_requests, reads.len() as u64);
        if !frames.is_empty() {
            self.log.append_durable(frames).await?;
            CoordinatorMetrics::add(&self.metrics.log_syncs, 1);
            if self.log.size_bytes() >= self.snapshot_log_bytes {
                // The logs alone still recover everything: a failed snapshot costs only time.
                if let Err(e) = self.snapshot().await {
                    tracing::warn!(error = %e, "coordinator snapshot failed");
                }
            }
        }
        if topics_changed {
            self.view.store(Arc::new(self.state.topics_view()));
        }
        let mut no_frames = Vec::new();
        let mut round = Round::new(&mut self.state, &mut no_frames, now_ms, &self.metrics);
        round.start_reads();
        for (slot, command) in reads {
            replies[slot] = Some(command.run(&mut round));
        }
        Ok(replies
            .into_iter()
            .map(|r| r.expect("every command answered"))
            .collect())
    }

    /// Runs one command as a round of its own.
    pub async fn run<C: Command>(&mut self, command: C) -> Result<C::Reply, CoordinatorError> {
        let mut replies = self.process(vec![Envelope::new(command)]).await?;
        Ok(replies
            .pop()
            .expect("one reply per command")
            .into_reply::<C>())
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
