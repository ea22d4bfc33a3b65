//! Group commit: one round takes every queued command, runs the writes in arrival order,
//! makes their records durable with a single fdatasync, and only then answers them and runs
//! the reads, so no reader ever sees state that a crash could take back.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;

use crate::command::{AnyReply, Command, Envelope, Round};
use crate::log::MetadataLog;
use crate::metrics::CoordinatorMetrics;
use crate::state::CoordinatorState;
use crate::view::TopicsView;
use crate::{recovery, snapshots, CoordinatorError};

pub struct CoordinatorCore {
    pub(crate) state: CoordinatorState,
    log: MetadataLog,
    dir: PathBuf,
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
        tracing::info!(
            snapshot_generation = ?stats.snapshot_generation,
            records_replayed = stats.records_replayed,
            batches = state.batch_count(),
            elapsed_ms = stats.elapsed_ms as u64,
            "coordinator state recovered"
        );
        view.store(Arc::new(state.topics_view()));
        Ok(CoordinatorCore {
            state,
            log,
            dir: dir.to_path_buf(),
            view,
            snapshot_log_bytes,
            metrics: Arc::new(CoordinatorMetrics::default()),
        })
    }

    /// Starts a new log generation and snapshots the state at the boundary, so recovery
    /// reads one image and a short log instead of all history. The snapshot is written while
    /// the coordinator waits, which pauses commits for the time it takes.
    async fn snapshot(&mut self) -> Result<(), CoordinatorError> {
        let started = std::time::Instant::now();
        let generation = self.log.generation() + 1;
        self.log = MetadataLog::open_for_append(&self.dir, generation, 0).await?;
        let bytes = snapshots::write_snapshot(&self.dir, generation, &self.state).await?;
        snapshots::remove_obsolete(&self.dir).await;
        CoordinatorMetrics::add(&self.metrics.snapshots, 1);
        tracing::info!(
            generation,
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
