//! One client connection: frames are read as they arrive and handled concurrently (clients
//! pipeline produce requests), while answers are written strictly in request order, as the
//! protocol requires. A malformed or oversized frame closes the connection with a log line.

use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::channels::local_channel;
use glommio::net::TcpStream;
use glommio::sync::StaticPermit;
use glommio::task::JoinHandle;

use super::request::{parse, Incoming, ParsedRequest};
use crate::handlers::registry::{self, DecodedRequest};
use crate::handlers::{Broker, Call};

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
        let request = match parse(frame.freeze()) {
            Ok(Incoming::Handle(request)) => request,
            Ok(Incoming::Answered { api_key, frame }) => {
                tracing::debug!(api = %registry::name_of(api_key), "unserved request answered with an error");
                drop(memory);
                let answer = glommio::spawn_local(async move { Some(frame) }).detach();
                if answers_tx.send(answer).await.is_err() {
                    break;
                }
                continue;
            }
            Err(e) => {
                tracing::warn!(%peer, error = %e, "malformed request; closing");
                break;
            }
        };
        if request.spec.internal {
            tracing::debug!(%peer, api = request.spec.name, "internal API called");
        }
        let Some(memory_more) = reserve_beyond_frame(&broker, &request, size as usize).await else {
            break;
        };
        let answer = glommio::spawn_local(run_request(
            broker.clone(),
            request,
            client_host.clone(),
            (memory, memory_more),
        ))
        .detach();
        if answers_tx.send(answer).await.is_err() {
            break;
        }
    }
    drop(answers_tx);
    // Let answers already being computed reach the client before the socket goes away.
    writer_task.await;
}

/// What the request holds beyond its frame while handled (from the registry), reserved from
/// the shard's budget; never more than the budget leaves beside the frame, so one request
/// cannot wait forever. None once the budget is closed.
async fn reserve_beyond_frame(
    broker: &Broker,
    request: &ParsedRequest,
    frame_bytes: usize,
) -> Option<Option<StaticPermit>> {
    let budget_left = broker
        .config
        .max_in_flight_request_bytes
        .saturating_sub(frame_bytes);
    let more = (request.spec.memory_bytes)(frame_bytes)
        .saturating_sub(frame_bytes)
        .min(budget_left);
    if more == 0 {
        return Some(None);
    }
    let permit = broker.request_memory.clone();
    permit
        .acquire_static_permit(more as u64)
        .await
        .ok()
        .map(Some)
}

/// Runs one request's handler and frames its answer (None: nothing to send), holding its
/// memory reservation until then.
async fn run_request(
    broker: Rc<Broker>,
    request: Box<ParsedRequest>,
    client_host: String,
    memory: (StaticPermit, Option<StaticPermit>),
) -> Option<Bytes> {
    let started = std::time::Instant::now();
    let ParsedRequest {
        spec,
        version,
        correlation_id,
        mut client,
        body,
    } = *request;
    client.host = client_host;
    let call = Call {
        broker: &broker,
        version,
        client: &client,
    };
    // Produce with acks=0 is the one request whose client expects no answer.
    let expects_answer = !matches!(&body, DecodedRequest::ProduceRequest(r) if r.acks == 0);
    let answer = match registry::handle(&call, correlation_id, body).await {
        Ok(frame) => expects_answer.then_some(frame),
        Err(e) => {
            tracing::error!(api = spec.name, version, error = %e, "cannot encode the response");
            None
        }
    };
    drop(memory);
    broker
        .shard
        .metrics
        .request_done(spec.key, started.elapsed());
    answer
}
