//! `shoal repair`: starting a damaged metadata directory from its last good point. Without
//! `accept_loss` only repairs that lose nothing are made (setting aside a damaged snapshot
//! whose older snapshot and logs are whole). With it, the first damaged or missing log ends
//! the history: its whole records before the damage are kept, everything after is set aside.
//! Files are moved or copied to `damaged/` beside them, never deleted.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::inspect::inspect;
use crate::log::{log_path, read_file, MetadataLog};
use crate::problems::Problem;
use crate::snapshots::list_generations;
use crate::MetaLogError;
use shoal_coordinator::frames::scan_frames;

/// Each repair handles the first problem and looks again; a directory has few files.
const REPAIR_STEPS_MAX: usize = 64;

#[derive(Debug, Default)]
pub struct RepairReport {
    /// What was done, in order, each naming its file.
    pub actions: Vec<String>,
    /// Whole records set aside (at least this many: frames behind damage are not counted).
    pub records_lost: usize,
}

pub async fn repair(dir: &Path, accept_loss: bool) -> Result<RepairReport, MetaLogError> {
    let mut report = RepairReport::default();
    let aside = dir.join("damaged");
    for _ in 0..REPAIR_STEPS_MAX {
        let inspection = inspect(dir).await?;
        let Some(problem) = inspection.problems.first().cloned() else {
            return Ok(report);
        };
        let lossless =
            matches!(problem, Problem::UnreadableSnapshot { .. }) && inspection.fallback.is_some();
        if !problem.can_be_cut() || !(lossless || accept_loss) {
            return Err(MetaLogError::Damaged(format!(
                "not repaired: {problem}{}",
                if problem.can_be_cut() {
                    "\nRepairing this loses records: run again with --accept-loss to do it."
                } else {
                    ""
                }
            )));
        }
        match problem {
            Problem::UnknownFormat { .. } => unreachable!("refused above"),
            Problem::UnreadableSnapshot { path, .. } => {
                let moved = set_aside(&aside, &path)?;
                report.actions.push(format!(
                    "moved the unreadable snapshot {} to {}",
                    path.display(),
                    moved.display()
                ));
            }
            Problem::MissingLogs {
                generations: (from, _),
                ..
            } => {
                cut_logs_from(dir, &aside, from, &mut report).await?;
                let base = inspection.base.unwrap_or(0);
                if from == base {
                    // The base snapshot needs its own log to append to: an empty one.
                    MetadataLog::open_for_append(dir, base, 0).await?;
                    report.actions.push(format!(
                        "created an empty {}",
                        log_path(dir, base).display()
                    ));
                }
            }
            Problem::DamagedLog { path, damage, .. } => {
                let copy = copy_aside(&aside, &path)?;
                truncate(&path, damage.offset as u64)?;
                report.records_lost += damage.valid_frames_after;
                report.actions.push(format!(
                    "cut {} at byte {} (the whole file is kept as {})",
                    path.display(),
                    damage.offset,
                    copy.display()
                ));
                let generation = inspection
                    .chain
                    .iter()
                    .find(|l| l.path == path)
                    .map(|l| l.generation)
                    .expect("a damaged log is in the chain");
                cut_logs_from(dir, &aside, generation + 1, &mut report).await?;
            }
        }
    }
    Err(MetaLogError::Damaged(format!(
        "repair of {} did not finish in {REPAIR_STEPS_MAX} steps",
        dir.display()
    )))
}

/// Sets aside every log of generation `from` or later, counting their records.
async fn cut_logs_from(
    dir: &Path,
    aside: &Path,
    from: u64,
    report: &mut RepairReport,
) -> Result<(), MetaLogError> {
    let (_, logs) = list_generations(dir).await?;
    for generation in logs.into_iter().filter(|g| *g >= from) {
        let path = log_path(dir, generation);
        let records = scan_frames(&read_file(&path).await?).entries.len();
        let moved = set_aside(aside, &path)?;
        report.records_lost += records;
        report.actions.push(format!(
            "moved {} ({records} records after the cut) to {}",
            path.display(),
            moved.display()
        ));
    }
    Ok(())
}

fn aside_path(aside: &Path, path: &Path) -> Result<PathBuf, MetaLogError> {
    std::fs::create_dir_all(aside).map_err(|e| io(aside, e))?;
    let stamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    Ok(aside.join(format!("{stamp}-{name}")))
}

fn set_aside(aside: &Path, path: &Path) -> Result<PathBuf, MetaLogError> {
    let target = aside_path(aside, path)?;
    std::fs::rename(path, &target).map_err(|e| io(path, e))?;
    sync_parent(path)?;
    sync_parent(&target)?;
    Ok(target)
}

fn copy_aside(aside: &Path, path: &Path) -> Result<PathBuf, MetaLogError> {
    let target = aside_path(aside, path)?;
    std::fs::copy(path, &target).map_err(|e| io(path, e))?;
    std::fs::File::open(&target)
        .and_then(|f| f.sync_all())
        .map_err(|e| io(&target, e))?;
    sync_parent(&target)?;
    Ok(target)
}

fn truncate(path: &Path, len: u64) -> Result<(), MetaLogError> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| io(path, e))?;
    file.set_len(len).map_err(|e| io(path, e))?;
    file.sync_all().map_err(|e| io(path, e))
}

fn sync_parent(path: &Path) -> Result<(), MetaLogError> {
    let parent = path.parent().unwrap_or(Path::new("."));
    std::fs::File::open(parent)
        .and_then(|d| d.sync_all())
        .map_err(|e| io(parent, e))
}

fn io(path: &Path, source: std::io::Error) -> MetaLogError {
    MetaLogError::Io {
        path: path.display().to_string(),
        source,
    }
}
