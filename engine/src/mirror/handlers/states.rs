//! LastMirroredOffsets (asked by a cluster that fails back to this one) and Read/Write
//! MirrorStates. In a single-broker cluster the coordinator owns the states, so a write is
//! accepted only where it agrees with them or removes topics.

use std::collections::HashMap;

use shoal_coordinator::acl::Operation;
use shoal_coordinator::commands::{DescribeMirror, LastMirroredOffsets, RemoveTopicsFromMirror};
use shoal_coordinator::ErrorKind;
use shoal_protocol::mirror as m;
use shoal_protocol::{MirrorCode, ResponseError};

use crate::context::Broker;
use crate::context::Call;
use crate::kafka::error_codes;

pub async fn last_mirrored_offsets(
    call: &Call<'_>,
    r: m::LastMirroredOffsetsRequest,
) -> m::LastMirroredOffsetsResponse {
    if !call.authorized_on_cluster(Operation::Describe) {
        return m::LastMirroredOffsetsResponse {
            error_code: ResponseError::ClusterAuthorizationFailed.code(),
            ..Default::default()
        };
    }
    let broker = call.broker;
    let partitions: Vec<(String, i32)> = r
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.clone(), p.partition_index))
        })
        .collect();
    let count = partitions.len();
    let request = LastMirroredOffsets {
        mirror: r.mirror_name,
        partitions,
    };
    let (error_code, offsets) = match broker.shard.coordinator.run(request).await {
        Ok(offsets) if offsets.len() == count => (error_codes::NONE, offsets),
        _ => (
            error_codes::code_of(Some(ErrorKind::NotAvailable)),
            vec![0; count],
        ),
    };
    let mut offsets = offsets.into_iter();
    m::LastMirroredOffsetsResponse {
        throttle_time_ms: 0,
        error_code,
        topics: r
            .topics
            .into_iter()
            .map(|t| m::last_mirrored_offsets_response::TopicResult {
                name: t.name,
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| m::last_mirrored_offsets_response::PartitionResult {
                        partition_index: p.partition_index,
                        last_mirrored_offset: offsets.next().unwrap_or(0),
                        error_code,
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// (state code, last mirrored offset) of each partition of the mirror, by (topic, partition).
async fn current_states(
    broker: &Broker,
    mirror: &str,
) -> Result<HashMap<(String, i32), (i8, i64)>, i16> {
    let request = DescribeMirror {
        name: mirror.to_string(),
    };
    match broker.shard.coordinator.run(request).await {
        Ok(Some(d)) => Ok(d
            .topics
            .into_iter()
            .flat_map(|(name, partitions)| {
                partitions.into_iter().map(move |p| {
                    (
                        (name.clone(), p.partition.partition),
                        (p.mirror.state.code(), p.mirror.last_mirrored_offset),
                    )
                })
            })
            .collect()),
        Ok(None) => Err(MirrorCode::UnknownMirror as i16),
        _ => Err(error_codes::code_of(Some(ErrorKind::NotAvailable))),
    }
}

pub async fn read(call: &Call<'_>, r: m::ReadMirrorStatesRequest) -> m::ReadMirrorStatesResponse {
    if !call.authorized_on_cluster(Operation::Describe) {
        return m::ReadMirrorStatesResponse {
            error_code: ResponseError::ClusterAuthorizationFailed.code(),
            ..Default::default()
        };
    }
    let broker = call.broker;
    let states = current_states(broker, &r.mirror_name).await;
    let error_code = states.as_ref().err().copied().unwrap_or(error_codes::NONE);
    let states = states.unwrap_or_default();
    m::ReadMirrorStatesResponse {
        throttle_time_ms: 0,
        error_code,
        topics: r
            .topics
            .into_iter()
            .map(|t| m::read_mirror_states_response::TopicResult {
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| {
                        let found = states.get(&(t.name.clone(), p.partition_index));
                        m::read_mirror_states_response::PartitionResult {
                            partition_index: p.partition_index,
                            last_mirrored_offset: found.map_or(-1, |f| f.1),
                            state: found.map_or(0, |f| f.0),
                            error_code: if found.is_some() {
                                error_codes::NONE
                            } else {
                                MirrorCode::TopicNotInMirror as i16
                            },
                        }
                    })
                    .collect(),
                name: t.name,
            })
            .collect(),
    }
}

pub async fn write(
    call: &Call<'_>,
    r: m::WriteMirrorStatesRequest,
) -> m::WriteMirrorStatesResponse {
    let broker = call.broker;
    let mut error_code = error_codes::NONE;
    if !r.removed_topics.is_empty() {
        let request = RemoveTopicsFromMirror {
            mirror: r.mirror_name.clone(),
            topics: r.removed_topics.clone(),
        };
        match broker.shard.coordinator.run(request).await {
            Ok(answers) => {
                if let Some(e) = answers.into_iter().find_map(Result::err) {
                    error_code = error_codes::code_of(Some(e));
                }
            }
            _ => error_code = error_codes::code_of(Some(ErrorKind::NotAvailable)),
        }
    }
    let states = current_states(broker, &r.mirror_name)
        .await
        .unwrap_or_default();
    m::WriteMirrorStatesResponse {
        throttle_time_ms: 0,
        error_code,
        topics: r
            .topics
            .into_iter()
            .map(|t| m::write_mirror_states_response::TopicResult {
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| {
                        let agrees = states.get(&(t.name.clone(), p.partition_index))
                            == Some(&(p.state, p.last_mirrored_offset));
                        m::write_mirror_states_response::PartitionResult {
                            partition_index: p.partition_index,
                            error_code: if agrees {
                                error_codes::NONE
                            } else {
                                ResponseError::InvalidRequest.code()
                            },
                        }
                    })
                    .collect(),
                name: t.name,
            })
            .collect(),
    }
}
