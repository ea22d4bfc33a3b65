//! How tasks on the coordinator's executor (maintenance, the coordinator's own duties) reach
//! its core: the same inbox the shards' commands arrive in, answered over a oneshot.

use std::rc::Rc;

use futures::channel::oneshot;
use glommio::channels::local_channel::LocalSender;
use shoal_coordinator::{AnyReply, Command, Envelope};

/// Where the answer to a command goes: a shard over its channel, or a task here.
pub(crate) enum Reply {
    Shard { shard: usize, id: u64 },
    Local(oneshot::Sender<AnyReply>),
}

/// A command as the coordinator's loop receives it.
pub(crate) struct Inbound {
    pub reply: Reply,
    pub command: Envelope,
}

/// How tasks on the coordinator executor itself reach the core.
#[derive(Clone)]
pub struct LocalCoordinator {
    inbox: Rc<LocalSender<Inbound>>,
}

impl LocalCoordinator {
    pub(crate) fn new(inbox: Rc<LocalSender<Inbound>>) -> LocalCoordinator {
        LocalCoordinator { inbox }
    }

    /// `None` once the coordinator has stopped.
    pub async fn run<C: Command>(&self, command: C) -> Option<C::Reply> {
        let (reply, answer) = oneshot::channel();
        let inbound = Inbound {
            reply: Reply::Local(reply),
            command: Envelope::new(command),
        };
        self.inbox.send(inbound).await.ok()?;
        answer.await.ok()?.into_reply::<C>()
    }
}
