//! How a broker of a cluster learns that others appended to the shared coordinator log: a
//! connection LISTENing for the NOTIFY each append sends, and a poll every second in case a
//! notification is lost (the listening connection broke, PostgreSQL restarted). Both only
//! signal; the coordinator reads the new rows itself, between rounds.

use std::rc::Rc;
use std::time::Duration;

use glommio::channels::local_channel::{self, LocalReceiver, LocalSender};
use shoal_coordinator::postgres_log::NOTIFY_CHANNEL;
use shoal_pg::{Connection, PgConfig};

use crate::lifecycle::Tasks;

/// The longest a broker goes without looking for rows when no notification arrives.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// Pause before listening again after the connection failed.
const RECONNECT_PAUSE: Duration = Duration::from_secs(1);

/// Starts the listener and the poll; the receiver yields once per burst of news (a pending
/// signal absorbs more until taken).
pub fn start(tasks: &Rc<Tasks>, database: PgConfig) -> LocalReceiver<()> {
    let (signal, news) = local_channel::new_bounded(1);
    let signal = Rc::new(signal);
    let poll = signal.clone();
    tasks.spawn_background("coordinator log poll", async move {
        loop {
            glommio::timer::sleep(POLL_INTERVAL).await;
            let _ = poll.try_send(());
        }
    });
    tasks.spawn_background("coordinator log listener", listen(database, signal));
    news
}

async fn listen(database: PgConfig, signal: Rc<LocalSender<()>>) {
    loop {
        match Connection::connect(&database).await {
            Ok(mut connection) => {
                let listening = connection
                    .batch_execute(&format!("LISTEN {NOTIFY_CHANNEL}"))
                    .await;
                if let Err(e) = listening {
                    tracing::warn!(error = %e, "cannot LISTEN for coordinator log rows");
                } else {
                    // Rows may have come while no one listened.
                    let _ = signal.try_send(());
                    loop {
                        match connection.next_notification().await {
                            Ok(_) => {
                                let _ = signal.try_send(());
                            }
                            Err(e) => {
                                tracing::warn!(error = %e, "coordinator log listener lost");
                                break;
                            }
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot connect to listen for log rows"),
        }
        glommio::timer::sleep(RECONNECT_PAUSE).await;
    }
}
