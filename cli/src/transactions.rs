//! `shoal transactions list|describe`: the transactional ids a running broker coordinates
//! (ListTransactions, DescribeTransactions), as Kafka's `kafka-transactions.sh` shows them.

use kafka_protocol::protocol::StrBytes;
use serde_json::json;
use shoal_protocol::messages::{
    DescribeTransactionsRequest, ListTransactionsRequest, TransactionalId,
};

use super::{check, print_table, Admin, AdminError, Format, Target};

const LIST_VERSION: i16 = 0;
const DESCRIBE_VERSION: i16 = 0;

#[derive(clap::Subcommand, Debug)]
pub enum TransactionsCommand {
    /// Every transactional id: its producer id and state.
    List,
    /// The named transactional ids: producer, epoch, state, timeout, open partitions.
    Describe { transactional_ids: Vec<String> },
}

pub fn run(target: &Target, command: TransactionsCommand) -> Result<(), AdminError> {
    let mut admin = target.connect()?;
    match command {
        TransactionsCommand::List => list(&mut admin, target.format),
        TransactionsCommand::Describe { transactional_ids } => {
            describe(&mut admin, transactional_ids, target.format)
        }
    }
}

fn list(admin: &mut Admin, format: Format) -> Result<(), AdminError> {
    let answer = admin.call(LIST_VERSION, &ListTransactionsRequest::default())?;
    check(answer.error_code, Some("ListTransactions"))?;
    let states = answer.transaction_states.iter().map(|t| {
        (
            t.transactional_id.0.to_string(),
            t.producer_id.0,
            t.transaction_state.to_string(),
        )
    });
    match format {
        Format::Table => {
            let rows: Vec<Vec<String>> = states
                .map(|(id, producer, state)| vec![id, producer.to_string(), state])
                .collect();
            print_table(&["TRANSACTIONAL ID", "PRODUCER", "STATE"], &rows);
        }
        Format::Json => {
            let list: Vec<_> = states
                .map(|(id, producer, state)| {
                    json!({"transactional_id": id, "producer_id": producer, "state": state})
                })
                .collect();
            println!("{}", json!(list));
        }
    }
    Ok(())
}

fn describe(admin: &mut Admin, ids: Vec<String>, format: Format) -> Result<(), AdminError> {
    let request = DescribeTransactionsRequest::default().with_transactional_ids(
        ids.into_iter()
            .map(|id| TransactionalId(StrBytes::from_string(id)))
            .collect(),
    );
    let answer = admin.call(DESCRIBE_VERSION, &request)?;
    let mut described = Vec::new();
    for t in &answer.transaction_states {
        let id = t.transactional_id.0.as_str();
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
        match format {
            Format::Table if t.error_code != 0 => println!("{id}: error {}", t.error_code),
            Format::Table => println!(
                "{id}: producer {} epoch {} state {} timeout_ms {} started_ms {} partitions [{}]",
                t.producer_id.0,
                t.producer_epoch,
                t.transaction_state.as_str(),
                t.transaction_timeout_ms,
                t.transaction_start_time_ms,
                partitions.join(",")
            ),
            Format::Json => described.push(json!({
                "transactional_id": id,
                "error_code": t.error_code,
                "producer_id": t.producer_id.0,
                "producer_epoch": t.producer_epoch,
                "state": t.transaction_state.as_str(),
                "timeout_ms": t.transaction_timeout_ms,
                "start_time_ms": t.transaction_start_time_ms,
                "partitions": partitions,
            })),
        }
    }
    if format == Format::Json {
        println!("{}", json!(described));
    }
    Ok(())
}
