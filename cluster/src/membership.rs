//! Who is in the cluster: each broker registers its node id, advertised listeners and rack
//! in `cluster_brokers` with a lease, and renews it every heartbeat; the brokers whose lease
//! has not lapsed are the cluster. A node id held by another live process refuses the start.
//! The renewal runs on a small thread of its own, off the shards' cores.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use glommio::LocalExecutorBuilder;
use shoal_metalog::brokers::{self, BrokerRow};
use shoal_pg::{Connection, PgConfig, PgError};

use crate::MembershipError;

/// One live broker as Metadata describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub node_id: i32,
    /// (listener name, advertised host, port), as `advertised.listeners` names them.
    pub listeners: Vec<(String, String, i32)>,
    pub rack: Option<String>,
}

impl Member {
    /// Where a client that came in on listener `name` reaches this broker.
    pub fn address_for(&self, name: &str) -> Option<(&str, i32)> {
        self.listeners
            .iter()
            .find(|(listener, _, _)| listener == name)
            .map(|(_, host, port)| (host.as_str(), *port))
    }

    fn encode_listeners(&self) -> String {
        let parts: Vec<String> = self
            .listeners
            .iter()
            .map(|(name, host, port)| format!("{name}://{host}:{port}"))
            .collect();
        parts.join(",")
    }

    fn decode_listeners(text: &str) -> Vec<(String, String, i32)> {
        text.split(',')
            .filter_map(|part| {
                let (name, address) = part.split_once("://")?;
                let (host, port) = address.rsplit_once(':')?;
                Some((name.to_string(), host.to_string(), port.parse().ok()?))
            })
            .collect()
    }
}

/// The live brokers, by node id.
#[derive(Debug, Clone, Default)]
pub struct ClusterView {
    pub members: Vec<Member>,
}

/// This broker's registration and the latest view of the cluster, shared by every shard.
pub struct Membership {
    pub me: Member,
    pub view: ArcSwap<ClusterView>,
    /// The lease's length, and when (Unix ms) the last renewal that succeeded was sent.
    lease: Duration,
    renewed_unix_ms: AtomicU64,
}

impl Membership {
    /// Whether this broker's lease runs now; if not, how long ago it was last renewed (ms).
    pub fn lease_held(&self) -> Result<(), u64> {
        let renewed = self.renewed_unix_ms.load(Ordering::Acquire);
        let ago = unix_ms().saturating_sub(renewed);
        match renewed > 0 && ago < self.lease.as_millis() as u64 {
            true => Ok(()),
            false => Err(ago),
        }
    }
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Registers this broker (refusing a node id another live process holds), then renews the
/// lease and refreshes the view every `heartbeat` on a thread of its own.
pub fn start(
    database: PgConfig,
    me: Member,
    lease: Duration,
    heartbeat: Duration,
    lease_lapses: Arc<AtomicU64>,
    startup_timeout: Duration,
) -> Result<Arc<Membership>, MembershipError> {
    let membership = Arc::new(Membership {
        me,
        view: ArcSwap::from_pointee(ClusterView::default()),
        lease,
        renewed_unix_ms: AtomicU64::new(0),
    });
    let instance = uuid::Uuid::new_v4().to_string();
    let (registered, outcome) = std::sync::mpsc::channel();
    let shared = membership.clone();
    let executor = LocalExecutorBuilder::default()
        .name("cluster-membership")
        .io_memory(1 << 20)
        .spawn(move || async move {
            let mut renewal = Renewal {
                database,
                instance,
                lease,
                connection: None,
            };
            let first = register_first(&mut renewal, &shared, heartbeat, startup_timeout).await;
            let failed = first.is_err();
            let _ = registered.send(first);
            if failed {
                return;
            }
            keep_renewing(&mut renewal, &shared, heartbeat, &lease_lapses).await;
        })
        .map_err(|e| MembershipError(format!("cannot start the membership thread: {e}")))?;
    match outcome.recv() {
        Ok(Ok(())) => {
            // Detached: the thread renews the lease for as long as the process lives.
            drop(executor);
            Ok(membership)
        }
        Ok(Err(e)) => Err(e),
        Err(_) => Err(MembershipError(
            "the membership thread ended before registering".into(),
        )),
    }
}

struct Renewal {
    database: PgConfig,
    instance: String,
    lease: Duration,
    connection: Option<Connection>,
}

/// Why a registration failed, and what waiting may change.
struct Refusal {
    error: MembershipError,
    wait: Wait,
}

enum Wait {
    /// Another process holds the node id: its lease may lapse (this broker's own, restarted).
    LeaseLapse,
    /// PostgreSQL failed for a passing reason (a lost connection, a timeout, a restart).
    Passing,
    Never,
}

impl Renewal {
    /// Takes or renews this broker's lease and reads the live brokers into the view.
    async fn register(&mut self, membership: &Membership) -> Result<(), Refusal> {
        let result = self.exchange(membership).await;
        if result.is_err() {
            self.connection = None;
        }
        result
    }

