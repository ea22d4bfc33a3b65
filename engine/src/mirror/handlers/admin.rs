//! CreateMirror, AddTopicsToMirror, RemoveTopicsFromMirror, Pause/ResumeMirrorTopics.

use std::time::Duration;

use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::acl::Operation;
use shoal_coordinator::commands::{
    AddTopicsToMirror, CreateMirror, DescribeMirror, PauseMirrorTopics, RemoveTopicsFromMirror,
    TopicAnswers,
};
use shoal_coordinator::Command;
use shoal_coordinator::{ErrorKind, MirroredTopic};
use shoal_protocol::messages::metadata_request::MetadataRequestTopic;
use shoal_protocol::messages::{MetadataRequest, MetadataResponse, TopicName};
use shoal_protocol::mirror as m;
use shoal_protocol::{MirrorCode, ResponseError};

use crate::context::Broker;
use crate::context::Call;
use crate::kafka::error_codes;
use shoal_mirror_fetcher::client::SourceClient;

/// Kafka's NETWORK_EXCEPTION: the source cluster did not answer.
pub const NETWORK_EXCEPTION: i16 = 13;
const SOURCE_TIMEOUT: Duration = Duration::from_secs(10);
const METADATA_RESPONSE_MAX_BYTES: usize = 64 << 20;

pub async fn create(call: &Call<'_>, r: m::CreateMirrorRequest) -> m::CreateMirrorResponse {
    if !call.authorized_on_cluster(Operation::Alter) {
        return m::CreateMirrorResponse {
            error_code: ResponseError::ClusterAuthorizationFailed.code(),
            ..Default::default()
        };
    }
    let broker = call.broker;
    let config = r
        .configs
        .into_iter()
        .map(|c| (c.name, c.value.unwrap_or_default()))
        .collect();
    let request = CreateMirror {
        name: r.mirror_name,
        config,
    };
    let error = match broker.shard.coordinator.run(request).await {
        Ok(result) => result.err(),
        _ => Some(ErrorKind::NotAvailable),
    };
    m::CreateMirrorResponse {
        throttle_time_ms: 0,
        error_code: error_codes::code_of(error),
        error_message: error.map(|e| match e {
            ErrorKind::Mirror(e) => e.to_string(),
            other => error_codes::message_of(other).to_string(),
        }),
    }
}

/// Asks the source for each topic's partition count and id, then makes the local mirror
/// topics.
pub async fn add_topics(
    call: &Call<'_>,
    r: m::AddTopicsToMirrorRequest,
) -> m::AddTopicsToMirrorResponse {
    if !call.authorized_on_cluster(Operation::Alter) {
        return m::AddTopicsToMirrorResponse {
            error_code: ResponseError::ClusterAuthorizationFailed.code(),
            ..Default::default()
        };
    }
    let broker = call.broker;
    let names: Vec<String> = r.topics.into_iter().map(|t| t.name).collect();
    let respond = |error_code: i16, results: Vec<i16>| m::AddTopicsToMirrorResponse {
        throttle_time_ms: 0,
        error_code,
        topics: names
            .iter()
            .zip(results.into_iter().chain(std::iter::repeat(error_code)))
            .map(
                |(name, error_code)| m::add_topics_to_mirror_response::TopicResult {
                    name: name.clone(),
                    error_code,
                },
            )
            .collect(),
    };
    let config = match broker
        .shard
        .coordinator
        .run(DescribeMirror {
            name: r.mirror_name.clone(),
        })
        .await
    {
        Ok(Some(d)) => d.config,
        Ok(None) => return respond(MirrorCode::UnknownMirror as i16, vec![]),
        _ => return respond(error_codes::code_of(Some(ErrorKind::NotAvailable)), vec![]),
    };
    let source = match source_topics(&config, &names).await {
        Ok(source) => source,
        Err(e) => {
            tracing::warn!(mirror = %r.mirror_name, error = %e, "source cluster unreachable (check bootstrap.servers, the network and the security settings)");
            return respond(NETWORK_EXCEPTION, vec![]);
        }
    };
    let mut found = Vec::new();
    let mut results = vec![error_codes::NONE; names.len()];
    for (i, topic) in source.into_iter().enumerate() {
        match topic {
            Ok(topic) => found.push((i, topic)),
            Err(code) => results[i] = code,
        }
    }
    let request = AddTopicsToMirror {
        mirror: r.mirror_name,
        topics: found.iter().map(|(_, t)| t.clone()).collect(),
    };
    match broker.shard.coordinator.run(request).await {
        Ok(answers) if answers.len() == found.len() => {
            for ((i, _), answer) in found.iter().zip(answers) {
                results[*i] = error_codes::code_of(answer.err());
            }
        }
        _ => {
            for (i, _) in &found {
                results[*i] = error_codes::code_of(Some(ErrorKind::NotAvailable));
            }
        }
    }
    respond(error_codes::NONE, results)
}

