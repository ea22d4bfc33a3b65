//! Request/response over glommio's shared channels: bounded, lock-free single-producer
//! single-consumer rings between two executors, one for requests and one for answers.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use futures::channel::oneshot;
use glommio::channels::shared_channel::{self, ConnectedReceiver, ConnectedSender};
use shoal_coordinator::{AnyReply, Command, Envelope as CommandEnvelope};

use crate::turnstile::Turnstile;
use crate::ShardError;

pub type Envelope<T> = (u64, T);

/// The two unconnected ends one executor keeps of a request/response channel pair.
pub struct ClientEnds<Req: Send + 'static, Resp: Send + 'static> {
    requests: shared_channel::SharedSender<Envelope<Req>>,
    responses: shared_channel::SharedReceiver<Envelope<Resp>>,
}

/// The ends the serving executor keeps.
pub struct ServerEnds<Req: Send + 'static, Resp: Send + 'static> {
    requests: shared_channel::SharedReceiver<Envelope<Req>>,
    responses: shared_channel::SharedSender<Envelope<Resp>>,
}

/// Server ends connected on the serving executor.
pub struct ConnectedServer<Req: Send + 'static, Resp: Send + 'static> {
    pub requests: ConnectedReceiver<Envelope<Req>>,
    pub responses: ConnectedSender<Envelope<Resp>>,
}

impl<Req: Send + 'static, Resp: Send + 'static> ServerEnds<Req, Resp> {
    /// Connecting an end waits for the other executor to connect its end, so both ends are
    /// connected together and callers connect all their channels concurrently.
    pub async fn connect(self) -> ConnectedServer<Req, Resp> {
        let (requests, responses) =
            futures::join!(self.requests.connect(), self.responses.connect());
        ConnectedServer {
            requests,
            responses,
        }
    }
}

/// Makes a channel pair of `depth` slots each way.
pub fn channel_pair<Req: Send + 'static, Resp: Send + 'static>(
    depth: usize,
) -> (ClientEnds<Req, Resp>, ServerEnds<Req, Resp>) {
    let (req_tx, req_rx) = shared_channel::new_bounded(depth);
    let (resp_tx, resp_rx) = shared_channel::new_bounded(depth);
    (
        ClientEnds {
            requests: req_tx,
            responses: resp_rx,
        },
        ServerEnds {
            requests: req_rx,
            responses: resp_tx,
        },
    )
}

/// The calling side, connected on its executor. Answers may come back in any order; each
/// carries the id of its request.
pub struct RpcClient<Req: Send + 'static, Resp: Send + 'static> {
    name: &'static str,
    requests: ConnectedSender<Envelope<Req>>,
    pending: RefCell<HashMap<u64, oneshot::Sender<Resp>>>,
    next_id: Cell<u64>,
    /// Requests enter the queue in call order even while it is full: the channel's own
    /// `send` lets a newcomer take freed room before an earlier waiting caller, which would
    /// reorder a connection's forwarded produce requests.
    send_order: Turnstile,
}

impl<Req: Send + 'static, Resp: Send + 'static> RpcClient<Req, Resp> {
    /// Connects both ends on the current executor and starts the task that routes answers.
    pub async fn connect(name: &'static str, ends: ClientEnds<Req, Resp>) -> Rc<Self> {
        let (requests, responses) =
            futures::join!(ends.requests.connect(), ends.responses.connect());
        let client = Rc::new(RpcClient {
            name,
            requests,
            pending: RefCell::new(HashMap::new()),
            next_id: Cell::new(0),
            send_order: Turnstile::default(),
        });
        let weak = Rc::downgrade(&client);
        glommio::spawn_local(async move {
            while let Some((id, response)) = responses.recv().await {
                let Some(client) = weak.upgrade() else { break };
                // A caller that gave up (a dropped long poll) has no sender left; that is fine.
                let reply = client.pending.borrow_mut().remove(&id);
                if let Some(reply) = reply {
                    let _ = reply.send(response);
                }
            }
        })
        .detach();
        client
    }

