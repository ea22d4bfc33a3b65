//! One client connection: frames are read as they arrive and handled concurrently (clients
//! pipeline produce requests), while answers are written strictly in request order, as the
//! protocol requires. A malformed or oversized frame closes the connection with a log line.
//!
//! Nothing a client does can hold memory it has not sent: a request's bytes are reserved
//! from the shard's budget as they arrive, then what its decoded form and its answer may
//! hold; once handled it keeps only its answer's bytes, until the answer is written. A
//! connection whose unwritten answers reach `max_unsent_bytes_per_connection` is not read
//! from until the client takes them (Kafka mutes such a channel); a stalled client is closed
//! by its watchdog.

use std::cell::Cell;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::channels::local_channel;
use glommio::net::TcpStream;
use glommio::task::JoinHandle;
use shoal_protocol::frame::{frame_size, SIZE_PREFIX_BYTES};
use shoal_shards::signal::LocalSignal;

use super::frame_pool::{self, FrameBuffer};
use super::limits::Admitted;
use super::memory::Reservation;
use super::request::{parse, Incoming, ParsedRequest};
use super::watchdog::Watchdog;
use crate::context::{Broker, Call};
use crate::handlers::registry::{self, DecodedRequest};
use crate::handlers::sasl;
use crate::quotas::{self, ConnectionQuotas, QuotaKind};
use crate::security::stream::KafkaStream;
use crate::security::{certificate, AuthState, Listener, Session, TlsServer};
use shoal_coordinator::acl::Operation;

/// A request's bytes are read this many at a time (each read zeroes its room first).
const READ_CHUNK_BYTES: usize = 64 << 10;
/// A request holds at most this much of the memory budget beyond the bytes it has sent.
const RESERVE_AHEAD_BYTES: usize = 256 << 10;

/// Kafka's code for an unexpected server error.
const UNKNOWN_SERVER_ERROR: i16 = -1;

/// An answer being computed.
type Answer = JoinHandle<Option<(Bytes, Reservation)>>;

/// What a connection owes its client: answers not yet written, and the bytes they hold
/// (estimated until an answer is computed, then its size).
#[derive(Default)]
struct Owed {
    answers: Cell<usize>,
    bytes: Cell<usize>,
    written: LocalSignal,
}

impl Owed {
    fn add(&self, bytes: usize) {
        self.answers.set(self.answers.get() + 1);
        self.bytes.set(self.bytes.get() + bytes);
    }

    /// An answer's size is known: it replaces the estimate.
    fn computed(&self, estimated: usize, bytes: usize) {
        self.bytes.set(self.bytes.get() - estimated + bytes);
    }

    fn settle(&self, bytes: usize) {
        self.answers.set(self.answers.get() - 1);
        self.bytes.set(self.bytes.get() - bytes);
        self.written.notify_all();
    }
}

/// A connection, counted in `shoal_connections` while it lives.
struct Counted(Rc<shoal_shards::ShardMetrics>);

impl Counted {
    fn new(metrics: Rc<shoal_shards::ShardMetrics>) -> Counted {
        metrics.gauges.connections.add(1);
        Counted(metrics)
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.gauges.connections.sub(1);
    }
}