/// Each topic's partition count and id on the source, or its error code there.
async fn source_topics(
    source: &shoal_mirror::MirrorConfig,
    names: &[String],
) -> Result<Vec<Result<MirroredTopic, i16>>, crate::EngineError> {
    let mut client =
        SourceClient::connect(source, SOURCE_TIMEOUT, METADATA_RESPONSE_MAX_BYTES).await?;
    let request = MetadataRequest::default()
        .with_topics(Some(
            names
                .iter()
                .map(|n| {
                    MetadataRequestTopic::default()
                        .with_name(Some(TopicName(StrBytes::from_string(n.clone()))))
                })
                .collect(),
        ))
        .with_allow_auto_topic_creation(false);
    let response: MetadataResponse = client.call(12, &request, Duration::ZERO).await?;
    Ok(names
        .iter()
        .map(|name| {
            let topic = response
                .topics
                .iter()
                .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == name))
                .ok_or(ResponseError::UnknownTopicOrPartition.code())?;
            if topic.error_code != error_codes::NONE {
                return Err(topic.error_code);
            }
            Ok(MirroredTopic {
                name: name.clone(),
                partitions: topic.partitions.len() as i32,
                source_topic_id: topic.topic_id,
            })
        })
        .collect())
}

pub async fn remove_topics(
    call: &Call<'_>,
    r: m::RemoveTopicsFromMirrorRequest,
) -> m::RemoveTopicsFromMirrorResponse {
    if !call.authorized_on_cluster(Operation::Alter) {
        return m::RemoveTopicsFromMirrorResponse {
            error_code: ResponseError::ClusterAuthorizationFailed.code(),
            ..Default::default()
        };
    }
    let broker = call.broker;
    let names: Vec<String> = r.topics.into_iter().map(|t| t.name).collect();
    let request = RemoveTopicsFromMirror {
        mirror: r.mirror_name,
        topics: names.clone(),
    };
    let answers = topic_answers(broker, request, names.len()).await;
    m::RemoveTopicsFromMirrorResponse {
        throttle_time_ms: 0,
        error_code: error_codes::NONE,
        topics: names
            .into_iter()
            .zip(answers)
            .map(
                |(name, error_code)| m::remove_topics_from_mirror_response::TopicResult {
                    name,
                    error_code,
                },
            )
            .collect(),
    }
}

pub async fn pause(
    call: &Call<'_>,
    request: m::PauseMirrorTopicsRequest,
) -> m::PauseMirrorTopicsResponse {
    if !call.authorized_on_cluster(Operation::Alter) {
        return m::PauseMirrorTopicsResponse {
            error_code: ResponseError::ClusterAuthorizationFailed.code(),
            ..Default::default()
        };
    }
    let topics = request.topics.into_iter().map(|t| t.topic_name).collect();
    let answers = pause_or_resume(call.broker, topics, true).await;
    m::PauseMirrorTopicsResponse {
        throttle_time_ms: 0,
        error_code: error_codes::NONE,
        topics: answers
            .into_iter()
            .map(
                |(name, error_code)| m::pause_mirror_topics_response::TopicResult {
                    name,
                    error_code,
                },
            )
            .collect(),
    }
}

pub async fn resume(
    call: &Call<'_>,
    request: m::ResumeMirrorTopicsRequest,
) -> m::ResumeMirrorTopicsResponse {
    if !call.authorized_on_cluster(Operation::Alter) {
        return m::ResumeMirrorTopicsResponse {
            error_code: ResponseError::ClusterAuthorizationFailed.code(),
            ..Default::default()
        };
    }
    let topics = request.topics.into_iter().map(|t| t.topic_name).collect();
    let answers = pause_or_resume(call.broker, topics, false).await;
    m::ResumeMirrorTopicsResponse {
        throttle_time_ms: 0,
        error_code: error_codes::NONE,
        topics: answers
            .into_iter()
            .map(
                |(name, error_code)| m::resume_mirror_topics_response::TopicResult {
                    name,
                    error_code,
                },
            )
            .collect(),
    }
}

/// Pause (or resume) each topic; the answers in request order.
async fn pause_or_resume(broker: &Broker, topics: Vec<String>, pause: bool) -> Vec<(String, i16)> {
    let request = PauseMirrorTopics {
        topics: topics.clone(),
        pause,
    };
    let answers = topic_answers(broker, request, topics.len()).await;
    topics.into_iter().zip(answers).collect()
}

async fn topic_answers<C: Command<Reply = TopicAnswers>>(
    broker: &Broker,
    request: C,
    count: usize,
) -> Vec<i16> {
    match broker.shard.coordinator.run(request).await {
        Ok(answers) if answers.len() == count => answers
            .into_iter()
            .map(|a| error_codes::code_of(a.err()))
            .collect(),
        _ => vec![error_codes::code_of(Some(ErrorKind::NotAvailable)); count],
    }
}
