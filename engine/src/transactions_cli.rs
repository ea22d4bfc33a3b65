//! `shoal transactions list|describe`: the transactional ids a running broker coordinates
//! (ListTransactions, DescribeTransactions), as Kafka's `kafka-transactions.sh` shows them.

use std::time::Duration;

use kafka_protocol::messages::{
    DescribeTransactionsRequest, ListTransactionsRequest, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use shoal_protocol::client::BlockingClient;

use crate::EngineError;

const TIMEOUT: Duration = Duration::from_secs(10);
const RESPONSE_MAX_BYTES: usize = 64 << 20;

#[derive(clap::Subcommand, Debug)]
pub enum TransactionsCommand {
    /// Every transactional id: its producer id and state.
    List,
    /// The named transactional ids: producer, epoch, state, timeout, open partitions.
    Describe { transactional_ids: Vec<String> },
}

pub fn run(bootstrap: &str, command: TransactionsCommand) -> Result<(), EngineError> {
    let fail = |e: String| EngineError::Config(format!("{bootstrap}: {e}"));
    let mut client = BlockingClient::connect(
        bootstrap,
        "shoal-transactions-cli",
        TIMEOUT,
        RESPONSE_MAX_BYTES,
    )
    .map_err(|e| fail(format!("cannot connect: {e}")))?;
    match command {
        TransactionsCommand::List => {
            let answer = client
                .call(0, &ListTransactionsRequest::default())
                .map_err(|e| fail(e.to_string()))?;
            if answer.error_code != 0 {
                return Err(fail(format!(
                    "ListTransactions refused: error {}",
                    answer.error_code
                )));
            }
            println!("{:<40} {:<12} STATE", "TRANSACTIONAL ID", "PRODUCER");
            for t in &answer.transaction_states {
                println!(
                    "{:<40} {:<12} {}",
                    t.transactional_id.0.as_str(),
                    t.producer_id.0,
                    t.transaction_state.as_str()
                );
            }
        }
        TransactionsCommand::Describe { transactional_ids } => {
            let request = DescribeTransactionsRequest::default().with_transactional_ids(
                transactional_ids
                    .into_iter()
                    .map(|id| TransactionalId(StrBytes::from_string(id)))
                    .collect(),
            );
            let answer = client.call(0, &request).map_err(|e| fail(e.to_string()))?;
            for t in &answer.transaction_states {
                let id = t.transactional_id.0.as_str();
                if t.error_code != 0 {
                    println!("{id}: error {}", t.error_code);
                    continue;
                }
                let partitions: Vec<String> = t
                    .topics
                    .iter()
                    .flat_map(|topic| {
                        topic
                            .partitions
                            .iter()
                            .map(move |p| format!("{}-{p}", topic.topic.0.as_str()))
                    })
                    .collect();
                println!(
                    "{id}: producer {} epoch {} state {} timeout_ms {} started_ms {} partitions [{}]",
                    t.producer_id.0,
                    t.producer_epoch,
                    t.transaction_state.as_str(),
                    t.transaction_timeout_ms,
                    t.transaction_start_time_ms,
                    partitions.join(",")
                );
            }
        }
    }
    Ok(())
}