pub async fn serve_connection(
    broker: Rc<Broker>,
    stream: TcpStream,
    listener: Arc<Listener>,
    tls: Option<Arc<TlsServer>>,
    _admitted: Admitted,
) {
    let _counted = Counted::new(broker.shard.metrics.clone());
    let peer_addr = stream.peer_addr().ok();
    let config = &broker.config;
    let watchdog = Watchdog::new(
        Duration::from_millis(config.connections_max_idle_ms),
        Duration::from_millis(config.request_read_timeout_ms),
    );
    let session = Rc::new(Session::new(listener));
    if !session.is_authenticated() {
        let timeout = config.sasl.authentication_timeout_ms;
        watchdog.authenticate_within(Duration::from_millis(timeout));
    }
    let peer = peer_addr.map(|a| a.to_string()).unwrap_or_default();
    // Dropped (so cancelled) when the connection ends.
    let _guard = glommio::spawn_local(watchdog.clone().guard(stream.as_raw_fd(), peer.clone()));
    let Some(stream) = accept(stream, tls, &session, &watchdog, &peer).await else {
        return;
    };
    let (mut reader, writer) = futures_lite::io::split(stream);
    let connection = Connection::new(broker.clone(), session, watchdog, peer_addr);
    // Bounded: a client that pipelines more than this waits for answers before we read on.
    let (answers_tx, answers_rx) =
        local_channel::new_bounded::<Answer>(config.max_in_flight_per_connection);
    let writer_task = glommio::spawn_local(write_answers(
        writer,
        answers_rx,
        connection.owed.clone(),
        connection.watchdog.clone(),
    ))
    .detach();
    while let Some(request) = connection.next_frame(&mut reader).await {
        let Step::Answer { answer, login } = connection.step(request).await else {
            break;
        };
        if answers_tx.send(answer).await.is_err() {
            break;
        }
        if login {
            // A login step is answered before the next frame is read; a failed one ends
            // the connection.
            if connection.session.has_failed() {
                break;
            }
            continue;
        }
        connection.unsent_within_bounds().await;
    }
    drop(answers_tx);
    // Let answers already being computed reach the client before the socket goes away.
    writer_task.await;
}

/// What one connection's requests go through: its session, watchdog, quotas and the answers
/// it owes.
struct Connection {
    broker: Rc<Broker>,
    session: Rc<Session>,
    watchdog: Rc<Watchdog>,
    quotas: Rc<ConnectionQuotas>,
    owed: Rc<Owed>,
    /// The client's address, for log lines, and as ACLs name hosts (`/ip`).
    peer: String,
    client_host: String,
}

/// A request frame read whole, its bytes reserved, and its size as sent.
struct Frame {
    bytes: Bytes,
    reservation: Reservation,
    size: usize,
}

/// What follows a request.
enum Step {
    /// Its answer, to be written in order; `login` marks a step of the SASL exchange.
    Answer { answer: Answer, login: bool },
    /// The connection closes (the reason is logged).
    Close,
}

impl Connection {
    fn new(
        broker: Rc<Broker>,
        session: Rc<Session>,
        watchdog: Rc<Watchdog>,
        peer_addr: Option<std::net::SocketAddr>,
    ) -> Connection {
        Connection {
            quotas: Rc::new(ConnectionQuotas::new(
                broker.quotas.clone(),
                broker.shard.index,
                broker.shard.topics.clone(),
                session.clone(),
            )),
            peer: peer_addr.map(|a| a.to_string()).unwrap_or_default(),
            client_host: peer_addr
                .map(|a| format!("/{}", a.ip()))
                .unwrap_or_default(),
            owed: Rc::new(Owed::default()),
            broker,
            session,
            watchdog,
        }
    }

    /// The next request frame, read whole once the client's throttle has passed (KIP-219);
    /// None when the client left, or sent a size out of bounds.
    async fn next_frame<R: futures_lite::AsyncRead + Unpin>(
        &self,
        reader: &mut R,
    ) -> Option<Frame> {
        let config = &self.broker.config;
        self.quotas.unmuted().await;
        self.watchdog.idle(self.owed.answers.get() == 0);
        let mut size_prefix = [0u8; SIZE_PREFIX_BYTES];
        reader.read_exact(&mut size_prefix).await.ok()?;
        self.watchdog.reading();
        let size = match frame_size(size_prefix, config.max_request_bytes) {
            Ok(size) => size,
            Err(e) => {
                tracing::warn!(peer = %self.peer, error = %e, "request size out of bounds; closing");
                return None;
            }
        };
        let budget_bytes = self.broker.live.request_memory_bytes();
        if self.broker.request_memory.capacity() != budget_bytes as u64 {
            self.broker.request_memory.resize(budget_bytes);
        }
        let reservation = Reservation::new(self.broker.request_memory.clone());
        let bytes = read_frame(reader, size, &reservation, &self.peer).await?;
        // Read whole: no read deadline while it waits. A throttle earned while this frame was
        // awaited holds it (the frame is all it holds).
        self.watchdog.idle(false);
        self.quotas.unmuted().await;
        Some(Frame {
            bytes,
            reservation,
            size,
        })
    }

