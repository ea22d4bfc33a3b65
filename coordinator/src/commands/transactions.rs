//! Transactions: the transactional producer's requests, the end of a transaction once its
//! markers are written, the timeouts, and the admin's questions.

use crate::command::{Command, Round};
use crate::messages::{GroupClaim, OffsetCommitEntry, TopicPartition};
use crate::records::Transaction;
use crate::state::transactions::{TransactionEnd, TransactionEnding, TransactionalInit};
use crate::ErrorKind;

/// InitProducerId with a transactional id.
#[derive(Debug, Clone)]
pub struct InitTransactionalProducer {
    pub transactional_id: String,
    pub timeout_ms: i32,
    /// KIP-360: the producer id and epoch the client holds, when it names them.
    pub expected: Option<(i64, i16)>,
}

impl Command for InitTransactionalProducer {
    type Reply = Result<TransactionalInit, ErrorKind>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let (init, records) = round.state().init_transactional(
            &self.transactional_id,
            self.timeout_ms,
            self.expected,
            round.now_ms(),
        )?;
        round.append_all(&records);
        Ok(init)
    }
}

/// AddPartitionsToTxn, and AddOffsetsToTxn (no partitions): the transaction is open.
#[derive(Debug, Clone)]
pub struct AddToTransaction {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub partitions: Vec<TopicPartition>,
}

impl Command for AddToTransaction {
    type Reply = Result<(), ErrorKind>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let record = round.state().add_to_transaction(
            &self.transactional_id,
            self.producer_id,
            self.producer_epoch,
            &self.partitions,
            round.now_ms(),
        )?;
        if let Some(record) = record {
            round.append(&record);
        }
        Ok(())
    }
}

/// TxnOffsetCommit: one answer per entry, or one error for the whole request
/// (NOT_COORDINATOR when `claim` is no longer the group's latest).
#[derive(Debug, Clone)]
pub struct CommitTransactionOffsets {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub group: String,
    pub claim: GroupClaim,
    pub offsets: Vec<OffsetCommitEntry>,
    /// TxnOffsetCommit v5+ (transactions V2): the commit joins the transaction, beginning one
    /// if none is open, where AddOffsetsToTxn opened it before.
    pub joins: bool,
}

impl Command for CommitTransactionOffsets {
    type Reply = Result<Vec<Option<ErrorKind>>, ErrorKind>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        if !round.state().holds_group_claim(&self.group, &self.claim) {
            return Err(ErrorKind::NotCoordinator);
        }
        let (results, record) = round.state().add_transaction_offsets(
            &self.transactional_id,
            self.producer_id,
            self.producer_epoch,
            &self.group,
            &self.offsets,
            self.joins,
            round.now_ms(),
        )?;
        if let Some(record) = record {
            round.append(&record);
        }
        Ok(results)
    }
}

/// EndTxn: the markers to write, and the producer id and epoch the producer goes on with.
#[derive(Debug, Clone)]
pub struct EndTransaction {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub commit: bool,
    /// EndTxn v5+ (transactions V2, KIP-890): the epoch moves on at every end.
    pub bumps_epoch: bool,
}

impl Command for EndTransaction {
    type Reply = Result<TransactionEnd, ErrorKind>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let (end, records) = round.state().end_transaction(
            &self.transactional_id,
            self.producer_id,
            self.producer_epoch,
            self.commit,
            self.bumps_epoch,
            round.now_ms(),
        )?;
        round.append_all(&records);
        Ok(end)
    }
}

/// WriteTxnMarkers' abort of the producer's transaction open in a partition: the ending to
/// write markers for, if any.
#[derive(Debug, Clone)]
pub struct AbortTransactionIn {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub partition: TopicPartition,
}

impl Command for AbortTransactionIn {
    type Reply = Result<Option<TransactionEnding>, ErrorKind>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let (ending, record) = round.state().abort_transaction_in(
            self.producer_id,
            self.producer_epoch,
            self.partition,
            round.now_ms(),
        )?;
        if let Some(record) = record {
            round.append(&record);
        }
        Ok(ending)
    }
}

/// Every marker of an ending transaction is stored: it completes.
#[derive(Debug, Clone)]
pub struct CompleteTransaction {
    pub ending: TransactionEnding,
}

impl Command for CompleteTransaction {
    type Reply = ();
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let records = round
            .state()
            .complete_transaction(&self.ending, round.now_ms());
        round.append_all(&records);
    }
}

/// Transactions past their timeout are aborted; these and any left ending (by a restart)
/// are returned to have their markers written. At most `max`.
#[derive(Debug, Clone)]
pub struct TransactionsToEnd {
    pub max: usize,
    /// Ids idle this long with nothing open are forgotten.
    pub id_expiration_ms: i64,
}

impl Command for TransactionsToEnd {
    type Reply = Vec<TransactionEnding>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let (endings, records) =
            round
                .state()
                .transactions_to_end(round.now_ms(), self.max, self.id_expiration_ms);
        round.append_all(&records);
        endings
    }
}

/// DescribeTransactions: each id's state, None when unknown.
#[derive(Debug, Clone)]
pub struct DescribeTransactions {
    pub transactional_ids: Vec<String>,
}

impl Command for DescribeTransactions {
    type Reply = Vec<Option<Transaction>>;
    const WRITE: bool = false;
    const FRESH: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        self.transactional_ids
            .iter()
            .map(|id| round.state().transaction(id).cloned())
            .collect()
    }
}

/// The partitions of `group` with offsets pending in a transaction not yet complete. Asked
/// right after a `FetchOffsets`, whose fresh read it follows: not fresh itself, so a stable
/// OffsetFetch costs one catch-up, not two (what it reads is at least as new).
#[derive(Debug, Clone)]
pub struct PendingTransactionOffsets {
    pub group: String,
}

impl Command for PendingTransactionOffsets {
    type Reply = std::collections::BTreeSet<TopicPartition>;
    const WRITE: bool = false;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        round.state().pending_transaction_offsets(&self.group)
    }
}

/// ListTransactions: every transactional id's state, without partitions or offsets.
#[derive(Debug, Clone)]
pub struct ListTransactions;

impl Command for ListTransactions {
    type Reply = Vec<Transaction>;
    const WRITE: bool = false;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        round
            .state()
            .transactions()
            .map(|t| Transaction {
                partitions: Default::default(),
                pending_offsets: Vec::new(),
                ..t.clone()
            })
            .collect()
    }
}
