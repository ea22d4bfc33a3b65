use shoal_coordinator::commands::DescribeFiles;
use shoal_protocol::diskless::*;
use shoal_protocol::ResponseError;

use crate::context::Call;
use crate::kafka::error_codes;

pub async fn describe_files(
    call: &Call<'_>,
    request: DisklessDescribeFilesRequest,
) -> DisklessDescribeFilesResponse {
    let broker = call.broker;
    let keys: Vec<String> = request.files.iter().map(|f| f.object_key.clone()).collect();
    let count = keys.len();
    let call = DescribeFiles {
        object_keys: keys.clone(),
    };
    let live = match broker.shard.coordinator.run(call).await {
        Ok(live) if live.len() == count => Some(live),
        _ => None,
    };
    let files = keys
        .into_iter()
        .enumerate()
        .map(|(i, object_key)| match &live {
            Some(live) => DisklessDescribeFileResult {
                object_key,
                error_code: error_codes::NONE,
                error_message: None,
                has_live_batches: live[i],
            },
            None => DisklessDescribeFileResult {
                object_key,
                error_code: ResponseError::LeaderNotAvailable.code(),
                error_message: Some("the coordinator is not available".into()),
                has_live_batches: false,
            },
        })
        .collect();
    DisklessDescribeFilesResponse {
        files,
        ..Default::default()
    }
}