    /// Handles one frame: a bare SASL token, a step of the SASL exchange, or a request.
    async fn step(&self, frame: Frame) -> Step {
        if let AuthState::AwaitingBareToken(mechanism) = self.session.state() {
            return self.bare_token(mechanism, frame).await;
        }
        let Frame {
            bytes,
            reservation,
            size,
        } = frame;
        match parse(bytes, &self.session, &self.quotas) {
            Ok(Incoming::Handle(request)) if !self.session.is_authenticated() => {
                self.login_step(request, reservation).await
            }
            Ok(Incoming::Handle(request)) => match self.request(request, reservation, size).await {
                Some(answer) => Step::Answer {
                    answer,
                    login: false,
                },
                None => Step::Close,
            },
            Ok(Incoming::Answered { api_key, frame }) => {
                tracing::debug!(api = %registry::name_of(api_key), "unserved request answered with an error");
                reservation.shrink_to(frame.len());
                self.owed.add(frame.len());
                let answer = glommio::spawn_local(async move { Some((frame, reservation)) });
                Step::Answer {
                    answer: answer.detach(),
                    login: false,
                }
            }
            Err(e) => {
                tracing::warn!(peer = %self.peer, error = %e, "malformed request; closing (a client that does not speak Kafka, or a bug in it)");
                Step::Close
            }
        }
    }

    /// After a v0 SaslHandshake the frame is the token itself; success is answered with an
    /// empty frame, failure by closing the connection (as Kafka does).
    async fn bare_token(&self, mechanism: shoal_auth::SaslMechanism, frame: Frame) -> Step {
        let checked = sasl::check_token(
            &self.broker,
            &self.session,
            &self.client_host,
            mechanism,
            &frame.bytes,
        );
        let Some(token) = checked.await else {
            return Step::Close;
        };
        if self.session.is_authenticated() {
            self.watchdog.authenticated();
        }
        let reply = bare_token_frame(&token);
        self.owed.add(reply.len());
        let reservation = frame.reservation;
        let answer = glommio::spawn_local(async move { Some((reply, reservation)) }).detach();
        Step::Answer {
            answer,
            login: true,
        }
    }

    /// A request before authentication: only the SASL exchange's, one at a time, each
    /// handled before the next is read, so the next one sees the session it left.
    async fn login_step(&self, request: Box<ParsedRequest>, reservation: Reservation) -> Step {
        if !request.spec.before_authentication {
            tracing::warn!(peer = %self.peer, api = request.spec.name, "request before authentication; closing (a client without SASL settings on a SASL listener)");
            return Step::Close;
        }
        self.owed.add(0);
        let owed = (self.owed.clone(), 0);
        let answered = run_request(
            self.broker.clone(),
            request,
            self.client_host.clone(),
            reservation,
            owed,
        )
        .await;
        if self.session.is_authenticated() {
            self.watchdog.authenticated();
        }
        let answer = glommio::spawn_local(async move { answered }).detach();
        Step::Answer {
            answer,
            login: true,
        }
    }

    /// An authenticated request, handled concurrently with the next ones; None closes the
    /// connection.
    async fn request(
        &self,
        mut request: Box<ParsedRequest>,
        reservation: Reservation,
        size: usize,
    ) -> Option<Answer> {
        let broker = &self.broker;
        // The session ended without re-authenticating (KIP-368): the connection closes at
        // its next request, as Kafka closes it. (A failed re-authentication leaves the
        // session unauthenticated: `login_step` closes it.)
        if !request.spec.before_authentication
            && self.session.expired(shoal_shards::maintenance::now_ms())
        {
            let principal = self.session.principal();
            broker.shard.metrics.counters.sasl_sessions_expired.add(1);
            tracing::info!(peer = %self.peer, %principal, "SASL session ended without re-authentication; closing");
            return None;
        }
        if request.spec.internal && !internal_api_allowed(broker, &request) {
            let principal = self.session.principal();
            tracing::warn!(peer = %self.peer, %principal, api = request.spec.name, "internal API refused; closing (for brokers and tools: name their listener in authorizer.internal_listeners, or grant ClusterAction)");
            return None;
        }
        // What the decoded request and its answer may hold.
        let answer_bytes = request
            .body
            .answer_bytes(broker.shard.config.live.fetch_max_bytes());
        if !reservation.grow(request.decoded_bytes + answer_bytes).await {
            return None;
        }
        self.owed.add(answer_bytes);
        if let DecodedRequest::ProduceRequest(_) = request.body {
            // Kafka counts a produce request's size toward producer_byte_rate. One sent
            // while another connection of the client is throttled waits too.
            let quotas = &self.quotas;
            quotas.within(QuotaKind::Produce, &request.client.id).await;
            let throttle_ms = quotas.record(QuotaKind::Produce, &request.client.id, size as u64);
            request.throttled_until = quotas.mute(throttle_ms);
        }
        let task = run_request(
            broker.clone(),
            request,
            self.client_host.clone(),
            reservation,
            (self.owed.clone(), answer_bytes),
        );
        Some(glommio::spawn_local(task).detach())
    }

