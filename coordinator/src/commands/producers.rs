//! Idempotent producers: ids, and their state per partition.

use crate::command::{Command, Round};
use crate::messages::{ProducerSummary, TopicPartition};
use crate::ErrorKind;

/// InitProducerId: a producer id never handed out before, at epoch 0.
#[derive(Debug, Clone)]
pub struct InitProducerId;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerIdentity {
    pub producer_id: i64,
    pub producer_epoch: i16,
}

impl Command for InitProducerId {
    type Reply = ProducerIdentity;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let (producer_id, entry) = round.state().allocate_producer_id(round.now_ms());
        round.append(&entry);
        ProducerIdentity {
            producer_id,
            producer_epoch: 0,
        }
    }
}

/// DescribeProducers: each partition's idempotent producers.
#[derive(Debug, Clone)]
pub struct DescribeProducers {
    pub partitions: Vec<TopicPartition>,
}

impl Command for DescribeProducers {
    type Reply = Vec<Result<Vec<ProducerSummary>, ErrorKind>>;
    const WRITE: bool = false;
    const FRESH: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        self.partitions
            .iter()
            .map(|tp| round.state().describe_producers(*tp))
            .collect()
    }
}
