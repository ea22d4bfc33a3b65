//! Health and readiness, as an orchestrator probes them on the metrics listener: `/health`
//! answers once the process serves (the coordinator recovered, shard 0's listeners bound);
//! `/ready` also needs the object store to answer and, in a cluster, this broker's lease to
//! run, and says what is missing when it does not.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use shoal_shards::Shard;

use crate::cluster::Membership;

/// A store check is reused this long: probes every second cost no more than a request each
/// few seconds on a billed store.
const STORE_CHECK_REUSED_FOR: Duration = Duration::from_secs(5);

pub struct Readiness {
    cluster: Option<Arc<Membership>>,
    last_store_check: RefCell<Option<(Instant, Result<(), String>)>>,
}

impl Readiness {
    pub fn new(cluster: Option<Arc<Membership>>) -> Readiness {
        Readiness {
            cluster,
            last_store_check: RefCell::new(None),
        }
    }

    /// Ready, or every reason it is not.
    pub async fn check(&self, shard: &Shard) -> Result<(), Vec<String>> {
        let mut reasons = Vec::new();
        if let Err(e) = self.store(shard).await {
            reasons.push(format!("the object store does not answer: {e}"));
        }
        if let Some(Err(ago_ms)) = self.cluster.as_ref().map(|c| c.lease_held()) {
            reasons.push(format!(
                "this broker's cluster lease is not held (last renewed {ago_ms} ms ago; is \
                 PostgreSQL reachable?)"
            ));
        }
        match reasons.is_empty() {
            true => Ok(()),
            false => Err(reasons),
        }
    }

    async fn store(&self, shard: &Shard) -> Result<(), String> {
        if let Some((at, outcome)) = self.last_store_check.borrow().as_ref() {
            if at.elapsed() < STORE_CHECK_REUSED_FOR {
                return outcome.clone();
            }
        }
        let outcome = shard.check_store().await;
        *self.last_store_check.borrow_mut() = Some((Instant::now(), outcome.clone()));
        outcome
    }
}
