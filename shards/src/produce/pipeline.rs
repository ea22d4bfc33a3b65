use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::channel::oneshot;
use glommio::sync::{Semaphore, StaticPermit};
use glommio::task::JoinHandle;
use shoal_coordinator::commands::CommitFile;
use shoal_coordinator::{CommitBatch, CommitBatchResult, ErrorKind, NewObject, TopicPartition};
use shoal_wal::{ObjectBody, ObjectStore, WalError, WriteLane};

use super::buffer::{lay_out, PendingWrite, RotatedObject, WalBuffer};
use super::schemas::SchemaChecker;
use super::validate::{validate_payload, Refusal, ValidPayload};
use super::CommitFanout;
use crate::lifecycle::with_deadline;
use crate::rpc::CoordinatorClient;
use crate::signal::LocalSignal;
use crate::turnstile::Turnstile;
use crate::{PartitionProduceResult, ProduceRules, RuntimeConfig, ShardMetrics};

/// Writes expected back: an object's producers were just answered, and closed-loop producers
/// send their next writes on the answers. The next object waits for the buffer to hold
/// `writes` writes, or until `until`, whichever comes first.
#[derive(Clone, Copy)]
struct Returning {
    writes: usize,
    until: Instant,
}

/// An object on its way to storage and the coordinator, in rotation order.
struct InFlightObject {
    key: String,
    upload: JoinHandle<Result<(), WalError>>,
    object: RotatedObject,
    _slot: StaticPermit,
}

pub struct ProducePipeline {
    config: Rc<RuntimeConfig>,
    store: Rc<ObjectStore>,
    coordinator: Rc<CoordinatorClient>,
    fanout: CommitFanout,
    metrics: Rc<ShardMetrics>,
    buffer: RefCell<WalBuffer>,
    /// When the last object was cut from the buffer.
    last_rotation: Cell<Instant>,
    /// One permit per object in flight: bounds memory when storage is slow.
    in_flight_slots: Rc<Semaphore>,
    /// Set when an object's producers are answered, cleared when the next object goes.
    returning: Cell<Option<Returning>>,
    queue: RefCell<VecDeque<InFlightObject>>,
    queued: LocalSignal,
    /// Notified each time an object's producers have been answered.
    finished: LocalSignal,
    /// Writes enter the buffer in the order they reached the shard, also when one of them
    /// first waits for the schema registry or an upload slot: otherwise a later write could take the next buffer
    /// while an earlier one waits, and a partition's records would land out of order.
    admission: Turnstile,
    /// Records of topics that validate schemas, checked against the registry.
    schemas: SchemaChecker,
}

/// The answer to a write refused before it was buffered.
fn refused(refusal: Refusal) -> PartitionProduceResult {
    PartitionProduceResult {
        bad_records: refusal.records,
        ..PartitionProduceResult::failed(refusal.error)
    }
}

impl ProducePipeline {
    pub fn start(
        config: Rc<RuntimeConfig>,
        store: Rc<ObjectStore>,
        coordinator: Rc<CoordinatorClient>,
        fanout: CommitFanout,
        metrics: Rc<ShardMetrics>,
    ) -> Rc<ProducePipeline> {
        let coordinator_for_schemas = coordinator.clone();
        let pipeline = Rc::new(ProducePipeline {
            metrics,
            in_flight_slots: Rc::new(Semaphore::new(config.produce.uploads_in_flight_max as u64)),
            returning: Cell::new(None),
            config,
            store,
            coordinator,
            fanout,
            buffer: RefCell::new(WalBuffer::default()),
            last_rotation: Cell::new(Instant::now()),
            queue: RefCell::new(VecDeque::new()),
            queued: LocalSignal::default(),
            finished: LocalSignal::default(),
            admission: Turnstile::default(),
            schemas: SchemaChecker::new(coordinator_for_schemas),
        });
        glommio::spawn_local(pipeline.clone().commit_in_order()).detach();
        pipeline
    }