    async fn exchange(&mut self, membership: &Membership) -> Result<(), Refusal> {
        let fail = |e: PgError| Refusal {
            wait: match e.is_transient() {
                true => Wait::Passing,
                false => Wait::Never,
            },
            error: MembershipError(format!("cluster membership: {e}")),
        };
        if self.connection.as_ref().is_none_or(Connection::is_broken) {
            self.connection = Some(brokers::connect(&self.database).await.map_err(fail)?);
        }
        let connection = self.connection.as_mut().expect("connected above");
        let me = &membership.me;
        let row = BrokerRow {
            node_id: me.node_id,
            listeners: me.encode_listeners(),
            rack: me.rack.clone(),
        };
        let taken = brokers::renew_lease(connection, &row, &self.instance, self.lease)
            .await
            .map_err(fail)?;
        if !taken {
            return Err(Refusal {
                error: MembershipError(format!(
                    "node_id {} is registered by another live broker in this cluster; give \
                     each broker its own node_id",
                    me.node_id
                )),
                wait: Wait::LeaseLapse,
            });
        }
        let members = brokers::live_brokers(connection)
            .await
            .map_err(fail)?
            .into_iter()
            .map(|row| Member {
                node_id: row.node_id,
                listeners: Member::decode_listeners(&row.listeners),
                rack: row.rack,
            })
            .collect();
        membership.view.store(Arc::new(ClusterView { members }));
        Ok(())
    }
}

/// The first registration: a process restarted at once finds its previous lease still
/// running and waits for it to lapse rather than refuse the start; PostgreSQL failing for a
/// passing reason is waited out for the start-up's time. Anything else refuses at once.
async fn register_first(
    renewal: &mut Renewal,
    shared: &Membership,
    heartbeat: Duration,
    startup_timeout: Duration,
) -> Result<(), MembershipError> {
    let lease = renewal.lease;
    let started = std::time::Instant::now();
    let mut sent_unix_ms = unix_ms();
    let mut first = renewal.register(shared).await;
    while let Err(refusal) = &first {
        let patience = match refusal.wait {
            Wait::LeaseLapse => lease + heartbeat,
            Wait::Passing => startup_timeout,
            Wait::Never => break,
        };
        if started.elapsed() >= patience {
            break;
        }
        glommio::timer::sleep(heartbeat).await;
        sent_unix_ms = unix_ms();
        first = renewal.register(shared).await;
    }
    let first = first.map_err(|refusal| refusal.error);
    if first.is_ok() {
        shared
            .renewed_unix_ms
            .store(sent_unix_ms, Ordering::Release);
    }
    first
}

/// Renews the lease every heartbeat for as long as the process lives, counting the lapses
/// (a pause, starvation or a cut past the lease, after which other brokers may have taken
/// this one's groups).
async fn keep_renewing(
    renewal: &mut Renewal,
    shared: &Membership,
    heartbeat: Duration,
    lease_lapses: &AtomicU64,
) {
    let lease = renewal.lease;
    // When the last renewal that succeeded was sent: its lease ran from then.
    let mut renewed = Instant::now();
    loop {
        glommio::timer::sleep(heartbeat).await;
        let sent = Instant::now();
        let sent_unix_ms = unix_ms();
        match renewal.register(shared).await {
            Ok(()) => {
                shared
                    .renewed_unix_ms
                    .store(sent_unix_ms, Ordering::Release);
                if sent.duration_since(renewed) >= lease {
                    // Paused, starved or cut off past the lease: other brokers may
                    // have taken this one's groups meanwhile.
                    lease_lapses.fetch_add(1, Ordering::AcqRel);
                    tracing::warn!(
                        unrenewed_ms = sent.duration_since(renewed).as_millis() as u64,
                        "this broker's cluster lease lapsed and is renewed; its groups \
                         are claimed again before they are served"
                    );
                }
                renewed = sent;
            }
            Err(e) => {
                tracing::warn!(error = %e.error, "cluster lease not renewed (PostgreSQL unreachable or slow); the broker stops serving its groups if the lease lapses")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listeners_survive_the_database_text() {
        let member = Member {
            node_id: 3,
            listeners: vec![
                ("PLAINTEXT".into(), "10.0.0.3".into(), 9092),
                ("SSL".into(), "b3.example".into(), 9093),
            ],
            rack: Some("b".into()),
        };
        let text = member.encode_listeners();
        assert_eq!(Member::decode_listeners(&text), member.listeners);
        assert_eq!(member.address_for("SSL"), Some(("b3.example", 9093)));
        assert_eq!(member.address_for("SASL_SSL"), None);
    }
}
