//! One client connection: frames are read as they arrive and handled concurrently (clients
//! pipeline produce requests), while answers are written strictly in request order, as the
//! protocol requires. A malformed or oversized frame closes the connection with a log line.

use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::channels::local_channel;
use glommio::net::TcpStream;
use glommio::task::JoinHandle;

use crate::handlers::{self, Broker};

pub async fn serve_connection(broker: Rc<Broker>, stream: TcpStream) {
    let peer = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let client_host = stream
        .peer_addr()
        .map(|a| format!("/{}", a.ip()))
        .unwrap_or_default();
    let (mut reader, mut writer) = futures_lite::io::split(stream);
    // Bounded: a client that pipelines more than this waits for answers before we read on.
    let (answers_tx, answers_rx) = local_channel::new_bounded::<JoinHandle<Option<Bytes>>>(
        broker.config.max_in_flight_per_connection,
    );
    let writer_task = glommio::spawn_local(async move {
        while let Some(answer) = answers_rx.recv().await {
            let Some(Some(frame)) = answer.await else {
                continue;
            };
            if writer.write_all(&frame).await.is_err() || writer.flush().await.is_err() {
                break;
            }
        }
    })
    .detach();

    let max_request_bytes = broker.config.max_request_bytes;
    loop {
        let mut size_prefix = [0u8; 4];
        if reader.read_exact(&mut size_prefix).await.is_err() {
            break;
        }
        let size = i32::from_be_bytes(size_prefix);
        if size < 0 || size as usize > max_request_bytes {
            tracing::warn!(%peer, size, max_request_bytes, "request size out of bounds; closing");
            break;
        }
        // Requests being read or handled on this shard share one memory budget, so many
        // connections cannot together hold unbounded request bytes.
        let Ok(memory) = broker
            .request_memory
            .clone()
            .acquire_static_permit(size as u64)
            .await
        else {
            break;
        };
        let mut frame = BytesMut::zeroed(size as usize);
        if let Err(e) = reader.read_exact(&mut frame).await {
            tracing::info!(%peer, error = %e, "connection closed mid-request");
            break;
        }
        let mut request = match handlers::parse_request(frame.freeze()) {
            Ok(request) => request,
            Err(e) => {
                tracing::warn!(%peer, error = %e, "malformed request; closing");
                break;
            }
        };
        request.client.host = client_host.clone();
        let broker = broker.clone();
        let api_key = request.api.key();
        let answer = glommio::spawn_local(async move {
            let started = std::time::Instant::now();
            let answer = handlers::handle(&broker, request).await;
            drop(memory);
            broker
                .shard
                .metrics
                .request_done(api_key, started.elapsed());
            answer
        })
        .detach();
        if answers_tx.send(answer).await.is_err() {
            break;
        }
    }
    drop(answers_tx);
    // Let answers already being computed reach the client before the socket goes away.
    writer_task.await;
}
