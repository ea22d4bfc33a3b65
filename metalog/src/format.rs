//! The metadata directory names the format it is written in, so a build that does not know
//! it refuses to start instead of misreading it.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::MetaLogError;

const FORMAT_FILE: &str = "FORMAT";
/// What this build writes and reads.
pub const CURRENT_FORMAT: &str = "shoal-metadata 1";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormatStatus {
    Current,
    /// A directory from before the format was recorded, or a new one.
    Absent,
    Unknown(String),
}

pub fn format_path(dir: &Path) -> PathBuf {
    dir.join(FORMAT_FILE)
}

pub fn read_format(dir: &Path) -> Result<FormatStatus, MetaLogError> {
    let path = format_path(dir);
    match std::fs::read(&path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes).trim().to_string();
            Ok(if text == CURRENT_FORMAT {
                FormatStatus::Current
            } else {
                FormatStatus::Unknown(text.chars().take(80).collect())
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(FormatStatus::Absent),
        Err(e) => Err(MetaLogError::Io {
            path: path.display().to_string(),
            source: e,
        }),
    }
}

/// Records the current format, durably, where none is recorded yet.
pub fn write_format(dir: &Path) -> Result<(), MetaLogError> {
    let path = format_path(dir);
    let io = |e| MetaLogError::Io {
        path: path.display().to_string(),
        source: e,
    };
    let mut file = std::fs::File::create(&path).map_err(io)?;
    writeln!(file, "{CURRENT_FORMAT}").map_err(io)?;
    file.sync_all().map_err(io)?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| MetaLogError::Io {
            path: dir.display().to_string(),
            source: e,
        })
}
