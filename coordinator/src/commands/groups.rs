//! Committed offsets of consumer groups.

use shoal_protocol::records::{
    AnyRecord, ShoalConsumerGroupRecord, ShoalConsumerMemberRecord, ShoalStreamsGroupRecord,
    ShoalStreamsMemberRecord,
};

use crate::command::{Command, Round};
use crate::entry::Entry;
use crate::messages::{GroupClaim, GroupLag, OffsetCommitEntry, StoredOffset, TopicPartition};
use crate::state::consumer_groups::StoredConsumerGroup;
use crate::state::streams_groups::StoredStreamsGroup;
use crate::state::{emit, GROUP_ID_MAX_BYTES};
use crate::ErrorKind;

/// A broker starts coordinating a group: its claim supersedes the group's latest, so writes
/// decided under any earlier claim (another broker's, or this one's before it lost the group)
/// are refused from now on.
#[derive(Debug, Clone)]
pub struct ClaimGroup {
    pub group: String,
    pub node_id: i32,
    pub incarnation: i64,
}

impl Command for ClaimGroup {
    type Reply = Result<GroupClaim, ErrorKind>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let (claim, record) = round.state().claim_group(
            &self.group,
            self.node_id,
            self.incarnation,
            round.now_ms(),
        )?;
        round.append(&record);
        Ok(claim)
    }
}

/// OffsetCommit: one answer per entry; every entry is refused with NOT_COORDINATOR when
/// `claim` is no longer the group's latest. With no claim (a mirror's offset sync, which
/// writes for groups no broker here coordinates) only a group never claimed is written.
#[derive(Debug, Clone)]
pub struct CommitOffsets {
    pub group: String,
    pub claim: Option<GroupClaim>,
    pub offsets: Vec<OffsetCommitEntry>,
}

impl Command for CommitOffsets {
    type Reply = Vec<Option<ErrorKind>>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let current = round.state().group_claim(&self.group);
        if current != self.claim {
            return vec![Some(ErrorKind::NotCoordinator); self.offsets.len()];
        }
        let (results, record) =
            round
                .state()
                .commit_offsets(&self.group, &self.offsets, round.now_ms());
        if let Some(record) = record {
            round.append(&record);
        }
        results
    }
}

/// OffsetFetch: the listed partitions, or all the group committed when None.
#[derive(Debug, Clone)]
pub struct FetchOffsets {
    pub group: String,
    pub partitions: Option<Vec<TopicPartition>>,
}

impl Command for FetchOffsets {
    type Reply = Vec<(TopicPartition, Option<StoredOffset>)>;
    const WRITE: bool = false;
    const FRESH: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        round
            .state()
            .fetch_offsets(&self.group, self.partitions.as_deref())
    }
}

/// Every group's lag behind the high watermarks, for the metrics endpoint.
#[derive(Debug, Clone)]
pub struct GroupLags;

impl Command for GroupLags {
    type Reply = Vec<GroupLag>;
    const WRITE: bool = false;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        round.state().group_lags()
    }
}

/// DeleteGroups: every committed offset of the group. Whether it had any; NOT_COORDINATOR
/// when `claim` is no longer the group's latest.
#[derive(Debug, Clone)]
pub struct DeleteGroup {
    pub group: String,
    pub claim: GroupClaim,
}

impl Command for DeleteGroup {
    type Reply = Result<bool, ErrorKind>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        if !round.state().holds_group_claim(&self.group, &self.claim) {
            return Err(ErrorKind::NotCoordinator);
        }
        let Some(record) = round.state().delete_group(&self.group, round.now_ms()) else {
            return Ok(false);
        };
        round.append(&record);
        Ok(true)
    }
}

/// OffsetDelete: the offsets of the listed partitions only (none: nothing is deleted).
/// Whether the group has offsets; NOT_COORDINATOR when `claim` is no longer the latest.
#[derive(Debug, Clone)]
pub struct DeleteOffsets {
    pub group: String,
    pub claim: GroupClaim,
    pub partitions: Vec<TopicPartition>,
}

impl Command for DeleteOffsets {
    type Reply = Result<bool, ErrorKind>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        if !round.state().holds_group_claim(&self.group, &self.claim) {
            return Err(ErrorKind::NotCoordinator);
        }
        let (existed, record) =
            round
                .state()
                .delete_offsets(&self.group, &self.partitions, round.now_ms());
        if let Some(record) = record {
            round.append(&record);
        }
        Ok(existed)
    }
}

/// Offsets of groups that committed nothing for `retention_ms` and are not `active` expire,
/// at most `max` groups per call; how many did.
#[derive(Debug, Clone)]
pub struct ExpireOffsets {
    pub retention_ms: i64,
    pub active: Vec<String>,
    pub max: usize,
}

