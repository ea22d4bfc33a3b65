//! The KIP-1279 APIs: mirror administration (create, add/remove topics, pause/resume), what
//! operators read (list, describe) and the state exchanges between clusters (last mirrored
//! offsets, read/write states).

mod admin;
mod describe;
mod states;

use super::messages as m;
use crate::diskless::wire::WireEncode;
use crate::handlers::{Broker, MirrorRequest};

/// Answers one mirror request with its encoded response body.
pub async fn handle(broker: &Broker, request: MirrorRequest) -> Box<dyn WireEncode> {
    match request {
        MirrorRequest::Create(r) => Box::new(admin::create(broker, r).await),
        MirrorRequest::AddTopics(r) => Box::new(admin::add_topics(broker, r).await),
        MirrorRequest::RemoveTopics(r) => Box::new(admin::remove_topics(broker, r).await),
        MirrorRequest::Pause(r) => {
            let topics = r.topics.into_iter().map(|t| t.topic_name).collect();
            Box::new(m::PauseMirrorTopicsResponse::from(
                admin::pause(broker, topics, true).await,
            ))
        }
        MirrorRequest::Resume(r) => {
            let topics = r.topics.into_iter().map(|t| t.topic_name).collect();
            let (error_code, topics) = admin::pause(broker, topics, false).await;
            Box::new(m::ResumeMirrorTopicsResponse {
                throttle_time_ms: 0,
                error_code,
                topics: topics
                    .into_iter()
                    .map(
                        |(name, error_code)| m::resume_mirror_topics_response::TopicResult {
                            name,
                            error_code,
                        },
                    )
                    .collect(),
            })
        }
        MirrorRequest::List(_) => Box::new(describe::list(broker).await),
        MirrorRequest::Describe(r) => Box::new(describe::describe(broker, r).await),
        MirrorRequest::LastMirroredOffsets(r) => {
            Box::new(states::last_mirrored_offsets(broker, r).await)
        }
        MirrorRequest::ReadStates(r) => Box::new(states::read(broker, r).await),
        MirrorRequest::WriteStates(r) => Box::new(states::write(broker, r).await),
    }
}

impl From<(i16, Vec<(String, i16)>)> for m::PauseMirrorTopicsResponse {
    fn from((error_code, topics): (i16, Vec<(String, i16)>)) -> Self {
        m::PauseMirrorTopicsResponse {
            throttle_time_ms: 0,
            error_code,
            topics: topics
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
}
