//! The coordinator executor: merges the request queues of all shards, hands each round to
//! the group-committing core, routes the answers back, and deletes objects left without a
//! live batch once their grace period has passed.

use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use futures::FutureExt;
use glommio::channels::local_channel;
use shoal_coordinator::{CoordinatorCore, Request, Response, TopicsView};
use shoal_wal::ObjectStore;

use crate::rpc::ServerEnds;
use crate::ShardError;

/// Requests one round takes at most, so a flood cannot delay every answer behind one fsync.
const ROUND_REQUESTS_MAX: usize = 4096;
/// How long an object with no live batch stays readable for fetches already under way.
const DELETE_GRACE: Duration = Duration::from_secs(60);

pub struct CoordinatorShard {
    pub dir: PathBuf,
    pub view: Arc<ArcSwap<TopicsView>>,
    pub queue_depth: usize,
}

struct Inbound {
    shard: usize,
    id: u64,
    request: Request,
}

impl CoordinatorShard {
    /// Runs until `finished` resolves, which the runtime arranges for after every shard has
    /// drained. A metadata log that cannot be made durable stops the process: the in-memory
    /// state would be ahead of the disk.
    pub async fn run(
        self,
        ends: Vec<ServerEnds<Request, Response>>,
        store: ObjectStore,
        finished: impl std::future::Future<Output = ()>,
    ) -> Result<(), ShardError> {
        let core = CoordinatorCore::open(&self.dir, self.view.clone()).await?;
        let (inbox_tx, inbox_rx) = local_channel::new_bounded::<Inbound>(self.queue_depth);
        let inbox_tx = Rc::new(inbox_tx);
        let connected = futures::future::join_all(ends.into_iter().map(|e| e.connect())).await;
        let mut replies = Vec::with_capacity(connected.len());
        for (shard, server) in connected.into_iter().enumerate() {
            replies.push(server.responses);
            let requests = server.requests;
            let inbox = inbox_tx.clone();
            glommio::spawn_local(async move {
                while let Some((id, request)) = requests.recv().await {
                    if inbox.send(Inbound { shard, id, request }).await.is_err() {
                        break;
                    }
                }
            })
            .detach();
        }
        drop(inbox_tx);
        let serving = glommio::spawn_local(serve_rounds(core, inbox_rx, replies, store));
        finished.await;
        drop(serving);
        Ok(())
    }
}

async fn serve_rounds(
    mut core: CoordinatorCore,
    inbox_rx: local_channel::LocalReceiver<Inbound>,
    replies: Vec<glommio::channels::shared_channel::ConnectedSender<(u64, Response)>>,
    store: ObjectStore,
) {
    let store = Rc::new(store);
    while let Some(first) = inbox_rx.recv().await {
        let mut round = vec![first];
        while round.len() < ROUND_REQUESTS_MAX {
            match inbox_rx.recv().now_or_never() {
                Some(Some(next)) => round.push(next),
                _ => break,
            }
        }
        let (routes, requests): (Vec<(usize, u64)>, Vec<Request>) = round
            .into_iter()
            .map(|m| ((m.shard, m.id), m.request))
            .unzip();
        let responses = match core.process(requests).await {
            Ok(responses) => responses,
            Err(e) => {
                tracing::error!(error = %e, "metadata log is not durable; stopping");
                std::process::exit(70);
            }
        };
        for ((shard, id), response) in routes.into_iter().zip(responses) {
            let _ = replies[shard].send((id, response)).await;
        }
        schedule_deletions(&store, core.take_deletable_files());
    }
}

fn schedule_deletions(store: &Rc<ObjectStore>, keys: Vec<Arc<str>>) {
    if keys.is_empty() {
        return;
    }
    let store = store.clone();
    glommio::spawn_local(async move {
        glommio::timer::sleep(DELETE_GRACE).await;
        for key in keys {
            if let Err(e) = store.delete(&key).await {
                tracing::warn!(%key, error = %e, "could not delete an unreferenced object");
            }
        }
    })
    .detach();
}
