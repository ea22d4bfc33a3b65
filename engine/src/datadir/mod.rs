//! `shoal check` and `shoal repair`: an operator's view of a data directory without starting
//! the broker, and the explicit way to start a damaged one from its last good point.

mod objects;

use std::fmt::Write as _;

use shoal_metalog::inspect::{inspect, Inspection};
use shoal_metalog::recovery::refusal;
use shoal_metalog::repair::repair;

use crate::config::BrokerConfig;
use crate::ownership::DataDirLock;
use crate::EngineError;

/// Prints the state of the data directory; returns whether the broker would start from it.
pub fn check(config: &BrokerConfig) -> Result<bool, EngineError> {
    let runtime = config.runtime()?;
    if runtime.coordinator_database.is_some() {
        println!(
            "the coordinator's metadata is in PostgreSQL ([coordinator] url); this command \
             checks local metadata logs only"
        );
        return Ok(true);
    }
    let coordinator_dir = runtime.coordinator_dir();
    let store = runtime.store.clone();
    if !coordinator_dir.exists() {
        println!(
            "no metadata yet in {}: a new broker starts here",
            config.data_dir.display()
        );
        return Ok(true);
    }
    if let Err(e) = DataDirLock::acquire(&config.data_dir) {
        println!("note: {e}; what follows may include an append in progress");
    }
    on_executor(move || async move {
        let inspection = inspect(&coordinator_dir).await.map_err(coordinator_error)?;
        print!("{}", describe(&inspection));
        if !inspection.problems.is_empty() {
            println!(
                "verdict: the broker will refuse to start\n{}",
                refusal(&inspection)
            );
            return Ok(false);
        }
        let state = inspection.replayed_state();
        let damaged = objects::verify(&store, &state).await?;
        if damaged > 0 {
            println!(
                "verdict: the broker will start, but {damaged} stored batches cannot be \
                 served; fetches stop before each of them"
            );
            return Ok(false);
        }
        println!("verdict: the broker will start; every stored batch reads back intact");
        Ok(true)
    })
}

/// Repairs the metadata directory (see `shoal_metalog::repair`), holding the data
/// directory's lock so no broker runs on it meanwhile.
pub fn repair_data_dir(config: &BrokerConfig, accept_loss: bool) -> Result<(), EngineError> {
    let _lock = DataDirLock::acquire(&config.data_dir)?;
    let runtime = config.runtime()?;
    if runtime.coordinator_database.is_some() {
        return Err(EngineError::Config(
            "the coordinator's metadata is in PostgreSQL; repair works on local metadata logs"
                .into(),
        ));
    }
    let coordinator_dir = runtime.coordinator_dir();
    on_executor(move || async move {
        let report = repair(&coordinator_dir, accept_loss)
            .await
            .map_err(coordinator_error)?;
        if report.actions.is_empty() {
            println!("nothing to repair: the broker starts from this directory as it is");
            return Ok(());
        }
        for action in &report.actions {
            println!("{action}");
        }
        println!(
            "repaired; whole records set aside besides the damaged ones: {} (kept under {})",
            report.records_lost,
            coordinator_dir.join("damaged").display()
        );
        Ok(())
    })
}

fn describe(inspection: &Inspection) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "metadata directory: {}", inspection.dir.display());
    let _ = writeln!(out, "format: {:?}", inspection.format);
    let _ = writeln!(out, "snapshots present: {:?}", inspection.snapshots);
    match inspection.base {
        Some(g) => _ = writeln!(out, "recovery starts from snapshot generation {g}"),
        None => _ = writeln!(out, "recovery starts from the first log"),
    }
    let last = inspection.chain.len().saturating_sub(1);
    for (i, log) in inspection.chain.iter().enumerate() {
        let state = match &log.damage {
            None => "whole".to_string(),
            Some(d) if d.is_torn_tail() && i == last => {
                format!(
                    "torn tail of {} bytes at byte {} (cut at start: an interrupted append)",
                    log.bytes - log.valid_bytes,
                    log.valid_bytes
                )
            }
            Some(d) => format!("DAMAGED at byte {}: {}", d.offset, d.kind),
        };
        let _ = writeln!(
            out,
            "  {}: {} bytes, {} records, {state}",
            log.path.display(),
            log.bytes,
            log.records
        );
    }
    out
}

fn on_executor<T, F>(task: impl FnOnce() -> F + Send + 'static) -> Result<T, EngineError>
where
    T: Send + 'static,
    F: std::future::Future<Output = Result<T, EngineError>> + 'static,
{
    glommio::LocalExecutorBuilder::default()
        .name("datadir")
        .io_memory(0)
        .spawn(task)
        .map_err(|e| EngineError::Config(format!("executor: {e}")))?
        .join()
        .map_err(|e| EngineError::Config(format!("executor: {e}")))?
}

fn coordinator_error(e: shoal_metalog::MetaLogError) -> EngineError {
    EngineError::Shards(e.into())
}