    /// Validates one partition's payload, buffers it and resolves once it is committed.
    pub async fn append(
        self: &Rc<Self>,
        partition: TopicPartition,
        records: Bytes,
        rules: ProduceRules,
    ) -> PartitionProduceResult {
        if records.len() > self.config.live.buffer_max_bytes() {
            return PartitionProduceResult::failed(ErrorKind::MessageTooLarge);
        }
        let inflated_max = self.config.produce.max_inflated_batch_bytes;
        let ValidPayload {
            records,
            headers,
            stamped_at,
            heads,
        } = match validate_payload(records, &rules, inflated_max, crate::maintenance::now_ms) {
            Ok(valid) => valid,
            Err(refusal) => return refused(refusal),
        };
        // The place in line is taken before the schema check, which may wait for the
        // coordinator: a later write whose check is answered from memory must not pass it.
        let ticket = self.admission.enter();
        if let Some(rule) = &rules.schemas {
            let checked = self
                .schemas
                .check(&records, &headers, heads.as_deref(), rule, inflated_max)
                .await;
            if let Err(refusal) = checked {
                return refused(refusal);
            }
        }
        let admitted = ticket.await;
        while self.would_overflow(records.len()) {
            self.rotate().await;
        }
        let (reply, answer) = oneshot::channel();
        let (first_write, full, generation) = {
            let mut buffer = self.buffer.borrow_mut();
            let first_write = buffer.writes.is_empty();
            buffer.push(PendingWrite {
                partition,
                records,
                headers,
                joins_transaction: rules.joins_transaction,
                reply,
            });
            (
                first_write,
                buffer.size_bytes >= self.config.live.buffer_max_bytes(),
                buffer.generation,
            )
        };
        drop(admitted);
        self.report_gauges();
        if full {
            self.rotate().await;
        } else if first_write || self.returning.get().is_some() {
            // A later write matters only to a buffer waiting for returning writes: it may be
            // the last one expected. It arms no timer: the buffer's first write, or the commit
            // that set the returning writes, armed one for the same deadline.
            match self.wait_before_rotating() {
                Duration::ZERO => self.rotate().await,
                wait if first_write => self.arm_rotation_timer(generation, wait),
                _ => {}
            }
        }
        let mut result = answer
            .await
            .unwrap_or_else(|_| PartitionProduceResult::failed(ErrorKind::NotAvailable));
        // The time the batches carry is the append time the client is told.
        if let (Some(at), None) = (stamped_at, result.error) {
            result.log_append_time_ms = at;
        }
        result
    }

    fn report_gauges(&self) {
        let in_flight =
            self.config.produce.uploads_in_flight_max as u64 - self.in_flight_slots.available();
        self.metrics.gauges.wal_in_flight.set(in_flight);
        let buffered = self.buffer.borrow().size_bytes as u64;
        self.metrics.gauges.wal_buffer_bytes.set(buffered);
    }

    /// How long the open buffer waits before it goes, short of filling up: one interval after
    /// its first write, or not at all when nothing is in flight (no write would gain by waiting
    /// for others; group commit on the local disk). On a store that bills each request, "not at
    /// all" becomes "until one interval after the previous object", so every object but a full
    /// one comes at least an interval after the one before: at most 1000 / `commit_interval_ms`
    /// PUTs a second, and uploads still overlap under load, as a closed-loop producer's
    /// throughput needs.
    fn wait_before_rotating(&self) -> Duration {
        let interval = self.config.live.commit_interval();
        if !self.config.produce.rotate_when_idle || !self.store_idle() {
            interval
        } else if self.config.store.bills_requests() {
            interval.saturating_sub(self.last_rotation.get().elapsed())
        } else {
            self.wait_for_returning_writes().min(interval)
        }
    }

    /// How much longer the open buffer waits for the writes its last answers will bring back.
    /// Without it a closed-loop producer's window splits in two: the answers of one object go
    /// out while the rest of the window waits behind it, and those writes leave at once
    /// when the store frees, before the answered producers' next writes arrive, so objects
    /// alternate between the two halves (the Java producer's five requests on one partition:
    /// 2.4 writes an object, each object a write and an fsync of its own).
    fn wait_for_returning_writes(&self) -> Duration {
        match self.returning.get() {
            Some(returning) if self.buffer.borrow().writes.len() < returning.writes => {
                returning.until.saturating_duration_since(Instant::now())
            }
            _ => Duration::ZERO,
        }
    }

    /// No object of this pipeline is uploading or committing.
    fn store_idle(&self) -> bool {
        self.queue.borrow().is_empty()
            && self.in_flight_slots.available() == self.config.produce.uploads_in_flight_max as u64
    }

    fn would_overflow(&self, incoming_bytes: usize) -> bool {
        let buffer = self.buffer.borrow();
        !buffer.writes.is_empty()
            && buffer.size_bytes + incoming_bytes > self.config.live.buffer_max_bytes()
    }

    fn arm_rotation_timer(self: &Rc<Self>, generation: u64, wait: Duration) {
        let pipeline = self.clone();
        glommio::spawn_local(async move {
            glommio::timer::sleep(wait).await;
            if pipeline.buffer.borrow().generation == generation {
                pipeline.rotate().await;
            }
        })
        .detach();
    }

    /// Closes the open buffer and starts uploading it; waits while too many are in flight.
    async fn rotate(self: &Rc<Self>) {
        let Ok(slot) = self.in_flight_slots.acquire_static_permit(1).await else {
            return;
        };
        self.rotate_into(slot);
    }

