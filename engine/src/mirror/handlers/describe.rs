//! ListMirrors and DescribeMirrors (per-partition state, source and destination offsets, lag).

use shoal_coordinator::acl::Operation;
use shoal_coordinator::commands::{DescribeMirror, ListMirrors};
use shoal_coordinator::TopicPartition;
use shoal_coordinator::{ErrorKind, MirroredPartition};
use shoal_protocol::mirror as m;
use shoal_protocol::{MirrorCode, ResponseError};
use shoal_shards::mirror::progress::SourceOffsets;

use crate::context::Broker;
use crate::context::Call;
use crate::kafka::error_codes;

pub async fn list(call: &Call<'_>, _request: m::ListMirrorsRequest) -> m::ListMirrorsResponse {
    if !call.authorized_on_cluster(Operation::Describe) {
        return m::ListMirrorsResponse {
            error_code: ResponseError::ClusterAuthorizationFailed.code(),
            ..Default::default()
        };
    }
    let broker = call.broker;
    match broker.shard.coordinator.run(ListMirrors).await {
        Ok(mirrors) => m::ListMirrorsResponse {
            throttle_time_ms: 0,
            error_code: error_codes::NONE,
            mirrors: mirrors
                .into_iter()
                .map(|(mirror_name, source_bootstrap, topic_count)| {
                    m::list_mirrors_response::ListedMirror {
                        mirror_name,
                        source_bootstrap,
                        topic_count,
                    }
                })
                .collect(),
        },
        _ => m::ListMirrorsResponse {
            throttle_time_ms: 0,
            error_code: error_codes::code_of(Some(ErrorKind::NotAvailable)),
            mirrors: Vec::new(),
        },
    }
}

pub async fn describe(call: &Call<'_>, r: m::DescribeMirrorsRequest) -> m::DescribeMirrorsResponse {
    if !call.authorized_on_cluster(Operation::Describe) {
        // No top-level error code: each named mirror is answered as denied.
        let mirrors = r
            .mirror_names
            .into_iter()
            .map(
                |mirror_name| m::describe_mirrors_response::DescribedMirror {
                    mirror_name,
                    error_code: ResponseError::ClusterAuthorizationFailed.code(),
                    ..Default::default()
                },
            )
            .collect();
        return m::DescribeMirrorsResponse {
            throttle_time_ms: 0,
            mirrors,
        };
    }
    let broker = call.broker;
    let names = if r.mirror_names.is_empty() {
        match broker.shard.coordinator.run(ListMirrors).await {
            Ok(mirrors) => mirrors.into_iter().map(|m| m.0).collect(),
            _ => Vec::new(),
        }
    } else {
        r.mirror_names
    };
    let mut mirrors = Vec::with_capacity(names.len());
    for name in names {
        let request = DescribeMirror { name: name.clone() };
        let described = match broker.shard.coordinator.run(request).await {
            Ok(d) => d.ok_or(MirrorCode::UnknownMirror as i16),
            _ => Err(error_codes::code_of(Some(ErrorKind::NotAvailable))),
        };
        let (error_code, topics) = match described {
            Ok(d) => (error_codes::NONE, described_topics(broker, d.topics).await),
            Err(code) => (code, Vec::new()),
        };
        mirrors.push(m::describe_mirrors_response::DescribedMirror {
            error_code,
            mirror_name: name,
            topics,
            authorized_operations: i32::MIN,
        });
    }
    m::DescribeMirrorsResponse {
        throttle_time_ms: 0,
        mirrors,
    }
}

/// Each topic's partitions with their source offsets, asked of the shards that fetch them.
async fn described_topics(
    broker: &Broker,
    topics: Vec<(String, Vec<MirroredPartition>)>,
) -> Vec<m::describe_mirrors_response::TopicPartitions> {
    let all: Vec<TopicPartition> = topics
        .iter()
        .flat_map(|(_, partitions)| partitions.iter().map(|p| p.partition))
        .collect();
    let mut sources = broker.shard.mirror_sources(all).await.into_iter();
    topics
        .into_iter()
        .map(
            |(topic_name, partitions)| m::describe_mirrors_response::TopicPartitions {
                topic_name,
                partitions: partitions
                    .iter()
                    .map(|p| detail(p, sources.next().flatten()))
                    .collect(),
            },
        )
        .collect()
}

fn detail(
    p: &MirroredPartition,
    source: Option<SourceOffsets>,
) -> m::describe_mirrors_response::PartitionDetail {
    let source = source.map_or(-1, |s| s.high_watermark);
    let lag = if source >= 0 {
        (source - p.high_watermark).max(0)
    } else {
        -1
    };
    let mut state = p.mirror.state.name().to_string();
    if p.mirror.paused {
        state.push_str(" (PAUSED)");
    }
    m::describe_mirrors_response::PartitionDetail {
        partition_index: p.partition.partition,
        source_offset: source,
        destination_offset: p.high_watermark,
        lag,
        state,
    }
}
