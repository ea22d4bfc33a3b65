//! Group commit: one round takes every queued request, applies the writes in arrival order,
//! makes their records durable with a single fdatasync, and only then answers them and the
//! reads, so no reader ever sees state that a crash could take back.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;
use uuid::Uuid;

use crate::log::MetadataLog;
use crate::messages::{Request, Response};
use crate::metrics::CoordinatorMetrics;
use crate::records::Record;
use crate::state::CoordinatorState;
use crate::view::TopicsView;
use crate::{snapshots, CoordinatorError};

pub struct CoordinatorCore {
    pub(crate) state: CoordinatorState,
    log: MetadataLog,
    dir: PathBuf,
    view: Arc<ArcSwap<TopicsView>>,
    /// Roll the log and write a snapshot once the log holds this many bytes.
    snapshot_log_bytes: u64,
    metrics: Arc<CoordinatorMetrics>,
}

impl CoordinatorCore {
    /// Rebuilds the state from the log in `dir` and publishes the topic catalogue.
    pub async fn open(
        dir: &Path,
        view: Arc<ArcSwap<TopicsView>>,
        snapshot_log_bytes: u64,
    ) -> Result<CoordinatorCore, CoordinatorError> {
        let (state, log, stats) = snapshots::recover(dir).await?;
        tracing::info!(
            snapshot_generation = ?stats.snapshot_generation,
            records_replayed = stats.records_replayed,
            batches = state.batch_count(),
            elapsed_ms = stats.elapsed_ms as u64,
            "coordinator state recovered"
        );
        view.store(Arc::new(state.topics_view()));
        Ok(CoordinatorCore {
            state,
            log,
            dir: dir.to_path_buf(),
            view,
            snapshot_log_bytes,
            metrics: Arc::new(CoordinatorMetrics::default()),
        })
    }

    /// Starts a new log generation and snapshots the state at the boundary, so recovery
    /// reads one image and a short log instead of all history. The snapshot is written while
    /// the coordinator waits, which pauses commits for the time it takes.
    async fn snapshot(&mut self) -> Result<(), CoordinatorError> {
        let started = std::time::Instant::now();
        let generation = self.log.generation() + 1;
        let (log, _) = MetadataLog::open(&self.dir, generation).await?;
        self.log = log;
        let bytes = snapshots::write_snapshot(&self.dir, generation, &self.state).await?;
        snapshots::remove_obsolete(&self.dir, generation).await;
        CoordinatorMetrics::add(&self.metrics.snapshots, 1);
        tracing::info!(
            generation,
            bytes,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "coordinator snapshot written"
        );
        Ok(())
    }

