//! The consumer protocol embedded in classic groups, from clients: a member's subscription
//! (its JoinGroup metadata) and assignment (its SyncGroup bytes), as the broker reads them
//! to migrate a group between the protocols. An assignment that reads back must encode to
//! bytes that read back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shoal_protocol::consumer_protocol::{
    read_assignment, read_subscription, subscribed_topics, write_assignment,
};

fuzz_target!(|data: &[u8]| {
    let _ = subscribed_topics(data);
    if let Some(subscription) = read_subscription(data) {
        assert!(subscription.topics.len() <= data.len() / 2);
    }
    if let Some(partitions) = read_assignment(data) {
        let version = data.get(..2).map_or(0, |v| i16::from_be_bytes([v[0], v[1]]));
        let written = write_assignment(version, &partitions);
        assert_eq!(read_assignment(&written), Some(partitions));
    }
});
