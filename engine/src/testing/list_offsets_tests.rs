//! ListOffsets through its handler at every version served: each answer encodes at its
//! version (a field set that the version lacks left ListOffsets v2 unanswered, so kcat and
//! librdkafka consumers waited for ever), and names the offset's leader epoch from v4 on.

use bytes::BytesMut;
use kafka_protocol::protocol::Encodable;
use shoal_coordinator::EARLIEST_TIMESTAMP;
use shoal_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use shoal_protocol::messages::{ListOffsetsRequest, ProduceRequest};

use super::*;
use crate::context::ClientInfo;
use crate::handlers::{list_offsets, produce};

#[test]
fn every_version_answers_and_names_the_leader_epoch_from_v4() {
    let dir = temp_dir("list-offsets");
    run_broker(test_config(&dir), |broker| async move {
        create_topic(&broker, "listed", 1).await;
        let client = ClientInfo::default();
        let request = produce_request("listed", 0, record_batch(&[b"v"]));
        produce::handle(&call::<ProduceRequest>(&broker, 9, &client), request).await;
        for version in 1..=10 {
            let request = ListOffsetsRequest::default()
                .with_replica_id(shoal_protocol::messages::BrokerId(-1))
                .with_topics(vec![ListOffsetsTopic::default()
                    .with_name(topic_name("listed"))
                    .with_partitions(vec![ListOffsetsPartition::default()
                        .with_partition_index(0)
                        .with_timestamp(EARLIEST_TIMESTAMP)])]);
            let call = call::<ListOffsetsRequest>(&broker, version, &client);
            let answer = list_offsets::handle(&call, request).await;
            let partition = &answer.topics[0].partitions[0];
            assert_eq!(
                (partition.error_code, partition.offset),
                (0, 0),
                "v{version}"
            );
            let epoch = if version >= 4 { 0 } else { -1 };
            assert_eq!(partition.leader_epoch, epoch, "v{version}");
            let mut encoded = BytesMut::new();
            answer
                .encode(&mut encoded, version)
                .unwrap_or_else(|e| panic!("v{version} does not encode: {e}"));
        }
    });
}