    /// Answers one round of requests, in order. An Err means the log could not be made
    /// durable: the in-memory state is then ahead of the disk and must not serve again.
    pub async fn process(
        &mut self,
        requests: Vec<Request>,
    ) -> Result<Vec<Response>, CoordinatorError> {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        let mut responses: Vec<Option<Response>> = Vec::with_capacity(requests.len());
        let mut frames = Vec::new();
        let mut topics_changed = false;
        for request in &requests {
            let response = match request {
                Request::CreateTopic {
                    name,
                    partitions,
                    config,
                } => Some(Response::CreateTopic(
                    self.state
                        .create_topic(name, *partitions, Uuid::new_v4(), *config)
                        .map(|record| {
                            self.append(&record, &mut frames);
                            topics_changed = true;
                            Arc::new(self.state.topic_meta(name).expect("just created"))
                        }),
                )),
                Request::CreatePartitions {
                    topic_id,
                    name,
                    total_partitions,
                } => Some(Response::CreatePartitions(
                    self.state
                        .create_partitions(*topic_id, name, *total_partitions)
                        .map(|record| {
                            if let Some(record) = record {
                                self.append(&record, &mut frames);
                                topics_changed = true;
                            }
                        }),
                )),
                Request::DeleteTopic { name } => Some(Response::DeleteTopic(
                    self.state.delete_topic(name, now_ms).map(|record| {
                        self.append(&record, &mut frames);
                        topics_changed = true;
                        match record {
                            Record::TopicDeleted { id, .. } => id,
                            _ => unreachable!("delete_topic returns TopicDeleted"),
                        }
                    }),
                )),
                Request::CommitFile {
                    object_key,
                    batches,
                } => {
                    let (results, record) = self.state.commit_file(object_key, batches, now_ms);
                    let accepted = results
                        .iter()
                        .filter(|r| r.error.is_none() && !r.is_duplicate)
                        .count();
                    CoordinatorMetrics::add(&self.metrics.batches_committed, accepted as u64);
                    if let Some(record) = record {
                        self.append(&record, &mut frames);
                    }
                    Some(Response::CommitFile(Ok(results)))
                }
                Request::DeleteRecords { partitions } => {
                    let mut results = Vec::with_capacity(partitions.len());
                    for (tp, offset) in partitions {
                        results.push(self.state.delete_records(*tp, *offset, now_ms).map(
                            |(log_start_offset, record)| {
                                if let Some(record) = record {
                                    self.append(&record, &mut frames);
                                }
                                log_start_offset
                            },
                        ));
                    }
                    Some(Response::DeleteRecords(results))
                }
                Request::InitProducerId => {
                    let record = self.state.allocate_producer_id();
                    self.append(&record, &mut frames);
                    let Record::ProducerIdAllocated { producer_id } = record else {
                        unreachable!("allocate_producer_id returns ProducerIdAllocated")
                    };
                    Some(Response::InitProducerId {
                        producer_id,
                        producer_epoch: 0,
                    })
                }
                Request::EnforceRetention {
                    max_batches,
                    producer_expiration_ms,
                } => {
                    let idle_before_ms = now_ms.saturating_sub(*producer_expiration_ms);
                    let mut records = self.state.retention_records(now_ms, *max_batches);
                    records.extend(
                        self.state
                            .producer_expiry_records(idle_before_ms, *max_batches),
                    );
                    for record in &records {
                        self.append(record, &mut frames);
                    }
                    Some(Response::RetentionEnforced {
                        partitions_trimmed: records.len(),
                    })
                }
                Request::FilesDeleted { object_keys } => {
                    let record = Record::FilesDeleted {
                        object_keys: object_keys.clone(),
                    };
                    self.append(&record, &mut frames);
                    Some(Response::FilesDeleted)
                }
                Request::AlterTopicConfig { name, config } => Some(Response::AlterTopicConfig(
                    self.state.alter_topic_config(name, *config).map(|record| {
                        if let Some(record) = record {
                            self.append(&record, &mut frames);
                            topics_changed = true;
                        }
                    }),
                )),
                Request::CommitOffsets { group, offsets } => {
                    let (results, record) = self.state.commit_offsets(group, offsets, now_ms);
                    if let Some(record) = record {
                        self.append(&record, &mut frames);
                    }
                    Some(Response::CommitOffsets(results))
                }
                Request::DeleteGroupOffsets { group, partitions } => {
                    let (existed, record) = match partitions {
                        Some(partitions) => self.state.delete_offsets(group, partitions),
                        None => {
                            let record = self.state.delete_group(group);
                            (record.is_some(), record)
                        }
                    };
                    if let Some(record) = record {
                        self.append(&record, &mut frames);
                    }
                    Some(Response::GroupOffsetsDeleted(existed))
                }
                Request::ExpireOffsets {
                    retention_ms,
                    active,
                    max,
                } => {
                    let before_ms = now_ms.saturating_sub(*retention_ms);
                    let records = self.state.offset_expiry_records(before_ms, active, *max);
                    for record in &records {
                        self.append(record, &mut frames);
                    }
                    Some(Response::OffsetsExpired(records.len()))
                }
                Request::ListOffsets { .. }
                | Request::FindBatches { .. }
                | Request::DescribeFiles { .. }
                | Request::ExpiredFiles { .. }
                | Request::FetchOffsets { .. }
                | Request::ListOffsetGroups
                | Request::DescribeProducers { .. }
                | Request::ListMirrors
                | Request::DescribeMirror { .. }
                | Request::LastMirroredOffsets { .. } => None,
                mirror_write => {
                    self.mirror_write(mirror_write, now_ms, &mut frames, &mut topics_changed)
                }
            };
            responses.push(response);
        }
        let writes = requests.iter().filter(|r| r.is_write()).count() as u64;
        CoordinatorMetrics::add(&self.metrics.write_requests, writes);
        CoordinatorMetrics::add(&self.metrics.read_requests, requests.len() as u64 - writes);
        if !frames.is_empty() {
            self.log.append_durable(frames).await?;
            CoordinatorMetrics::add(&self.metrics.log_syncs, 1);
            if self.log.size_bytes() >= self.snapshot_log_bytes {
                // The logs alone still recover everything: a failed snapshot costs only time.
                if let Err(e) = self.snapshot().await {
                    tracing::warn!(error = %e, "coordinator snapshot failed");
                }
            }
        }
        if topics_changed {
            self.view.store(Arc::new(self.state.topics_view()));
        }
        for (request, slot) in requests.iter().zip(responses.iter_mut()) {
            match request {
                Request::ListOffsets { partitions } => {
                    *slot = Some(Response::ListOffsets(
                        partitions
                            .iter()
                            .map(|(tp, ts)| self.state.list_offsets(*tp, *ts))
                            .collect(),
                    ))
                }
                Request::FindBatches {
                    partitions,
                    max_bytes,
                } => {
                    *slot = Some(Response::FindBatches(
                        self.state.find_batches(partitions, *max_bytes),
                    ))
                }
                Request::DescribeFiles { object_keys } => {
                    *slot = Some(Response::DescribeFiles(
                        object_keys
                            .iter()
                            .map(|key| self.state.has_live_batches(key))
                            .collect(),
                    ))
                }
                Request::ExpiredFiles { older_than_ms, max } => {
                    *slot = Some(Response::ExpiredFiles(
                        self.state.expired_deletable_files(*older_than_ms, *max),
                    ))
                }
                Request::FetchOffsets { group, partitions } => {
                    *slot = Some(Response::FetchOffsets(
                        self.state.fetch_offsets(group, partitions.as_deref()),
                    ))
                }
                Request::DescribeProducers { partitions } => {
                    *slot = Some(Response::DescribeProducers(
                        partitions
                            .iter()
                            .map(|tp| self.state.describe_producers(*tp))
                            .collect(),
                    ))
                }
                Request::ListMirrors
                | Request::DescribeMirror { .. }
                | Request::LastMirroredOffsets { .. } => *slot = self.mirror_read(request),
                Request::ListOffsetGroups => {
                    *slot = Some(Response::OffsetGroups(self.state.offset_groups()))
                }
                _ => {}
            }
        }
        Ok(responses
            .into_iter()
            .map(|r| r.expect("every request answered"))
            .collect())
    }

    pub(crate) fn append(&mut self, record: &Record, frames: &mut Vec<u8>) {
        record.encode_frame(frames);
        self.state.apply(record);
    }

    /// Counts into `metrics`, shared with whoever reports them.
    pub fn with_metrics(mut self, metrics: Arc<CoordinatorMetrics>) -> Self {
        self.metrics = metrics;
        self
    }

    pub fn state(&self) -> &CoordinatorState {
        &self.state
    }
}
