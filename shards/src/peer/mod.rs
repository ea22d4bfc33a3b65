//! Calls one shard makes on another, typed as the coordinator's commands are: each call is a
//! type that names its reply, so the caller gets that type back and no answer can be
//! mismatched. Calls cross executors boxed in a `PeerEnvelope`; the serving shard runs them.

mod calls;

use std::any::Any;
use std::fmt::Debug;
use std::rc::Rc;

use futures::future::LocalBoxFuture;
use futures::FutureExt;

pub use calls::{
    Committed, FetchOwned, MirrorSourcesOwned, OnGroups, ProduceHere, Scrape, WaitForData,
};

use crate::rpc::RpcClient;
use crate::{Shard, ShardError};

/// A call served by another shard (the owner of the partitions or group it names).
pub trait PeerCall: Send + Debug + 'static {
    type Reply: Send + 'static;

    fn serve(self, shard: Rc<Shard>) -> LocalBoxFuture<'static, Self::Reply>;
}

/// A call of any type, as it crosses the queue to the serving shard.
pub struct PeerEnvelope(Box<dyn ErasedPeerCall>);

/// A reply of any type; `PeerClient::ask` takes it back as its call's type.
pub struct PeerReply(Box<dyn Any + Send>);

trait ErasedPeerCall: Send + Debug {
    fn serve(self: Box<Self>, shard: Rc<Shard>) -> LocalBoxFuture<'static, PeerReply>;
}

impl<C: PeerCall> ErasedPeerCall for C {
    fn serve(self: Box<Self>, shard: Rc<Shard>) -> LocalBoxFuture<'static, PeerReply> {
        C::serve(*self, shard)
            .map(|reply| PeerReply(Box::new(reply)))
            .boxed_local()
    }
}

impl PeerEnvelope {
    /// Runs the call on the shard it was sent to.
    pub fn serve(self, shard: Rc<Shard>) -> LocalBoxFuture<'static, PeerReply> {
        self.0.serve(shard)
    }
}

impl Debug for PeerEnvelope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The queue to one other shard.
pub type PeerClient = RpcClient<PeerEnvelope, PeerReply>;

impl RpcClient<PeerEnvelope, PeerReply> {
    /// Runs `call` on the shard at the other end; its reply, typed by the call.
    pub async fn ask<C: PeerCall>(&self, call: C) -> Result<C::Reply, ShardError> {
        let reply = self.call(PeerEnvelope(Box::new(call))).await?;
        match reply.0.downcast::<C::Reply>() {
            Ok(reply) => Ok(*reply),
            Err(_) => unreachable!("only the envelope of C makes C's reply"),
        }
    }
}
