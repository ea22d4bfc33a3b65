//! The coordinator executor: merges the request queues of all shards (and of its own
//! maintenance tasks), hands each round to the group-committing core, and routes the answers.

use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use std::future::Future;
use std::pin::Pin;

use futures::future::{select, select_all, Either};
use futures::FutureExt;
use glommio::channels::local_channel::{self, LocalReceiver};
use glommio::channels::shared_channel::ConnectedSender;
use shoal_coordinator::{AnyReply, CoordinatorMetrics, Envelope, TopicsView};
use shoal_metalog::postgres_log::WriterRole;
use shoal_metalog::{log_tail, CoordinatorCore, Duties, MetaLogError, RoundPipeline};
use shoal_net::start_retry::retry_transient;
use shoal_wal::ObjectStore;

use crate::lifecycle::{with_deadline, Tasks};
use crate::local_coordinator::{Inbound, LocalCoordinator, Reply};
use crate::maintenance::{self, MaintenanceConfig};
use crate::rpc::{self, ServerEnds};
use crate::ShardError;

/// Requests one round takes at most, so a flood cannot delay every answer behind one fsync.
const ROUND_REQUESTS_MAX: usize = 4096;

pub struct CoordinatorShard {
    pub dir: PathBuf,
    pub view: Arc<ArcSwap<TopicsView>>,
    pub queue_depth: usize,
    pub maintenance: MaintenanceConfig,
    pub snapshot_log_bytes: u64,
    pub metrics: Arc<CoordinatorMetrics>,
    /// PostgreSQL instead of the log files under `dir`.
    pub database: Option<shoal_pg::PgConfig>,
    /// How this broker names itself as the database's writer.
    pub holder: String,
    /// One of a cluster's brokers sharing the database's log, rather than its sole writer.
    pub shared_log: bool,
    /// Whether this broker runs the cluster-wide duties; the coordinator contends for them
    /// on a shared log.
    pub duties: Duties,
    /// How long the recovery may take; PostgreSQL failing for a passing reason meanwhile is
    /// tried again.
    pub startup_timeout: Duration,
}

impl CoordinatorShard {
    /// Runs until `finished` resolves, which the runtime arranges for after every shard has
    /// drained. A metadata log that cannot be made durable stops it at once with the error:
    /// the in-memory state would be ahead of the disk, so nothing more may be answered.
    pub async fn run(
        self,
        ends: Vec<ServerEnds<Envelope, AnyReply>>,
        store: ObjectStore,
        finished: impl std::future::Future<Output = ()>,
    ) -> Result<(), ShardError> {
        let role = match self.shared_log {
            true => WriterRole::Shared,
            false => WriterRole::Sole,
        };
        let mut finished = Box::pin(finished);
        // The shards stop waiting for the recovery on a signal to stop: so does it.
        let core = match select(finished.as_mut(), Box::pin(self.recover(role))).await {
            Either::Left(_) => return Ok(()),
            Either::Right((core, _)) => core?.with_metrics(self.metrics.clone()),
        };
        let tasks = Tasks::new();
        let news = match (&self.database, role) {
            (Some(database), WriterRole::Shared) => {
                let (news, polling, listening) = log_tail::start(database.clone());
                tasks.spawn_background("coordinator log poll", polling);
                tasks.spawn_background("coordinator log listener", listening);
                Some(news)
            }
            _ => None,
        };
        let (inbox_tx, inbox_rx) = local_channel::new_bounded::<Inbound>(self.queue_depth);
        let inbox_tx = Rc::new(inbox_tx);
        let connected = futures::future::join_all(ends.into_iter().map(|e| e.connect())).await;
        let mut replies = Vec::with_capacity(connected.len());
        for (shard, server) in connected.into_iter().enumerate() {
            replies.push(server.responses);
            let requests = server.requests;
            let inbox = inbox_tx.clone();
            tasks.spawn_request(async move {
                while let Some((id, command)) = requests.recv().await {
                    let inbound = Inbound {
                        reply: Reply::Shard { shard, id },
                        command,
                    };
                    if inbox.send(inbound).await.is_err() {
                        break;
                    }
                }
            });
        }
        let serving = tasks.spawn_request(serve_rounds(core, inbox_rx, news, replies));
        let local = LocalCoordinator::new(inbox_tx);
        if let (Some(database), WriterRole::Shared) = (&self.database, role) {
            tasks.spawn_background("cluster duties", self.duties.contend(database.clone()));
        }
        maintenance::start(&tasks, local, Rc::new(store), self.maintenance, self.duties);
        let outcome = match select(finished, serving).await {
            Either::Left(((), serving)) => {
                serving.cancel();
                Ok(())
            }
            Either::Right((served, _)) => served.unwrap_or(Ok(())),
        };
        tasks.stop_background();
        outcome
    }

