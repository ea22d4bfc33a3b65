//! Why a metadata directory cannot be started from, each said with the file, the offset and
//! what an operator can do about it.

use std::fmt;
use std::path::PathBuf;

use crate::format::CURRENT_FORMAT;
use shoal_coordinator::frames::{DamageKind, FrameDamage};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    UnknownFormat {
        path: PathBuf,
        found: String,
    },
    UnreadableSnapshot {
        path: PathBuf,
        reason: String,
    },
    /// Log generations from `.0` to `.1` (None: all after) are not there.
    MissingLogs {
        first_missing: PathBuf,
        generations: (u64, Option<u64>),
    },
    DamagedLog {
        path: PathBuf,
        damage: FrameDamage,
        records_before: usize,
        last_generation: bool,
    },
}

impl Problem {
    /// Whether `shoal repair --accept-loss` may start the directory from before it.
    pub fn can_be_cut(&self) -> bool {
        !matches!(self, Problem::UnknownFormat { .. })
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::UnknownFormat { path, found } => write!(
                f,
                "{} says the metadata is in format {found:?}, but this build reads \
                 {CURRENT_FORMAT:?} and does not migrate: start the Shoal version that wrote \
                 it, or start this one on an empty data directory",
                path.display()
            ),
            Problem::UnreadableSnapshot { path, reason } => {
                write!(f, "snapshot {} cannot be read ({reason})", path.display())
            }
            Problem::MissingLogs {
                first_missing,
                generations: (from, to),
            } => {
                let which = match to {
                    Some(to) if to == from => format!("generation {from}"),
                    Some(to) => format!("generations {from} to {to}"),
                    None => format!("generation {from} and later"),
                };
                write!(
                    f,
                    "metadata log {which} is missing ({} should exist): restore it from a \
                     backup, or accept losing everything after the gap",
                    first_missing.display()
                )
            }
            Problem::DamagedLog {
                path,
                damage,
                records_before,
                last_generation,
            } => {
                write!(
                    f,
                    "metadata log {} is damaged at byte {} ({}); ",
                    path.display(),
                    damage.offset,
                    damage.kind
                )?;
                if damage.valid_frames_after > 0 {
                    write!(
                        f,
                        "{} whole records follow it, so it is not the torn end of an \
                         interrupted write",
                        damage.valid_frames_after
                    )?;
                } else if !last_generation && !matches!(damage.kind, DamageKind::Undecodable(_)) {
                    write!(
                        f,
                        "it is not the newest log, so no write was interrupted there"
                    )?;
                }
                write!(
                    f,
                    "; restore it from a backup, or accept losing what follows the {records_before} \
                     whole records before it"
                )
            }
        }
    }
}
