//! Transactions through the handlers: KIP-360's epoch bump while a transaction is open, and
//! what a stale epoch gets afterwards.

use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::commands::DescribeTransactions;
use shoal_coordinator::TransactionStatus;
use shoal_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use shoal_protocol::messages::{
    AddPartitionsToTxnRequest, InitProducerIdRequest, ProducerId, TransactionalId,
};

use super::*;
use crate::context::{Broker, ClientInfo};
use crate::handlers::init_producer_id;
use crate::handlers::transactions::add_partitions;

const PRODUCER_FENCED: i16 = 90;

async fn init(broker: &Broker, expected: Option<(i64, i16)>) -> (i16, i64, i16) {
    let client = ClientInfo::default();
    let (producer_id, epoch) = expected.unwrap_or((-1, -1));
    let request = InitProducerIdRequest::default()
        .with_transactional_id(Some(TransactionalId(StrBytes::from_static_str("t"))))
        .with_transaction_timeout_ms(60_000)
        .with_producer_id(ProducerId(producer_id))
        .with_producer_epoch(epoch);
    let answer =
        init_producer_id::handle(&call::<InitProducerIdRequest>(broker, 4, &client), request).await;
    (
        answer.error_code,
        answer.producer_id.0,
        answer.producer_epoch,
    )
}

#[test]
fn a_kip_360_bump_ends_the_open_transaction_and_fences_the_old_epoch() {
    let dir = temp_dir("kip360");
    run_broker(test_config(&dir), |broker| async move {
        create_topic(&broker, "bumped", 1).await;
        let (error, producer_id, epoch) = init(&broker, None).await;
        assert_eq!((error, epoch), (0, 0));
        let client = ClientInfo::default();
        let add = AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(TransactionalId(StrBytes::from_static_str("t")))
            .with_v3_and_below_producer_id(ProducerId(producer_id))
            .with_v3_and_below_producer_epoch(epoch)
            .with_v3_and_below_topics(vec![AddPartitionsToTxnTopic::default()
                .with_name(topic_name("bumped"))
                .with_partitions(vec![0])]);
        let added =
            add_partitions::handle(&call::<AddPartitionsToTxnRequest>(&broker, 3, &client), add)
                .await;
        assert_eq!(
            added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code,
            0
        );
        // The client names the epoch it holds: the open transaction is aborted (at epoch 1)
        // and the producer gets the epoch after that, not PRODUCER_FENCED.
        let (error, same_id, bumped) = init(&broker, Some((producer_id, epoch))).await;
        assert_eq!((error, same_id, bumped), (0, producer_id, 2));
        let described = broker
            .shard
            .coordinator
            .run(DescribeTransactions {
                transactional_ids: vec!["t".into()],
            })
            .await
            .unwrap();
        let t = described[0].as_ref().expect("known");
        assert_eq!((t.status, t.producer_epoch), (TransactionStatus::Empty, 2));
        // The epoch it held before is fenced.
        let (error, _, _) = init(&broker, Some((producer_id, epoch))).await;
        assert_eq!(error, PRODUCER_FENCED);
    });
}