    /// The coordinator's state, rebuilt from its log within `startup_timeout` (PostgreSQL
    /// failing for a passing reason meanwhile is tried again).
    async fn recover(&self, role: WriterRole) -> Result<CoordinatorCore, ShardError> {
        let (view, snapshot_log_bytes) = (self.view.clone(), self.snapshot_log_bytes);
        let patience = self.startup_timeout;
        let Some(database) = &self.database else {
            let recovered = CoordinatorCore::open(&self.dir, view, snapshot_log_bytes);
            let too_long = || {
                ShardError::Startup(format!(
                    "the coordinator's recovery from {} did not finish within {} ms \
                     (startup_timeout_ms; raise it for a log that takes longer to read)",
                    self.dir.display(),
                    patience.as_millis()
                ))
            };
            let recovered = with_deadline(patience, recovered)
                .await
                .ok_or_else(too_long)?;
            return recovered.map_err(ShardError::from);
        };
        let open = || {
            let (holder, view) = (&self.holder, view.clone());
            CoordinatorCore::open_postgres(database, holder, role, view, snapshot_log_bytes)
        };
        let step = "the coordinator's log in PostgreSQL";
        retry_transient(step, patience, MetaLogError::is_transient, open)
            .await
            .map_err(ShardError::Startup)
    }
}

/// What the coordinator waits for between rounds.
enum Event {
    Answered(Result<Vec<(Reply, AnyReply)>, MetaLogError>),
    Arrived(Option<Inbound>),
    /// Another broker appended to the shared log.
    LogMoved,
}

/// Answers rounds until the inbox closes, keeping as many in flight as the log allows, and
/// on a shared log applies other brokers' rows when told of them; an Err (the log could not
/// be made durable) ends it before anything of that round is answered.
async fn serve_rounds(
    mut core: CoordinatorCore,
    inbox: LocalReceiver<Inbound>,
    news: Option<LocalReceiver<()>>,
    replies: Vec<ConnectedSender<rpc::Envelope<AnyReply>>>,
) -> Result<(), ShardError> {
    let mut pipeline = RoundPipeline::default();
    let stop = |e: MetaLogError| {
        tracing::error!(error = %e, "metadata log is not durable; stopping (check the disk under data_dir, then run shoal check before restarting)");
        ShardError::from(e)
    };
    loop {
        let event = if !pipeline.is_empty() && !pipeline.accepts(&core) {
            Event::Answered(pipeline.next_answers(&mut core).await)
        } else if pipeline.is_empty() && news.is_none() {
            // The local log's usual case: only the inbox to wait on, no select to build.
            Event::Arrived(inbox.recv().await)
        } else {
            // Answers first: a round that is durable is answered before more are taken.
            let mut waits: Vec<Pin<Box<dyn Future<Output = Event> + '_>>> = Vec::new();
            if !pipeline.is_empty() {
                waits.push(Box::pin(
                    pipeline.next_answers(&mut core).map(Event::Answered),
                ));
            }
            waits.push(Box::pin(inbox.recv().map(Event::Arrived)));
            if let Some(news) = &news {
                waits.push(Box::pin(news.recv().map(|_| Event::LogMoved)));
            }
            select_all(waits).await.0
        };
        let first = match event {
            Event::Answered(answers) => {
                send_answers(&replies, answers.map_err(stop)?).await;
                continue;
            }
            Event::LogMoved => {
                if pipeline.is_empty() {
                    match core.catch_up().await {
                        Ok(_) => {}
                        // Nothing of this broker's is at stake: the next signal tries again.
                        Err(MetaLogError::Database { message: e, .. }) => {
                            tracing::warn!(error = %e, "cannot read other brokers' rows yet; retrying (is PostgreSQL reachable?)");
                        }
                        Err(e) => return Err(stop(e)),
                    }
                }
                continue;
            }
            Event::Arrived(None) => break,
            Event::Arrived(Some(first)) => first,
        };
        let mut round = vec![(first.reply, first.command)];
        while round.len() < ROUND_REQUESTS_MAX {
            match inbox.recv().now_or_never() {
                Some(Some(next)) => round.push((next.reply, next.command)),
                _ => break,
            }
        }
        let answers = pipeline.submit(&mut core, round).await.map_err(stop)?;
        send_answers(&replies, answers).await;
    }
    let answers = pipeline.drain(&mut core).await.map_err(stop)?;
    send_answers(&replies, answers).await;
    Ok(())
}

async fn send_answers(
    replies: &[ConnectedSender<rpc::Envelope<AnyReply>>],
    answers: Vec<(Reply, AnyReply)>,
) {
    for (route, response) in answers {
        match route {
            Reply::Shard { shard, id } => {
                let _ = replies[shard].send((id, response)).await;
            }
            Reply::Local(reply) => {
                let _ = reply.send(response);
            }
        }
    }
}