impl Command for ExpireOffsets {
    type Reply = usize;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let now_ms = round.now_ms();
        let before_ms = now_ms.saturating_sub(self.retention_ms);
        let records =
            round
                .state()
                .offset_expiry_records(before_ms, &self.active, self.max, now_ms);
        round.append_all(&records);
        records.len()
    }
}

/// Groups with committed offsets, sorted.
#[derive(Debug, Clone)]
pub struct ListOffsetGroups;

impl Command for ListOffsetGroups {
    type Reply = Vec<String>;
    const WRITE: bool = false;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        round.state().offset_groups()
    }
}

/// A consumer-protocol group's change (its record, then the members that changed), written
/// under `claim`: NOT_COORDINATOR when that is no longer the group's latest, or when the
/// change does not follow the last one stored.
#[derive(Debug, Clone)]
pub struct WriteConsumerGroup {
    pub claim: GroupClaim,
    pub group: ShoalConsumerGroupRecord,
    pub members: Vec<ShoalConsumerMemberRecord>,
}

impl Command for WriteConsumerGroup {
    type Reply = Result<(), ErrorKind>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let (group_id, change) = (self.group.group_id.clone(), self.group.change);
        let last = round
            .state()
            .consumer_group(&group_id)
            .map_or(0, |g| g.group.change);
        let records = std::iter::once(self.group.into())
            .chain(self.members.into_iter().map(Into::into))
            .collect();
        append_group_change(round, &group_id, &self.claim, (change, last), records)
    }
}

/// Appends a group's change (its records) under `claim`, numbered `change` after the `last`
/// one stored: NOT_COORDINATOR when the claim is no longer the group's latest, or when the
/// change does not follow the last one stored (the coordinator that wrote it must read the
/// group back before it writes again).
fn append_group_change(
    round: &mut Round<'_>,
    group_id: &str,
    claim: &GroupClaim,
    (change, last): (i64, i64),
    records: Vec<AnyRecord>,
) -> Result<(), ErrorKind> {
    if !round.state().holds_group_claim(group_id, claim) || change != last + 1 {
        return Err(ErrorKind::NotCoordinator);
    }
    round.append(&Entry::new(round.now_ms(), records));
    Ok(())
}

/// The consumer-protocol group as last recorded, if it has members.
#[derive(Debug, Clone)]
pub struct ReadConsumerGroup {
    pub group: String,
}

impl Command for ReadConsumerGroup {
    type Reply = Option<StoredConsumerGroup>;
    const WRITE: bool = false;
    const FRESH: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        round.state().consumer_group(&self.group)
    }
}

/// A streams group's change (its record, then the members that changed), written under
/// `claim`: NOT_COORDINATOR when that is no longer the group's latest, or when the change
/// does not follow the last one stored.
#[derive(Debug, Clone)]
pub struct WriteStreamsGroup {
    pub claim: GroupClaim,
    pub group: ShoalStreamsGroupRecord,
    pub members: Vec<ShoalStreamsMemberRecord>,
}

impl Command for WriteStreamsGroup {
    type Reply = Result<(), ErrorKind>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let (group_id, change) = (self.group.group_id.clone(), self.group.change);
        let last = round
            .state()
            .streams_group(&group_id)
            .map_or(0, |g| g.group.change);
        let records = std::iter::once(self.group.into())
            .chain(self.members.into_iter().map(Into::into))
            .collect();
        append_group_change(round, &group_id, &self.claim, (change, last), records)
    }
}

/// The streams group as last recorded, if it has members.
#[derive(Debug, Clone)]
pub struct ReadStreamsGroup {
    pub group: String,
}

impl Command for ReadStreamsGroup {
    type Reply = Option<StoredStreamsGroup>;
    const WRITE: bool = false;
    const FRESH: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        round.state().streams_group(&self.group)
    }
}

/// A group's dynamic configs, whole, as the engine validated them (empty: the broker's
/// defaults again). The shards see them with the next topic catalogue.
#[derive(Debug, Clone)]
pub struct AlterGroupConfig {
    pub group: String,
    pub configs: Vec<(String, String)>,
}

impl Command for AlterGroupConfig {
    type Reply = Result<(), ErrorKind>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        if self.group.is_empty() || self.group.len() > GROUP_ID_MAX_BYTES {
            return Err(ErrorKind::InvalidGroupId);
        }
        let record = emit::group_config(&self.group, &self.configs);
        round.append(&Entry::of(round.now_ms(), record));
        round.topics_changed();
        Ok(())
    }
}
