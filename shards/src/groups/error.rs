//! What the group coordinator refuses a member with (Kafka's codes of the same names). These
//! are the groups' own outcomes, decided on the shard that owns the group; the metadata
//! coordinator's stay in `shoal_coordinator::ErrorKind`, and the engine maps both to codes.

/// A refusal of the group protocols (classic, consumer and share).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupError {
    UnknownMemberId,
    IllegalGeneration,
    RebalanceInProgress,
    InconsistentGroupProtocol,
    MemberIdRequired,
    InvalidSessionTimeout,
    FencedInstanceId,
    NonEmptyGroup,
    GroupIdNotFound,
    GroupMaxSizeReached,
    GroupSubscribedToTopic,
    /// The shard holds as many groups (or group bytes) as it may.
    TooManyGroups,
    /// A member's protocol metadata over `max_member_metadata_bytes`.
    InvalidRequest,
    /// The shard that owns the group cannot be reached (it is shutting down).
    NotAvailable,
    /// The group could not be claimed in the coordinator's log (it did not answer): retry.
    CoordinatorNotAvailable,
    /// Another broker claimed the group since this one did: its writes here are refused.
    NotCoordinator,
    /// A group id the log refuses (empty or too long).
    InvalidGroupId,
    /// A consumer-protocol member's epoch is not its own (nor its previous, after a lost
    /// answer): it must give up its partitions and rejoin.
    FencedMemberEpoch,
    /// A static member's instance id is held by a member that has not left.
    UnreleasedInstanceId,
    /// A server assignor the group does not have.
    UnsupportedAssignor,
    /// A consumer-protocol member committed with an epoch that is not its current one.
    StaleMemberEpoch,
    /// A subscription's regular expression does not compile.
    InvalidRegularExpression,
    /// A share session the broker does not have (never opened, closed, or its member gone).
    ShareSessionNotFound,
    /// A share session request whose epoch is not the session's next.
    InvalidShareSessionEpoch,
    /// The broker holds as many share sessions as it may.
    ShareSessionLimitReached,
    /// An acknowledgement of a record the member does not hold now.
    InvalidRecordState,
    /// A share-partition another broker of the cluster took over: the log refused this
    /// broker's write of its state.
    NotLeaderOrFollower,
    /// A streams topology Kafka refuses (a changelog with a partition count, an index
    /// naming no topic).
    StreamsInvalidTopology,
    /// A streams topology that differs from the group's under the same epoch.
    StreamsInvalidTopologyEpoch,
}