    /// Calls waiting for their answers.
    pub fn pending(&self) -> usize {
        self.pending.borrow().len()
    }

    pub async fn call(&self, request: Req) -> Result<Resp, ShardError> {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let (reply_tx, reply_rx) = oneshot::channel();
        self.pending.borrow_mut().insert(id, reply_tx);
        let _forget_on_drop = PendingGuard { client: self, id };
        let turn = self.send_order.enter().await;
        if self.requests.send((id, request)).await.is_err() {
            return Err(ShardError::QueueClosed(self.name));
        }
        drop(turn);
        reply_rx
            .await
            .map_err(|_| ShardError::QueueClosed(self.name))
    }
}

/// The queue to the coordinator executor: typed commands in, their replies out.
pub type CoordinatorClient = RpcClient<CommandEnvelope, AnyReply>;

impl RpcClient<CommandEnvelope, AnyReply> {
    /// Runs `command` on the coordinator; its reply, typed by the command.
    pub async fn run<C: Command>(&self, command: C) -> Result<C::Reply, ShardError> {
        self.call(CommandEnvelope::new(command))
            .await?
            .into_reply::<C>()
            .ok_or(ShardError::CoordinatorUnavailable)
    }
}

/// Removes the pending entry when a call is abandoned, so the map stays bounded.
struct PendingGuard<'a, Req: Send + 'static, Resp: Send + 'static> {
    client: &'a RpcClient<Req, Resp>,
    id: u64,
}

impl<Req: Send + 'static, Resp: Send + 'static> Drop for PendingGuard<'_, Req, Resp> {
    fn drop(&mut self) {
        self.client.pending.borrow_mut().remove(&self.id);
    }
}

/// Serves requests arriving on `server` with `handler`, each in its own task so that slow
/// requests (long polls) do not hold up others. Returns when the caller disconnects.
pub async fn serve<Req, Resp, F, Fut>(server: ConnectedServer<Req, Resp>, handler: F)
where
    Req: Send + 'static,
    Resp: Send + 'static,
    F: Fn(Req) -> Fut + 'static,
    Fut: std::future::Future<Output = Resp> + 'static,
{
    let requests = server.requests;
    let responses = Rc::new(server.responses);
    while let Some((id, request)) = requests.recv().await {
        let responses = responses.clone();
        let answer = handler(request);
        glommio::spawn_local(async move {
            let _ = responses.send((id, answer.await)).await;
        })
        .detach();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::future::{select, Either};
    use glommio::LocalExecutorBuilder;

    use super::*;

    /// A caller that gives up (a long poll whose client went away) leaves nothing behind, and
    /// the late answer to its request does not disturb the calls after it.
    #[test]
    fn an_abandoned_call_is_forgotten_and_its_late_answer_ignored() {
        let (client_ends, server_ends) = channel_pair::<u32, u32>(4);
        let server = LocalExecutorBuilder::default()
            .name("server")
            .spawn(move || async move {
                let connected = server_ends.connect().await;
                serve(connected, |request: u32| async move {
                    if request == 0 {
                        // Answers long after the caller gave up.
                        glommio::timer::sleep(Duration::from_millis(100)).await;
                    }
                    request + 1
                })
                .await;
            })
            .unwrap();
        let client = LocalExecutorBuilder::default()
            .name("client")
            .spawn(move || async move {
                let client = RpcClient::connect("server", client_ends).await;
                let slow = Box::pin(client.call(0));
                let give_up = Box::pin(glommio::timer::sleep(Duration::from_millis(20)));
                assert!(matches!(select(slow, give_up).await, Either::Right(_)));
                assert_eq!(client.pending(), 0, "the abandoned call left no entry");
                assert_eq!(client.call(41).await.unwrap(), 42);
                // The late answer to the abandoned call arrives meanwhile and is dropped.
                glommio::timer::sleep(Duration::from_millis(150)).await;
                assert_eq!(client.call(1).await.unwrap(), 2);
                assert_eq!(client.pending(), 0);
            })
            .unwrap();
        client.join().unwrap();
        server.join().unwrap();
    }
}