    /// `rotate` if an upload slot is free now. The commit loop uses this: it must never wait
    /// for a slot, since only it frees them.
    fn rotate_if_slot_free(self: &Rc<Self>) {
        if let Ok(slot) = self.in_flight_slots.try_acquire_static_permit(1) {
            self.rotate_into(slot);
        }
    }

    fn rotate_into(self: &Rc<Self>, slot: StaticPermit) {
        let writes = self.buffer.borrow_mut().rotate();
        if writes.is_empty() {
            return;
        }
        self.returning.set(None);
        self.last_rotation.set(Instant::now());
        let object = match lay_out(writes) {
            Ok(object) => object,
            Err(writes) => {
                for write in writes {
                    let _ = write
                        .reply
                        .send(PartitionProduceResult::failed(ErrorKind::MessageTooLarge));
                }
                return;
            }
        };
        let key = format!(
            "{}/{}",
            crate::maintenance::WAL_PREFIX,
            uuid::Uuid::new_v4()
        );
        let uploading = upload_with_retries(
            WriteLane::Produce,
            self.store.clone(),
            key.clone(),
            object.data.clone(),
            self.config.produce.upload_attempts,
            self.config.produce.upload_backoff(),
        );
        let metrics = self.metrics.clone();
        let size = object.data.len();
        let upload = glommio::spawn_local(async move {
            let started = Instant::now();
            let result = uploading.await;
            match &result {
                Ok(()) => {
                    metrics
                        .histograms
                        .wal_upload_seconds
                        .observe_duration(started.elapsed());
                    metrics.histograms.wal_object_bytes.observe(size as f64);
                    metrics.counters.wal_objects_uploaded.add(1);
                }
                Err(_) => metrics.counters.wal_upload_failures.add(1),
            }
            result
        })
        .detach();
        // Pushed in the same step as the buffer was taken: queue order is rotation order.
        self.queue.borrow_mut().push_back(InFlightObject {
            key,
            upload,
            object,
            _slot: slot,
        });
        self.queued.notify_all();
        self.report_gauges();
    }

    /// Commits uploaded objects strictly in rotation order, then answers their producers.
    async fn commit_in_order(self: Rc<Self>) {
        loop {
            let next = self.queue.borrow_mut().pop_front();
            let Some(in_flight) = next else {
                self.queued.wait().await;
                continue;
            };
            let InFlightObject {
                key,
                upload,
                mut object,
                _slot: slot,
            } = in_flight;
            let outcome = match upload.await {
                Some(Ok(())) => {
                    let started = Instant::now();
                    let uploaded = NewObject::uploaded(
                        key.clone(),
                        object.data.len() as u64,
                        self.config.node_id,
                    );
                    let committed = self.commit_answering_late(uploaded, &mut object).await;
                    self.metrics
                        .histograms
                        .commit_seconds
                        .observe_duration(started.elapsed());
                    committed
                }
                Some(Err(e)) => {
                    tracing::error!(%key, error = %e, "WAL object upload failed after every attempt; its producers got KAFKA_STORAGE_ERROR and retry (check the object store: shoal status, its credentials and logs)");
                    let _ = self.store.delete(&key).await;
                    Err(ErrorKind::StorageError)
                }
                None => Err(ErrorKind::StorageError),
            };
            let answered = object.writes.len();
            match outcome {
                Ok(results) => {
                    let ends = object
                        .batches
                        .iter()
                        .zip(&results)
                        .filter(|(_, r)| r.error.is_none())
                        .map(|(b, r)| (b.partition, r.base_offset + b.offset_count as i64));
                    self.fanout.on_committed(&key, &object.data, ends);
                    for (write, range) in object.writes {
                        let _ = write.reply.send(write_result(&results[range]));
                    }
                }
                Err(error) => {
                    for (write, _) in object.writes {
                        let _ = write.reply.send(PartitionProduceResult::failed(error));
                    }
                }
            }
            drop(slot);
            self.finished.notify_all();
            self.expect_returning_writes(answered);
            // Writes that gathered while the store was busy go as soon as it is free (on a
            // billed store, no sooner than one interval after the previous object; on the
            // local disk, once the answered producers' next writes joined them); their
            // buffer's timer, armed at its first write, is the latest they go.
            let (waiting, generation) = {
                let buffer = self.buffer.borrow();
                (!buffer.writes.is_empty(), buffer.generation)
            };
            if waiting {
                match self.wait_before_rotating() {
                    Duration::ZERO => self.rotate_if_slot_free(),
                    wait if self.returning.get().is_some() => {
                        self.arm_rotation_timer(generation, wait)
                    }
                    _ => {}
                }
            }
        }
    }

