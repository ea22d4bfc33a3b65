//! The coordinator core's handling of mirror requests: writes append their records in the
//! round (like every write), reads are answered after the round's fsync.

use uuid::Uuid;

use crate::core::CoordinatorCore;
use crate::messages::{MirrorDescription, Request, Response};
use crate::records::Record;

impl CoordinatorCore {
    /// Mirror writes. None for any other request.
    pub(crate) fn mirror_write(
        &mut self,
        request: &Request,
        now_ms: i64,
        frames: &mut Vec<u8>,
        topics_changed: &mut bool,
    ) -> Option<Response> {
        let mut append_all = |core: &mut CoordinatorCore, records: Vec<Record>| {
            for record in &records {
                core.append(record, frames);
            }
            *topics_changed = true;
        };
        Some(match request {
            Request::CreateMirror { name, config } => Response::CreateMirror(
                self.state
                    .create_mirror(name, config)
                    .map(|record| append_all(self, vec![record])),
            ),
            Request::AddTopicsToMirror { mirror, topics } => Response::MirrorTopics(
                topics
                    .iter()
                    .map(|topic| {
                        self.state
                            .add_topic_to_mirror(mirror, topic, Uuid::new_v4())
                            .map(|records| append_all(self, records))
                    })
                    .collect(),
            ),
            Request::RemoveTopicsFromMirror { mirror, topics } => Response::MirrorTopics(
                topics
                    .iter()
                    .map(|name| {
                        self.state
                            .remove_topic_from_mirror(mirror, name)
                            .map(|records| append_all(self, records))
                    })
                    .collect(),
            ),
            Request::PauseMirrorTopics { topics, pause } => Response::MirrorTopics(
                topics
                    .iter()
                    .map(|name| {
                        self.state
                            .pause_mirror_topic(name, *pause)
                            .map(|record| append_all(self, vec![record]))
                    })
                    .collect(),
            ),
            Request::SyncMirrorTopic {
                name,
                partitions,
                config,
            } => Response::MirrorTopics(vec![self
                .state
                .sync_mirror_topic(name, *partitions, *config)
                .map(|records| append_all(self, records))]),
            Request::MirrorEvent { partition, event } => {
                Response::MirrorEvent(self.state.mirror_event(*partition, *event, now_ms).map(
                    |(mirror, record)| {
                        if let Some(record) = record {
                            append_all(self, vec![record]);
                        }
                        mirror
                    },
                ))
            }
            Request::CommitMirrored {
                object_key,
                batches,
            } => {
                let (results, record) = self.state.commit_mirrored(object_key, batches, now_ms);
                if let Some(record) = record {
                    self.append(&record, frames);
                }
                Response::CommitMirrored(results)
            }
            Request::Truncate { partition, offset } => {
                Response::Truncated(self.state.truncate(*partition, *offset, now_ms).map(
                    |record| {
                        if let Some(record) = record {
                            self.append(&record, frames);
                        }
                    },
                ))
            }
            _ => return None,
        })
    }

    /// Mirror reads. None for any other request.
    pub(crate) fn mirror_read(&self, request: &Request) -> Option<Response> {
        Some(match request {
            Request::ListMirrors => Response::ListMirrors(self.state.list_mirrors()),
            Request::DescribeMirror { name } => Response::DescribeMirror(
                self.state
                    .mirror_config(name)
                    .zip(self.state.mirror_partitions(name))
                    .map(|(config, topics)| MirrorDescription { config, topics }),
            ),
            Request::LastMirroredOffsets { mirror, partitions } => Response::LastMirroredOffsets(
                partitions
                    .iter()
                    .map(|(topic, p)| self.state.last_mirrored_offset(mirror, topic, *p))
                    .collect(),
            ),
            _ => return None,
        })
    }
}