    /// Muted while the client leaves too much unread.
    async fn unsent_within_bounds(&self) {
        let bound = self.broker.config.max_unsent_bytes_per_connection;
        while self.owed.answers.get() > 0 && self.owed.bytes.get() > bound {
            self.owed.written.wait().await;
        }
    }
}

async fn accept(
    stream: TcpStream,
    tls: Option<Arc<TlsServer>>,
    session: &Session,
    watchdog: &Watchdog,
    peer: &str,
) -> Option<KafkaStream> {
    let Some(tls) = tls else {
        return Some(KafkaStream::Plain(stream));
    };
    watchdog.reading();
    match tls.acceptor(session.listener.protocol).accept(stream).await {
        Ok(stream) => {
            let certificate = stream.get_ref().1.peer_certificates();
            if let Some(der) = certificate.and_then(|chain| chain.first()) {
                match certificate::principal_of(der) {
                    Some(principal) => session.presented_certificate(principal),
                    None => {
                        tracing::warn!(%peer, "client certificate subject unreadable; closing");
                        return None;
                    }
                }
            }
            Some(KafkaStream::Tls(Box::new(stream.into())))
        }
        Err(e) => {
            tracing::info!(%peer, error = %e, "TLS handshake failed");
            None
        }
    }
}

/// A SASL v0 token answer: the token after its size, with no Kafka header.
fn bare_token_frame(token: &[u8]) -> Bytes {
    let mut reply = BytesMut::with_capacity(SIZE_PREFIX_BYTES + token.len());
    reply.extend_from_slice(&(token.len() as i32).to_be_bytes());
    reply.extend_from_slice(token);
    reply.freeze()
}

/// Reads a `size`-byte frame, reserving its bytes as they arrive (a client that announces a
/// large request and sends nothing holds nothing). None if the connection ended.
async fn read_frame(
    reader: &mut (impl futures_lite::AsyncRead + Unpin),
    size: usize,
    reservation: &Reservation,
    peer: &str,
) -> Option<Bytes> {
    if (frame_pool::SMALLEST..=frame_pool::LARGEST).contains(&size) {
        // Most frames: a reused buffer (or fresh zeroed pages, untouched until read into),
        // reserved a step ahead of the bytes that arrive.
        let mut frame = FrameBuffer::take(size);
        for step in frame.room().chunks_mut(RESERVE_AHEAD_BYTES) {
            if !reservation.grow(step.len()).await {
                return None;
            }
            if let Err(e) = reader.read_exact(step).await {
                tracing::info!(%peer, error = %e, "connection closed mid-request");
                return None;
            }
        }
        return Some(frame.freeze());
    }
    // Room is reserved (and allocated) ahead of the bytes: a small frame at once, a larger one
    // doubling as it arrives, so a client that announces a huge frame and stalls holds
    // little, and the bytes already read are moved at most once in all.
    let mut reserved = size.min(RESERVE_AHEAD_BYTES);
    if !reservation.grow(reserved).await {
        return None;
    }
    let mut frame = BytesMut::with_capacity(reserved);
    while frame.len() < size {
        if frame.len() == reserved {
            let more = (size - reserved).min(reserved);
            if !reservation.grow(more).await {
                return None;
            }
            frame.reserve(more);
            reserved += more;
        }
        let start = frame.len();
        let chunk = (reserved - start).min(READ_CHUNK_BYTES);
        frame.resize(start + chunk, 0);
        if let Err(e) = reader.read_exact(&mut frame[start..]).await {
            tracing::info!(%peer, error = %e, "connection closed mid-request");
            return None;
        }
    }
    Some(frame.freeze())
}

