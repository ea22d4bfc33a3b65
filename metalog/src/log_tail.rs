//! How a broker of a cluster learns that others appended to the shared coordinator log: a
//! connection LISTENing for the NOTIFY each append sends, and a poll every second in case a
//! notification is lost (the listening connection broke, PostgreSQL restarted). Both only
//! signal; the coordinator reads the new rows itself, between rounds.

use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use glommio::channels::local_channel::{self, LocalReceiver, LocalSender};
use shoal_pg::{Connection, PgConfig};

use crate::postgres_log::NOTIFY_CHANNEL;

/// The longest a broker goes without looking for rows when no notification arrives.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// Pause before listening again after the connection failed.
const RECONNECT_PAUSE: Duration = Duration::from_secs(1);

/// The receiver yields once per burst of news (a pending signal absorbs more until taken);
/// the caller runs the two tasks, the poll and the listener, in the background.
pub fn start(
    database: PgConfig,
) -> (
    LocalReceiver<()>,
    impl Future<Output = ()>,
    impl Future<Output = ()>,
) {
    let (signal, news) = local_channel::new_bounded(1);
    let signal = Rc::new(signal);
    let poll = signal.clone();
    let polling = async move {
        loop {
            glommio::timer::sleep(POLL_INTERVAL).await;
            let _ = poll.try_send(());
        }
    };
    (news, polling, listen(database, signal))
}

async fn listen(database: PgConfig, signal: Rc<LocalSender<()>>) {
    loop {
        match Connection::connect(&database).await {
            Ok(mut connection) => {
                let listening = connection
                    .batch_execute(&format!("LISTEN {NOTIFY_CHANNEL}"))
                    .await;
                if let Err(e) = listening {
                    tracing::warn!(error = %e, "cannot LISTEN for coordinator log rows; other brokers' writes are polled for until it reconnects");
                } else {
                    // Rows may have come while no one listened.
                    let _ = signal.try_send(());
                    loop {
                        match connection.next_notification().await {
                            Ok(_) => {
                                let _ = signal.try_send(());
                            }
                            Err(e) => {
                                tracing::warn!(error = %e, "coordinator log listener lost; reconnecting, other brokers' writes are polled for meanwhile");
                                break;
                            }
                        }
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot connect to listen for log rows; retrying (is PostgreSQL reachable?)")
            }
        }
        glommio::timer::sleep(RECONNECT_PAUSE).await;
    }
}
