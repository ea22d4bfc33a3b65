//! A share-partition's state as the coordinator's log keeps it (`ShoalShareStateRecord`):
//! Kafka's state codes, runs of records, and the version that orders the writes.

use shoal_coordinator::TopicPartition;
use shoal_protocol::records::{ShoalShareStateBatch, ShoalShareStateRecord};

use super::partition::{PersistedState, ShareState, StateBatch};

/// Kafka's record state codes (`RecordState`) for the states that are persisted.
const AVAILABLE: i8 = 0;
const ACKNOWLEDGED: i8 = 2;
const ARCHIVING: i8 = 3;
const ARCHIVED: i8 = 4;

/// The record of `state` for the group's share-partition, at `version`.
pub fn to_record(
    group_id: &str,
    partition: TopicPartition,
    version: i64,
    state: &ShareState,
) -> ShoalShareStateRecord {
    ShoalShareStateRecord {
        group_id: group_id.to_string(),
        topic_id: partition.topic_id,
        partition: partition.partition,
        state_version: version,
        deleted: false,
        start_offset: state.start_offset,
        batches: state
            .batches
            .iter()
            .map(|b| ShoalShareStateBatch {
                first_offset: b.first_offset,
                last_offset: b.last_offset,
                state: match b.state {
                    PersistedState::Available => AVAILABLE,
                    PersistedState::Acknowledged => ACKNOWLEDGED,
                    PersistedState::DeadLettering => ARCHIVING,
                    PersistedState::Archived => ARCHIVED,
                },
                delivery_count: b.deliveries as i16,
            })
            .collect(),
    }
}

/// The state a record holds, and its version. A run with an unknown state ends what is read
/// (the log's entries were checked when read, so that is a newer Shoal's state).
pub fn from_record(record: &ShoalShareStateRecord) -> (ShareState, i64) {
    let batches = record
        .batches
        .iter()
        .map_while(|b| {
            let state = match b.state {
                AVAILABLE => PersistedState::Available,
                ACKNOWLEDGED => PersistedState::Acknowledged,
                ARCHIVING => PersistedState::DeadLettering,
                ARCHIVED => PersistedState::Archived,
                _ => return None,
            };
            Some(StateBatch {
                first_offset: b.first_offset,
                last_offset: b.last_offset,
                state,
                deliveries: b.delivery_count.max(0) as u16,
            })
        })
        .collect();
    let state = ShareState {
        start_offset: record.start_offset,
        batches,
    };
    (state, record.state_version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    #[test]
    fn a_state_reads_back_as_written() {
        let state = ShareState {
            start_offset: 10,
            batches: vec![
                StateBatch {
                    first_offset: 10,
                    last_offset: 12,
                    state: PersistedState::Available,
                    deliveries: 2,
                },
                StateBatch {
                    first_offset: 13,
                    last_offset: 13,
                    state: PersistedState::Archived,
                    deliveries: 5,
                },
                StateBatch {
                    first_offset: 14,
                    last_offset: 15,
                    state: PersistedState::DeadLettering,
                    deliveries: 1,
                },
            ],
        };
        let tp = TopicPartition {
            topic_id: Uuid::from_u128(3),
            partition: 1,
        };
        let record = to_record("g", tp, 7, &state);
        assert_eq!(record.batches[1].state, ARCHIVED);
        assert_eq!(record.batches[2].state, ARCHIVING, "Kafka's code");
        assert_eq!(from_record(&record), (state, 7));
    }
}
