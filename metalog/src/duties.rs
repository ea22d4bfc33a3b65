//! Cluster-wide duties (retention, deleting unreferenced objects, the orphan scan, merging
//! and compaction) run on one broker at a time: the one whose session holds a PostgreSQL
//! advisory lock. The lock goes with the session, so when that broker dies or loses its
//! connection another one takes it within a heartbeat. A single node always holds the duties.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use shoal_pg::{Connection, Param, PgConfig, PgError};

/// The advisory lock key of the duties ("shoal" in ASCII, then 1).
const DUTIES_LOCK: i64 = 0x7368_6f61_6c01;
/// How often a broker without the duties tries to take them, and the holder checks its
/// session is alive.
const CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Whether this broker runs the cluster-wide duties now; shared by its executors (the
/// coordinator's maintenance and the shards' rewriting), set by the coordinator's.
#[derive(Clone, Debug)]
pub struct Duties(Arc<AtomicBool>);

impl Duties {
    /// A single node: the duties are always its own.
    pub fn always() -> Duties {
        Duties(Arc::new(AtomicBool::new(true)))
    }

    /// A broker of a cluster: not held until `contend`'s task takes the lock.
    pub fn unheld() -> Duties {
        Duties(Arc::new(AtomicBool::new(false)))
    }

    /// The task (for the caller to run in the background) that takes the lock and keeps it,
    /// holding the duties while its session holds the lock.
    pub fn contend(&self, database: PgConfig) -> impl Future<Output = ()> {
        hold(database, self.0.clone())
    }

    pub fn held(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

async fn hold(database: PgConfig, held: Arc<AtomicBool>) {
    let mut session: Option<Connection> = None;
    loop {
        let was_held = held.load(Ordering::Relaxed);
        let outcome = check(&database, &mut session, was_held).await;
        let now_held = matches!(outcome, Ok(true));
        if now_held != was_held {
            tracing::info!(
                held = now_held,
                "cluster duties (retention, object deletion, rewriting)"
            );
        }
        held.store(now_held, Ordering::Relaxed);
        if let Err(e) = outcome {
            tracing::warn!(error = %e, "cluster duties lock: session lost");
            session = None;
        }
        glommio::timer::sleep(CHECK_INTERVAL).await;
    }
}

/// Takes the lock if free, or checks that the session holding it is alive.
async fn check(
    database: &PgConfig,
    session: &mut Option<Connection>,
    held: bool,
) -> Result<bool, PgError> {
    if session.as_ref().is_none_or(Connection::is_broken) {
        *session = Some(Connection::connect(database).await?);
    }
    let connection = session.as_mut().expect("connected above");
    if held {
        connection.batch_execute("SELECT 1").await?;
        return Ok(true);
    }
    let rows = connection
        .query(
            "SELECT pg_try_advisory_lock($1)::int",
            &[Param::I64(DUTIES_LOCK)],
        )
        .await?;
    Ok(rows.first().map(|r| r.i64(0)).transpose()? == Some(1))
}
