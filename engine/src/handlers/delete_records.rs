use shoal_coordinator::commands::DeleteRecords;
use shoal_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use shoal_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse};

use super::topics::{partition_values, permitted, Answers};
use crate::context::Call;
use crate::kafka::error_codes;
use shoal_coordinator::acl::Operation;

pub async fn handle(call: &Call<'_>, request: DeleteRecordsRequest) -> DeleteRecordsResponse {
    let broker = call.broker;
    let view = broker.shard.topics.load();
    let targets = partition_values(
        &request.topics,
        |t| permitted(call, &view, t.name.0.as_str(), Operation::Delete).ok(),
        |t| &t.partitions,
        |p| (p.partition_index, p.offset),
    );
    let results = match broker
        .shard
        .coordinator
        .run(DeleteRecords {
            partitions: targets.clone(),
        })
        .await
    {
        Ok(results) if results.len() == targets.len() => Some(results),
        _ => None,
    };
    let mut results = Answers::new(results);
    let mut response = DeleteRecordsResponse::default();
    for topic in request.topics {
        let known = permitted(call, &view, topic.name.0.as_str(), Operation::Delete);
        let partitions = topic
            .partitions
            .iter()
            .map(|p| {
                let result = results.next(known).and_then(|r| r);
                let answer =
                    DeleteRecordsPartitionResult::default().with_partition_index(p.partition_index);
                match result {
                    Ok(low_watermark) => answer.with_low_watermark(low_watermark),
                    Err(e) => answer
                        .with_low_watermark(-1)
                        .with_error_code(error_codes::code_of(Some(e))),
                }
            })
            .collect();
        response.topics.push(
            DeleteRecordsTopicResult::default()
                .with_name(topic.name)
                .with_partitions(partitions),
        );
    }
    response
}