/// Writes answers in request order; each answer's reservation is given back once written.
async fn write_answers(
    mut writer: impl futures_lite::AsyncWrite + Unpin,
    answers: local_channel::LocalReceiver<Answer>,
    owed: Rc<Owed>,
    watchdog: Rc<Watchdog>,
) {
    while let Some(answer) = answers.recv().await {
        let Some(Some((frame, reservation))) = answer.await else {
            // Produce with acks=0 sends nothing (its task settled its estimate to 0).
            owed.settle(0);
            continue;
        };
        watchdog.writing(true);
        let written = writer.write_all(&frame).await.is_ok() && writer.flush().await.is_ok();
        watchdog.writing(false);
        drop(reservation);
        owed.settle(frame.len());
        if !written {
            break;
        }
    }
}

/// Runs one request's handler and frames its answer (None: nothing to send); the
/// reservation and what the connection owes then follow the answer's real size.
async fn run_request(
    broker: Rc<Broker>,
    request: Box<ParsedRequest>,
    client_host: String,
    reservation: Reservation,
    (owed, estimated): (Rc<Owed>, usize),
) -> Option<(Bytes, Reservation)> {
    let started = std::time::Instant::now();
    let ParsedRequest {
        spec,
        version,
        correlation_id,
        mut client,
        body,
        throttled_until,
        ..
    } = *request;
    client.host = client_host;
    let call = Call::new(&broker, version, &client, spec);
    call.throttled_until.set(throttled_until);
    // Produce with acks=0 is the one request whose client expects no answer.
    let expects_answer = !matches!(&body, DecodedRequest::ProduceRequest(r) if r.acks == 0);
    let answer = match registry::handle(&call, correlation_id, body).await {
        Ok(frame) => expects_answer.then_some(frame),
        Err(e) => {
            // A bug: the answer set a field its version lacks. The client gets Kafka's
            // UNKNOWN_SERVER_ERROR where the response has a top-level error code.
            let fallback = spec.error_answer(version, correlation_id, UNKNOWN_SERVER_ERROR);
            tracing::error!(
                api = spec.name,
                version,
                error = %e,
                answered_with_error = fallback.is_some(),
                "cannot encode the response: a Shoal bug, please report this line; the client \
                 may wait for the answer until its request timeout"
            );
            fallback
        }
    };
    broker
        .shard
        .metrics
        .request_done(spec.key, started.elapsed());
    let throttle_ms = call.throttle_left_ms();
    if throttle_ms > 0 {
        broker.shard.metrics.counters.quota_throttles.add(1);
        broker
            .shard
            .metrics
            .counters
            .quota_throttle_ms
            .add(throttle_ms);
    }
    if throttle_ms > 0 && !quotas::client_waits_by_itself(spec.key, version) {
        // An older client does not wait by itself: its answer waits instead, as in Kafka.
        glommio::timer::sleep(Duration::from_millis(throttle_ms)).await;
    }
    let answer_bytes = answer.as_ref().map_or(0, Bytes::len);
    owed.computed(estimated, answer_bytes);
    reservation.shrink_to(answer_bytes);
    answer.map(|frame| (frame, reservation))
}

/// The internal APIs (the Diskless coordinator's, mirror-state writes) are for other brokers
/// and tools: served only on `authorizer.internal_listeners` (when named) and, with the
/// authorizer on, to principals with ClusterAction on the cluster.
fn internal_api_allowed(broker: &Broker, request: &ParsedRequest) -> bool {
    let internal = &broker.config.authorizer.internal_listeners;
    let listener = &request.client.session.listener.name;
    if !internal.is_empty()
        && !internal
            .iter()
            .any(|name| name.eq_ignore_ascii_case(listener))
    {
        return false;
    }
    let call = Call::new(broker, request.version, &request.client, request.spec);
    call.authorized_on_cluster(Operation::ClusterAction)
}