    /// After `answered` writes were answered with nothing else in flight, the next object
    /// waits (briefly) for that many more writes than the buffer holds now. Only where a free
    /// store otherwise takes the next object at once: not without `rotate_when_idle`, not on a
    /// billed store, whose objects are already spaced by the interval, and not while another
    /// object is in flight, whose answers will come first.
    fn expect_returning_writes(&self, answered: usize) {
        let produce = &self.config.produce;
        let gather = produce.gather_returning();
        if gather.is_zero()
            || !produce.rotate_when_idle
            || self.config.store.bills_requests()
            || !self.store_idle()
        {
            self.returning.set(None);
            return;
        }
        self.returning.set(Some(Returning {
            writes: self.buffer.borrow().writes.len() + answered,
            until: Instant::now() + gather,
        }));
    }

    /// `commit`, answering the object's producers REQUEST_TIMED_OUT if it takes longer than
    /// `commit_answer_timeout` (the coordinator's database unreachable, say) and then still
    /// waiting for the outcome: the next object may only commit after this one.
    async fn commit_answering_late(
        &self,
        uploaded: NewObject,
        object: &mut RotatedObject,
    ) -> Result<Vec<CommitBatchResult>, ErrorKind> {
        let mut committing = std::pin::pin!(self.commit(uploaded, &object.batches));
        let limit = self.config.produce.commit_answer_timeout();
        if let Some(outcome) = with_deadline(limit, committing.as_mut()).await {
            return outcome;
        }
        tracing::warn!(
            waited_ms = limit.as_millis() as u64,
            "a commit is taking long; its producers are told to retry (the coordinator is slow: its disk, or PostgreSQL in a cluster)"
        );
        for (write, _) in object.writes.iter_mut() {
            // The producer gets its answer now; the real outcome goes nowhere.
            let reply = std::mem::replace(&mut write.reply, oneshot::channel().0);
            let _ = reply.send(PartitionProduceResult::failed(ErrorKind::RequestTimedOut));
        }
        committing.await
    }

    async fn commit(
        &self,
        object: NewObject,
        batches: &[CommitBatch],
    ) -> Result<Vec<CommitBatchResult>, ErrorKind> {
        let request = CommitFile {
            object,
            batches: batches.to_vec(),
        };
        match self.coordinator.run(request).await {
            Ok(results) => {
                debug_assert_eq!(results.len(), batches.len(), "one answer per batch");
                Ok(results)
            }
            Err(e) => {
                tracing::error!(error = %e, "CommitFile did not reach the coordinator; producers get NOT_AVAILABLE and retry (check the coordinator: PostgreSQL in a cluster)");
                Err(ErrorKind::NotAvailable)
            }
        }
    }

    /// Rotates the open buffer and waits until everything in flight is committed and its
    /// producers answered.
    pub async fn flush(self: &Rc<Self>) {
        self.rotate().await;
        let all = self.config.produce.uploads_in_flight_max as u64;
        loop {
            let finished = self.finished.wait();
            if self.in_flight_slots.available() == all && self.queue.borrow().is_empty() {
                return;
            }
            finished.await;
        }
    }
}

/// One produce write may hold several batches: it succeeds only if all of them did, and its
/// base offset is that of its first batch.
fn write_result(results: &[CommitBatchResult]) -> PartitionProduceResult {
    let Some(first) = results.first() else {
        return PartitionProduceResult::failed(ErrorKind::StorageError);
    };
    if let Some(error) = results.iter().find_map(|r| r.error) {
        return PartitionProduceResult::failed(error);
    }
    PartitionProduceResult {
        error: None,
        base_offset: first.base_offset,
        log_append_time_ms: first.log_append_time_ms,
        log_start_offset: first.log_start_offset,
        bad_records: Vec::new(),
    }
}

pub(crate) async fn upload_with_retries(
    lane: WriteLane,
    store: Rc<ObjectStore>,
    key: String,
    data: ObjectBody,
    attempts: u32,
    backoff: Duration,
) -> Result<(), WalError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match store.put_in(lane, &key, data.clone()).await {
            Ok(()) => return Ok(()),
            Err(e) if attempt >= attempts.max(1) => return Err(e),
            Err(e) => {
                tracing::warn!(%key, attempt, error = %e, "WAL object upload failed; retrying (if it persists, check the object store)");
                // Exponential backoff with full jitter, so shards do not retry in lockstep.
                let ceiling = backoff.saturating_mul(1 << (attempt - 1).min(10));
                let pause = ceiling.mul_f64(fastrand::f64());
                glommio::timer::sleep(pause).await;
            }
        }
    }
}
