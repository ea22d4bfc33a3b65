//! Offset expiry (Kafka's offsets.retention.minutes): committed offsets of a group with no
//! members expire once it has committed nothing for the retention period. Run by one shard,
//! which asks every shard which groups have members.

use std::rc::Rc;
use std::time::Duration;

use shoal_coordinator::commands::ExpireOffsets;

use super::calls::ListGroups;
use crate::Shard;

/// Groups expired per coordinator round, so one round stays short.
const EXPIRED_PER_ROUND: usize = 10_000;

pub async fn expire_offsets_loop(shard: Rc<Shard>, interval: Duration) {
    let retention_ms = shard.config.groups.offsets_retention_ms;
    loop {
        glommio::timer::sleep(interval).await;
        let mut active = Vec::new();
        for groups in shard
            .group_call_all(|| ListGroups)
            .await
            .into_iter()
            .flatten()
        {
            active.extend(groups.into_iter().map(|g| g.group_id));
        }
        let request = ExpireOffsets {
            retention_ms,
            active,
            max: EXPIRED_PER_ROUND,
        };
        match shard.coordinator.run(request).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(groups = n, "committed offsets expired"),
            Err(_) => break,
        }
    }
}
